"""The recipe: every option, the seed, what is dropped, kept and shuffled, and the versions
that wrote it (``Recipe``); ``_release.make_release`` turns the original data plus a recipe
into the file to publish.  The dashboard's Download page and the command line both call it,
so a recipe downloaded from one rebuilds its file in the other.

Child random streams: one rule, ``child_seeds`` / ``child_rng``, built on
``numpy.random.SeedSequence``: the stream's number is the spawn key under the recorded seed.
Recipes written before version 3 shuffled with ``default_rng([seed, 1])``; that stream is
kept for them so that their files rebuild byte for byte.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._io.limits import size_text
from .options import LEGACY_BEFORE, LEGACY_DEFAULTS, translate_legacy
from .._core.validation import check_dataframe
from .._core.streams import RECIPE_VERSION, STREAMS, child_rng, child_seeds  # noqa: F401  (re-exported)

__all__ = ["Recipe", "child_seeds", "child_rng", "RECIPE_VERSION"]

_TOP = ("recipe_version", "release", "unsafe_reason", "versions")
MAX_RECIPE_BYTES = 4 * 2**20  # a recipe the tool writes is a few KB
MAX_RECIPE_DEPTH = 20         # and nested 3 deep (floors.bands)


def _versions():
    from .._core.version import __version__

    return {"sdccore": __version__, "numpy": np.__version__, "pandas": pd.__version__}


@dataclass(frozen=True)
class Recipe:
    """What rebuilds a release: ``protect``'s effective options and what the release step does.

    Attributes
    ----------
    options : dict
        ``ProtectionResult.options``: method, sensitive, seed and every effective option.
    drop : tuple of str
        Columns dropped before protection (identifiers).
    keep : tuple of str
        Columns released unchanged on purpose (excluded from protection).
    shuffle : bool
        Whether the rows are shuffled (with the seed's 'shuffle' child stream).
    version : int or None
        The recipe format (``RECIPE_VERSION`` for new recipes; None: written before stamps).
    versions : dict
        The sdccore, numpy and pandas versions that wrote it (empty for old recipes).
    unsafe_reason : str or None
        The reason a release that breaks a floor was made anyway (a record only: rebuilding
        it needs the reason again).
    """

    options: dict
    drop: tuple = ()
    keep: tuple = ()
    shuffle: bool = True
    version: int | None = RECIPE_VERSION
    versions: dict = field(default_factory=dict)
    unsafe_reason: str | None = None

    def __post_init__(self):
        if not isinstance(self.options, dict):
            raise TypeError(f"options must be a dict of option names and values, not {type(self.options).__name__}.")
        _check_reserved(self.options, "the recipe")

    @property
    def seed(self):
        return self.options.get("seed")

    @classmethod
    def from_result(cls, result, *, drop=(), keep=(), shuffle=True):
        """The recipe of a ``ProtectionResult``.

        Parameters
        ----------
        result : ProtectionResult
        drop, keep : sequence of str
            Columns dropped before protection and columns released unchanged.
        shuffle : bool

        Returns
        -------
        Recipe
        """
        return cls(dict(result.options), tuple(drop), tuple(keep), bool(shuffle), RECIPE_VERSION, _versions(),
                   result.unsafe_reason)

    @classmethod
    def from_dict(cls, d, *, source="the recipe"):
        """A recipe from its JSON object (any version this tool wrote), validated.

        Parameters
        ----------
        d : dict
            The parsed JSON.
        source : str
            How messages name it (e.g. the file's path).

        Returns
        -------
        Recipe
            With the options in today's spelling (old names translated, options left out of
            recipes from before they existed set to what they meant then).
        """
        if not isinstance(d, dict):
            raise ValueError(f"{source} must hold a JSON object of options.")
        d = dict(d)
        if "seed" in d and "rng" in d:
            raise ValueError(f"{source} holds both 'seed' and 'rng'; keep one of them (the tool writes 'seed').")
        version = d.pop("recipe_version", None)
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)
                                    or not 1 <= version <= RECIPE_VERSION):
            raise ValueError(f"{source} has recipe_version {version!r}; this sdccore reads versions 1 to "
                             f"{RECIPE_VERSION}. Upgrade sdccore to rebuild it.")
        release = d.pop("release", None) or {}
        if not isinstance(release, dict):
            raise ValueError(f"{source}: the 'release' entry must be an object such as "
                             f"{{\"drop\": [], \"shuffle\": true}}.")
        unknown = sorted(set(release) - {"drop", "keep", "shuffle"})
        if unknown:
            raise ValueError(f"{source}: the 'release' entry has unknown key(s) {', '.join(unknown)}; it takes drop, "
                             f"keep and shuffle.")
        if "shuffle" in release and not isinstance(release["shuffle"], bool):
            raise ValueError(f"{source}: release.shuffle must be true or false (JSON booleans, no quotes), not "
                             f"{release['shuffle']!r}.")
        for key in ("drop", "keep"):
            val = release.get(key, [])
            if not isinstance(val, list) or not all(isinstance(c, str) for c in val):
                raise ValueError(f"{source}: release.{key} must be a list of column names.")
        versions = d.pop("versions", None) or {}
        unsafe = d.pop("unsafe_reason", None)
        if "rng" in d:
            d["seed"] = d.pop("rng")
        method = d.get("method", "fa")
        d = _as_then(d, method, version)
        _check_keys(d, method, source)
        return cls(d, tuple(release.get("drop", [])), tuple(release.get("keep", [])),
                   bool(release.get("shuffle", False)), version, dict(versions), unsafe)

    @classmethod
    def from_json(cls, text, *, source="the recipe"):
        """A recipe from JSON text (see ``from_dict``); at most ``MAX_RECIPE_BYTES`` long and
        ``MAX_RECIPE_DEPTH`` levels deep, both checked before the text is parsed."""
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8-sig", errors="replace")
        if not isinstance(text, str):
            raise TypeError(f"{source} must be JSON text, not {type(text).__name__}.")
        if len(text) > MAX_RECIPE_BYTES:
            raise ValueError(f"{source} is {size_text(len(text))}; a recipe is at most {size_text(MAX_RECIPE_BYTES)} "
                             f"(sdccore._protect.recipe.MAX_RECIPE_BYTES). Give the recipe the tool wrote.")
        depth = json_depth(text)
        if depth > MAX_RECIPE_DEPTH:
            raise ValueError(f"{source} is nested too deeply to be a recipe ({depth} levels; at most "
                             f"{MAX_RECIPE_DEPTH}, sdccore._protect.recipe.MAX_RECIPE_DEPTH). Give the recipe the tool wrote.")
        try:
            d = json.loads(text)
        except RecursionError:
            raise ValueError(f"{source} is nested too deeply to be a recipe.") from None
        except ValueError as exc:
            raise ValueError(f"{source} is not valid JSON (line {getattr(exc, 'lineno', '?')}); save the recipe "
                             f"the tool wrote.") from None
        return cls.from_dict(d, source=source)

    def to_dict(self):
        d = dict(self.options)
        d["recipe_version"] = self.version
        d["release"] = {"drop": list(self.drop), "keep": list(self.keep), "shuffle": bool(self.shuffle)}
        if self.versions:
            d["versions"] = dict(self.versions)
        if self.unsafe_reason:
            d["unsafe_reason"] = self.unsafe_reason
        return d

    def to_json(self):
        """The recipe as the tool writes it (sorted keys, two-space indent)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


def _as_then(d, method, version):
    """A recipe's options as its format meant them: what an option left out meant before it
    existed, and the old option names."""
    if version is None:  # written before plausible values existed: rebuild its file as it was then
        for key, val in LEGACY_DEFAULTS.items():
            d.setdefault(key, val)
    if version is None or version < 3:
        d = translate_legacy(method, d, warn=False)
    if d.get("keys") and (version is None or version < 7):
        raise ValueError(f"this recipe (format {version}) suppresses key variables by a rule that left persons "
                         f"identifiable (a person blanked alone was still the only record agreeing with their true "
                         f"keys) and released the household ids; it is not rebuilt. Protect the file again to write "
                         f"a recipe of format {RECIPE_VERSION}.")
    for since, table in LEGACY_BEFORE.items():
        if version is None or version < since:
            for (m, key), val in table.items():
                if m == method:
                    d.setdefault(key, val)
    return d


def json_depth(text):
    """How deeply JSON text nests arrays and objects, brackets inside strings ignored; linear
    in the text, no recursion (a 4 MB run of '[' takes a fraction of a second)."""
    import re

    plain = re.sub(r'"[^"]*"', "", re.sub(r"\\.", "", text, flags=re.S))  # escapes out, then strings out
    codes = np.frombuffer(plain.encode("utf-8", errors="replace"), dtype=np.uint8)
    table = np.zeros(256, dtype=np.int32)
    table[[91, 123]], table[[93, 125]] = 1, -1  # [ { open, ] } close
    return int(np.cumsum(table[codes], dtype=np.int32).max()) if len(codes) else 0


def read_recipe(path):
    """A recipe file's bytes, never more than ``MAX_RECIPE_BYTES`` + 1 read: /dev/zero, a FIFO
    or a huge file is refused without being read whole."""
    with open(path, "rb") as fh:
        raw = fh.read(MAX_RECIPE_BYTES + 1)
    if len(raw) > MAX_RECIPE_BYTES:
        raise ValueError(f"{path} holds more than {size_text(MAX_RECIPE_BYTES)}; a recipe is at most "
                         f"{size_text(MAX_RECIPE_BYTES)} (sdccore._protect.recipe.MAX_RECIPE_BYTES). Give the recipe the tool "
                         f"wrote with --save-recipe.")
    return raw


def _check_reserved(options, source):
    """protect's own arguments ``data`` and ``allow_unsafe`` are never options (passed with
    the options they gave "protect() got multiple values for keyword argument")."""
    if "data" in options:
        raise ValueError(f"{source} holds 'data', which is not an option (the data are given apart from the recipe); "
                         f"remove the key.")
    if "allow_unsafe" in options:
        raise ValueError(f"{source} holds 'allow_unsafe', which is not an option: the reason for a release "
                         f"that breaks a floor is given each time with --allow-unsafe \"reason\" (allow_unsafe='reason' "
                         f"in the library), and recorded as unsafe_reason; remove the key.")


def _check_keys(d, method, source):
    """Every key of a recipe is an option of its method (``option_schema``), method, seed or
    sensitive; an unknown one is refused naming it and the valid ones."""
    from .._methods import methods
    from .options import LEGACY_NAMES, option_schema

    _check_reserved(d, source)
    if not isinstance(method, str) or method not in methods():
        return  # protect names the supported methods
    valid = {"method", "seed", "sensitive"} | {o.name for o in option_schema(method)}
    valid |= {old for (m, old) in LEGACY_NAMES if m == method}
    unknown = sorted(str(k) for k in d if k not in valid)
    if unknown:
        raise ValueError(f"{source} holds key(s) {', '.join(map(repr, unknown))} that are not options of method "
                         f"{method!r}; its keys are {', '.join(sorted(valid - {o for (_, o) in LEGACY_NAMES}))} and "
                         f"{', '.join(_TOP)}. Remove or rename them.")
