"""The released residuals of the conditional methods (``conditional_kernel``): made orthogonal
to [1, P] and rescaled to the original's cross-products (``_match``, or ``_match_tri`` by
Cholesky factors, so that a move of a later column leaves the earlier ones), raised above
the bounds (``_push``), and IPSO's largest records protected (``_guard_top``): the guard
moves every released residual that would put one of them within 1.5 tolerances of its own
value, whichever record it is handed to (``_guard_tail``), and the spread moves their ratios
of released to own value apart so that no single divisor takes more of them back than the
floors allow (``_spread_top``; by default the band is placed on a ladder last instead:
``ladder``)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from .._core.plausible import PREDICTOR_ZEROS, skewed_positive

__all__ = []

PUSH_ROUNDS = 50


def _basis(P):
    """Orthonormal basis of [1, P] (n x r), r its rank."""
    A = np.column_stack([np.ones(len(P)), P])
    Q, R = np.linalg.qr(A)
    d = np.abs(np.diag(R))
    keep = d > 1e-10 * d.max()
    return Q[:, keep]


def _sym_power(C, power):
    if C.shape == (1, 1):  # one sensitive variable: what the decomposition gives, without it
        c = float(C[0, 0])
        return np.array([[c ** power if c > 1e-12 * max(c, 1e-300) else 0.0]])
    w, V = np.linalg.eigh((C + C.T) / 2)
    w = np.clip(w, 0.0, None)
    with np.errstate(divide="ignore"):
        p = np.where(w > 1e-12 * max(w.max(), 1e-300), w ** power, 0.0)
    return (V * p) @ V.T


def _match(E, Q, target):
    """E made orthogonal to the columns of Q, then rescaled so that E'E = target."""
    E = E - Q @ (Q.T @ E)
    return E @ _sym_power(E.T @ E, -0.5) @ _sym_power(target, 0.5)


def _match_tri(E, Q, target):
    """As ``_match``, by the Cholesky factors instead of the symmetric roots: column j of the
    result is a combination of columns 1..j of E only, so that a move of the last column's
    residuals leaves the others as they are (the guard of two or more sensitive variables)."""
    E = E - Q @ (Q.T @ E)
    try:
        A = np.linalg.solve(np.linalg.cholesky(E.T @ E).T, np.linalg.cholesky(target).T)
    except np.linalg.LinAlgError:
        return _match(E, Q, target)
    return E @ A


def _guard_top(fit, Es, S, P, Q, rows, target, floor, near, gen, most, spread, coded=False):
    """The guard of the top band (``_guard_tail``) and, with ``spread``, the spread of its
    ratios (``_spread_top``), in rounds until neither moves anything (at most GUARD_ROUNDS),
    each move followed by the exact orthogonalisation and rescaling.  The spread has the last
    word in each round: spread last, the final ratios keep their gaps (Tarragona SALES, seeds
    1-10 and 12345: one divisor takes at most 1 of the 9 largest in 8 runs, 2 in three; CASC
    at most 2 of 11 in every run), and the by-size intruder stays at most 1 beyond the prior
    (spread first, the guard's last moves closed the gaps: 2 of 9 in every run).  One
    sensitive variable: the symmetric match; two or more: the triangular one, so that a move
    of a later column does not carry the earlier ones back to the truth.  Returns the
    released residuals."""
    # the fit an intruder computes on the release: least squares on [1, P] (with
    # complete-row sets in the basis, the release's own fit is finer)
    # (with the codes released unchanged in the basis, ``coded``, both: an intruder may fit
    # on the public variables alone or with the codes)
    seen = _seen_fits(fit, S, P, rows, coded)
    h = (Q ** 2).sum(axis=1)
    match = _match if S.shape[1] == 1 else _match_tri
    near = np.asarray(near)
    k = min(len(S), max(5, int(np.ceil(GUARD_SHARE * len(S)))))  # the top band: the floors' largest records
    memo = {}  # sorts of S and of the fits an intruder computes: the same in every round
    for _ in range(GUARD_ROUNDS):
        moved = 0
        steps = ((_guard, _by_rank) if spread == "random" else (_guard, _by_rank, _spread) if spread == "ranks"
                 else (_guard, _spread) if spread else (_guard,))
        for step in steps:  # the spread has the last word
            Ep = Es.copy()  # orthogonal and of the right scale already: a move is (1 - h) of itself
            if step(fit, Es, S, seen, Ep, near, h, gen, floor, most, k, memo):
                moved += 1
                Es = _push(fit, match(Ep, Q, target), Ep, Q, target, floor, match)
        if not moved:
            break
    return Es


def _seen_fits(fit, S, P, rows, coded):
    """The fits an intruder computes on the release (``_guard_top``)."""
    if not (len(rows) or coded):
        return [fit]
    Q0 = _basis(P)
    return [Q0 @ (Q0.T @ S)] + ([fit] if coded else [])


def _guard(fit, Es, S, seen, Ep, near, h, gen, floor, most, k, memo=None):
    moved = False
    for sn in seen:  # each fit an intruder may compute on the release
        moved |= bool(_guard_tail(fit + Es - sn, S - sn, sn, Ep, near, h, gen, floor, S, k, memo))
    return moved


def _by_rank(fit, Es, S, seen, Ep, near, h, gen, floor, most, k, memo=None):
    """The guard against residuals handed out by size: for each fit an intruder may compute on
    the release, the released residuals sorted and handed to the records in the order of that
    fit (the largest to the largest fit) put a record of the top band within GUARD_MARGIN
    tolerances of its own value: the residual it is handed is moved just outside, on the
    nearer side.  ``_guard_tail`` leaves a record whose window is crowded (typical of its
    size) alone; this looks only at the one residual its rank hands it."""
    moved = 0
    for j, sn, r, rank in _ranked(fit, Es, S, seen, near, memo):
        by_size = np.argsort(r[:, j], kind="stable")
        for t in _sorted(memo, ("S", j), S[:, j])[-k:]:
            q = by_size[rank[t]]
            c = S[t, j] - sn[t, j]
            w = GUARD_MARGIN * near[j] * abs(S[t, j])
            if abs(r[q, j] - c) >= w:
                continue
            extra = gen.uniform(0.1, 0.5) * near[j] * abs(S[t, j])
            lo, hi = c - w - extra, c + w + extra
            new = lo if r[q, j] < c else hi
            own = S[q, j] - sn[q, j]  # nor put the record that holds it near its own value
            wq = GUARD_MARGIN * near[j] * abs(S[q, j])
            if sn[q, j] + new < floor[j] or abs(new - own) < wq:
                new = hi if new == lo else lo
                if sn[q, j] + new < floor[j] or abs(new - own) < wq:
                    continue
            Ep[q, j] += (new - r[q, j]) / max(1.0 - h[q], 0.1)
            moved += 1
    return moved


def _ranked(fit, Es, S, seen, near, memo):
    """For each fit ``sn`` an intruder may compute on the release and each guarded column j:
    (j, sn, the released residuals around sn, each record's rank in the order of sn)."""
    n = len(S)
    for a, sn in enumerate(seen):
        r = fit + Es - sn
        for j in range(S.shape[1]):
            if not near[j]:
                continue
            rank = np.empty(n, dtype=np.int64)
            rank[_sorted(memo, ("seen", a, j), sn[:, j])] = np.arange(n)
            yield j, sn, r, rank


def _spread(fit, Es, S, seen, Ep, near, h, gen, floor, most, k, memo=None):
    return _spread_top(fit + Es, fit, S, Ep, near, h, most, gen, k, memo)


def _sorted(memo, key, a):
    """np.argsort(a, kind='stable'), kept in ``memo`` under ``key`` (the guard's rounds sort
    the same original values and fits again and again: 60 of its 78 sorts a run)."""
    if memo is None:
        return np.argsort(a, kind="stable")
    if key not in memo:
        memo[key] = np.argsort(a, kind="stable")
    return memo[key]


def _push(fit, Es, Ep, Q, target, floor, match=None):
    match = match or _match
    fin = np.isfinite(floor)
    for _ in range(PUSH_ROUNDS):
        v = fit + Es
        bad = (v < floor) & fin
        if not bad.any():
            break
        goal = np.where(fin, floor + 0.25 * np.abs(fit - np.where(fin, floor, 0.0)), v)
        Ep[bad] += (goal - v)[bad]
        Es = match(Ep, Q, target)
    return Es


GUARD_ROUNDS = 8
GUARD_SHARE = 0.01
GUARD_MARGIN = 1.5   # windows this many tolerances wide on each side
GUARD_CROWD = 0.05   # a record whose window holds more than this share of the residuals is typical


def _guard_tail(r, need, seen, Ep, near, h, gen, floor, S, k, memo=None):
    """One round of the guard of the top band (``ipso``): ``r`` the released residuals around
    the fit an intruder computes on the release (``seen``), ``need`` the residual that would
    give each record its own value.  Every released residual that would put a record of the
    top band within GUARD_MARGIN tolerances of its own value, whichever record it is handed
    to, is moved (in ``Ep``) just beside the windows it is in, on the nearer side; returns how
    many were moved.  A record whose window holds more than GUARD_CROWD of all residuals is
    typical of its size and is left alone (its window cannot be emptied without moving the
    bulk of the distribution).  ``k``: the records of the top band."""
    n = len(S)
    moved = 0
    for j in range(S.shape[1]):
        if not near[j]:
            continue
        top = _sorted(memo, ("S", j), S[:, j])[-k:]  # the top band of the floors: by value
        c = need[top, j]
        w = GUARD_MARGIN * near[j] * np.abs(S[top, j])
        # the residuals in each top record's window |r - c| < w (a residuals x top records
        # table, counted by sorting: ``_in_windows``)
        counts, hits = _in_windows(r[:, j], c, w, lambda cnt: cnt <= GUARD_CROWD * n)
        keep = counts <= GUARD_CROWD * n
        if not len(hits):
            continue
        lo, hi = _merged(c[keep] - w[keep], c[keep] + w[keep])
        step = near[j] * np.abs(S[top[keep], j]).min()
        for q in hits:
            b = int(np.searchsorted(lo, r[q, j], side="right")) - 1  # the merged window r[q] is in
            extra = gen.uniform(0.1, 0.5) * step
            left, right = lo[b] - extra, hi[b] + extra
            new = left if r[q, j] - lo[b] < hi[b] - r[q, j] else right  # the nearer side of the windows
            if seen[q, j] + new < floor[j]:
                new = right
            Ep[q, j] += (new - r[q, j]) / max(1.0 - h[q], 0.1)
            moved += 1
    return moved


def _in_windows(r, c, w, kept):
    """For the windows |r - c_i| < w_i: how many of the values ``r`` each holds, and the
    values (their positions, ascending) in any window whose count ``kept`` accepts; exactly
    the dense table's ``D.sum(axis=0)`` and ``D[:, kept].any(axis=1)`` (D = |r - c| < w, as
    computed), in O((n + k) log n): values farther than a margin ``d`` (1e-12 of |c| + w,
    far beyond rounding) inside or outside a window's ends are counted by binary search on
    the sorted values, those within it by the exact test (the table cost n x k: 100,000
    records, 1,000 in the top band, 7.4 CPU-s an IPSO run)."""
    order = np.argsort(r, kind="stable")
    rs = r[order]
    d = 1e-12 * (np.abs(c) + w) + 1e-300
    a_out, b_out = c - w - d, c + w + d
    i0 = np.searchsorted(rs, a_out, side="left")
    i3 = np.searchsorted(rs, b_out, side="right")
    ia = np.searchsorted(rs, c - w + d, side="left")
    ib = np.searchsorted(rs, c + w - d, side="right")
    wide = (c - w + d) <= (c + w - d)
    counts = np.where(wide, np.maximum(ib - ia, 0), 0)
    for i in np.flatnonzero((ia > i0) | (i3 > ib) | ~wide):  # the slivers at the ends: the exact test
        rows = np.arange(i0[i], i3[i])
        if wide[i]:
            rows = rows[(rows < ia[i]) | (rows >= ib[i])]
        counts[i] += int((np.abs(rs[rows] - c[i]) < w[i]).sum())
    keep = kept(counts)
    if not keep.any():
        return counts, np.empty(0, dtype=np.int64)
    # the values in any kept window: those in the union of the widened windows, tested
    # exactly where they lie within a margin of some window's end
    lo, hi = _merged(a_out[keep], b_out[keep])
    pos = np.concatenate([np.arange(s, e) for s, e in zip(np.searchsorted(rs, lo, side="left"),
                                                         np.searchsorted(rs, hi, side="right"))])
    if not len(pos):
        return counts, np.empty(0, dtype=np.int64)
    ends = np.sort(np.concatenate([c[keep] - w[keep], c[keep] + w[keep]]))
    at = np.clip(np.searchsorted(ends, rs[pos]), 1, len(ends) - 1)
    gap = np.minimum(np.abs(rs[pos] - ends[at - 1]), np.abs(rs[pos] - ends[at]))
    close = gap <= 2 * d[keep].max()
    ok = np.ones(len(pos), dtype=bool)
    if close.any():
        ok[close] = (np.abs(rs[pos[close]][:, None] - c[keep][None, :]) < w[keep][None, :]).any(axis=1)
    return counts, np.sort(order[pos[ok]])


SPREAD_MARGIN = 1.1  # the top band's log-ratios at least this many windows apart (per record allowed in one)


def _spread_top(x, fit, S, Ep, near, h, most, gen, k, memo=None):
    """One round of the spreading of the top band (``ipso``), against the intruders who undo
    the release's shrinkage of the largest records: a record is among the largest partly by
    its own residual, which the release hands elsewhere, so the largest records' released
    values ``x`` fall short of their own ``S`` by ratios that crowd together (quartiles
    .82/.88/.93 on a survey's wealth, .85-.96 for CASC's 11 largest FEDTAX): one constant
    divides most of them back within the tolerance t.  A divisor c gets record i when
    x_i / S_i lies in [(1 - t) c, (1 + t) c], a window of width w = log((1 + t) / (1 - t))
    on the log scale.  So the sorted log-ratios are moved as little as they can be (least
    squares: ``_spaced``) to gaps of at least g = SPREAD_MARGIN w / m, m the records the
    floors allow in a band (``most`` of it, at least one): no window then holds more than m,
    whatever the divisor.  Each gap is g and a random 0-100 % more: with equal steps the
    ratios stood on a ladder, and an outside intruder who ranked the band by released value
    / fit read each one off it (34.7 % of Tarragona's 9 largest beyond the prior on average,
    9.7 % with the random gaps).  Then all are scaled by one factor that keeps the band's
    residual sum of squares (``_same_energy``).  The order the random exchange gave is kept;
    moves go into ``Ep`` as the guard's do (the next round sees what the orthogonalisation
    made of them).  ``k``: the records of the top band.  Returns how many were moved."""
    m = max(1, int(np.floor(most * k + 1e-9)))
    moved = 0
    for j in range(S.shape[1]):
        if not near[j]:
            continue
        top = _sorted(memo, ("S", j), S[:, j])[-k:]
        top = top[(S[top, j] > 0) & (x[top, j] > 0)]
        if len(top) <= m:
            continue
        t, s, v = near[j], S[top, j], x[top, j]
        g = SPREAD_MARGIN * np.log((1 + t) / (1 - t)) / m
        l = np.log(v / s)
        if (np.diff(np.sort(l)) >= g * (1 - 1e-6)).all():
            continue
        # gaps of at least g, each a random 0-100 % more: on a ladder of equal steps an intruder
        # who ranks the band by released value / fit would read every ratio off the ladder
        new = s * np.exp(_spaced(l, g * (1 + gen.random(len(top) - 1))))
        new *= _same_energy(new, v, fit[top, j])
        move = np.abs(new - v) > 1e-9 * s
        if move.any():
            i = top[move]
            Ep[i, j] += (new - v)[move] / np.maximum(1.0 - h[i], 0.1)
            moved += int(move.sum())
    return moved


def _same_energy(new, v, f):
    """The factor a that gives the values ``a new`` the residual sum of squares around the fit
    ``f`` that ``v`` have (the root nearer 1), else the factor that keeps their total: the
    exact rescaling of every residual to E'E then moves the other records as little as it
    can (a band whose residuals grew would shrink everyone else's; KS of Tarragona SALES,
    seeds 1-3, measured .28 with the total kept, .24 with this, .22 with the guard alone)."""
    A, B, C = new @ new, new @ f, f @ f
    R = (v - f) @ (v - f)
    disc = B * B - A * (C - R)
    if A <= 0 or disc < 0:
        return v.sum() / new.sum()
    roots = (B + np.array([-1.0, 1.0]) * np.sqrt(disc)) / A
    roots = roots[roots > 0]
    return float(roots[np.argmin(np.abs(roots - 1))]) if len(roots) else v.sum() / new.sum()


def _spaced(a, gaps):
    """``a`` moved as little as it can be (least squares) so that, in its sorted order, each
    value is at least ``gaps`` (one per consecutive pair of that order) above the one before:
    the isotonic regression of the sorted values less the cumulated gaps, plus them."""
    o = np.argsort(a, kind="stable")
    if (np.diff(a[o]) >= gaps * (1 - 1e-6)).all():
        return a
    c = np.r_[0.0, np.cumsum(gaps)]
    out = np.empty_like(a)
    out[o] = isotonic_regression(a[o] - c).x + c
    return out


def _merged(lo, hi):
    """The union of the intervals (lo, hi) as sorted disjoint intervals."""
    o = np.argsort(lo)
    out_lo, out_hi = [lo[o[0]]], [hi[o[0]]]
    for a, b in zip(lo[o[1:]], hi[o[1:]]):
        if a <= out_hi[-1]:
            out_hi[-1] = max(out_hi[-1], b)
        else:
            out_lo.append(a)
            out_hi.append(b)
    return np.array(out_lo), np.array(out_hi)


# The quantile exchange's two scales (``keep='scales'``, issue 39).  A skewed amount is
# analysed on both scales: the OLS of S on the predictors as they are, and of log S on the
# log of the skewed ones (log-log) or on them as they are (log-level).  After the exchange,
# the released values are moved so that both hold exactly:
#
# 1. each released positive value y multiplied by exp(B d): B the log design L (the
#    predictors as they are and the logs of the skewed ones, with an indicator of their zeros,
#    centred and scaled as the original's) beside the raw design times the values and the
#    values squared; d solving by Newton's method (``_steps``) that the OLS of log y on L over
#    the released positive values equals the original's (log-log and log-level), and that the
#    cross-products of y with [1, predictors] and its sum of squares equal the original's (the
#    OLS of S, of every variable on S and the rest, and the mean); a zero the exchange put at
#    the bound where the original has none is first lifted to the smallest released value;
# 2. the step moving values across the regression quantiles' planes would lose the median
#    and tail regressions the exchange keeps: each value is put back within its band (a
#    margin of EDGE_MARGIN of the band's width inside it) and one within PUSH_OUT tolerances
#    of its own value back to the exchange's (``stay``; a band of no width is left alone), and
#    the step runs again, SCALE_ROUNDS times, the last ending with the step (moments exact,
#    bands approximate: on Tarragona SALES about 1 % of the records end in another band).
# What an intruder learns beyond the exchange: the two fits and the sum of squares.

SCALE_ROUNDS, EDGE_MARGIN = 8, 0.02
SCALE_TOL = 1e-10  # the equations solved to this relative error (else the OLS step instead)
PUSH_OUT = 1.5  # a value within this many tolerances of its own moved (the last steps move it)


def _std(v):
    return (v - v.mean()) / v.std() if v.std() > 0 else None


def log_design(Z, logged, *others):
    """[1, the columns of Z standardised, and for each of ``logged`` its log (0 where not
    positive) standardised, with an indicator of those records where some are], and the same
    design of each of ``others`` (the released predictors) by Z's own centring, scaling and
    columns: the same affine map of the predictors, so that coefficients on one design are
    the raw-scale coefficients on the other."""
    def logs(v):
        z = ~(v > 0)
        return np.where(z, 0.0, np.log(np.where(z, 1.0, v))), z

    parts = [[np.ones(len(M))] for M in (Z,) + others]
    for j in range(Z.shape[1]):
        cols = [lambda M, j=j: M[:, j]]
        if j in logged:
            cols.append(lambda M, j=j: logs(M[:, j])[0])
        for f in cols:
            ref = f(Z)
            sd = ref.std()
            if sd > 0:
                for P, M in zip(parts, (Z,) + others):
                    P.append((f(M) - ref.mean()) / sd)
        if j in logged:
            z = logs(Z[:, j])[1]
            if z.any() and not z.all():
                for P, M in zip(parts, (Z,) + others):
                    P.append(logs(M[:, j])[1].astype(float))
    out = tuple(np.column_stack(P) for P in parts)
    return out if others else out[0]


def _steps(y, Lr, b, A, target, sc, stop=SCALE_TOL, w=None):
    """Both fits from y, moving its positive values, each by a factor exp(B d) (B: the log
    design and the raw design times the values, with the values themselves), d solving by
    Newton's method that the OLS of log y on L over the positive records equals b and that the
    cross-products of y with A and its sum of squares equal ``target``; (values, relative error
    left) or None.  ``w``: weights of the log fit and the sum of squares (A carries its own)."""
    F = y > 0
    if F.sum() <= Lr.shape[1] + A.shape[1] + 1:
        return None
    LF, ell0 = Lr[F], np.log(y[F])
    wv = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    LW = LF * wv[F, None]  # (times 1 exactly without weights: the same values as before)
    e = y[F] / max(float(y[F].mean()), np.finfo(float).tiny)
    B = np.column_stack([LF, e[:, None] * A[F], e * e])
    B = B / np.maximum(np.sqrt((B ** 2).mean(axis=0)), 1e-300)
    out = y.copy()
    lscale, scale = max(1.0, float(np.abs(LF.T @ (LF @ b)).max())), max(1.0, float(np.abs(target).max()))

    def value(d):
        out[F] = np.exp(np.clip(ell0 + B @ d, -700, 700))
        return out

    def eqs(d):
        v = value(d)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.concatenate([LW.T @ (np.log(v[F]) - LF @ b) / lscale,
                                   (np.concatenate([A.T @ v, [(v / sc) @ (wv * v / sc)]]) - target) / scale])

    d = np.zeros(B.shape[1])
    r = eqs(d)
    for _ in range(80):
        if np.abs(r).max() <= stop:
            break
        v = value(d)
        J = np.vstack([LW.T @ B / lscale, (A[F] * v[F, None]).T @ B / scale,
                       (2 * wv[F] * v[F] ** 2 / sc ** 2) @ B / scale])
        step = np.linalg.lstsq(J, r, rcond=None)[0]
        t = 1.0
        while t > 1e-8:
            r2 = eqs(d - t * step)
            if np.isfinite(r2).all() and np.abs(r2).max() < np.abs(r).max():
                d, r = d - t * step, r2
                break
            t /= 2
        else:
            break
    return value(d).copy(), float(np.abs(r).max())


def two_scales(S, out, Z, Zr, lo, hi, tol=None, stay=False):
    """The released values ``out`` of a non-negative skewed S moved so that its OLS on [1, Zr]
    as they are and on the log design (``log_design``), and its sum of squares, equal the
    original's (on Z), staying within their bands [lo, hi] (module comment above).  Returns
    (values, relative error left), or None where the log step cannot be taken (too few
    positive values).  ``stay``: a value a round brings within PUSH_OUT tolerances of its own
    goes back to where the exchange put it (else to PUSH_OUT tolerances, set by its own)."""
    logged = {j for j in range(Z.shape[1]) if skewed_positive(Z[:, j], PREDICTOR_ZEROS)}
    Lo, Lr = log_design(Z, logged, Zr)
    so = S > 0
    if so.sum() <= Lo.shape[1]:
        return None
    b = np.linalg.lstsq(Lo[so], np.log(S[so]), rcond=None)[0]
    A = np.column_stack([np.ones(len(S))] + [c for c in (_std(Zr[:, j]) for j in range(Zr.shape[1])) if c is not None])
    sc = max(float(S.std()), np.finfo(float).tiny)
    target = np.concatenate([A.T @ S, [(S / sc) @ (S / sc)]])
    finite = np.isfinite(hi)
    width = np.where(finite & np.isfinite(lo), hi - lo, 0.0)
    lo2 = np.maximum(np.where(np.isfinite(lo), lo + EDGE_MARGIN * width, -np.inf), 1e-12 * float(np.abs(S).max()))
    hi2 = np.where(finite, hi - EDGE_MARGIN * width, np.inf)
    y = out.copy()
    if so.all() and (y > 0).any():  # a 0 the exchange put at the bound, where the original has none: an
        y[y <= 0] = y[y > 0].min()  # analyst's log would drop that record (the smallest released value instead)
    got = None
    start = y.copy()
    for rnd in range(SCALE_ROUNDS):
        got = _steps(y, Lr, b, A, target, sc, SCALE_TOL / 100 if stay and rnd == SCALE_ROUNDS - 1 else SCALE_TOL)
        if got is None:
            return None
        y = got[0]
        if rnd == SCALE_ROUNDS - 1:
            break
        pos = (y > 0) & (hi2 > lo2)  # a band of no width (planes raised to the bound): left where it is
        y[pos] = np.clip(y[pos], lo2[pos], hi2[pos])
        if tol is not None:  # out of the floors' tolerance of its own value: the side within its band where one
            near = pos & (np.abs(y - S) <= PUSH_OUT * tol)  # is, else the side it is on (its band too narrow)
            above, below = S + PUSH_OUT * tol, S - PUSH_OUT * tol
            ina, inb = (above >= lo2) & (above <= hi2), (below >= lo2) & (below <= hi2) & (below > 0)
            to = np.where(ina & ~inb, above, np.where(inb & ~ina, below, np.where(y >= S, above, below)))
            to = np.where(to > 0, to, above)
            y[near] = (start if stay else to)[near]
    return got


# The quantile exchange's bands and its OLS step (``conditional._qexchange``)

def _edges(idx, b, F, floor):
    """The lower and upper edges of bands ``b`` of records ``idx`` (planes F; below the lowest
    plane the bound, above the highest none)."""
    m = F.shape[1]
    return (np.where(b > 0, F[idx, np.maximum(b - 1, 0)], floor),
            np.where(b < m, F[idx, np.minimum(b, m - 1)], np.inf))


ROOM_USED = 0.9  # the OLS step moves a value by at most this share of its room in its band
OLS_TOL = 1e-10  # the OLS step's normal equations solved to this relative error


def _rooms(out, F, floor):
    """(down, up): how far each released value may move within its band (F: the planes at the released
    predictors): to the planes below and above; above the highest the excess over it (either way), below the
    lowest the distance to the bound (down) and to the plane (up), without a bound to the plane either way."""
    n, m = F.shape
    b = (out[:, None] > F).sum(axis=1)  # the band each released value lies in
    lo, hi = _edges(np.arange(n), b, F, floor)
    with np.errstate(invalid="ignore"):
        excess = out - F[:, -1]
        deficit = F[:, 0] - out
        down = np.where(b == m, excess, np.where(np.isfinite(lo), out - lo, deficit))
        up = np.where(b == m, excess, hi - out)
    return (np.where(np.isfinite(v) & (v > 0), ROOM_USED * v, 0.0) for v in (down, up))


def _moments_kept(S, out, A, F, floor, tol=None, stay=False):
    """The OLS of S on A kept exactly (A: [1, the released predictors]; with the constant the
    total, so the mean, and with a domain's indicator its mean): each released value moved
    within its band (``_rooms``) by its own size times a linear function of its predictors,
    delta_i = clip(|out_i| a_i'lambda, -down_i, up_i), lambda solving A'(out + delta) = A'S by
    Newton's method on the free records, halved steps where the error does not fall.  A value
    moved by a share of itself keeps the log scale's spread; staying in its band keeps the
    regression quantiles.  ``tol`` (absolute, per record): no value moves to within it of its
    own; one the step would take further stops at ``tol`` (a place set by its own value), or
    with ``stay`` does not move, the others carrying the step (solved again, up to STAY_ROUNDS
    times).  Returns (values, relative error left: 0 where kept exactly)."""
    sc = np.sqrt((A ** 2).mean(axis=0))
    A = A / np.where(sc > 0, sc, 1.0)
    c = A.T @ (S - out)
    size = np.maximum(np.abs(out), np.finfo(float).tiny)
    down, up = _rooms(out, F, floor)
    scale = max(1.0, float(np.abs(A.T @ S).max()))
    if tol is None:  # (below: a record stopped by tol, not by its band, stays where it was)
        return _moments_solve(out, A, c, size, down, up, scale)
    above, below = out > S + tol, out < S - tol
    down = np.where(above, np.minimum(down, out - S - tol), down)
    up = np.where(below, np.minimum(up, S - tol - out), up)
    got = _moments_solve(out, A, c, size, down, up, scale)
    for _ in range(STAY_ROUNDS if stay else 0):
        d = got[0] - out
        at = (above & (d < 0) & (d <= -down * (1 - 1e-9))) | (below & (d > 0) & (d >= up * (1 - 1e-9)))
        at &= np.where(above, down >= out - S - tol, up >= S - tol - out)
        if not at.any():
            break
        down, up = np.where(at, 0.0, down), np.where(at, 0.0, up)
        got = _moments_solve(out, A, c, size, down, up, scale)
    return got


STAY_ROUNDS = 20


def _moments_solve(out, A, c, size, down, up, scale):  # _moments_kept's Newton solve within [-down, up]
    def moved(lam):
        raw = size * (A @ lam)
        return np.clip(raw, -down, up), (raw > -down) & (raw < up)

    lam = np.zeros(A.shape[1])
    d, free = moved(lam)
    err = np.abs(A.T @ d - c).max()
    for _ in range(100):
        if err <= OLS_TOL * scale:
            break
        J = (A[free] * size[free, None]).T @ A[free]
        step = np.linalg.lstsq(J, A.T @ d - c, rcond=None)[0]
        t = 1.0
        while t > 1e-6:
            d2, free2 = moved(lam - t * step)
            e2 = np.abs(A.T @ d2 - c).max()
            if e2 < err:
                lam, d, free, err = lam - t * step, d2, free2, e2
                break
            t /= 2
        else:
            break
    return out + d, (0.0 if err <= OLS_TOL * scale else err / scale)
