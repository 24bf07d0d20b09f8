"""The measures at scale for the Dask engine (``evaluate --engine dask``): DBRL and ID on
a sample of original records against all protected records, PIL from map-reduce moments
and exact quantiles, PS on subsamples."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._io.partitions import moments
from .._io.partitions import _add, _tree, _workers_ready
from .._core.streams import dask_sequence


@dataclass(frozen=True)
class DaskEvaluation:
    """What ``evaluate_dask`` returns: per score its estimate, 95 % interval and how it was
    obtained; the number of records and of sampled records; PIL per statistic; the sampled
    records' own DBRL and ID values (indexed by record number); ``notes``: the plug-in
    analyses left out at scale, and why."""

    table: object
    n: int
    sample: int
    pil: dict
    records: object
    notes: tuple = ()


def _link_part(B, A, cols, mean, sd, target, idv):
    """One partition of the protected file against the sampled original records A
    (standardised on ``cols``): each record's smallest squared distance here, how many
    records tie at it, whether its own record is among them, and the first nearest record's
    values on ``idv``."""
    from .._risk.linkage import _nearest

    Y = B.to_numpy(dtype=np.float64)
    s = A.shape[0]
    if Y.shape[0] == 0:
        return {"d": np.full(s, np.inf), "t": np.zeros(s, np.int64), "o": np.zeros(s, bool),
                "y": np.full((s, len(idv)), np.nan)}
    first, ties, own, dist = _nearest(A, (Y[:, cols] - mean[cols]) / sd[cols], target)
    return {"d": dist, "t": ties, "o": own, "y": Y[first][:, idv]}


def _link_merge(a, b):
    d = np.minimum(a["d"], b["d"])
    ia, ib = a["d"] == d, b["d"] == d
    return {"d": d, "t": a["t"] * ia + b["t"] * ib, "o": (a["o"] & ia) | (b["o"] & ib),
            "y": np.where(ia[:, None], a["y"], b["y"])}


def _rank_part(B, idv, xy):
    """Per sampled record and variable: how many of this partition's protected values are
    below x, at most x, and below y (``xy = (x, y)``)."""
    x, y = xy
    Y = B.to_numpy(dtype=np.float64)[:, idv]
    out = {"lx": np.zeros(x.shape, np.int64), "qx": np.zeros(x.shape, np.int64), "ly": np.zeros(x.shape, np.int64)}
    for a in range(Y.shape[1]):
        v = np.sort(Y[:, a])
        out["lx"][:, a] = np.searchsorted(v, x[:, a], "left")
        out["qx"][:, a] = np.searchsorted(v, x[:, a], "right")
        out["ly"][:, a] = np.searchsorted(v, y[:, a], "left")
    return out


def _pil_part(P, mean, orders, cross):
    """One partition's sums for PIL: central powers (about the file's mean) and the moment
    matrices."""
    C = P.to_numpy(dtype=np.float64) - mean
    out = {"S": {r: (C ** r).sum(axis=0) for r in orders}, "M11": C.T @ C}
    if cross:
        C2 = C * C
        out["M22"] = C2.T @ C2
        out["M31"] = (C2 * C).T @ C
    return out


QBINS = 4096  # bins per quantile bracket in the counting pass


def _q_count(P, edges):
    """Per column and level: how many of this partition's values lie below each bin edge."""
    X = P.to_numpy(dtype=np.float64)
    out = np.empty(edges.shape, np.int64)
    for j in range(X.shape[1]):
        v = np.sort(X[:, j])
        out[:, j] = np.searchsorted(v, edges[:, j].ravel(), "left").reshape(out[:, j].shape)
    return out


def _q_collect(P, lo, hi):
    """Per column and wanted order statistic: this partition's values in [lo, hi)."""
    X = P.to_numpy(dtype=np.float64)
    out = []
    for j in range(X.shape[1]):
        v = np.sort(X[:, j])
        a = np.searchsorted(v, lo[:, j], "left")
        b = np.searchsorted(v, hi[:, j], "left")
        out.append([v[x:y] for x, y in zip(a, b)])
    return out


def _q_join(a, b):
    return [[np.concatenate([x, y]) for x, y in zip(ca, cb)] for ca, cb in zip(a, b)]


def exact_quantiles(ddf, cols, levels, vmin, vmax, sample, n):
    """``np.quantile(X, levels, axis=0)`` (linear interpolation, the same bits) over every
    partition without sorting the file: each wanted order statistic is bracketed by the
    sample's quantiles (5 standard errors either side, the file's minimum and maximum at
    the ends), one pass counts the values below each of QBINS bin edges in the bracket,
    and a second pass collects the values of the one bin holding it (a bracket that misses,
    which 5 standard errors make rare, is widened to the whole range)."""
    import dask

    from .floors import _edges, brackets

    levels = np.asarray(levels, dtype=np.float64)
    m = len(cols)
    h = (n - 1) * levels  # numpy's virtual index, method 'linear'
    k1 = np.floor(h).astype(np.int64)
    k2 = np.minimum(k1 + 1, n - 1)
    gamma = h - k1
    ks = np.concatenate([k1, k2])  # the order statistics wanted, per level (x2), per column
    lo, hi = brackets(np.sort(sample, axis=0), ks, n, vmin, vmax)
    parts = ddf[cols].to_delayed()
    for attempt in (0, 1):
        edges = _edges(lo, hi, QBINS)  # (wanted, column, edge); the last bin holds hi itself
        shared = dask.delayed(edges, pure=True)  # one key every task reads, not a copy in each
        (below,) = dask.compute(_tree([dask.delayed(_q_count)(p, shared) for p in parts], _add))
        inside = (below[:, :, 0] <= ks[:, None]) & (below[:, :, -1] > ks[:, None])
        if inside.all() or attempt:
            break
        lo = np.where(inside, lo, vmin)
        hi = np.where(inside, hi, vmax)
    if not inside.all():
        raise RuntimeError("exact_quantiles: a bracket missed after widening to the whole range")
    # the bin holding each wanted order statistic, then its values
    b = np.array([[np.searchsorted(below[w, j], ks[w], "right") - 1 for j in range(m)] for w in range(len(ks))])
    b = np.clip(b, 0, QBINS - 1)
    blo = np.take_along_axis(edges, b[:, :, None], axis=2)[:, :, 0]
    bhi = np.take_along_axis(edges, b[:, :, None] + 1, axis=2)[:, :, 0]
    start = np.take_along_axis(below, b[:, :, None], axis=2)[:, :, 0]
    (vals,) = dask.compute(_tree([dask.delayed(_q_collect)(p, blo, bhi) for p in parts], _q_join))
    stat = np.empty((len(ks), m))
    for j in range(m):
        for w in range(len(ks)):
            v = np.sort(vals[j][w])
            stat[w, j] = v[ks[w] - start[w, j]]
    a, bb = stat[:len(levels)], stat[len(levels):]
    g = gamma[:, None]
    diff = bb - a
    return np.where(g >= 0.5, bb - diff * (1 - g), a + diff * g)


def evaluate_dask(original, protected, *, sensitive=None, sample=5000, groups=5, seed=0, pil_statistics=7,
                  ps_order=2):
    """The measures at scale (``evaluate``'s definitions; the release in the original's
    record order): per score its estimate, a 95 % interval and how it was obtained.

    - **DBRL**: ``sample`` original records drawn at random, each linked against *all* n
      protected records (nearest neighbours found partition by partition, with exact ties,
      then reduced); the estimate is the mean of the per-record scores (1/t if the own record
      is among t tied nearest), with its sampling interval.
    - **ID**: for the same records, the rank interval of ``evaluate`` counted exactly over
      all n protected values (each partition counts the values below and at most the
      original value and below the linked protected value); the linked record is the own
      one in selective protection and the DBRL-nearest on all variables in general
      protection, as in memory.  Ties among protected values take the lowest rank.
    - **PIL**: means, variances, covariances, correlations, skewness and kurtosis terms from
      map-reduce moments over all records; the quantiles exact (``exact_quantiles``: Dask's
      approximate quantiles moved the quantile term by 0.05 at 6,000 records, more than its
      own sampling error); the density at the quantiles (the term's variance) from a
      Gaussian KDE of the sample.
    - **PS**: fitted on ``groups`` disjoint subsamples of ``sample // groups`` record pairs,
      t interval over them; the PS of a small subsample is biased upwards against the whole
      file's (more model terms per record).

    Returns a ``DaskEvaluation``.
    """
    import dask
    import dask.array as da
    from dask import delayed

    from .._measures.utility import QUANTILE_LEVELS, _densities, _pil_from, _pil_stat_names, _ps_arrays, check_ps_order

    if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 100 * groups:
        raise ValueError(f"sample={sample!r} must be at least {100 * groups} records ({groups} samples of 100).")
    stat_names = _pil_stat_names(pil_statistics)
    order = check_ps_order(ps_order)
    _workers_ready()
    num, sens, la, lb = _dask_pair(original, protected, sensitive)
    n = sum(la)
    _, mean_x, cov_x, min_x, max_x, _ = moments(original, num)
    _, mean_y, _, min_y, max_y, _ = moments(protected[num], num)
    rng = np.random.default_rng(dask_sequence(seed, "evaluate_sample"))
    s = int(min(n, sample))
    rows = np.sort(rng.choice(n, size=s, replace=False))
    X = original[num].to_dask_array(lengths=la)
    Y = protected[num].to_dask_array(lengths=lb)
    X0, Y0 = da.compute(X[rows], Y[rows])
    X0, Y0 = np.asarray(X0, np.float64), np.asarray(Y0, np.float64)
    sd_x = np.sqrt(np.diag(cov_x))
    link = [j for j in (sens or range(len(num))) if sd_x[j] > 0]
    idv = [j for j in (sens or range(len(num))) if sd_x[j] > 0]
    A = (X0[:, link] - mean_x[link]) / sd_x[link]
    parts = protected[num].to_delayed()
    offsets = np.concatenate([[0], np.cumsum(lb)])
    linked = []
    A_shared = delayed(A, pure=True)  # one key every partition's task reads, not a copy in each task
    for p, part in enumerate(parts):
        target = np.where((rows >= offsets[p]) & (rows < offsets[p + 1]), rows - offsets[p], -1)
        linked.append(delayed(_link_part)(part, A_shared, link, mean_x, sd_x, target, idv))
    # 1. DBRL against all protected records
    (lk,) = dask.compute(_tree(linked, _link_merge))
    d_rec = np.where(lk["o"], 1.0 / np.maximum(lk["t"], 1), 0.0)
    # 2. ID: ranks counted over all protected values
    x = X0[:, idv]
    y = Y0[:, idv] if sens else lk["y"]
    xy = delayed((x, y), pure=True)
    (cnt,) = dask.compute(_tree([delayed(_rank_part)(part, idv, xy) for part in parts], _add))
    hits = np.zeros((s, len(idv)))
    for pct in range(1, 11):
        w = int(np.ceil(pct * n / 100.0))
        lo_rank = np.maximum(0, cnt["ly"] - w)
        hi_rank = np.minimum(n - 1, cnt["ly"] + w)
        hits += (cnt["qx"] >= lo_rank + 1) & (cnt["lx"] <= hi_rank)
    id_rec = (hits / 10.0).mean(axis=1) if idv else np.zeros(s)
    # 3. PIL: map-reduce moments and exact quantiles
    px = _tree([delayed(_pil_part)(pt, mean_x, range(2, 9), True) for pt in original[num].to_delayed()], _add)
    py = _tree([delayed(_pil_part)(pt, mean_y, (2, 3, 4), False) for pt in parts], _add)
    px, py = dask.compute(px, py)
    qx = exact_quantiles(original, num, QUANTILE_LEVELS, min_x, max_x, X0, n)
    qy = exact_quantiles(protected, num, QUANTILE_LEVELS, min_y, max_y, Y0, n)
    mu = {r: px["S"][r] / n for r in range(2, 9)}
    summary = {"n": n, "mean_x": mean_x, "mean_y": mean_y, "mu": mu, "muY": {r: py["S"][r] / n for r in (2, 3, 4)},
               "M11x": px["M11"] / n, "M11y": py["M11"] / n, "M22": px["M22"] / n, "M31": px["M31"] / n,
               "qx": qx, "qy": qy}
    summary["dens"] = _densities(X0, summary["qx"], mu[2])
    per, _ = _pil_from(summary, stat_names)
    pil_score = float(np.mean(list(per.values())))
    # 4. PS on disjoint subsamples
    ps = []
    for g in np.array_split(rng.permutation(s), groups):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lbfgs fallbacks say so; the interval shows the spread
            ps.append(_ps_arrays(X0[g], Y0[g], order)[0])
    rows_ = _score_rows(d_rec, id_rec, pil_score, ps, s, n, groups)
    more, notes = _plugin_rows(X0, Y0, num, s)
    return DaskEvaluation(pd.DataFrame(rows_ + more).set_index("score"), n, s, per,
                          pd.DataFrame({"dbrl": d_rec, "id": id_rec}, index=rows), notes)


def _plugin_rows(X0, Y0, num, s):
    """The plug-in analyses at scale: one with a form at scale (``scale``) on the sampled
    records (two DataFrames, as ``evaluate`` gives its measure), a row each; one without, a
    note saying so."""
    from .._measures.analyses import plugins

    rows_, notes = [], []
    for info in plugins():
        if info.scale is None:
            notes.append(f"analysis {info.name!r} is not measured at scale: "
                         f"{info.scale_refusal or 'it has no form at scale'}")
            continue
        try:
            v = info.run_scale(pd.DataFrame(X0, columns=num), pd.DataFrame(Y0, columns=num))
        except Exception as exc:  # noqa: BLE001 - a plug-in's fault, said with its name
            raise ValueError(f"analysis {info.name!r} failed at scale: {type(exc).__name__}: {exc}") from exc
        rows_.append({"score": info.name, "estimate": v, "lo": np.nan, "hi": np.nan,
                      "how": f"{s:,} sampled records ({info.label})"})
    return rows_, tuple(notes)


def _dask_pair(original, protected, sensitive):
    """The numeric columns, the sensitive ones' positions and both files' partition lengths;
    refused when the files do not pair record by record."""
    num = [c for c in original.columns if pd.api.types.is_numeric_dtype(original.dtypes[c])]
    miss = [c for c in num if c not in protected.columns]
    if miss:
        raise ValueError(f"the protected data set lacks column(s) {miss}; evaluate the same columns.")
    sens = None
    if sensitive:
        bad = [c for c in sensitive if c not in num]
        if bad:
            raise ValueError(f"sensitive variable(s) {bad} are not numeric columns of the original; check the names.")
        sens = [num.index(c) for c in sensitive]
    la = original.map_partitions(len).compute().tolist()
    lb = protected.map_partitions(len).compute().tolist()
    if sum(la) != sum(lb):
        raise ValueError(f"the original has {sum(la):,} records and the protected data set {sum(lb):,}; evaluate a "
                         f"release with the original's records in the original's order.")
    return num, sens, la, lb


def _score_rows(d_rec, id_rec, pil_score, ps, s, n, groups):
    """Each score's estimate, interval and how it was obtained."""
    from .._choose.comparison import mean_interval

    rows_ = []
    every = s == n  # every record: DBRL and ID are exact, no sampling interval
    dm = (float(d_rec.mean()), np.nan, np.nan) if every else mean_interval(d_rec)
    im = (float(id_rec.mean()), np.nan, np.nan) if every else mean_interval(id_rec)
    pm = mean_interval(np.asarray(ps))
    rows_.append({"score": "dbrl", "estimate": dm[0], "lo": dm[1], "hi": dm[2],
                  "how": f"{s:,} sampled records linked against all {n:,} protected records"})
    rows_.append({"score": "id", "estimate": im[0], "lo": im[1], "hi": im[2],
                  "how": f"{s:,} sampled records, ranks over all {n:,} protected values"})
    rows_.append({"score": "pil", "estimate": pil_score, "lo": np.nan, "hi": np.nan,
                  "how": "all records (quantiles exact; their density from the sample)"})
    rows_.append({"score": "ps", "estimate": pm[0], "lo": pm[1], "hi": pm[2],
                  "how": f"{groups} subsamples of {s // groups:,} record pairs"})
    est = [dm[0], im[0], pil_score, pm[0]]
    rows_.append({"score": "summary", "estimate": float(np.mean(est)),
                  "lo": float(np.mean([dm[0] if every else dm[1], im[0] if every else im[1], pil_score, pm[1]])),
                  "hi": float(np.mean([dm[0] if every else dm[2], im[0] if every else im[2], pil_score, pm[2]])),
                  "how": "mean of the four (bounds from theirs)"})
    return rows_
