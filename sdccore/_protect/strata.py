"""Protection within strata and with sampling weights.

Strata (``protect(data, "fa", strata=["region"])``): the records of each group (each
combination of the strata columns' values) are protected on their own, with the same
method and options and a seed of their own (a child stream of the run's seed), so that

* no record is mixed with another group's records (M-AGG groups, factor models and noise
  are fitted within the group), and
* every group keeps what the method keeps for a whole file: with FA/PCA (and M-AGG with
  ``noise_model='exact'``; its published noise keeps means in expectation), and
  ``bounds='none'``, ``rounding='none'``, each group's mean is kept exactly, so every
  group mean and the overall mean are exact; covariances are kept within each group
  (in expectation, or exactly where the method says so), which keeps the pooled within-
  group covariance and the between-group means.

The strata columns are released unchanged, so an intruder can link within a group: the
risk floors are checked within each group (the threat model that matches), and the release
is refused if any group breaks one; the violations name the group.  A group needs at least
``min_stratum_size(method, m, k)`` records: ``m + 2`` for fa/pca (m protected variables: a
correlation matrix of full rank and one degree of freedom to spare), ``2k`` (at least 6)
for magg; smaller groups are refused with their names and sizes and the fix (merge them
with a neighbouring group by recoding the strata column, or protect without strata).

Sampling weights (``weights="w"``): the weight column is released unchanged (it is
excluded from protection; leave it out of the release yourself if the design weights are
themselves disclosive).  For FA/PCA/M-AGG the released columns are shifted by a constant
each so that the *weighted* means (the population estimates) are kept exactly instead of
the unweighted ones (for M-AGG whatever its noise model; with ``bounds='none'`` and
``rounding='none'``, as for every exact mean); a constant shift leaves every covariance and every record's relative
position unchanged.  Rank swapping releases each column's own values, so its unweighted
marginal is exact and its weighted mean is not.  The risk measures stay unweighted (they
are about the records in the file); ``evaluate(weights=...)`` adds the weighted means and
covariances of both files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe
from .._methods import hook, methods

STRATA_METHODS = methods(strata=True)  # the built-in ones; the registry is asked at each call


def min_stratum_size(method, m, k=3):
    """The fewest records a group needs for ``method`` with ``m`` protected variables (the
    method's own rule where its module in the registry has one, e.g. M-AGG's two groups)."""
    own = hook(method, "min_stratum_size")
    return own(method, m, k) if own is not None else max(6, int(m) + 2)


MAX_WEIGHT_SHARE = 0.10  # the largest share of the total weight one record may hold in protect


def check_weights(data, weights, protect=False):
    """The weight column's name and values: a numeric column, finite and positive.

    With ``protect``, no record may hold more than max(MAX_WEIGHT_SHARE, 2/n) of the total
    weight: the shift that keeps the weighted means moves every record by the weighted mean
    of the changes, so a record holding a share s of the weight gets a fraction s of its own
    change undone (one weight of 1e300, or a 97.9 % share, released that record as it was,
    11 of 13 values within 5 %); 2/n lets a tiny file's ordinary weights pass."""
    if weights is None:
        return None, None
    if not isinstance(weights, str):
        raise TypeError(f"weights={weights!r} must be the name of a column (a string), e.g. weights='weight'.")
    if weights not in data.columns:
        raise ValueError(f"weights={weights!r} must name a column of the data, e.g. weights='weight'.")
    w = pd.to_numeric(data[weights], errors="coerce").to_numpy(dtype=float)
    bad = int((~np.isfinite(w) | (w <= 0)).sum())
    if bad:
        raise ValueError(f"weights: column {weights!r} has {bad} value(s) that are missing, not numbers, zero or "
                         f"negative; sampling weights must be positive numbers (fix or drop those records).")
    if protect and len(w):
        with np.errstate(over="ignore"):
            total = w.sum()
        share = float(w.max() / total) if np.isfinite(total) else 1.0
        bound = max(MAX_WEIGHT_SHARE, 2.0 / len(w))
        if share > bound:
            raise ValueError(f"weights: one record holds {share:.1%} of the total weight of column {weights!r} (at most "
                             f"{bound:.0%} allowed): keeping the weighted means would move that record back towards "
                             f"its original values. Trim the weights (cap them, e.g. at 5 times the median), protect "
                             f"that record's group on its own (strata), or protect without weights.")
    return weights, w


def weighted_shift(Xpk, X0k, w, missing=None):
    """Shift each changed column of ``Xpk`` (in place) so that its weighted mean over the
    observed cells equals the original's (a shift below 1e-9 of the column's largest value
    left out)."""
    for i in range(Xpk.shape[1]):
        ob = np.ones(len(w), dtype=bool) if missing is None else ~missing[:, i]
        changed = Xpk[ob, i] != X0k[ob, i]
        if changed.any():
            wo = w[ob]
            shift = (wo @ X0k[ob, i] - wo @ Xpk[ob, i]) / wo.sum()
            # a column whose weighted mean the method kept already (IPSO's two parts): no shift of
            # rounding noise, which would lift its zeros off 0
            if abs(shift) > 1e-9 * max(float(np.abs(X0k[ob, i]).max()), np.finfo(float).tiny):
                Xpk[ob, i] += shift


def check_strata(data, strata, method, sensitive):
    """The strata as a list of column names, and the groups' row positions."""
    if isinstance(strata, str):
        strata = [strata]
    if not isinstance(strata, (list, tuple)) or not strata or not all(isinstance(s, str) for s in strata):
        raise TypeError(f"strata={strata!r} must be a column name or a list of them, e.g. strata=['region'].")
    missing = [s for s in strata if s not in data.columns]
    if missing:
        raise ValueError(f"strata names column(s) {missing} that are not in the data; name existing columns, e.g. "
                         f"strata={[str(c) for c in data.columns[:1]]!r}.")
    if method not in methods(strata=True):
        raise ValueError(f"strata= works with {', '.join(methods(strata=True))}; method={method!r} does not take it. "
                         f"Protect each group yourself, or choose one of those.")
    if sensitive is not None and set(sensitive) & set(strata):
        raise ValueError(f"strata column(s) {sorted(set(sensitive) & set(strata))} cannot also be sensitive: "
                         f"strata are released unchanged.")
    na = [s for s in strata if data[s].isna().any()]
    if na:
        raise ValueError(f"strata column(s) {na} have missing values; give those records a group of their own "
                         f"(e.g. 'unknown') or drop them.")
    groups = data.reset_index(drop=True).groupby(list(strata), sort=True).indices
    return list(strata), groups


def _label(strata, key):
    key = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{s}={v}" for s, v in zip(strata, key))


def protect_strata(data, method, sensitive, seed, options, strata, protect_one):
    """Protect each group with ``protect_one(frame, method, sensitive, seed, options)`` and
    put the release together in the original record order."""
    from .._core.streams import child_seeds
    from .._risk.profile import RiskProfile

    data = check_dataframe(data)
    strata, groups = check_strata(data, strata, method, sensitive)
    opts = dict(options)
    opts["exclude"] = list(dict.fromkeys(list(opts.get("exclude") or []) + strata))
    from .._core.validation import numeric_columns
    m = len([c for c in numeric_columns(data) if c not in set(opts["exclude"])])
    need = min_stratum_size(method, m, opts.get("k", 3) if isinstance(opts.get("k", 3), (int, float)) else 3)
    small = [(k, len(ix)) for k, ix in groups.items() if len(ix) < need]
    if small:
        shown = "; ".join(f"{_label(strata, k)}: {n} record(s)" for k, n in small[:6])
        more = f" (and {len(small) - 6} more)" if len(small) > 6 else ""
        raise ValueError(f"strata: {len(small)} group(s) are too small for {method} with {m} variable(s), which "
                         f"needs at least {need} records a group: {shown}{more}. Merge them with a neighbouring "
                         f"group (recode the strata column), or protect without strata.")
    seeds = child_seeds(seed, "strata", len(groups))
    work = data.reset_index(drop=True)
    parts, profiles, notes, labels, plaus_parts = [], [], [], [], []
    first = None
    for i, (key, ix) in enumerate(groups.items()):
        label = _label(strata, key)
        try:
            res = protect_one(work.iloc[ix], method, sensitive, int(seeds[i]), dict(opts))
        except ValueError as exc:
            raise type(exc)(f"in the group {label} ({len(ix)} records): {exc}") from None
        first = first or res
        plaus_parts.append(res.plausibility)
        parts.append(res.data)
        profiles.append(res.risk)
        labels.append(label)
        notes += [f"{label}: {n}" for n in res.notes]
    out = pd.concat(parts).sort_index()
    out.index = data.index
    out = out[list(data.columns)]
    risk = _combine_risk(profiles, labels, RiskProfile)
    plaus = _combine_plausibility([r for r in plaus_parts], data, out)
    notes = [f"protected within {len(groups)} group(s) of {', '.join(strata)} (each group's means kept as the "
             f"method keeps a file's; the risk floors checked within each group)"] + notes
    options = {**first.options, "strata": strata, "seed": seed}
    return out, risk, plaus, tuple(notes), options


def _combine_risk(profiles, labels, RiskProfile):
    """One profile for the whole release: per variable the worst value over the groups, the
    bands of every group (with its label), every group's violations named by group."""
    v = pd.concat([p.variables.assign(stratum=lab) for p, lab in zip(profiles, labels)])
    from .._risk.registry import columns

    close = list(columns())  # each intruder's wide column (the registry's)
    worst = {"perturbed_share": "min", "abs_cor": "max", **{c: "max" for c in close[:3]}, "residual_cor": "max",
             "prior": "max", **{c: "max" for c in close[3:]}, "beyond_prior": "max", "worst_band_close": "max",
             "ok": "all"}
    agg = {c: f for c, f in worst.items() if c in v.columns}
    variables = v.groupby(level=0, sort=False).agg(agg)
    if "worst_band" in v.columns:
        idx = v.reset_index().groupby(v.index.name or "index", sort=False)["worst_band_close"].idxmax()
        flat = v.reset_index()
        variables["worst_band"] = [f"{flat.loc[i, 'stratum']}: {flat.loc[i, 'worst_band']}" for i in idx.reindex(variables.index)]
    # the intruder that did best, in the group where it did best
    flat = v.reset_index()
    idx = flat.groupby(v.index.name or "index", sort=False)["beyond_prior"].idxmax()
    for c in ("intruder", "with_release", "prior_model", "intruders", "reported_only"):
        variables[c] = [flat.loc[i, c] for i in idx.reindex(variables.index)]
    variables = variables[[c for c in profiles[0].variables.columns if c in variables.columns]]
    bands = pd.concat([p.bands.assign(stratum=lab) for p, lab in zip(profiles, labels)], ignore_index=True)
    violations = tuple(f"{lab}: {msg}" for p, lab in zip(profiles, labels) for msg in p.violations)
    failing = tuple(dict.fromkeys(f for p in profiles for f in p.failing))
    intruders = pd.concat([p.intruders.assign(stratum=lab) for p, lab in zip(profiles, labels)], ignore_index=True)
    return RiskProfile(variables, bands, violations, profiles[0].floors, sum(p.linked_sample for p in profiles),
                       failing, intruders)


def _combine_plausibility(parts, data, out):
    """The groups' plausibility tables as one: values clipped summed over the groups, the
    change of each mean and the sd ratio measured on the whole release."""
    plaus = parts[0].copy()
    plaus["clipped"] = sum(p["clipped"] for p in parts)
    for c in plaus.index:
        x = pd.to_numeric(data[c], errors="coerce").to_numpy(float)
        y = pd.to_numeric(out[c], errors="coerce").to_numpy(float)
        ob = ~np.isnan(x)
        sd = x[ob].std()
        plaus.loc[c, "mean_change_sd"] = (y[ob].mean() - x[ob].mean()) / sd if sd > 0 else 0.0
        plaus.loc[c, "sd_ratio"] = y[ob].std() / sd if sd > 0 else 1.0
    return plaus
