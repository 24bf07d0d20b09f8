"""What a release's report holds beyond the protection itself, computed once for the dashboard
and the command line: what analysts keep, what the release did to the key variables, the
columns' roles, and the whole report of a ``Release``."""

from __future__ import annotations

import pandas as pd

from .._core.validation import name_list as _names
from .._keys.risk import key_risk
from .labels import mean_shift_warning

_DESIGN = ("strata", "weights", "keys", "household", "pram")


def release_analyses(original, released, sensitive, exclude, options):
    """What analysts keep in a release (``analyst_checks`` on every numeric column both files
    hold): the set-apart and strata columns with 2 to 30 levels are the domains, the rest of
    them (ids) stay out; weighted by the options' weights (``_measures.validity.release_battery``,
    which the comparison's suggestion reads too)."""
    from .._measures.validity import release_battery

    return release_battery(original, released, sensitive, exclude, options)


def release_codebook(release, original, labels=None, analyses=None):
    """The codebook of a ``Release`` made from ``original`` (with its identifier columns)
    with what analysts keep per checked variable (``release_analyses``, computed here unless
    given)."""
    res, opts = release.result, release.result.options
    if analyses is None:
        work = original.drop(columns=list(release.recipe.drop))
        analyses = release_analyses(work, res.data, _names(opts.get("sensitive")), _names(opts.get("exclude")), opts)
    return release.codebook(original, labels or {}, analyses=analyses)


def release_keys(original, released, options):
    """What a release did to its key variables: the identity risk before and after
    (``key_risk``) and the values blanked per key, or None (no keys)."""
    keys = _names(options.get("keys"))
    if not keys:
        return None
    args = dict(weights=options.get("weights"), household=options.get("household"), k=int(options["k_anonymity"]))
    before, after = key_risk(original, keys, **args), key_risk(released, keys, **args)
    blank = released[keys].isna() & original[keys].notna()
    table = pd.DataFrame({"Key variable": keys, "Distinct values": [int(original[c].nunique()) for c in keys],
                          "Values blanked": [int(blank[c].sum()) for c in keys],
                          "Share blanked": [f"{blank[c].mean():.1%}" for c in keys]})
    return {"before": before, "after": after, "table": table, "cells": int(blank.to_numpy().sum()),
            "warnings": _blank_warnings(original, released, keys, blank, options)}


def _blank_warnings(original, released, keys, blank, options):
    """``blank_warnings`` of the release's local suppression: the keys as suppression saw them
    (the original after the published recodings; a PRAM'd key as released where not blank)."""
    from .._keys.suggest import blank_warnings
    from .._keys.suppression import Suppression
    from .._protect.keystep import recoded

    rules = options.get("recode") or {}
    seen = (recoded(original[keys], rules) if rules else original[keys]).copy()
    for c in _names(options.get("pram")):
        if c in keys:
            seen[c] = released[c].where(~blank[c], seen[c])
    sup = Suppression(data=released[keys], suppressed=blank, keys=tuple(keys), k=int(options["k_anonymity"]),
                      order=tuple(keys))
    return blank_warnings(seen, sup)


def release_roles(columns, options, drop=(), keep=()) -> dict:
    """{column: role} of a release as the dashboard names roles: identifier (dropped),
    excluded (released unchanged: kept on purpose, set apart, design and key columns),
    sensitive, public."""
    sens = set(_names(options.get("sensitive")))
    apart = set(_names(options.get("exclude"))) | set(keep)
    for k in _DESIGN:
        apart |= set(_names(options.get(k)))
    out = {}
    for c in columns:
        out[c] = ("identifier" if c in set(drop) else "excluded" if c in apart else
                  "sensitive" if c in sens else "public")
    return out


def release_report(release, original, kind="internal", data_name="data", labels=None, regressions=()):
    """The HTML report of a ``Release`` made from ``original`` (the file the recipe names, with
    its identifier columns), as the dashboard's Download page writes it.

    Parameters
    ----------
    release : Release
        From ``make_release``.
    original : DataFrame
        The original file.
    kind : {"internal", "external"}
        Internal reports hold the seed and the size bands' limits; external ones neither.
    data_name : str
        The file's name, for the report's heading.
    labels : dict, optional
        Variable labels for the codebook.
    regressions : sequence of RegressionCheck, optional
        Regression checks to include.

    Returns
    -------
    str
        A self-contained HTML document (its charts draw offline).
    """
    from .._measures.evaluate import evaluate
    from .._methods import method_info
    from .document import build_report

    if kind not in ("internal", "external"):
        raise ValueError(f"kind must be 'internal' or 'external', not {kind!r}.")
    res, recipe = release.result, release.recipe
    opts = res.options
    work = original.drop(columns=list(recipe.drop))
    sens = _names(opts.get("sensitive"))
    exclude = _names(opts.get("exclude"))
    design = {c for k in _DESIGN for c in _names(opts.get(k))}
    num = [c for c in work.columns if c in res.data.columns and c not in set(exclude) | design
           and pd.api.types.is_numeric_dtype(work[c])]
    ev = evaluate(work[num], res.data[num], sensitive=sens or None, floors=opts.get("floors"))
    roles = release_roles(original.columns, opts, recipe.drop, recipe.keep)
    kept = release_analyses(work, res.data, sens, exclude, opts)
    book = release_codebook(release, original, labels, kept)
    return build_report(kind, data_name, original.shape, roles, method_info(res.method).label, dict(opts), ev, None, res.dependencies,
                        res.notes, res.risk, res.plausibility, res.unsafe_reason, regressions=regressions,
                        codebook=book, analyses=kept,
                        keys=release_keys(work, res.data, opts),
                        warnings=[w for w in [mean_shift_warning(work, res.data, num)] if w])
