"""Linking original records to released ones: the pairing and validation of the two files,
the exact nearest-record kernel (numba) behind DBRL and the risk floors' intruder, and the
one linking policy (``linked_records``) that ``dbrl``, ``interval_disclosure`` and
``evaluate`` share.

Conventions of every measure (stated once): X is the original, X' the protected numeric
matrix, rows aligned (record i of X' was produced from record i of X).  Every score lies in
[0, 1]; lower is better.  A variable constant in X carries no information about anyone: it
is left out of the distance.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._core.nearest import CAP, nearest_without  # noqa: F401  (the leave-one-out link, re-exported)
from .._core.validation import check_dataframe, check_names, check_scale, numeric_columns

__all__ = []


# ----------------------------------------------------------------------------- validation

def _pair(original, protected, min_rows=2, missing=False):
    """Aligned float arrays of two files with the same shape and numeric columns.
    ``missing=True`` lets missing cells (NaN) through; infinite values are always refused."""
    original = check_dataframe(original, "original")
    protected = check_dataframe(protected, "protected")
    if original.shape != protected.shape:
        raise ValueError(
            f"original is {original.shape[0]} x {original.shape[1]} but protected is "
            f"{protected.shape[0]} x {protected.shape[1]}; compare a release with the file it was made from."
        )
    if set(original.columns) != set(protected.columns):
        miss = [c for c in original.columns if c not in set(protected.columns)]
        extra = [c for c in protected.columns if c not in set(original.columns)]
        raise ValueError(
            f"column names differ: missing in protected {miss[:5]}, not in original {extra[:5]}; "
            f"both files must have the same columns."
        )
    protected = protected[list(original.columns)]
    num = set(numeric_columns(original)) & set(numeric_columns(protected))
    bad = [c for c in original.columns if c not in num]
    if bad:
        raise ValueError(
            f"column(s) {', '.join(map(str, bad[:10]))} are not numeric in both files; "
            f"evaluate the numeric columns only, e.g. evaluate(original[cols], protected[cols])."
        )
    if original.shape[0] < min_rows:
        raise ValueError(f"at least {min_rows} records are needed to evaluate a release; got {original.shape[0]}.")
    X = original.to_numpy(dtype=float)
    Y = protected.to_numpy(dtype=float)
    for name, M in (("original", X), ("protected", Y)):
        if missing and not np.isinf(M).any():
            continue
        if not np.isfinite(M).all():
            cols = [original.columns[j] for j in np.flatnonzero(~np.isfinite(M).all(axis=0))]
            raise ValueError(f"{name} has missing or infinite values in {', '.join(map(str, cols[:10]))}; drop those records from both files.")
        check_scale(M, list(original.columns), name)
    return X, Y, list(original.columns)


def _indices(names, columns, arg):
    if names is None:
        return list(range(len(columns)))
    names = check_names(names, columns, arg, "the columns of the data")
    return [columns.index(c) for c in names]


# ----------------------------------------------------------------------------- DBRL

_TILE = 512  # protected records per tile: 4 rows of float32 distances stay in L1 (512: 7.2 s at 100k, 2048: 10.3 s)


STAGE_FROM, STAGE_UPTO = 10, 24  # with this many columns, _nearest_kernel sums the first STAGE of them for every
STAGE = 6  # cell (50,000 x 13 PCA and M-AGG releases: 4.85 -> 3.5-3.7 CPU-s; at 30 columns nearly every cell is in
#            reach after 6, and the count cost 8 %: not staged there)
SPARSE = 3  # ... and the rest only for the cells in reach where at most 1 in SPARSE of them are (else for all)


@njit(cache=True)
def _tol(b, e, m):
    """The proven float32 tolerance of a smallest distance b (inputs' rounding e, m columns)."""
    return 2.0 * (2.0 * np.sqrt(b) * e + e * e + 2.0 * m * 6.0e-8 * b) + 1e-30


@njit(cache=True)
def _limit(best, e, m):
    """The largest distance a cell may have and still matter to a record whose best so far is
    ``best`` (``_tile_candidates``' limit at best: it grows with best)."""
    return np.inf if best == np.inf else best + _tol(best, e, m)


@njit(cache=True)
def _in_reach(d, L, best, e, m):
    """How many of the tile's L partial sums ``d`` are within ``_limit``."""
    lim = _limit(best, e, m)
    c = 0
    for q in range(L):
        c += 1 if d[q] <= lim else 0
    return c


@njit(cache=True)
def _rest_of_sums(d, L, J, a, Bt32, s, best, e, sv):
    """``_nearest_kernel``'s second stage for one original record: where the first J columns'
    float32 sums ``d`` (of the tile's L cells from s) leave columns to add, the cells whose
    partial sum still reaches best + its tolerance (a float32 sum of non-negative terms never
    falls as terms are added, so a cell beyond it now is beyond it in full, and beyond every
    bound and candidate limit the tile can set) get the rest of their sum, in column order as
    before, and are listed in ``sv`` (their sums moved to ``d[:ns]``); returns ns, or L where
    every column was summed (the cells then stand in place)."""
    m = a.shape[0]
    if J == m:
        return L
    lim = _limit(best, e, m)
    ns = 0
    for q in range(L):  # branch-free: every cell written, the count advanced for those in reach
        sv[ns] = q
        d[ns] = d[q]
        ns += 1 if d[q] <= lim else 0
    for j in range(J, m):
        aj = a[j]
        row = Bt32[j]
        for p in range(ns):
            t = row[s + sv[p]] - aj
            d[p] += t * t
    return ns


@njit(cache=True)
def _tile_candidates(d, sv, ns, listed, s, r, best, e, m, cand, nc, over):
    """``_nearest_kernel``'s screen of one tile for original record r: the smallest float32
    distance ``d[:ns]`` (of the cells ``sv`` where ``listed``, else of cells 0..ns-1) updates
    ``best[r]``, and the cells within the proven tolerance of it join the candidates."""
    tm = np.float32(np.inf)
    for p in range(ns):
        if d[p] < tm:
            tm = d[p]
    b = min(best[r], tm)
    tol = _tol(b, e, m)
    if tm > best[r] + tol:
        return
    best[r] = b
    lim = b + tol
    for p in range(ns):
        if d[p] <= lim:
            if nc[r] < CAP:
                cand[r, nc[r]] = s + (sv[p] if listed else p)
                nc[r] += 1
            else:
                over[r] = True


@njit(cache=True, parallel=True)
def _nearest_kernel(A, Bt, A32, Bt32, Emax, TB, target):
    n, m = A.shape
    nb = Bt.shape[1]
    R = 4
    first = np.empty(n, np.int64); ties = np.empty(n, np.int64); own = np.zeros(n, np.bool_)
    dist = np.empty(n)
    for blk in prange((n + R - 1) // R):
        i0 = blk * R
        rows = min(R, n - i0)
        D = np.empty((R, TB), dtype=np.float32)
        a = np.zeros((R, m), dtype=np.float32)
        E = np.zeros(R)
        for r in range(rows):
            e2 = 0.0
            for j in range(m):
                a[r, j] = A32[i0 + r, j]
                t = abs(A[i0 + r, j]) + Emax[j]
                e2 += t * t
            E[r] = np.sqrt(e2) * 2.0 ** -22  # 2x the first-order rounding bound
        best = np.full(R, np.inf)
        cand = np.empty((R, CAP), dtype=np.int64)
        nc = np.zeros(R, dtype=np.int64)
        over = np.zeros(R, dtype=np.bool_)
        J = STAGE if STAGE_FROM <= m <= STAGE_UPTO else m  # columns summed for every cell; the rest where in reach
        sv = np.empty(TB, dtype=np.int64)
        for s in range(0, nb, TB):
            L = min(TB, nb - s)
            d0 = D[0]; d1 = D[1]; d2 = D[2]; d3 = D[3]
            for q in range(L):
                d0[q] = 0.0; d1[q] = 0.0; d2[q] = 0.0; d3[q] = 0.0
            for j in range(J):
                a0 = a[0, j]; a1 = a[1, j]; a2 = a[2, j]; a3 = a[3, j]
                row = Bt32[j, s:s + L]
                for q in range(L):
                    v = row[q]
                    t0 = v - a0; t1 = v - a1; t2 = v - a2; t3 = v - a3
                    d0[q] += t0 * t0; d1[q] += t1 * t1; d2[q] += t2 * t2; d3[q] += t3 * t3
            few = J < m  # the rest summed only where few cells are still in reach, else blocked as above
            for r in range(rows):
                few = few and _in_reach(D[r], L, best[r], E[r], m) * SPARSE <= L
            for j in range(J if not few else m, m):
                a0 = a[0, j]; a1 = a[1, j]; a2 = a[2, j]; a3 = a[3, j]
                row = Bt32[j, s:s + L]
                for q in range(L):
                    v = row[q]
                    t0 = v - a0; t1 = v - a1; t2 = v - a2; t3 = v - a3
                    d0[q] += t0 * t0; d1[q] += t1 * t1; d2[q] += t2 * t2; d3[q] += t3 * t3
            for r in range(rows):
                ns = _rest_of_sums(D[r], L, J if few else m, a[r], Bt32, s, best[r], E[r], sv)
                _tile_candidates(D[r], sv, ns, few, s, r, best, E[r], m, cand, nc, over)
        for r in range(rows):
            i = i0 + r
            mn = np.inf
            c = 0
            f = -1
            h = False
            # exact distances of the candidates (of every record after an overflow), in
            # increasing index order so that the first of tied records is reported
            idx = np.arange(nb) if over[r] else np.sort(cand[r, :nc[r]])
            for t_ in range(idx.shape[0]):
                q = idx[t_]
                dd = 0.0
                for j in range(m):
                    t = A[i, j] - Bt[j, q]
                    dd += t * t
                if dd < mn:
                    mn = dd
                    c = 1
                    f = q
                    h = q == target[i]
                elif dd == mn:
                    c += 1
                    if q == target[i]:
                        h = True
            first[i] = f
            ties[i] = c
            own[i] = h
            dist[i] = mn
    return first, ties, own, dist


def _nearest(A, B, target=None):
    """For each row of A, the rows of B at the smallest Euclidean distance, ties exact.

    Screening in float32 (twice the SIMD width and half the memory of float64): for each
    original record the protected records whose float32 distance lies within a proven bound
    of the smallest one are kept (the bound covers the rounding of the inputs to float32 and
    of the sums, with a factor 2 to spare); their exact float64 distances, (a - b)^2 summed
    in a fixed order, then decide, so identical records tie exactly.  A record with more
    than CAP candidates (many duplicates) is scanned exactly.  Four original records per
    pass over a tile of protected ones, parallel over the original ones; memory O(tile) per
    thread, never an n x n matrix.  Measured here at 100,000 x 13: 7.3 s, against 18-22 s for
    the exact float64 kernel, which in turn beat chunked BLAS (||a||^2 - 2 a.b + ||b||^2),
    bound by writing the distances to memory when the inner dimension is 13.
    ``target``: each row of A's own record in B (default the same row; -1: not in B).
    Returns (first nearest index, number of tied nearest, whether the own record is among
    them, the smallest squared distance).
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    Bt = np.ascontiguousarray(np.asarray(B, dtype=np.float64).T)
    Emax = np.abs(Bt).max(axis=1) if Bt.shape[1] else np.zeros(Bt.shape[0])
    target = np.arange(A.shape[0], dtype=np.int64) if target is None else np.asarray(target, dtype=np.int64)
    return _nearest_kernel(A, Bt, A.astype(np.float32), Bt.astype(np.float32), Emax, _TILE, target)


def _standardized_pair(X, Y, cols, rows=None):
    """X's and Y's columns ``cols`` that vary in X, standardised by X's means and sds (X's
    records ``rows`` only, when given); the one scaling every link uses, so the same records tie."""
    Xs = X[:, cols]
    mean = Xs.mean(axis=0)
    sd = Xs.std(axis=0)
    keep = sd > 0
    A = Xs if rows is None else Xs[rows]
    return (A[:, keep] - mean[keep]) / sd[keep], (Y[:, cols][:, keep] - mean[keep]) / sd[keep]


def _dbrl_arrays(X, Y, cols):
    A, B = _standardized_pair(X, Y, cols)
    if A.shape[1] == 0:
        # nothing varies: every protected record is equally near; own is one of n
        n = X.shape[0]
        return 1.0 / n, np.arange(n), np.full(n, n), np.ones(n, bool)
    first, ties, own, _ = _nearest(A, B)
    score = float(np.where(own, 1.0 / ties, 0.0).mean())
    return score, first, ties, own


ID_REFERENCES = ("own", "linked_all", "linked_public", "linked_sensitive", "linked")
ID_REFERENCE_TEXT = {
    "own": "each record's own protected version (the FA paper's reading: the intruder is handed the "
           "protected record; the worst case for the values themselves)",
    "linked_all": "the protected record nearest on all variables (the PCA paper's reading)",
    "linked_public": "the protected record nearest on the public variables (an intruder who knows them)",
    "linked_sensitive": "the protected record nearest on the sensitive variables themselves (near 1 by "
                        "construction: the nearest protected value is found by the value read)",
    "linked": "the protected record nearest on the given linkage variables",
}


def default_id_reference(selective):
    """The intruder interval disclosure assumes by default.

    Selective protection: the record's own protected version on the sensitive variables (FA
    paper: intervals "around their protected versions").  General protection: the record
    linked on all variables (PCA paper, Table 4).

    Parameters
    ----------
    selective : bool

    Returns
    -------
    str
        One of ``ID_REFERENCES`` ('own' or 'linked_all').

    Examples
    --------
    >>> import sdccore
    >>> sdccore.default_id_reference(True), sdccore.default_id_reference(False)
    ('own', 'linked_all')
    """
    return "own" if selective else "linked_all"


def linked_records(X, Y, var, reference, linkage=None, known=None):
    """The one linking policy (``dbrl``, ``interval_disclosure`` and ``evaluate``): which
    protected record each original record is read from, for the threat model
    ``reference`` (one of ID_REFERENCES) and the measured variables ``var``.

    ``known``: (columns, first nearest) of a DBRL already computed; reused when the policy
    links on the same columns (general protection links on all variables for both)."""
    m = X.shape[1]
    if reference not in ID_REFERENCES:
        raise ValueError(f"id_reference={reference!r} is not supported; use one of {', '.join(map(repr, ID_REFERENCES))}.")
    if reference == "own":
        return np.arange(X.shape[0])
    if reference == "linked":
        if not linkage:
            raise ValueError("id_reference='linked' links on the linkage variables; pass linkage=[...] or choose "
                             "'linked_all', 'linked_public' or 'own'.")
        cols = list(linkage)
    elif reference == "linked_all":
        cols = list(range(m))
    elif reference == "linked_public":
        cols = [j for j in range(m) if j not in set(var)]
        if not cols:
            raise ValueError("id_reference='linked_public' needs public variables (not among the ID variables); "
                             "use 'own' or 'linked_all'.")
    else:
        cols = list(var)
    if known is not None and list(known[0]) == cols:
        return known[1]
    return _dbrl_arrays(X, Y, cols)[1]
