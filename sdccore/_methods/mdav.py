"""MDAV microaggregation, the same partition as sdcMicro's C++ ``Mdav`` (sdcMicro 5.8.1).

What sdcMicro's ``src/Mdav.h`` does, and what this module reproduces exactly:

* each variable is weighted by ``1 / Var`` with the population variance computed as
  ``mean(x^2) - mean(x)^2``;
* a distance is accumulated in single precision: every term ``(a - b)^2 * w`` is computed
  in double, cast to ``float32`` and added to a ``float32`` sum, variables in column order;
* while at least ``2k`` records remain: ``c`` = centroid of the remaining records,
  ``r`` = the record farthest from ``c``; the ``k`` records closest to ``r`` (``r`` itself
  included) form a group; if at least ``3k`` records remained, ``s`` = the record farthest
  from ``r`` (found in the same pass, before ``r``'s group is removed) and the ``k`` records
  closest to ``s`` among those left form a second group;
* the fewer than ``2k`` records left at the end form the last group;
* ties: the farthest record is the one with the lowest row number; among records at the
  same distance the "closest" ones are taken from the highest row number down (the
  C++ hash sort inserts an equal distance in front of the earlier ones).

sdcMicro's R wrapper replaces ``NA`` by ``-999`` and the C++ treats that value as missing;
we reject missing values instead, so a literal ``-999`` is an ordinary value here.

Speed: the C++ code scans every remaining record four times per iteration (O(n^2 m / k)
in all).  Here the records sit in the leaves of a k-d tree (32 records a leaf, stored
variable-major so a leaf's distances vectorise; 32 rows a leaf took 3.75 CPU-s at 100,000 x 13
where 64 took 5.2 and 128 4.3); a leaf is only scanned when its bounding
box or sphere could hold a better candidate (k nearest, or farthest), and the farthest
record from the slowly moving centroid is found from cached leaf radii around an earlier
centroid.  Bounds carry a 3e-4 relative margin, above the float32 rounding of up to 2000 variables, so no candidate
is ever pruned wrongly; the exact float32 distances decide, with the C++ tie rules, so the
partition is the C++ one (tested against a line-by-line port).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._core.validation import check_number

__all__ = []

_LEAF = 32


@njit(cache=True, nogil=True)
def _weights(X):
    n, m = X.shape
    w = np.ones(m)
    for j in range(m):
        avr = 0.0
        sq = 0.0
        for i in range(n):
            v = X[i, j]
            avr += v
            sq += v * v
        avr /= n
        sq /= n
        var = sq - avr * avr
        if var != 0.0:
            w[j] = 1.0 / var
    return w


_EPS = 3e-4  # > 4 m 2^-24, the float32 summation error bound, for m <= MAX_VARIABLES
MAX_VARIABLES = 2000


@njit(cache=True, nogil=True)
def _kd_order(Xs, leaf_size):
    """Row order of a k-d tree (median split on the widest variable); leaves are ``leaf_size`` rows."""
    n, m = Xs.shape
    perm = np.arange(n)
    stack = [(0, n)]
    while len(stack) > 0:
        a, b = stack.pop()
        if b - a <= leaf_size:
            continue
        best_j = 0
        best_r = -1.0
        for j in range(m):
            lo = Xs[perm[a], j]
            hi = lo
            for t in range(a, b):
                v = Xs[perm[t], j]
                lo = min(lo, v)
                hi = max(hi, v)
            if hi - lo > best_r:
                best_r = hi - lo
                best_j = j
        seg = perm[a:b].copy()
        keys = np.empty(b - a)
        for t in range(b - a):
            keys[t] = Xs[seg[t], best_j]
        o = np.argsort(keys, kind="mergesort")
        for t in range(b - a):
            perm[a + t] = seg[o[t]]
        # split on a multiple of leaf_size so every leaf but the last is full
        half = (b - a + 1) // 2
        mid = a + max(leaf_size, (half // leaf_size) * leaf_size)
        stack.append((mid, b))
        stack.append((a, mid))
    return perm


@njit(cache=True, nogil=True)
def _refresh(B, act, lf, lo, hi, cen, rad, sw):
    """Bounding box and bounding sphere (weighted space) of the active rows of a leaf."""
    m = B.shape[1]
    LS = B.shape[2]
    cnt = 0
    for j in range(m):
        cen[lf, j] = 0.0
        lo[lf, j] = np.inf
        hi[lf, j] = -np.inf
    for t in range(LS):
        if act[lf, t]:
            cnt += 1
            for j in range(m):
                v = B[lf, j, t]
                cen[lf, j] += v * sw[j]
                lo[lf, j] = min(lo[lf, j], v)
                hi[lf, j] = max(hi[lf, j], v)
    if cnt > 0:
        for j in range(m):
            cen[lf, j] /= cnt
    r2 = 0.0
    for t in range(LS):
        if act[lf, t]:
            d2 = 0.0
            for j in range(m):
                d = B[lf, j, t] * sw[j] - cen[lf, j]
                d2 += d * d
            r2 = max(r2, d2)
    rad[lf] = np.sqrt(r2) * (1.0 + 1e-9)
    return cnt


@njit(cache=True, nogil=True, inline="always")
def _leaf_dist(B, lf, ref, w, out):
    m = B.shape[1]
    LS = B.shape[2]
    for t in range(LS):
        out[t] = np.float32(0.0)
    for j in range(m):
        cj = ref[j]
        wj = w[j]
        for t in range(LS):
            d = B[lf, j, t] - cj
            out[t] += np.float32(d * d * wj)


@njit(cache=True, nogil=True)
def _bounds(ref, w, sw, leaves, nl, lo, hi, cen, rad, bound, upper):
    """Bounds of the squared weighted distance from ref to each leaf: upper ones from the
    leaf's bounding sphere (tight for far rows), lower ones from its box (tight for near)."""
    m = lo.shape[1]
    top = 0
    for t in range(nl):
        lf = leaves[t]
        u = 0.0
        if upper:
            for j in range(m):
                d = ref[j] * sw[j] - cen[lf, j]
                u += d * d
            v = np.sqrt(u) + rad[lf]
            bound[t] = v * v
            if bound[t] > bound[top]:
                top = t
        else:
            for j in range(m):
                g = max(0.0, max(lo[lf, j] - ref[j], ref[j] - hi[lf, j]))
                u += g * g * w[j]
            bound[t] = u
            if bound[t] < bound[top]:
                top = t
    return top


@njit(cache=True, nogil=True)
def _leaf_radius0(B, act, lf, c0, sw):
    """Largest weighted distance (double) from c0 to an active row of the leaf."""
    m = B.shape[1]
    LS = B.shape[2]
    r2 = 0.0
    for t in range(LS):
        if act[lf, t]:
            d2 = 0.0
            for j in range(m):
                d = (B[lf, j, t] - c0[j]) * sw[j]
                d2 += d * d
            r2 = max(r2, d2)
    return np.sqrt(r2) * (1.0 + 1e-9)


@njit(cache=True, nogil=True)
def _centre_refresh(B, act, c, sw, leaves, nl, c0, R0, order0, R0s):
    """Cache each leaf's largest distance to the current centroid, leaves sorted by it."""
    m = B.shape[1]
    for j in range(m):
        c0[j] = c[j]
    for lf in range(R0.shape[0]):
        R0[lf] = -1.0
    for t in range(nl):
        lf = leaves[t]
        R0[lf] = _leaf_radius0(B, act, lf, c0, sw)
    o = np.argsort(-R0)
    for t in range(o.shape[0]):
        order0[t] = o[t]
        R0s[t] = R0[o[t]]


@njit(cache=True, nogil=True)
def _farthest_from_centre(B, oid, act, c, w, sw, where, c0, R0, order0, R0s, out):
    """Farthest active row from the centroid c, using the cached radii around c0.

    |x - c| <= |x - c0| + |c - c0|, so a leaf whose cached radius plus the centroid's
    drift cannot beat the best distance found is skipped; leaves are visited by cached
    radius, so the walk stops at the first such leaf.  Returns (leaf, slot, leaves seen).
    """
    m = B.shape[1]
    LS = B.shape[2]
    d2 = 0.0
    for j in range(m):
        d = (c[j] - c0[j]) * sw[j]
        d2 += d * d
    delta = np.sqrt(d2)
    bl = -1
    bt = -1
    bd = np.float32(-1.0)
    bo = -1
    seen = 0
    for t in range(order0.shape[0]):
        if R0s[t] < 0.0:
            break
        lf = order0[t]
        if bl >= 0:
            if (R0s[t] + delta) ** 2 * (1.0 + _EPS) < bd:
                break
            if where[lf] < 0 or (R0[lf] + delta) ** 2 * (1.0 + _EPS) < bd:
                continue
        elif where[lf] < 0:
            continue
        seen += 1
        _leaf_dist(B, lf, c, w, out)
        for s in range(LS):
            if act[lf, s]:
                d = out[s]
                if d > bd or (d == bd and oid[lf, s] < bo):
                    bd = d
                    bl = lf
                    bt = s
                    bo = oid[lf, s]
    return bl, bt, seen


@njit(cache=True, nogil=True)
def _k_closest(B, oid, act, ref, w, sw, k, leaves, nl, lo, hi, cen, rad, bound, out, rl, rt):
    """The k active rows closest to ref, by (distance asc, row number desc)."""
    LS = B.shape[2]
    top = _bounds(ref, w, sw, leaves, nl, lo, hi, cen, rad, bound, False)
    bd = np.empty(k, dtype=np.float32)
    bi = np.empty(k, dtype=np.int64)
    cnt = 0
    for rep in range(2):
        for t in range(nl):
            if (rep == 0) != (t == top):
                continue
            if cnt == k and bound[t] * (1.0 - _EPS) > bd[k - 1]:
                continue
            lf = leaves[t]
            _leaf_dist(B, lf, ref, w, out)
            for s in range(LS):
                if not act[lf, s]:
                    continue
                d = out[s]
                ii = oid[lf, s]
                if cnt == k:
                    if d > bd[k - 1] or (d == bd[k - 1] and ii < bi[k - 1]):
                        continue
                    p = k - 1
                else:
                    p = cnt
                    cnt += 1
                while p > 0 and (bd[p - 1] > d or (bd[p - 1] == d and bi[p - 1] < ii)):
                    bd[p] = bd[p - 1]
                    bi[p] = bi[p - 1]
                    rl[p] = rl[p - 1]
                    rt[p] = rt[p - 1]
                    p -= 1
                bd[p] = d
                bi[p] = ii
                rl[p] = lf
                rt[p] = s
    return cnt


@njit(cache=True, nogil=True)
def _around_r(B, oid, act, ref, w, sw, k, leaves, nl, lo, hi, cen, rad, lbound, ubound, out, rl, rt):
    """One pass for r: its k closest rows and the row farthest from it (as the C++ does)."""
    LS = B.shape[2]
    top_far = _bounds(ref, w, sw, leaves, nl, lo, hi, cen, rad, ubound, True)
    top_near = _bounds(ref, w, sw, leaves, nl, lo, hi, cen, rad, lbound, False)
    bd = np.empty(k, dtype=np.float32)
    bi = np.empty(k, dtype=np.int64)
    cnt = 0
    fl = -1
    ft = -1
    fd = np.float32(-1.0)
    fo = -1
    for rep in range(3):
        for t in range(nl):
            if rep == 0 and t != top_near:
                continue
            if rep == 1 and (t != top_far or t == top_near):
                continue
            if rep == 2 and (t == top_far or t == top_near):
                continue
            need_near = cnt < k or lbound[t] * (1.0 - _EPS) <= bd[k - 1]
            need_far = fl < 0 or ubound[t] * (1.0 + _EPS) >= fd
            if not (need_near or need_far):
                continue
            lf = leaves[t]
            _leaf_dist(B, lf, ref, w, out)
            for s in range(LS):
                if not act[lf, s]:
                    continue
                d = out[s]
                ii = oid[lf, s]
                if d > fd or (d == fd and ii < fo):
                    fd = d
                    fl = lf
                    ft = s
                    fo = ii
                if cnt == k:
                    if d > bd[k - 1] or (d == bd[k - 1] and ii < bi[k - 1]):
                        continue
                    p = k - 1
                else:
                    p = cnt
                    cnt += 1
                while p > 0 and (bd[p - 1] > d or (bd[p - 1] == d and bi[p - 1] < ii)):
                    bd[p] = bd[p - 1]
                    bi[p] = bi[p - 1]
                    rl[p] = rl[p - 1]
                    rt[p] = rt[p - 1]
                    p -= 1
                bd[p] = d
                bi[p] = ii
                rl[p] = lf
                rt[p] = s
    return cnt, fl, ft


@njit(cache=True, nogil=True)
def _take(B, oid, act, rl, rt, cnt, labels, g, sums, lo, hi, cen, rad, sw, leaves, nl, where, c0, R0):
    m = B.shape[1]
    for t in range(cnt):
        lf = rl[t]
        s = rt[t]
        act[lf, s] = False
        labels[oid[lf, s]] = g
        for j in range(m):
            sums[j] -= B[lf, j, s]
    for t in range(cnt):
        lf = rl[t]
        if where[lf] < 0:
            continue  # already dropped
        if R0[lf] >= 0.0:
            R0[lf] = _leaf_radius0(B, act, lf, c0, sw)
        if _refresh(B, act, lf, lo, hi, cen, rad, sw) == 0:
            p = where[lf]
            last = leaves[nl - 1]
            leaves[p] = last
            where[last] = p
            where[lf] = -1
            nl -= 1
    return nl


@njit(cache=True, nogil=True)
def _mdav_kernel(X0, k, LS):
    return _mdav_weighted(X0, k, LS, _weights(X0))


@njit(cache=True, nogil=True)
def _mdav_weighted(X0, k, LS, w):
    n, m = X0.shape
    sw = np.sqrt(w)
    perm = _kd_order(X0 * sw, LS)
    L = (n + LS - 1) // LS
    B = np.zeros((L, m, LS))
    oid = np.full((L, LS), -1, dtype=np.int64)
    act = np.zeros((L, LS), dtype=np.bool_)
    for p in range(n):
        lf = p // LS
        s = p % LS
        i = perm[p]
        oid[lf, s] = i
        act[lf, s] = True
        for j in range(m):
            B[lf, j, s] = X0[i, j]
    lo = np.empty((L, m))
    hi = np.empty((L, m))
    cen = np.empty((L, m))
    rad = np.empty(L)
    for lf in range(L):
        _refresh(B, act, lf, lo, hi, cen, rad, sw)
    leaves = np.arange(L)
    where = np.arange(L)
    nl = L
    bound = np.empty(L)
    bound2 = np.empty(L)
    out = np.empty(LS, dtype=np.float32)
    labels = np.full(n, -1, dtype=np.int64)
    rl = np.empty(k, dtype=np.int64)
    rt = np.empty(k, dtype=np.int64)
    c = np.empty(m)
    rref = np.empty(m)
    sref = np.empty(m)
    sums = np.zeros(m)
    for j in range(m):
        acc = 0.0
        for i in range(n):
            acc += X0[i, j]
        sums[j] = acc
    c0 = np.empty(m)
    R0 = np.full(L, -1.0)
    order0 = np.empty(L, dtype=np.int64)
    R0s = np.empty(L)
    stale = True
    na = n
    g = 0
    while na - k >= k:
        ngroups = 1 if na - 2 * k < k else 2
        for j in range(m):
            c[j] = sums[j] / na
        if stale:
            _centre_refresh(B, act, c, sw, leaves, nl, c0, R0, order0, R0s)
        lf, s, seen = _farthest_from_centre(B, oid, act, c, w, sw, where, c0, R0, order0, R0s, out)
        stale = seen > 48  # re-cache the radii when the walk saw more leaves (8: 3.7M leaf scans at 100k)
        for j in range(m):
            rref[j] = B[lf, j, s]
        # r's k closest and s = farthest from r, found before r's group is removed
        cnt, lf, s = _around_r(B, oid, act, rref, w, sw, k, leaves, nl, lo, hi, cen, rad, bound, bound2, out, rl, rt)
        for j in range(m):
            sref[j] = B[lf, j, s]
        nl = _take(B, oid, act, rl, rt, cnt, labels, g, sums, lo, hi, cen, rad, sw, leaves, nl, where, c0, R0)
        na -= cnt
        g += 1
        if ngroups == 2:
            cnt = _k_closest(B, oid, act, sref, w, sw, k, leaves, nl, lo, hi, cen, rad, bound, out, rl, rt)
            nl = _take(B, oid, act, rl, rt, cnt, labels, g, sums, lo, hi, cen, rad, sw, leaves, nl, where, c0, R0)
            na -= cnt
            g += 1
        if g % 64 == 0:
            # recompute the running sums exactly now and then, so rounding cannot drift
            for j in range(m):
                sums[j] = 0.0
            for t in range(nl):
                lf = leaves[t]
                for s in range(LS):
                    if act[lf, s]:
                        for j in range(m):
                            sums[j] += B[lf, j, s]
    for lf in range(L):
        for s in range(LS):
            if act[lf, s]:
                labels[oid[lf, s]] = g
    return labels


def mdav_groups(X: np.ndarray, k: int) -> np.ndarray:
    """Group label of every row of ``X`` under MDAV (sdcMicro's partition).

    Parameters
    ----------
    X : array_like, shape (n, m)
        Finite numbers, records in rows (standardise first: MDAV uses Euclidean distance).
    k : int
        Group size, at least 2.  Fewer than 2k rows form a single group.

    Returns
    -------
    ndarray of int, shape (n,)
        0, 1, ... in the order MDAV forms the groups; every group has k to 2k - 1 rows.

    Examples
    --------
    >>> import numpy as np, sdccore
    >>> X = np.arange(16.0).reshape(8, 2)
    >>> np.bincount(sdccore.mdav_groups(X, 3)).tolist()
    [3, 5]
    """
    k = check_number(k, "k (MDAV group size)", low=2, integer=True)
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("X must be a 2-d array of numbers (records in rows), e.g. data[columns].to_numpy().") from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0 or X.shape[1] > MAX_VARIABLES:
        raise ValueError(f"X must be a non-empty 2-d array (records in rows) with at most {MAX_VARIABLES} variables; "
                         f"got shape {X.shape}.")
    if not np.isfinite(X).all():
        raise ValueError("X has missing or infinite values; MDAV needs finite numbers (drop or impute those records).")
    return _mdav_kernel(X, k, _LEAF)


def mdav_file_weighted(Z, k):
    """MDAV labels of standardised rows Z (a block of a larger file) with every variable
    weighted 1, i.e. by the whole file's variances, not the block's own (``mdav_groups``
    weighs by the variances of what it is given; on a k-d block that overweights the split
    variables: 1.47x whole-file MDAV's SSE/SST at 100k x 13 in 4 blocks, 1.18x with the
    file's weights, benchmarks/bench_magg_blocks.py)."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    return _mdav_weighted(Z, int(k), _LEAF, np.ones(Z.shape[1]))


def group_means(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Replace every row by the mean of its group."""
    G = int(labels.max()) + 1
    counts = np.bincount(labels, minlength=G).astype(float)
    means = np.empty((G, X.shape[1]))
    for j in range(X.shape[1]):
        means[:, j] = np.bincount(labels, weights=X[:, j], minlength=G) / counts
    return means[labels]
