"""Release assembly: ``make_release`` turns the original data plus a ``Recipe`` into the file
to publish (``Release``), by ``protect`` with the recipe's options, then dropping, shuffling
and neutralising as it says.  Above the pipeline and the recipe format, below the command
line and the dashboard."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pandas as pd

from .._io.write import prepare_release
from .._protect.recipe import Recipe
from .._core.streams import child_rng
from .._core.validation import check_dataframe

__all__ = ["Release", "make_release"]


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

    def summary(self):
        """The release's size and its protection's summary (a ``Summary``: the text, and
        ``as_html()``)."""
        from .._core.summary import Summary

        return Summary(f"Release: {len(self.data):,} records x {self.data.shape[1]} columns to publish",
                       [self.result.summary()])

    def csv(self, sep=",", decimal="."):
        """The release as UTF-8 CSV bytes in the original file's separator and decimal mark."""
        from .._io.formats import write_table

        return write_table(self.data, "csv", sep=sep, decimal=decimal)

    def to_bytes(self, format="csv", *, labels=None, value_labels=None, sep=",", decimal="."):
        """The release in ``format`` (see ``write_table``), with the original's variable and
        value labels for SPSS, Stata and SAS (only for the columns released)."""
        from .._io.formats import write_table

        return write_table(self.data, format, labels=labels, value_labels=value_labels, sep=sep, decimal=decimal)

    def codebook(self, original=None, labels=None, analyses=None):
        """Per variable: role, method, rounding, what is exact and what in expectation, its
        residual risk and, with ``analyses`` (``sdccore.report.release_analyses``), what
        analysts keep (``sdccore.codebook``), identifiers listed as dropped."""
        from .codebook import codebook

        return codebook(self.result, original, drop=self.recipe.drop, labels=labels, analyses=analyses)


def make_release(data, recipe, *, allow_unsafe=None, result=None):
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
    result : ProtectionResult, optional
        This recipe's protection of these data, already made (the dashboard evaluates a
        configuration before the custodian downloads it): used instead of protecting again.
        Its options must agree with every option the recipe names and its data must have
        the data's records; otherwise ValueError.

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
    from .._protect.pipeline import protect

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
        res = protect(work, allow_unsafe=allow_unsafe, **options) if result is None else \
            _matching_result(result, options, work, allow_unsafe)
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


def _matching_result(result, options, work, allow_unsafe):
    """``result`` when it is this recipe's protection of ``work``: the same records and the
    recipe's every option (the seed included); a broken floor needs ``allow_unsafe`` as
    ``protect`` would."""
    from .._protect.results import ProtectionResult
    from .._risk.settings import UnsafeReleaseError

    if not isinstance(result, ProtectionResult):
        raise TypeError(f"result must be what protect returns (a ProtectionResult), got {type(result).__name__}.")
    if len(result.data) != len(work):
        raise ValueError(f"result has {len(result.data):,} records but the data have {len(work):,}; pass the "
                         f"protection of these data, or no result.")
    eff = result.options
    differ = [k for k, v in options.items()
              if k not in ("exclude", "transform") and k in eff and _plain(eff[k]) != _plain(v)]
    # the result records the log-scale columns by name: 'none' is none of them, 'auto' the
    # rule's choice on these data, a list itself
    tr = options.get("transform", "none")
    if "transform" in eff and tr != "auto" and list(eff["transform"]) != ([] if tr == "none" else list(tr)):
        differ.append("transform")
    differ += [k for k in ("method", "seed") if k in options and k not in eff]
    if set(options.get("exclude") or []) != set(eff.get("exclude") or []):
        differ.append("exclude")
    if differ:
        raise ValueError(f"result was made with other options than the recipe's ({', '.join(differ)}); pass the "
                         f"protection made with this recipe, or no result.")
    if result.risk is not None and not result.risk.ok and allow_unsafe is None:
        raise UnsafeReleaseError("release refused, it breaks the risk floors: " + result.risk.message(),
                                 risk=result.risk)
    return result


def _plain(v):
    """An option's value as the recipe writes it (floors as a dict, tuples as lists)."""
    if hasattr(v, "to_dict"):
        v = v.to_dict()
    if isinstance(v, tuple):
        v = list(v)
    return v
