"""The risk floors' per-record figures over *every* record at scale: for each checked
variable, |cor(original, protected)|, the share of records whose own protected value stays
within the tolerance of the truth, and that share within every size band and among the
largest 1 % of records, exactly as ``risk_profile`` defines them in memory (bands by the
records' stable order of value, cut as ``numpy.array_split`` cuts; the largest
max(top_records, ceil(1 % of n)) records on their own).

Without this the Dask engine would estimate them from its risk sample, where the file's
largest 1 % is a couple of hundred records and the very largest firms are rarely drawn.
Linking and reconstruction stay on the sample (in memory too they use 5,000 records).

How, in two passes over the original and the release side by side, without sorting the
file: a band's share is C(b) - C(a) over its ranks [a, b), where C(k) counts the close
records among the k smallest values.  For each rank k that cuts a band, the value at
rank k is bracketed by the sample's quantiles (5 standard errors either side; the whole
range when that misses), pass 1 counts per partition the values and the close records
below each of BINS bin edges in the bracket, and pass 2 collects the one bin holding rank
k with each value's record number and closeness; sorted by (value, record number), as a
stable sort orders the file, the bin gives the value at rank k and C(k) exactly, ties
included.
"""

from __future__ import annotations

import numpy as np

from .._io.partitions import _add, _tree

BINS = 1024  # bins per bracket in the counting pass


def band_starts(n, bands):
    """Where each of ``bands`` size bands starts in the order of value (and n at the end):
    the first n mod bands bands hold one record more, as ``numpy.array_split`` cuts."""
    q, r = divmod(n, bands)
    return [b * q + min(b, r) for b in range(bands + 1)]


def brackets(srt, ks, n, vmin, vmax):
    """Values bracketing each wanted order statistic ``ks`` (0-based ranks in a file of n)
    per column, from the sorted sample ``srt``: 5 standard errors of the sample quantile
    either side, the file's minimum and maximum at the ends."""
    s = srt.shape[0]
    q = np.clip(np.asarray(ks, dtype=np.float64) / max(n - 1, 1), 0, 1)
    half = 5 * np.sqrt(q * (1 - q) / s) + 2.0 / s
    ilo = np.floor((q - half) * (s - 1)).astype(np.int64)
    ihi = np.ceil((q + half) * (s - 1)).astype(np.int64)
    lo = np.where((ilo <= 0)[:, None], vmin, srt[np.clip(ilo, 0, s - 1)])
    hi = np.where((ihi >= s - 1)[:, None], vmax, srt[np.clip(ihi, 0, s - 1)])
    return lo, hi


def _edges(lo, hi, bins):
    top = np.nextafter(hi, np.inf)  # bins half-open: the last one holds hi itself
    edges = lo[..., None] + (top - lo)[..., None] * (np.arange(bins + 1) / bins)
    edges[..., -1] = top
    return edges


def _pass_counts(Xb, Yb, check, tol, mean, edges):
    """One partition: per checked column and wanted rank, the values and the close records
    below each bin edge; and the sums for |cor| about the original's mean."""
    from .._core.plausible import close as _close

    X = np.asarray(Xb, dtype=np.float64)
    Y = np.asarray(Yb, dtype=np.float64)
    below = np.zeros(edges.shape, dtype=np.int64)  # (wanted, checked, edge)
    cbelow = np.zeros(edges.shape, dtype=np.int64)
    sums = np.zeros((len(check), 5))
    close = np.zeros(len(check), dtype=np.int64)
    for a, j in enumerate(check):
        x, y = X[:, j], Y[:, j]
        # the values below each edge by placing the few edges among the sorted values, not
        # each value among the edges: numpy sorts 60,000 values in under 1 ms, where placing
        # them among 20 x 1,025 edges took 8 ms (the wanted ranks' brackets); a missing value
        # sorts last and is below no edge, a value equal to an edge is not below it
        ok = _close(x, y, tol)
        close[a] = ok.sum()
        below[:, a, :] = np.searchsorted(np.sort(x), edges[:, a, :], "left")
        cbelow[:, a, :] = np.searchsorted(np.sort(x[ok]), edges[:, a, :], "left")
        xc, yc = x - mean[j], y - mean[j]
        sums[a] = [xc.sum(), yc.sum(), (xc * xc).sum(), (yc * yc).sum(), (xc * yc).sum()]
    return {"below": below, "cbelow": cbelow, "sums": sums, "close": close}


def _pass_collect(Xb, Yb, check, tol, bins, offset):
    """One partition: per wanted rank and checked column, the values in the bin
    ``bins = (blo, bhi)`` holding it, with their record numbers and closeness."""
    from .._core.plausible import close as _close

    blo, bhi = bins
    X = np.asarray(Xb, dtype=np.float64)
    Y = np.asarray(Yb, dtype=np.float64)
    out = []
    for w in range(blo.shape[0]):
        row = []
        for a, j in enumerate(check):
            x = X[:, j]
            at = np.flatnonzero((x >= blo[w, a]) & (x < bhi[w, a]))
            row.append((x[at], at + offset, _close(x[at], Y[at, j], tol)))
        out.append(row)
    return out


def _at(E, b):
    """E[w, a, b[w, a]] for every wanted rank w and column a."""
    return np.take_along_axis(E, b[:, :, None], axis=2)[:, :, 0]


def _join(a, b):
    return [[tuple(np.concatenate([u, v]) for u, v in zip(ca, cb)) for ca, cb in zip(ra, rb)] for ra, rb in zip(a, b)]


def _rank_statistics(xb, yb, offsets, check, tol, mean, ranks, sample, n, cmin, cmax):
    """The passes over the whole file: the sums and close counts (``tot``), and at each rank
    in ``ranks`` each column's value (``stat``) and the close records below it (``C``),
    found in brackets from the sample, widened once where the sample missed."""
    import dask
    from dask import delayed

    stat = np.empty((len(ranks), len(check)))
    C = np.zeros((len(ranks), len(check)), dtype=np.int64)
    if ranks:
        ks = np.array(ranks, dtype=np.int64)
        lo, hi = brackets(np.sort(np.asarray(sample, dtype=np.float64)[:, check], axis=0), ks, n, cmin, cmax)
        for attempt in (0, 1):
            edges = _edges(lo, hi, BINS)
            shared = delayed(edges, pure=True)  # one key that every task reads, not a copy in each task
            (tot,) = dask.compute(_tree([delayed(_pass_counts)(a, b, check, tol, mean, shared)
                                         for a, b in zip(xb, yb)], _add))
            below, cbelow = tot["below"], tot["cbelow"]
            inside = (below[:, :, 0] <= ks[:, None]) & (below[:, :, -1] > ks[:, None])
            if inside.all() or attempt:
                break
            lo = np.where(inside, lo, cmin)  # a bracket the sample missed: the whole range
            hi = np.where(inside, hi, cmax)
        if not inside.all():
            raise RuntimeError("whole_file_figures: a bracket missed after widening to the whole range")
        b = np.array([[np.searchsorted(below[w, a], ks[w], "right") - 1 for a in range(len(check))]
                      for w in range(len(ks))]).clip(0, BINS - 1)
        blo, bhi = _at(edges, b), _at(edges, b + 1)
        start, cstart = _at(below, b), _at(cbelow, b)
        sb = delayed((blo, bhi), pure=True)
        (got,) = dask.compute(_tree([delayed(_pass_collect)(a, bb, check, tol, sb, int(o))
                                     for a, bb, o in zip(xb, yb, offsets)], _join))
        for w, k in enumerate(ks):
            for a in range(len(check)):
                v, idx, cl = got[w][a]
                order = np.lexsort((idx, v))  # by value, then record number: a stable sort's order
                r = int(k - start[w, a])
                stat[w, a] = v[order][r]
                C[w, a] = cstart[w, a] + int(cl[order][:r].sum())
    else:  # no cut: one band (or none), the sums alone
        (tot,) = dask.compute(_tree([delayed(_pass_counts)(a, b, check, tol, mean, np.zeros((0, len(check), 2)))
                                     for a, b in zip(xb, yb)], _add))
    return tot, stat, C


def _column_figures(a, tot, stat, C, at, n, cmin, cmax, labels, spans):
    """One checked column's |cor|, close share and size bands over the whole file."""
    total = int(tot["close"][a])

    def closes(k):  # close records among the k smallest values
        return 0 if k == 0 else total if k == n else int(C[at[k], a])

    def value(k):
        return float(cmin[a]) if k == 0 else float(cmax[a]) if k == n - 1 else float(stat[at[k], a])

    bands = {}
    for lab, (s0, s1) in zip(labels, spans):
        if s1 > s0:
            bands[lab] = ((closes(s1) - closes(s0)) / (s1 - s0), s1 - s0, value(s0), value(s1 - 1))
    sx, sy, sxx, syy, sxy = tot["sums"][a]
    vx, vy = sxx - sx * sx / n, syy - sy * sy / n
    cov = sxy - sx * sy / n
    if vx > 0 and vy > 0:
        cor = abs(float(cov / np.sqrt(vx * vy)))
    else:  # as in memory: a constant released unchanged is a copy
        cor = 1.0 if vx == vy == 0 and sx == sy else 0.0
    return {"cor": min(cor, 1.0), "all": total / n, "bands": bands}


def whole_file_figures(X, Y, check, n, mean, vmin, vmax, sample, floors):
    """For each checked column index j of the dask arrays ``X`` (original) and ``Y``
    (release), chunked alike by partition: {"cor": |cor(x, x')|, "all": the share of
    records within ``floors.tolerance`` of the truth, "bands": {label: (share, records,
    smallest value, largest value)}} over all n records, labels "1".."bands" and "top 1 %"
    as ``risk_profile`` names them.  ``sample``: original records drawn uniformly (rows x
    columns), for the brackets; ``vmin``/``vmax``: the file's per-column minimum/maximum."""
    check = [int(j) for j in check]
    tol = floors.tolerance
    starts = band_starts(n, floors.bands)
    top = max(floors.top_records, int(np.ceil(0.01 * n)))
    cuts = sorted({k for k in starts[1:-1] if 0 < k < n} | ({n - top} if top < n else set()))
    ranks = sorted(set(cuts) | {k - 1 for k in cuts})  # a band's largest value is at its end's rank - 1
    labels = [str(b + 1) for b in range(floors.bands)] + (["top 1 %"] if top < n else [])
    spans = [(starts[b], starts[b + 1]) for b in range(floors.bands)] + ([(n - top, n)] if top < n else [])
    cmin, cmax = np.asarray(vmin)[check], np.asarray(vmax)[check]
    xb, yb = X.rechunk({1: -1}).to_delayed()[:, 0], Y.rechunk({1: -1}).to_delayed()[:, 0]
    offsets = np.concatenate([[0], np.cumsum(X.chunks[0])])[:-1]
    tot, stat, C = _rank_statistics(xb, yb, offsets, check, tol, mean, ranks, sample, n, cmin, cmax)
    at = {k: w for w, k in enumerate(ranks)}
    return {j: _column_figures(a, tot, stat, C, at, n, cmin, cmax, labels, spans) for a, j in enumerate(check)}
