"""The battery's domains (``battery.py``): which columns' levels are domains, the domain means
an office publishes, and the gaps between domains an analyst reports (the sexes' difference in
mean income, a region against the largest one).

A mean within 10 % in every domain can still turn a gap round: with incomes of 100 and 104 in
two regions, 97 and 106 are each within 10 % and the gap is 9 where it was 4; 103 and 101 put
the regions in the other order.  The gap analysis is the regression an analyst runs for it, y
on the indicators of one domain column's levels (the largest level the reference), fitted on
the original and on the release: the smallest confidence-interval overlap of the contrasts
(every gap's inference must hold), weighted (WLS, sandwich errors) where the file has weights;
the note says which gap is worst and whether the domain means keep their order."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = []

MAX_LEVELS = 30  # a whole-number column with at most this many levels released unchanged is a domain
MIN_DOMAIN = 5   # records a domain level needs for its mean to be compared


def find_domains(original, released, given, exclude, selective):
    """The domain columns: those given (any type; one not in the data is refused), else in
    general protection the numeric columns released unchanged with 2 to MAX_LEVELS whole-number
    levels (the set-apart columns), not in selective protection (the public variables are
    released unchanged too, and a count among them is not a domain); in either, the text
    columns released unchanged with 2 to MAX_LEVELS levels, at least two of them of MIN_DOMAIN
    records, and no missing cell (region, sex)."""
    if given is not None:
        given = [given] if isinstance(given, str) else list(given)
        missing = [c for c in given if c not in original.columns]
        if missing:
            raise ValueError(f"domains: {missing} are not columns of the data; name the columns whose levels are the "
                             f"domains (e.g. region, sex, year).")
        return given
    out = []
    for c in original.columns:
        if c in exclude:
            continue
        o, r = original[c], released[c]
        if not o.equals(r) or o.isna().any():
            continue
        if not pd.api.types.is_numeric_dtype(o):  # a code in words (region, sex): a domain in either protection
            # (an id of a small file is not: at least two levels must hold MIN_DOMAIN records)
            if 2 <= o.nunique() <= MAX_LEVELS and int((o.value_counts() >= MIN_DOMAIN).sum()) >= 2:
                out.append(c)
            continue
        if selective:
            continue
        v = o.to_numpy(float)
        k = len(np.unique(v))
        if 2 <= k <= MAX_LEVELS and np.all(v == np.round(v)):
            out.append(c)
    return out


def wmean(v, w):
    """The (weighted) mean of the finite values (NaN where there is none)."""
    ok = np.isfinite(v) & (np.isfinite(w) if w is not None else True)
    if w is None:
        return float(v[ok].mean()) if ok.any() else np.nan
    return float(np.sum(v[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else np.nan


def _sub(w, m):
    return None if w is None else w[m]


def _worst_level(original, yo, yr, doms, levels, w, least, stat, word, none):
    """The battery's tuple of the largest relative change of ``stat(values, weights)`` over the
    domain levels of at least ``least`` records (the original's figure nonzero); a level whose
    figure the release cannot give (every value blank) misses the target."""
    worst, where = np.nan, ""
    for d in doms:
        g = original[d].to_numpy()
        for lv in levels[d]:
            m = g == lv
            if m.sum() < least:
                continue
            so, sr = stat(yo[m], _sub(w, m)), stat(yr[m], _sub(w, m))
            if so == 0 or not np.isfinite(so):
                continue
            if not np.isfinite(sr):
                return (np.nan, np.nan, np.nan, f"{d} = {lv}: no released value", False)
            e = abs(sr - so) / abs(so)
            if not np.isfinite(worst) or e > worst:
                worst, where = e, f"{d} = {lv}: {word} {so:.6g} -> {sr:.6g}"
    return (np.nan, np.nan, worst, where or none, None)


def domain_means(original, yo, yr, doms, levels, w):
    """The largest relative error of y's mean in a domain, as the battery's tuple (original,
    released, kept, note, forced)."""
    return _worst_level(original, yo, yr, doms, levels, w, MIN_DOMAIN, wmean, "mean", "no domain column")


SPREAD_RECORDS = 20  # records a domain level needs for its spread to be compared


def _wsd(v, w):
    ok = np.isfinite(v) & (np.isfinite(w) if w is not None else True)
    if ok.sum() < 2:
        return np.nan
    m = wmean(v, w)
    d = (v[ok] - m) ** 2
    return float(np.sqrt(d.mean() if w is None else np.sum(w[ok] * d) / np.sum(w[ok])))


def domain_spread(original, yo, yr, doms, levels, w):
    """The largest relative change of y's standard deviation within a domain (each level of at
    least SPREAD_RECORDS records): a release that keeps the pooled moments can still make the
    women's incomes as dispersed as the men's (an outside analyst: variance ratio 1.48 -> 1.02),
    which variance comparisons, Levene tests and heteroskedastic models read.  As the battery's
    tuple."""
    return _worst_level(original, yo, yr, doms, levels, w, SPREAD_RECORDS, _wsd, "sd",
                        f"no domain level of at least {SPREAD_RECORDS} records")


def _contrasts(g, levels, y_ok):
    """(the levels compared, largest first, and the design: intercept and one indicator per
    level but the largest) over the records of levels with at least MIN_DOMAIN values of y."""
    counts = [(int(np.sum((g == lv) & y_ok)), i, lv) for i, lv in enumerate(levels)]
    kept = [lv for c, _, lv in sorted(counts, key=lambda t: (-t[0], t[1])) if c >= MIN_DOMAIN]
    if len(kept) < 2:
        return kept, None
    X = np.column_stack([np.ones(len(g))] + [(g == lv).astype(float) for lv in kept[1:]])
    return kept, X


def _level_means(y, g, kept, w):
    """The (weighted) mean of y in each level of ``kept``."""
    return np.array([wmean(y[g == lv], _sub(w, g == lv)) for lv in kept])


def _order_note(kept, mo, mr):
    """Whether the domain means (original ``mo``, released ``mr``) keep their order: the pairs of
    levels whose means change order."""
    i, j = np.triu_indices(len(kept), 1)
    flips = np.sign(mo[i] - mo[j]) * np.sign(mr[i] - mr[j]) < 0
    if not flips.any():
        return f"the {len(kept)} means keep their order"
    k = int(np.flatnonzero(flips)[0])
    return (f"{int(flips.sum())} of {len(i)} pairs of means in the other order (e.g. {kept[i[k]]} "
            f"{mo[i[k]]:.6g} vs {kept[j[k]]} {mo[j[k]]:.6g} -> {mr[i[k]]:.6g} vs {mr[j[k]]:.6g})")


def domain_gaps(original, yo, yr, doms, levels, w, overlap):
    """The gaps between domains (module docstring) as the battery's tuple; ``overlap(yo, X, yr,
    X, w)`` is the battery's slope overlap (kept, R2 original, R2 released, note, forced)."""
    found = []
    y_ok = np.isfinite(yo)
    for d in doms:
        g = original[d].to_numpy()
        kept, X = _contrasts(g, levels[d], y_ok)
        if X is None:
            continue
        rows = np.flatnonzero(np.isin(g, kept))
        ov, _, _, note, forced = overlap(yo[rows], X[rows], yr[rows], X[rows], _sub(w, rows))
        if not np.isfinite(ov) and forced is not False:
            continue
        mo, mr = _level_means(yo, g, kept, w), _level_means(yr, g, kept, w)
        go, gr = mo[1:] - mo[0], mr[1:] - mr[0]  # each level's gap to the reference (the first of kept)
        k = int(np.nanargmax(np.abs(gr - go))) if np.isfinite(gr - go).any() else 0
        text = (f"{d}: {len(kept) - 1} gap(s) to {d} = {kept[0]}; the largest change {kept[k + 1]}: "
                f"{go[k]:.6g} -> {gr[k]:.6g}; {_order_note(kept, mo, mr)}; {note}")
        found.append((forced is not False, ov if np.isfinite(ov) else -np.inf, text, forced))
    if not found:
        return (np.nan, np.nan, np.nan, f"no domain column with two levels of at least {MIN_DOMAIN} records", None)
    _, ov, text, forced = min(found, key=lambda t: (t[0], t[1]))
    return (np.nan, np.nan, ov if np.isfinite(ov) else np.nan, text, forced)
