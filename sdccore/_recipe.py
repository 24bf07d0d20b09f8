"""The release in the library: a ``Recipe`` (every option, the seed, what is dropped, kept
and shuffled, and the versions that wrote it) and ``make_release``, which turns the original
data plus a recipe into the file to publish.  The dashboard's Download page and the command
line both call it, so a recipe downloaded from one rebuilds its file in the other.

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

from ._io import prepare_release, release_csv
from ._options import LEGACY_DEFAULTS, translate_legacy
from ._validation import check_dataframe

__all__ = ["Recipe", "Release", "make_release", "child_seeds", "child_rng", "RECIPE_VERSION"]

# 3: option names noise_sd / noise_model / noise_cov, versions stamped, SeedSequence streams
# 2: transform, bounds, rounding and floors recorded; no stamp: recipes from before them
RECIPE_VERSION = 3
STREAMS = {"shuffle": 1, "runs": 2, "search": 3, "bw_map": 4, "impute": 5, "strata": 6}
_TOP = ("recipe_version", "release", "unsafe_reason", "versions")


def child_seeds(seed, stream, count=None):
    """Integer seeds of a named child stream of ``seed`` (non-negative int64): the
    SeedSequence with entropy ``seed`` and spawn key (stream number,).  ``count=None`` gives
    one int, else an array of ``count`` (an int or a shape)."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(STREAMS[stream],))
    shape = () if count is None else (count if isinstance(count, tuple) else (int(count),))
    size = int(np.prod(shape)) if shape else 1
    vals = (ss.generate_state(size, dtype=np.uint64) >> np.uint64(1)).astype(np.int64)
    return int(vals[0]) if count is None else vals.reshape(shape)


def child_rng(seed, stream, version=RECIPE_VERSION):
    """The generator of a named child stream of ``seed``; recipes before version 3 shuffled
    with ``default_rng([seed, 1])``, which is what they get."""
    if (version is None or version < 3) and stream == "shuffle":
        return np.random.default_rng([int(seed), 1])
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(STREAMS[stream],)))


def _versions():
    from . import __version__

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
        if version is None:  # written before plausible values existed: rebuild its file as it was then
            for key, val in LEGACY_DEFAULTS.items():
                d.setdefault(key, val)
        if version is None or version < 3:
            d = translate_legacy(method, d, warn=False)
        return cls(d, tuple(release.get("drop", [])), tuple(release.get("keep", [])),
                   bool(release.get("shuffle", False)), version, dict(versions), unsafe)

    @classmethod
    def from_json(cls, text, *, source="the recipe"):
        """A recipe from JSON text (see ``from_dict``)."""
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


@dataclass(frozen=True)
class Release:
    """What ``make_release`` returns.

    Attributes
    ----------
    data : DataFrame
        The file to publish: identifiers dropped, rows shuffled (index reset), formulas
        neutralised, values rounded as the options say.
    result : ProtectionResult
        The protection behind it (risk profile, plausibility, notes).
    recipe : Recipe
        The recipe that rebuilds ``data`` from the original (with today's versions).
    """

    data: pd.DataFrame
    result: object
    recipe: Recipe

    def __repr__(self):
        return (f"Release({len(self.data):,} records x {self.data.shape[1]} columns to publish; "
                f"{self.result!r})")

    def summary(self) -> str:
        """The release's size and its protection's summary."""
        return f"Release: {len(self.data):,} records x {self.data.shape[1]} columns to publish\n" + self.result.summary()

    def csv(self, sep=",", decimal="."):
        """The release as UTF-8 CSV bytes in the original file's separator and decimal mark."""
        from ._formats import write_table

        return write_table(self.data, "csv", sep=sep, decimal=decimal)

    def to_bytes(self, format="csv", *, labels=None, value_labels=None, sep=",", decimal="."):
        """The release in ``format`` (see ``write_table``), with the original's variable and
        value labels for SPSS, Stata and SAS (only for the columns released)."""
        from ._formats import write_table

        return write_table(self.data, format, labels=labels, value_labels=value_labels, sep=sep, decimal=decimal)

    def codebook(self, original=None, labels=None):
        """Per variable: role, method, rounding, what is exact and what in expectation, and
        its residual risk (``sdccore.codebook``), identifiers listed as dropped."""
        from ._codebook import codebook

        return codebook(self.result, original, drop=self.recipe.drop, labels=labels)


def make_release(data, recipe, *, allow_unsafe=None):
    """The released file from the original data and a recipe: protect, drop identifiers,
    shuffle, neutralise formulas (rounding is part of protection).

    Parameters
    ----------
    data : DataFrame
        The original, with every column the recipe names.
    recipe : Recipe or dict
        From ``Recipe.from_result``, ``Recipe.from_json`` or a dict as the tool writes it.
    allow_unsafe : str, optional
        As for ``protect``; a recipe's ``unsafe_reason`` is never applied by itself.

    Returns
    -------
    Release

    Raises
    ------
    UnsafeReleaseError
        When the rebuilt release breaks a risk floor and ``allow_unsafe`` is not given.

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> r = sdccore.Recipe({"method": "rankswap", "sensitive": ["SALES"], "seed": 7})
    >>> sdccore.make_release(df, r).data.shape
    (834, 13)
    """
    from ._protect import protect

    if isinstance(recipe, dict):
        recipe = Recipe.from_dict(recipe)
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a Recipe or a dict, not {type(recipe).__name__}.")
    data = check_dataframe(data)
    missing = [c for c in recipe.drop + recipe.keep if c not in data.columns]
    if missing:
        raise ValueError(f"the recipe names column(s) not in the data: {', '.join(map(str, missing))}; use the "
                         f"original file the recipe was made from.")
    options = dict(recipe.options)
    work = data.drop(columns=list(recipe.drop))
    exclude = options.get("exclude") or []
    if not isinstance(exclude, list):
        raise ValueError("the option 'exclude' must be a list of column names.")
    kept = [c for c in recipe.keep if c in work.columns and c not in exclude]
    if kept:  # kept on purpose: released unchanged, whatever their type
        options["exclude"] = list(exclude) + kept
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # old spellings in a user's own dict
        res = protect(work, allow_unsafe=allow_unsafe, **options)
    shuffle_rng = child_rng(res.options["seed"], "shuffle", recipe.version) if recipe.shuffle else None
    out = prepare_release(res.data, shuffle=recipe.shuffle, rng=shuffle_rng)  # identifiers were dropped above
    if recipe.version is None:  # announced: such a recipe rebuilds its file as it was made then
        from dataclasses import replace

        res = replace(res, notes=res.notes + (
            "the recipe has no recipe_version, so it is read as written before version 1 of the format: plausible "
            "values off (no bounds, no rounding, no log scale) unless it names them; save it again with "
            "--save-recipe to stamp it",))
    new = Recipe.from_result(res, drop=recipe.drop, keep=recipe.keep, shuffle=recipe.shuffle)
    return Release(out, res, new)
