"""The floors' leave-one-out link (``nearest_without``): for each original record and each
set of left-out columns, the released record nearest on the other columns, exactly as the
exact nearest-record kernel of ``_risk.linkage`` finds it on those columns (float32 screens
with proven error bounds, then float64 distances in column order decide; ties to the first
record).  Numba kernels only: nothing of the package is imported here.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = []

SCREEN_TILE = 1024  # tiles of at least this many released records are screened first (``_screen_row``)
CAP = 32  # candidates kept per record before an exact scan (``_risk.linkage`` keeps as many)


@njit(cache=True)
def _first_exact(A, Bt, i, keep, idx):
    """The first of ``idx`` (increasing) at the smallest exact float64 distance from A[i] on
    the columns ``keep``, (a - b)^2 summed in column order as ``_nearest_kernel`` does."""
    mn = np.inf
    f = -1
    for t_ in range(idx.shape[0]):
        q = idx[t_]
        dd = 0.0
        for j in range(A.shape[1]):
            if keep[j]:
                w = A[i, j] - Bt[j, q]
                dd += w * w
        if dd < mn:
            mn = dd
            f = q
    return f


@njit(cache=True)
def _bound32(b):
    """A float64 bound b, widened by 1e-6 of it and taken to float32 (capped below float32's largest)."""
    return np.float32(min(b * (1.0 + 1e-6) + 1e-30, 3.0e38))


@njit(cache=True)
def _err32(sq, Er, c2):
    """A cell's float32 error bound, twice over, for |a| + |b| at most sq (``_screen_row``'s comment)."""
    return np.float32(2.0 * (2.0 * sq * Er + Er * Er + c2 * sq * sq) * (1.0 + 1e-6) + 1e-30)


@njit(cache=True, fastmath={"nnan", "reassoc"})
def _smallest_sum(dt, err, L):
    """min(dt[:L] + err[:L]) in float32 (no NaN reaches it; the reassociation lets the minimum
    vectorise; the caller rounds it up)."""
    best = np.float32(3.0e38)
    for q in range(L):
        v = dt[q] + err[q]
        best = v if v < best else best
    return best


@njit(cache=True, parallel=True)
def _screen_without(A32, s, an, bn, bnq, anorm, E, Bt32t, outs, ptr, kmax, seed, ub, cand, nc, over, amax, bmax):
    """Every original record against the release's records s .. s + Bt32t.shape[1] (that tile,
    transposed, float32): for each target t, the records whose float32 distance on all
    columns but ``outs[ptr[t]:ptr[t + 1]]`` may come within its error of the exact minimum
    join the candidates; ``ub`` holds an upper bound of each minimum so far.  Blocks of
    original records in parallel, each with its products a.b from one single-threaded BLAS
    call.  ``amax``, ``bmax``: each original and released record's largest |value| on the
    left-out columns (float32), which bound every left-out term (``_screen_row``)."""
    n = A32.shape[0]
    L = Bt32t.shape[1]
    m = Bt32t.shape[0]
    u = 6.0e-8
    bqmax = bnq.max() if L else 0.0
    nblk = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(nblk):
        i0 = blk * _BLOCK
        i1 = min(n, i0 + _BLOCK)
        G = np.dot(A32[i0:i1], Bt32t)
        work = np.empty((5, L), dtype=np.float32)  # per cell that passes: d, its error, d less it, dt, scratch
        sv = np.empty(L, dtype=np.int64)
        for i in range(i0, i1):
            _screen_row(G[i - i0], i, s, A32, an, bn, bnq, bqmax, anorm, E, Bt32t, outs, ptr, kmax, seed, ub, cand,
                        nc, over, work, sv, m, L, u, amax, bmax)


_BLOCK = 64  # original records per product block of _screen_without


@njit(cache=True)
def _screen_row(g, i, s, A32, an, bn, bnq, bqmax, anorm, E, Bt32t, outs, ptr, kmax, seed, ub, cand, nc, over, work,
                sv, m, L, u, amax, bmax):
    """``_screen_without`` for original record i, g its products with the tile.

    Only the cells that may beat some target's bound are read per target (``_survivors``): a
    left-out term (a_c - b_c)^2 is at most (max|a| + max|b|)^2 over the left-out columns, and
    a cell's error at most the tile's largest, so a cell whose distance less those exceeds
    every target's bound is no candidate for any (float32 rounding is monotone: that test
    implies each target's own; k > 1 left-out columns get a relative 1e-5 to spare for the
    order of the subtractions).  On the benchmark's 200,000 x 30 FA release about 3 % of the
    cells pass, where every target read every cell and each cell's error was computed; the
    candidates and bounds, and so the links, are those of reading every cell (a cell left out
    can neither count nor lower a bound)."""
    Er = E[i]
    Ar = anorm[i]
    # each cell's float32 error of dt, twice over: the inputs' rounding (E), |a|^2 + |b|^2 - 2 a.b
    # over m columns and its assembly, the k left-out terms subtracted; with D at most
    # (|a| + |b|)^2, D's float32 rounding error is below (m + k + 8) u (|a| + |b|)^2 (k at its
    # largest over the targets); rounded up to float32.  Per cell, not per tile: on skewed data
    # a tile's largest record would make the bound of every small one hundreds of times too wide
    c2 = (m + kmax + 8) * u
    sq = Ar + bqmax
    emax = _err32(sq, Er, c2)
    top = np.float32(0.0)
    for t in range(ptr.shape[0] - 1):
        top = max(top, _bound32(ub[t, i]))
    d = work[0]
    ns = _survivors(g, np.float32(an[i]), bn, emax, bmax, amax[i], kmax, top, sv, d, L)
    if ns == 0:
        return
    e32 = work[1]
    de = work[2]
    for p in range(ns):
        sq = Ar + bnq[sv[p]]
        e32[p] = _err32(sq, Er, c2)
        # the distance less its error, once for every target's count below (two loads a cell, not
        # three; the order of the two float32 subtractions is within the factor 2 of e32 to spare)
        de[p] = d[p] - e32[p]
    # the seed (a candidate already, its exact distance the bound) does not make its tile worth a look
    ps = -1
    if 0 <= seed[i] - s < L:
        for p in range(ns):
            if sv[p] == seed[i] - s:
                ps = p
    for t in range(ptr.shape[0] - 1):
        _one_target(t, i, s, A32, Bt32t, outs, ptr, ub, cand, nc, over, work, sv, ns, ps)


@njit(cache=True)
def _one_target(t, i, s, A32, Bt32t, outs, ptr, ub, cand, nc, over, work, sv, ns, ps):
    """``_screen_row`` for target t over the ``ns`` cells ``sv`` that passed (``_survivors``),
    their distances, errors and distances less them in ``work[:3]``; ``ps``: the seed's place
    among them (-1: not among them)."""
    d, ec, de, dt = work[0], work[1], work[2], work[3]
    k = ptr[t + 1] - ptr[t]
    thr = _bound32(ub[t, i])
    hits = 0
    c = outs[ptr[t]]
    ac = A32[i, c]
    row = Bt32t[c]  # 1-d rows
    if k == 1:  # the common case: count the cells that may beat the bound
        for p in range(ns):
            w = row[sv[p]] - ac
            if de[p] - w * w <= thr:
                hits += 1 if p != ps else 0
        if hits == 0:
            return
    for p in range(ns):
        w = row[sv[p]] - ac
        dt[p] = d[p] - w * w
    for j in range(ptr[t] + 1, ptr[t + 1]):
        c = outs[j]
        ac = A32[i, c]
        row = Bt32t[c]
        for p in range(ns):
            w = row[sv[p]] - ac
            dt[p] -= w * w
    if k > 1:
        for p in range(ns):
            if dt[p] - ec[p] <= thr:
                hits += 1 if p != ps else 0
        if hits == 0:
            return
    _candidates(t, i, s, dt, ec, ns, sv, True, ub, cand, nc, over)


@njit(cache=True)
def _candidates(t, i, s, dt, ec, ns, sv, listed, ub, cand, nc, over):
    """The bound of target t for record i: the smallest dt + e (a float32 sum, rounded up by the
    factor), then every cell whose dt - e reaches it is a candidate (cell p is ``sv[p]`` where
    ``listed``, else p itself)."""
    best = min(ub[t, i], np.float64(_smallest_sum(dt, ec, ns)) * (1.0 + 1e-6) + 1e-30)
    ub[t, i] = best
    bt = _bound32(best)
    for p in range(ns):
        if dt[p] - ec[p] <= bt:
            if nc[t, i] < cand.shape[2]:
                cand[t, i, nc[t, i]] = s + (sv[p] if listed else p)
                nc[t, i] += 1
            else:
                over[t, i] = True


@njit(cache=True)
def _survivors(g, ai, bn, emax, bmax, amx, kmax, top, sv, d, L):
    """The cells q (in increasing order, into ``sv``, their distances ai + bn - 2 g into ``d``;
    their count returned) whose distance, less the tile's largest error ``emax`` and kmax times
    the largest left-out term (amx + bmax[q])^2, may still reach the largest bound ``top`` of
    any target (``_screen_row``)."""
    ns = 0  # branch-free: every cell written, the count advanced only for those that pass
    if kmax == 1:
        for q in range(L):
            dq = ai + bn[q] - np.float32(2.0) * g[q]
            t = amx + bmax[q]
            sv[ns] = q
            d[ns] = dq
            ns += 1 if (dq - emax) - t * t <= top else 0
    else:
        for q in range(L):
            dq = ai + bn[q] - np.float32(2.0) * g[q]
            t = amx + bmax[q]
            w = np.float32(kmax * (t * t) * (1.0 + 1e-5) + 1e-5 * abs(dq) + 1e-30)
            sv[ns] = q
            d[ns] = dq
            ns += 1 if (dq - emax) - w <= top else 0
    return ns


@njit(cache=True, parallel=True)
def _screen_all(A32, s, an, bn, bnq, anorm, E, Bt32t, outs, ptr, kmax, seed, ub, cand, nc, over):
    """``_screen_without`` reading every cell for every target (no screen first): on tiles under
    SCREEN_TILE records the screen's own pass and the gathers cost more than they save (EIA,
    tiles of 256: 0.14 -> 0.23 CPU-s a link)."""
    n = A32.shape[0]
    L = Bt32t.shape[1]
    m = Bt32t.shape[0]
    T = ptr.shape[0] - 1
    u = 6.0e-8
    nblk = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(nblk):
        i0 = blk * _BLOCK
        i1 = min(n, i0 + _BLOCK)
        G = np.dot(A32[i0:i1], Bt32t)
        d = np.empty(L, dtype=np.float32)
        dt = np.empty(L, dtype=np.float32)
        e32 = np.empty(L, dtype=np.float32)
        de = np.empty(L, dtype=np.float32)
        for i in range(i0, i1):
            _screen_all_row(G[i - i0], i, s, A32, an, bn, bnq, anorm, E, Bt32t, outs, ptr, kmax, seed, ub, cand, nc, over,
                        d, dt, e32, de, m, T, L, u)



@njit(cache=True)
def _screen_all_row(g, i, s, A32, an, bn, bnq, anorm, E, Bt32t, outs, ptr, kmax, seed, ub, cand, nc, over, d, dt, e32,
                de, m, T, L, u):
    """``_screen_all`` for original record i, g its products with the tile; d, dt, e32 and de
    are scratch rows."""
    ai = np.float32(an[i])
    for q in range(L):
        d[q] = ai + bn[q] - np.float32(2.0) * g[q]
    Er = E[i]
    Ar = anorm[i]
    # each cell's float32 error of dt, twice over: the inputs' rounding (E), |a|^2 + |b|^2 - 2 a.b
    # over m columns and its assembly, the k left-out terms subtracted; with D at most
    # (|a| + |b|)^2, D's float32 rounding error is below (m + k + 8) u (|a| + |b|)^2 (k at its
    # largest over the targets); rounded up to float32.  Per cell, not per tile: on skewed data
    # a tile's largest record would make the bound of every small one hundreds of times too wide
    c2 = (m + kmax + 8) * u
    for q in range(L):
        sq = Ar + bnq[q]
        e32[q] = _err32(sq, Er, c2)
        # the distance less its error, once for every target's count below (two loads a cell, not
        # three; the order of the two float32 subtractions is within the factor 2 of e32 to spare)
        de[q] = d[q] - e32[q]
    # the seed (a candidate already, its exact distance the bound) does not make its tile worth a look
    qs = seed[i] - s if 0 <= seed[i] - s < L else -1
    for t in range(T):
        k = ptr[t + 1] - ptr[t]
        thr = _bound32(ub[t, i])
        hits = 0
        c = outs[ptr[t]]
        ac = A32[i, c]
        row = Bt32t[c]  # 1-d rows: the loops below vectorise (2-d indexing: 6x slower)
        if k == 1:  # the common case in one vectorised pass: count the cells that may beat the bound
            for q in range(L):
                w = row[q] - ac
                if de[q] - w * w <= thr:
                    hits += 1
            if qs >= 0:
                w = row[qs] - ac
                if de[qs] - w * w <= thr:
                    hits -= 1
            if hits == 0:
                continue
        for q in range(L):
            w = row[q] - ac
            dt[q] = d[q] - w * w
        for p in range(ptr[t] + 1, ptr[t + 1]):
            c = outs[p]
            ac = A32[i, c]
            row = Bt32t[c]
            for q in range(L):
                w = row[q] - ac
                dt[q] -= w * w
        if k > 1:
            for q in range(L):
                if dt[q] - e32[q] <= thr:
                    hits += 1
            if qs >= 0 and dt[qs] - e32[qs] <= thr:
                hits -= 1
            if hits == 0:
                continue
        _candidates(t, i, s, dt, e32, L, outs, False, ub, cand, nc, over)  # (outs: an unread index array)


@njit(cache=True, parallel=True)
def _decide_without(A, Bt, outs, ptr, cand, nc, over):
    """The exact float64 pass of ``nearest_without``: for each target and original record, the
    first of its candidates (of every released record after an overflow) at the smallest
    distance on the kept columns (a candidate kept early may have lost to a later bound)."""
    n, m = A.shape
    T = ptr.shape[0] - 1
    nb = Bt.shape[1]
    first = np.empty((T, n), np.int64)
    for i in prange(n):
        keep = np.ones(m, dtype=np.bool_)
        for t in range(T):
            for j in range(m):
                keep[j] = True
            for p in range(ptr[t], ptr[t + 1]):
                keep[outs[p]] = False
            idx = np.arange(nb) if over[t, i] else np.sort(cand[t, i, :nc[t, i]])
            first[t, i] = _first_exact(A, Bt, i, keep, idx)
    return first


_RTILE = 2048   # released records per tile of nearest_without


def nearest_without(A, B, out_sets, seed=None):
    """For each row of A and each column set in ``out_sets``: the first row of B nearest on
    all columns but that set, exactly ``_nearest(A[:, kept], B[:, kept])[0]``.  Returns a
    T x len(A) array of indices.

    One distance pass serves every set: per block of original records and tile of released
    ones, the float32 products a.b by BLAS, the distances |a|^2 + |b|^2 - 2 a.b on all
    columns, and for each set its left-out terms subtracted (``_screen_without``); the
    records within a proven bound of the float32 error of the smallest distance are kept,
    and their exact float64 distances on the kept columns decide (``_decide_without``), so
    ties fall as in ``_nearest``: the first of the exactly nearest.  ``seed`` (optional, one
    index into B per row of A): a record likely near, whose distance starts the bound."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    Bt = np.ascontiguousarray(B.T)
    n, m = A.shape
    nb = B.shape[0]
    T = len(out_sets)
    if any(len(s) == 0 or min(s) < 0 or max(s) >= m for s in out_sets):
        raise ValueError("nearest_without: every column set must name at least one of A's columns")
    outs = np.array([c for s in out_sets for c in s], dtype=np.int64)
    ptr = np.cumsum([0] + [len(s) for s in out_sets]).astype(np.int64)
    Emax = np.abs(Bt).max(axis=1) if nb else np.zeros(m)
    E = np.sqrt(((np.abs(A) + Emax) ** 2).sum(axis=1)) * 2.0 ** -22  # 2x the first-order input rounding
    an = (A * A).sum(axis=1)
    anorm = 1.0001 * np.sqrt(an)
    A32 = A.astype(np.float32)
    kmax = int(max(len(s) for s in out_sets)) if T else 0
    # candidates kept per record and target before an exact scan of every record: as many as
    # about 40 MB hold, 32 to 256 (files with many tied records, EIA: 9 % of the records had
    # more than 32 at once)
    cap = int(min(256, max(CAP, 2 ** int(np.log2(max(1.0, 40e6 / (8.0 * max(T * n, 1))))))))
    cand = np.empty((T, n, cap), dtype=np.int64)
    if seed is None:
        ub = np.full((T, n), np.inf)
        nc = np.zeros((T, n), dtype=np.int64)
        seed = np.full(n, -1, dtype=np.int64)
    else:
        # a first candidate per record (its own released version, say): its exact distance on
        # the kept columns bounds the minimum from the first tile on, so most tiles are
        # skipped after one vectorised count
        seed = np.asarray(seed, dtype=np.int64)
        ub = np.empty((T, n))
        for t, out in enumerate(out_sets):
            kept = np.setdiff1d(np.arange(m), out)
            ub[t] = ((A[:, kept] - B[seed][:, kept]) ** 2).sum(axis=1)
        cand[:, :, 0] = seed
        nc = np.ones((T, n), dtype=np.int64)
    over = np.zeros((T, n), dtype=np.bool_)
    bn64 = (B * B).sum(axis=1)
    bnq_all = 1.0001 * np.sqrt(bn64)
    # tiles of 2048 released records; at least 16 tiles on smaller files, so that the bound can
    # skip most of them
    tile = int(min(_RTILE, max(256, -(-nb // 16))))
    ucols = np.unique(outs)
    amax = np.abs(A32[:, ucols]).max(axis=1) if len(ucols) else np.zeros(n, dtype=np.float32)
    for s in range(0, nb, tile):
        Bt32t = np.ascontiguousarray(Bt[:, s:s + tile], dtype=np.float32)
        bnq = bnq_all[s:s + tile]
        bmax = np.abs(Bt32t[ucols]).max(axis=0) if len(ucols) else np.zeros(Bt32t.shape[1], dtype=np.float32)
        if tile >= SCREEN_TILE:
            _screen_without(A32, s, an, bn64[s:s + tile].astype(np.float32), bnq, anorm, E, Bt32t, outs, ptr, kmax,
                            seed, ub, cand, nc, over, amax, bmax)
        else:
            _screen_all(A32, s, an, bn64[s:s + tile].astype(np.float32), bnq, anorm, E, Bt32t, outs, ptr, kmax, seed,
                        ub, cand, nc, over)
    return _decide_without(A, Bt, outs, ptr, cand, nc, over)
