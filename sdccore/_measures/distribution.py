"""The battery's distribution figures (``battery.py``): the share of the total held by the
largest records, the share of records below 60 % of the median (the at-risk-of-poverty rate of
an income, Eurostat's line), the Gini coefficient and the share of records at 0 (the extensive
margin: exporters among firms, recipients of a benefit), each weighted where the file has weights."""

from __future__ import annotations

import numpy as np

__all__ = []

LOW_LINE = 0.6  # the low-value line: this share of the median (Eurostat's at-risk-of-poverty threshold)
ZERO_SHARE = 0.05  # the share of zeros is an analysis where at least this share of the original is 0
ZERO_DOMAIN = 30   # records a domain level needs for its share of zeros to be compared


def top_share(v, w, share):
    """The share of the (weighted) total held by the largest ``share`` of the (weighted)
    records; the record on the boundary counts with the part of its weight inside (unweighted:
    the smallest whole number of records covering the share, as before)."""
    ok = np.isfinite(v) & (np.isfinite(w) if w is not None else True)
    v = v[ok]
    if len(v) == 0:
        return np.nan
    order = np.argsort(-v, kind="stable")
    if w is None:
        k = max(1, int(np.ceil(share * len(v) - 1e-9)))
        total = np.sum(v)
        return float(np.sum(v[order[:k]]) / total) if total > 0 else np.nan
    ww = w[ok][order]
    vv = v[order]
    total = np.sum(vv * ww)
    if total <= 0:
        return np.nan
    inside = np.clip(share * ww.sum() - (np.cumsum(ww) - ww), 0, ww)  # each record's weight within the top
    return float(np.sum(vv * inside) / total)


def _wquantile(v, w, q):
    """The (weighted) q-quantile: the smallest value whose cumulative weight reaches q of the
    total (unweighted: numpy's default, linear interpolation)."""
    if w is None:
        return float(np.quantile(v, q))
    o = np.argsort(v, kind="stable")
    c = np.cumsum(w[o])
    return float(v[o][np.searchsorted(c, q * c[-1])])


def _low_share(v, w):
    """The (weighted) share of records below LOW_LINE of the (weighted) median."""
    line = LOW_LINE * _wquantile(v, w, 0.5)
    return float(np.mean(v < line)) if w is None else float(np.sum(w[v < line]) / np.sum(w))


def _gini(v, w):
    """The (weighted) Gini coefficient: the mean absolute difference between two records over
    twice the mean, from the sorted values (unweighted: sum (2i - n - 1) v_(i) / (n sum v))."""
    o = np.argsort(v, kind="stable")
    v = v[o]
    ww = np.ones(len(v)) if w is None else w[o]
    total = np.sum(ww * v)
    if total <= 0:
        return np.nan
    cw = np.cumsum(ww)
    W = cw[-1]
    # sum_i w_i v_i (F_i + F_(i-1) - 1) with F the cumulative weight share: the area form
    return float(np.sum(ww * v * ((cw + cw - ww) / W - 1.0)) / total)


def distribution(yo, yr, w):
    """The low-value share and the Gini coefficient of a non-negative y, original against
    release, as ``_variable``'s tuples (each on its file's observed values)."""
    def finite(y):
        ok = np.isfinite(y) & (np.isfinite(w) if w is not None else True)
        return y[ok], (w[ok] if w is not None else None)

    (vo, wo), (vr, wr) = finite(yo), finite(yr)
    if len(vo) < 2 or vo.min() < 0:
        na = (np.nan, np.nan, np.nan, "does not apply (negative values: not an amount)", None)
        return na, na
    if len(vr) < 2:
        return ((np.nan, np.nan, np.nan, "no released values", False),) * 2
    lo, lr = _low_share(vo, wo), _low_share(vr, wr)
    go, gr = _gini(vo, wo), _gini(vr, wr)
    note = "" if vr.min() >= 0 else f"{int(np.sum(vr < 0))} released value(s) below 0"
    return ((lo, lr, abs(lr - lo), f"each file's own line: {LOW_LINE:.0%} of its median" + (f"; {note}" if note else ""),
             None),
            (go, gr, abs(gr - go) if np.isfinite(go) and np.isfinite(gr) else np.nan, note, None))


def _zero_share(v, w):
    """The (weighted) share of the finite values that are exactly 0 (NaN where there is none)."""
    ok = np.isfinite(v) & (np.isfinite(w) if w is not None else True)
    if not ok.any():
        return np.nan
    z = v[ok] == 0
    return float(z.mean()) if w is None else float(np.sum(w[ok][z]) / np.sum(w[ok]))


def zero_share(original, yo, yr, doms, levels, w):
    """The extensive margin of an amount with a mass at 0 (the share of firms that export, of
    persons who receive a benefit): the largest change, in points, of the (weighted) share of
    records at exactly 0, over the whole file and each domain level of at least ZERO_DOMAIN
    records (exporters by sector).  A release that redraws the amount around a fit puts the
    non-exporters at small positive (or clipped) values, which the mean and the quantiles of
    the positive part do not show.  Applies to a variable never negative in the original with
    at least ZERO_SHARE of its values 0.  As the battery's tuple."""
    fo = yo[np.isfinite(yo)]
    if len(fo) < 2 or fo.min() < 0:
        return (np.nan, np.nan, np.nan, "does not apply (negative values: not an amount with a mass at 0)", None)
    so = _zero_share(yo, w)
    if not so >= ZERO_SHARE:
        return (so, np.nan, np.nan, f"does not apply (fewer than {ZERO_SHARE:.0%} of the values are 0)", None)
    sr = _zero_share(yr, w)
    if not np.isfinite(sr):
        return (so, np.nan, np.nan, "no released values", False)
    # rounded to 1e-12: shares of whole records (2 of 100 records: 0.2 - 0.18) on the target exactly
    worst, where = round(abs(sr - so), 12), f"the whole file: {so:.1%} -> {sr:.1%} at 0"
    for d in doms:
        g = original[d].to_numpy()
        for lv in levels[d]:
            m = g == lv
            if m.sum() < ZERO_DOMAIN:
                continue
            a, b = _zero_share(yo[m], None if w is None else w[m]), _zero_share(yr[m], None if w is None else w[m])
            if np.isfinite(a) and np.isfinite(b) and round(abs(b - a), 12) > worst:
                worst, where = round(abs(b - a), 12), f"{d} = {lv}: {a:.1%} -> {b:.1%} at 0"
    return (so, sr, worst, where, None)
