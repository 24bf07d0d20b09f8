"""IPSO's largest records placed on a ladder (``top_band='random'``, the default), the last step
after the guard of ``residuals._guard_top``: the band's ratios of released to own value spaced
so that no divisor takes more of them back than the floors allow, the rungs handed to the
records in a random order (the ordered spread, 'ranks', let the released residuals mirror the
own ones about the fit), and the other records' residuals carrying the rest exactly
(``place_band``, ``_place_ladder``)."""

from __future__ import annotations

import numpy as np

from .residuals import GUARD_MARGIN, GUARD_SHARE, PUSH_ROUNDS, SPREAD_MARGIN, _by_rank, _match, _match_tri, _push, \
    _ranked, _seen_fits, _sorted, _sym_power

__all__ = []


def place_band(fit, Es, S, P, Q, rows, target, floor, near, gen, most, coded=False):
    """The top band of each sensitive variable placed on its ladder (``_place_ladder``), the
    residuals then matched once more (the placement's solves leave a rounding error of 1e-9 of
    the OLS coefficients; the match takes it to 1e-12 without moving anything further) and
    raised above the bounds where the rescaling left one below (``_push``)."""
    seen = _seen_fits(fit, S, P, rows, coded)
    k = min(len(S), max(5, int(np.ceil(GUARD_SHARE * len(S)))))
    placed = _place_ladder(fit, Es, S, seen, Q, target, floor, np.asarray(near), most, gen, k, {})
    if placed is Es:
        return Es
    match = _match if S.shape[1] == 1 else _match_tri
    Es = match(placed, Q, target)  # orthogonal and of the right cross-products to rounding (a near identity)
    if (np.isfinite(floor) & (fit + Es < floor)).any():
        Es = _push(fit, Es, Es.copy(), Q, target, floor, match)
    return Es


LADDER_EXTRA = 0.3  # the random ladder's gaps: g and a random 0-30 % more
CENTRE_SHIFT = 1.0  # the ladder's centre moved by a random -1 to 1 times this many rungs


def _place_ladder(fit, Es, S, seen, Q, target, floor, near, most, gen, k, memo=None):
    """The top band of each sensitive variable placed on its ladder (``_ladder``) exactly, the
    last step of ``top_band='random'``: the band's released values s exp(L), their log-ratios
    to the own values g = SPREAD_MARGIN w / m and a random 0-30 % more apart (w the width of a
    tolerance window of ratios, m the records the floors allow in a band), handed to the
    records in a random order and none within the guard's window of the own value.  So no
    divisor gets more than m of the band whatever it is, and a record's rung says nothing of
    its own residual: spread in the order the exchange left them (``_spread_top``), the rungs
    went to the records by their own value, and the released residuals of the largest records
    mirrored their own about the fit (Tarragona SALES, seeds 1-10: correlation -0.40 to -0.92;
    fit - (released - fit) took back 4 to 6 of the 9 largest in three runs).

    The other records' residuals E_O then carry the rest, exactly: orthogonal to [1, P]
    (Q_T'R + Q_O'E_O = 0, R the band's residuals) and of the cross-products E'E = target.
    E_O = A + B: A the least change in the span of Q_O that the orthogonality needs, B the
    current residuals' part outside that span rescaled so that B'B = target - R'R - A'A.
    Where the band would take more than that leaves (the difference not positive definite), another
    random order is tried (up to LADDER_TRIES, else the residuals are returned as they were); the
    first order that is placeable, whose released residuals of the band do not follow or mirror
    the own ones (``_mirrors``) and that leaves no record of the band to the residuals handed out
    by the size of the fit (``_by_size_hits``) is placed, else the one of the first
    LADDER_CHECKED such that leaves the fewest.  The first, not the one of least energy: the
    least-energy order lined the rungs up with released / fit (rank correlation 0.62-0.70),
    which an outside intruder read.  A value the rescaling puts below the bounds is raised as
    ``_push`` raises it and the rest placed again around the same ladder."""
    near = np.asarray(near)
    frame = _band_frame(Es, S, Q, near, k, most, memo)
    if frame is None:
        return Es
    T, O, QO, G, H, K, _ = frame
    best = None  # the first order (a random one) that is placeable, leaves no mirror and no record to the
    checked = 0  # residuals handed out by size; else of the first LADDER_CHECKED such, the fewest by size
    for attempt in range(LADDER_TRIES):
        RT = _band_residuals(fit, Es, S, Q, near, most, gen, k, memo, attempt, T)
        C = target - RT.T @ RT - RT.T @ K @ RT  # A'A = RT' Q_T G^-1 Q_T' RT: no pass over the records
        if _smallest_eigenvalue(C) <= 1e-9 * max(np.trace(target), 1e-300):
            continue
        if _mirrors(RT, S[T] - fit[T], near):
            continue
        got = _placement(Es, T, RT, target, frame)
        hits = _by_size_hits(fit, Es, S, seen, *got, near, k, memo)
        if best is None or hits < best[0]:
            best = (hits, attempt, got)
        checked += 1
        if not hits or checked >= LADDER_CHECKED:
            break
    if best is None:
        return Es
    _, attempt, (T, RT, A, B0, C) = best
    fin = np.isfinite(floor)
    h = (Q ** 2).sum(axis=1)
    by_rank = 0
    for _ in range(PUSH_ROUNDS):  # the bounds as ``_push`` keeps them, the band left on its ladder
        out = _placed(Es, T, RT, A, B0, C)
        v = fit + out
        bad = (v < floor) & fin
        Ep = out.copy()
        if not bad.any():
            # the rescaling of the others moved the residuals a record of the band is handed by
            # the size of the fit: those (of the others) moved away as the rounds move them
            if by_rank >= BY_RANK_ROUNDS or not _by_rank(fit, out, S, seen, Ep, near, h, gen, floor, most, k, memo):
                break
            by_rank += 1
            Ep[T] = out[T]
        else:
            goal = np.where(fin, floor + 0.25 * np.abs(fit - np.where(fin, floor, 0.0)), v)
            Ep[bad] += (goal - v)[bad]
        RT = _band_residuals(fit, Ep, S, Q, near, most, gen, k, memo, attempt, T)
        frame = frame[:-1] + (_outside(Ep[frame[1]], frame[2], frame[3]),)  # the geometry stays: B0 anew
        _, RT, A, B0, C = _placement(Ep, T, RT, target, frame)
        if _smallest_eigenvalue(C) <= 1e-9 * max(np.trace(target), 1e-300):
            return Es if by_rank == 0 else out
        Es = Ep
    return out


BY_RANK_ROUNDS = 8  # rounds of the by-size guard on the others after the placement
LADDER_TRIES = 200
LADDER_CHECKED = 20  # the placeable orders checked against the by-size intruder at most
MIRROR_COR = 0.3  # the largest |correlation| of the band's released residuals with their own


def _smallest_eigenvalue(C):
    """The smallest eigenvalue of the symmetric part of C (one sensitive variable: C itself)."""
    return float(C[0, 0]) if C.shape == (1, 1) else float(np.linalg.eigvalsh((C + C.T) / 2).min())


def _mirrors(RT, own, near):
    """Whether a placement's released residuals of the band follow (or mirror) the records' own
    residuals: |correlation| above MIRROR_COR in a column with a ladder.  A released residual
    that is minus the own one (about the fit) gives the value back to the intruder who
    reflects it, one that is the own one to the intruder who takes it."""
    for j in range(RT.shape[1]):
        if not near[j]:
            continue
        a, b = RT[:, j] - RT[:, j].mean(), own[:, j] - own[:, j].mean()
        d = np.sqrt((a @ a) * (b @ b))
        if d > 0 and abs(a @ b) / d > MIRROR_COR:
            return True
    return False


def _placed(Es, T, RT, A, B0, C):
    out = Es.copy()
    out[T] = RT
    O = np.delete(np.arange(len(Es)), T)
    out[O] = A + B0 @ _sym_power(B0.T @ B0, -0.5) @ _sym_power(C, 0.5)
    return out


def _by_size_hits(fit, Es, S, seen, T, RT, A, B0, C, near, k, memo):
    """How many records of the top band the released residuals of a placement would put within
    GUARD_MARGIN tolerances of their own value when handed out by the size of a fit an intruder
    computes (the largest to the largest fit; and their magnitudes so, with the sign of the own
    residual): the check ``_by_rank`` makes in the rounds, for the ladder's attempts."""
    hits = 0
    for j, sn, r, rank in _ranked(fit, _placed(Es, T, RT, A, B0, C), S, seen, near, memo):
        top = _sorted(memo, ("S", j), S[:, j])[-k:]
        srt = np.sort(r[:, j])
        mags = np.sort(np.abs(r[:, j]))
        need = S[top, j] - sn[top, j]
        w = GUARD_MARGIN * near[j] * np.abs(S[top, j])
        hits += int((np.abs(srt[rank[top]] - need) < w).sum())
        hits += int((np.abs(np.sign(need) * mags[rank[top]] - need) < w).sum())
    return hits


def _band_frame(Es, S, Q, near, k, most, memo):
    """What every attempt of ``_place_ladder`` shares: the band's records T (those of every
    column with a ladder) and the others O, Q_O, G = Q_O'Q_O (= I - Q_T'Q_T), H = G^-1 Q_T',
    K = Q_T H (A'A = R'KR for the band's residuals R) and the other records' residuals outside
    the span of Q_O (B0); None where no column has a ladder."""
    n, q = Es.shape
    T = set()
    for j in range(q):
        if not near[j]:
            continue
        top = _top(memo, S, j, k)
        if len(top) > max(1, int(np.floor(most * k + 1e-9))):
            T.update(top.tolist())
    if not T:
        return None
    T = np.array(sorted(T))
    O = np.delete(np.arange(n), T)
    QT, QO = Q[T], Q[O]
    G = QO.T @ QO
    try:
        H = np.linalg.solve(G, QT.T)
        B0 = _outside(Es[O], QO, G)
    except np.linalg.LinAlgError:
        return None
    return T, O, QO, G, H, QT @ H, B0


def _outside(EO, QO, G):
    """The other records' residuals EO less their part in the span of Q_O (G = Q_O'Q_O)."""
    return EO - QO @ np.linalg.solve(G, QO.T @ EO)


def _top(memo, S, j, k):
    top = _sorted(memo, ("S", j), S[:, j])[-k:]
    return top[S[top, j] > 0]


def _band_residuals(fit, Es, S, Q, near, most, gen, k, memo, attempt, T):
    """The band's residuals (records T x columns) on the ladders of ``attempt``'s random
    order; a record of T outside a column's band keeps its residual there."""
    RT = Es[T].copy()
    m = max(1, int(np.floor(most * k + 1e-9)))
    for j in range(Es.shape[1]):
        if not near[j]:
            continue
        top = _top(memo, S, j, k)
        if len(top) <= m:
            continue
        t = near[j]
        g = SPREAD_MARGIN * np.log((1 + t) / (1 - t)) / m
        rows, QT = _column_band(memo, j, top, T, Q)
        L = _ladder(memo, (j, attempt), S[:, j], top, k, gen, g, S[top, j], fit[top, j], t, QT)
        RT[rows, j] = S[top, j] * np.exp(L) - fit[top, j]
    return RT


def _column_band(memo, j, top, T, Q):
    """(the rows of column ``j``'s band in T, Q of the band), once a run: every attempt asks."""
    key = ("band", j, len(T))
    if memo is None or key not in memo:
        got = (np.searchsorted(T, top), Q[top])
        if memo is None:
            return got
        memo[key] = got
    return memo[key]


def _placement(Es, T, RT, target, frame):
    """(T, RT, A, B0 concentrated, C) of one placement: A = -Q_O G^-1 Q_T' RT the least change
    of the others in the span of Q_O that keeps the residuals orthogonal to [1, P], C the
    cross-products left for the others' part outside it."""
    _, O, QO, G, H, _, B0 = frame
    A = -QO @ (H @ RT)
    C = target - RT.T @ RT - A.T @ A
    C = (C + C.T) / 2
    return T, RT, A, _concentrated(B0, C, QO, G), C


SHRINK_SHARES = (0.02, 0.05, 0.1, 0.2, 0.5)  # the largest released residuals that give up the band's energy
SHRINK_LEAST = 0.5  # ... each kept at least this share of itself, else more records share it


def _concentrated(B0, C, QO, G):
    """The other records' residuals B0 with the energy the ladder takes (B0'B0 down to C) taken
    from their largest ones only: the largest 2 % of them by size (else 5, 10, 20 or 50 %,
    the first share whose residuals keep at least half of themselves) shrunk by one factor,
    the rest left, then made orthogonal to the span of Q_O again (the final rescaling to C
    is then nearly 1).  A uniform rescaling would shrink every record's residual (Tarragona
    SALES: all by 0.8, the marginal KS .25 against .12 without the ladder); these are the
    residuals the exchange handed round from the largest records in the first place."""
    have, need = float(np.trace(B0.T @ B0)), float(np.trace(C))
    if need >= have or have <= 0:
        return B0
    size = (B0 ** 2).sum(axis=1)
    order = np.argsort(size, kind="stable")[::-1]
    for share in SHRINK_SHARES:
        big = order[:max(1, int(np.ceil(share * len(size))))]
        e_big = float(size[big].sum())
        rest = have - e_big
        if need <= rest or e_big <= 0:
            continue
        lam = np.sqrt((need - rest) / e_big)
        if lam >= SHRINK_LEAST:
            break
    else:
        return B0
    X = B0.copy()
    X[big] *= lam
    return X - QO @ np.linalg.solve(G, QO.T @ X)


def _ladder(memo, key, Sj, top, k, gen, g, s, f, t, QT=None):
    """The top band's log-ratios of released to own value on a ladder handed out in a random
    order (``top_band='random'``): rungs g and a random 0-LADDER_EXTRA more apart, one per
    record of the band, in the order of a random key per record, drawn once a run (``memo``)
    so that every round sets the same ladder.  Its centre is the one that gives the band the
    least residual sum of squares around its fit ``f`` (the exact rescaling of every residual
    to E'E shrinks all the others by what the band adds) moved by a random -1 to 1 rung
    (CENTRE_SHIFT: with the least-energy centre alone the rungs stood within 0.04 of the same
    places run after run, and an outside intruder read them off a template learned from its
    own replays), then the rungs below 0 go down and those above up together until none lies
    within the guard's window of the own value (and a random 0-50 % of a gap beyond it)."""
    key = ("ladder",) + tuple(key)  # (column, attempt)
    got = memo.get(key) if memo is not None else None
    if got is None:
        band = _sorted(memo, ("S", key[1]), Sj)[-k:]
        keys = gen.random(len(band))  # one per record of the band, in the band's order
        rungs = np.r_[0.0, np.cumsum(1 + LADDER_EXTRA * gen.random(len(band) - 1))]
        got = (keys, rungs - rungs.mean(), gen.uniform(0.0, 0.5, 2), gen.uniform(-1.0, 1.0))
        if memo is not None:
            memo[key] = got
    keys, rungs, beyond, shift = got
    order = np.argsort(keys[_in_band(memo, key[1], Sj, k, top)], kind="stable")
    L = np.empty(len(top))
    L[order] = g * rungs[:len(top)] - g * rungs[:len(top)].mean()
    c = _least_energy_centre(L, s, f, _energy_matrix(memo, key[1], QT)) + CENTRE_SHIFT * g * shift
    return _off_own(L + c, t, g * beyond)


def _in_band(memo, j, Sj, k, top):
    """The positions of the records ``top`` in column ``j``'s band (its largest k by value, in
    that order), once a run."""
    key = ("in band", j, len(top))
    if memo is None or key not in memo:
        band = _sorted(memo, ("S", j), Sj)[-k:]
        by_id = np.argsort(band)
        got = by_id[np.searchsorted(band[by_id], top)]
        if memo is None:
            return got
        memo[key] = got
    return memo[key]


def _energy_matrix(memo, j, QT):
    """M = I + Q_T (I - Q_T'Q_T)^-1 Q_T' of column ``j``'s band (``_least_energy_centre``), once a
    run (the same for every attempt); None without the basis or where it is singular."""
    if QT is None:
        return None
    key = ("M", j)
    if memo is not None and key in memo:
        return memo[key]
    try:
        M = np.eye(len(QT)) + QT @ np.linalg.solve(np.eye(QT.shape[1]) - QT.T @ QT, QT.T)
    except np.linalg.LinAlgError:
        M = None
    if memo is not None:
        memo[key] = M
    return M


def _least_energy_centre(L, s, f, M=None):
    """The shift c of the log-ratios L that minimises the energy the band's residuals
    R = s exp(L + c) - f take from E'E: R'MR, M = I + Q_T (I - Q_T'Q_T)^-1 Q_T' (R'R and the
    A'A of the other records' change that keeps the residuals orthogonal to [1, P], which
    shifts every record: its intercept part moves the whole bulk, the marginal KS of
    Tarragona SALES .26 with R'R alone; ``_energy_matrix``; None: R'R); with a = s exp(L),
    exp(c) = a'Mf / a'Ma."""
    a = s * np.exp(L)
    if M is None:
        M = np.eye(len(a))
    num = float(a @ M @ f)
    den = float(a @ M @ a)
    return float(np.log(num / den)) if num > 0 and den > 0 else 0.0


def _own_window(t):
    """The guard's window around a record's own value, as log-ratios of released to own value."""
    return np.log(1 - GUARD_MARGIN * t), np.log(1 + GUARD_MARGIN * t)


def _off_own(l, t, beyond=(0.0, 0.0)):
    """The log-ratios ``l`` with the guard's window around 0 (the own value) emptied: the rungs
    below 0 shifted down together and those above up together, so the gaps between them stay
    (only the gap across the window widens); the rungs next to the window end ``beyond`` (two
    random amounts) past its edges, not on them (an edge is a ratio the intruder knows)."""
    lo, hi = _own_window(t)
    lo, hi = lo * (1 + 1e-6) - beyond[0], hi * (1 + 1e-6) + beyond[1]
    out = l.copy()
    neg, pos = l < 0, l >= 0
    if neg.any():
        out[neg] -= max(0.0, l[neg].max() - lo)
    if pos.any():
        out[pos] += max(0.0, hi - l[pos].min())
    return out
