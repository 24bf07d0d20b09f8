"""The codebook of a release: one row per variable of the original file, saying what a
researcher needs to analyse the release correctly (its role, what was done to it, how it
was rounded, what is kept exactly and what only in expectation, and its residual risk).

What each method keeps (before ``bounds`` clipping and ``rounding``, which move means and
variances by the amounts ``result.plausibility`` reports; on the log scale where the
variable was protected on it):

* fa / pca (score perturbation ``swap``/``rankswap``): means exact; variances and
  covariances unbiased (in expectation over releases); with ``noise`` or the
  microaggregation perturbations means exact, covariances approximately.
* magg: ``published`` noise: means and covariances in expectation; ``exact``: means and
  covariances exact; ``none``: means exact, variances reduced.
* rankswap: each variable's own values (so its mean, variance and every quantile) exact,
  relations between variables attenuated.
* noise: means and correlations in expectation, variances inflated by (1 + noise_cov/100).
* pca_remove: means exact, variances and covariances NOT kept.
* ipso: the OLS of each sensitive variable on the public ones (coefficients, standard
  errors, R^2), every mean and the covariance matrix exact; public variables unchanged.
* shuffle: each sensitive variable's values (mean, variance, quantiles) exact; rank
  correlations with the public variables in expectation; public variables unchanged.
* cfa: means exact; covariances with the public variables the factor model's; public
  variables unchanged.
* with ``weights``: the weighted means exact instead of the unweighted ones (fa, pca,
  magg); with ``strata``: each group's means as above within the group.
* missing cells are kept missing in place; "exact" then refers to the observed cells.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .._methods import hook, method_info

__all__ = ["codebook"]

def _keeps(opts):
    method = opts["method"]
    own = hook(method, "keeps")  # what the method keeps, in its module in the registry
    exact, expected = own(method, opts) if own is not None else ("", "")
    if opts.get("weights") and not method_info(method).keeps_values:
        exact = ", ".join(x for x in ("weighted means", exact.replace("means", "").strip(", ")) if x)
        expected = expected.replace("means, ", "")
    if opts.get("strata"):
        exact = f"within each group of {', '.join(opts['strata'])}: {exact}" if exact else exact
    if opts.get("tail") == "aggregate":  # the largest values averaged: what the method kept holds for the rest
        expected = "; ".join(x for x in (exact, expected) if x) + " except where the largest values were aggregated"
        exact = "the total; the largest values replaced by their mean (tail='aggregate')"
    return exact, expected


def _unprotected(c, dropped, opts):
    """Role and method of a column the protection did not touch."""
    if dropped:
        return {"role": "identifier", "method": "dropped: not in the release"}
    if c in set(opts.get("strata") or []):
        return {"role": "stratum", "method": "released unchanged (groups protected on their own)"}
    if c == opts.get("weights"):
        return {"role": "sampling weight", "method": "released unchanged"}
    excluded = c in set(opts.get("exclude") or [])
    return {"role": "excluded" if excluded else "passed through (not numeric)", "method": "released unchanged"}


def _key_columns(c, opts, result, original):
    """A key variable's or post-randomised column's role and method: what the keys' step did to
    it (recoded, post-randomised, the values blanked for k-anonymity, counted against the
    original where it is given); {} for any other column."""
    keys, pram = list(opts.get("keys") or []), list(opts.get("pram") or [])
    if c not in keys and c not in pram:
        return {}
    done = []
    if c in (opts.get("recode") or {}):
        done.append("recoded (the recoding is in the recipe)")
    if c in pram:
        done.append("post-randomised (PRAM: category counts kept in expectation, no single value to be trusted)")
    if c in keys:
        k = opts.get("k_anonymity", 3)
        if original is not None and c in result.data:
            blanked = int((original[c].notna().to_numpy() & result.data[c].isna().to_numpy()).sum())
            done.append(f"{blanked} value(s) blanked for {k}-anonymity (a blank matches every value)")
        else:
            done.append(f"values blanked where needed for {k}-anonymity")
    role = "key variable" if c in keys else None
    out = {"method": "; ".join(done), "exact": "", "in_expectation": ""}
    if role:
        out["role"] = role
    return out


def _protected(c, opts, result, original, p, method_text):
    """A protected column's role, method, plausibility figures and what it keeps."""
    sens = set(opts.get("sensitive") or [])
    exact, expected = _keeps(opts)
    role = "sensitive" if c in sens else "public" if sens else "protected"
    changed = original is None or not np.array_equal(
        pd.to_numeric(original[c], errors="coerce").to_numpy(float),
        pd.to_numeric(result.data[c], errors="coerce").to_numpy(float), equal_nan=True)
    moved = float(p.get("mean_change_sd", 0.0) or 0.0)
    ex = exact
    if changed and exact and (int(p.get("clipped", 0)) or abs(moved) > 1e-9):
        ex = f"{exact}, before bounds and rounding (they move the mean by {moved:+.2g} sd)"
    return dict(role=role, method=method_text if changed else f"{method_text}: unchanged in this release",
                transform=p.get("transform"), bounds=p.get("bounds"), clipped=int(p.get("clipped", 0)),
                decimals=p.get("decimals"), mean_change_sd=moved, exact=ex if changed else "every value",
                in_expectation=expected if changed else "")


def _risk_columns(r, lowered):
    """A checked variable's figures from the risk profile."""
    return dict(perturbed_share=float(r.get("perturbed_share", np.nan)),
                abs_cor=float(r.get("abs_cor", np.nan)), close_own=float(r.get("close_own", np.nan)),
                close_linked=float(r.get("close_linked", np.nan)),
                prior=float(r.get("prior", np.nan)), beyond_prior=float(r.get("beyond_prior", np.nan)),
                intruder=r.get("intruder", ""), intruders_tried=r.get("intruders", ""),
                meets_floors=bool(r.get("ok", False)), floors=lowered or "default")


def _kept_columns(checks, name):
    """What analysts keep of a checked variable (``analyst_checks``): each analysis with a
    target, its figure and verdict, in words; and the analyses it misses."""
    from .._measures.battery import LABELS

    t = checks.table[(checks.table.variable == name) & checks.table.ok.map(lambda v: v is not None)]
    words = [f"{LABELS[r.analysis]} {r.kept:.3f} ({'kept' if r.ok else 'MISSED'}, target {r.target})"
             for r in t.itertuples()]
    missed = [LABELS[r.analysis] for r in t.itertuples() if r.ok is False]
    return {"analyses_kept": "; ".join(words), "analyses_missed": ", ".join(missed)}


def codebook(result, original=None, *, drop=(), labels=None, analyses=None):
    """One row per variable of the original: what a researcher needs to know about it.

    Parameters
    ----------
    result : ProtectionResult
        From ``protect`` (or ``Release.result``).
    original : DataFrame, optional
        The original data: adds the count of missing cells kept missing.
    drop : sequence of str
        Identifier columns dropped from the release (listed as 'dropped').
    labels : dict, optional
        Variable labels (as ``read_table`` found them in SPSS/Stata/SAS files).
    analyses : AnalystChecks, optional
        What analysts keep in this release (``analyst_checks``, e.g. ``sdccore.report.
        release_analyses``): adds, per checked variable, analyses_kept (each analysis with a
        target: its figure, kept or MISSED, and the target) and analyses_missed.

    Returns
    -------
    DataFrame
        Indexed by variable: label, role, in_release, method, transform, bounds, clipped,
        decimals, mean_change_sd (what bounds and rounding moved the mean, in original
        sds), exact, in_expectation, missing_kept, perturbed_share, abs_cor,
        close_own, close_linked, prior, beyond_prior, intruder, intruders_tried, meets_floors,
        floors (the last eleven from the risk profile, for the variables the floors check: the
        closeness shares are what the release adds beyond the prior, the share of records the
        intruder's knowledge alone predicts within the tolerance; intruder is the one that did
        best; floors is 'default', or names the floors set below the defaults and the reason
        given for them); with ``analyses``, analyses_kept and analyses_missed.

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> res = sdccore.protect(df, "pca", rng=1, bounds="none", rounding="none", allow_unsafe="internal file")
    >>> cb = sdccore.codebook(res, df)
    >>> cb.loc["SALES", ["role", "exact", "in_expectation"]].tolist()
    ['protected', 'means', 'variances and covariances (unbiased)']
    """
    from .._protect.results import ProtectionResult

    if not isinstance(result, ProtectionResult):
        raise TypeError(f"result must be what protect returns (a ProtectionResult), got {type(result).__name__}.")
    opts = dict(result.options)
    labels = dict(labels or {})
    drop = [str(c) for c in drop]
    plaus = result.plausibility if result.plausibility is not None else pd.DataFrame()
    risk = result.risk.variables if result.risk is not None else pd.DataFrame()
    lowered = ""
    if result.risk is not None and result.risk.floors.lowered():
        lowered = f"LOWERED below the defaults: {', '.join(result.risk.floors.lowered())}; released because: " \
                  f"{result.unsafe_reason}"
    method_text = opts["method"] + (f" ({opts['perturbation']})" if opts.get("perturbation") else "")
    if opts.get("strata"):
        method_text += f" within groups of {', '.join(opts['strata'])}"
    cols = list(original.columns) if original is not None else list(result.data.columns) + drop
    rows = []
    for c in dict.fromkeys(cols):
        name = str(c)
        row = {"variable": name, "label": labels.get(name, ""), "in_release": name not in drop}
        if name in drop or c in set(opts.get("strata") or []) or c == opts.get("weights") or c not in plaus.index:
            row.update(_unprotected(c, name in drop, opts))
        else:
            row.update(_protected(c, opts, result, original, plaus.loc[c], method_text))
            if c in risk.index:
                row.update(_risk_columns(risk.loc[c], lowered))
        if analyses is not None:
            row.update(_kept_columns(analyses, name) if name in analyses.checked else
                       {"analyses_kept": "", "analyses_missed": ""})
        if original is not None:
            row["missing_kept"] = int(original[c].isna().sum()) if name not in drop else 0
        if name not in drop:
            row.update(_key_columns(c, opts, result, original))
        rows.append(row)
    order = ["variable", "label", "role", "in_release", "method", "transform", "bounds", "clipped", "decimals",
             "mean_change_sd", "exact",
             "in_expectation", "missing_kept", "perturbed_share", "abs_cor", "close_own", "close_linked",
             "prior", "beyond_prior", "intruder", "intruders_tried", "meets_floors", "floors", "analyses_kept",
             "analyses_missed"]
    t = pd.DataFrame(rows)
    return t[[c for c in order if c in t.columns]].set_index("variable")


def codebook_bytes(table, format="csv"):
    """The codebook as the bytes of a file to download.

    Parameters
    ----------
    table : DataFrame
        ``codebook(...)``'s table.
    format : {'csv', 'json'}
        CSV (cells that a spreadsheet would run as formulas neutralised) or JSON (one object
        per variable, with the notes on what each method keeps in ``_about``).

    Returns
    -------
    bytes

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.load_dataset("tarragona")
    >>> cb = sdccore.codebook(sdccore.protect(d, "ipso", sensitive=["SALES"], rng=12345), d)
    >>> sdccore.codebook_bytes(cb, "csv")[:8]
    b'variable'
    """
    if format == "csv":
        from .._io.write import csv_bytes, neutralize_formulas

        # names and labels come from the user's file: a cell '=HYPERLINK(...)' is neutralised
        return csv_bytes(neutralize_formulas(table.reset_index()))
    if format == "json":
        recs = {}
        for v, row in table.iterrows():
            recs[str(v)] = {k: (None if isinstance(x, float) and np.isnan(x) else
                                x.item() if isinstance(x, np.generic) else x) for k, x in row.items()}
        return json.dumps({"_about": " ".join(__doc__.split()), "variables": recs}, indent=2,
                          default=str).encode("utf-8")
    raise ValueError(f"format={format!r} must be 'csv' or 'json'.")
