"""The partner intruder: a release that exchanges values between records in pairs (record i
shows j's value and j shows i's, as sdcMicro's rank swapping does) hands every record's own
value to the row of its partner.  The intruder, who knows the target's released row, looks
for the partner: the record whose prediction from what the intruder knows fits the target's
released value, and whose released value fits the target's own prediction (within a
published rank window), and for which the target is in turn the best such record (partners
choose each other), and reads the partner's released value.  With shifted ranks (rank
swapping's default) the record a row points to seldom points back.

The prediction of every released record is the one the priors make: the best prior model's
(leave-one-out) for the sampled records, and for the records outside the sample the least
squares fit of the target on the known variables (signed log scale, fitted on the sampled
original) applied to their released known values.  The search keeps, for each target, the
``CANDIDATES`` records nearest on each of the two fits and takes the best of their sum, so it
costs O(records log records) per variable, not records squared.
"""

from __future__ import annotations

import numpy as np

from .attacks import _prior_data, best_prior
from .construction import _apply, _ols
from .intruders import slog, slog_inverse

__all__ = []

CANDIDATES = 32  # records nearest on each fit that are scored for each target


def partner(ctx):
    """The partner intruder's guesses for the sampled records (``registry.REGISTRY['partner']``):
    the released value of the record whose fit matches the target's released row best, from
    the target's own row and, where it differs, from the row it links to."""
    y = ctx.released[:, ctx.target]
    pred = _predictions(ctx)
    if pred is None:
        return None
    ok = np.isfinite(y) & np.isfinite(pred)
    if ctx.observed is not None:
        ok &= ctx.observed
    if ok.sum() < 3:
        return None
    index = _index(y, pred, ok)
    out = [_guess(ctx.rows, y, index, ctx.window)]
    if not np.array_equal(ctx.linked, ctx.rows):
        out.append(_guess(ctx.linked, y, index, ctx.window))
    return out


def _predictions(ctx):
    """Every released record's prediction of the target from what the intruder knows (NaN
    where it has none), or None without a prior."""
    p = best_prior(ctx)
    if p is None:
        return None
    n = ctx.released.shape[0]
    out = np.full(n, np.nan)
    if len(ctx.rows) < n and ctx.known:
        X, _ = _prior_data(ctx)
        known = list(ctx.known)
        A, t = X[:, known], X[:, ctx.target]
        use = np.isfinite(A).all(axis=1) & np.isfinite(t)
        if use.sum() > len(known) + 1:
            b = _ols(slog(A[use]), slog(t[use]))
            out = slog_inverse(_apply(b, slog(ctx.released[:, known])))
    out[ctx.rows] = p
    return out


def _nearest(sorted_values, at, count):
    """Positions (into ``sorted_values``) of the ``count`` values around each of ``at``."""
    n = len(sorted_values)
    k = min(count, n)
    start = np.clip(np.searchsorted(sorted_values, at) - k // 2, 0, n - k)
    return start[:, None] + np.arange(k)[None, :]


def _index(y, pred, ok):
    """What every target's search reads, made once per variable: the released cells' records,
    their released values and predictions on the signed log scale L, both sort orders, each
    cell's released rank and each row's position among the cells (-1: not released)."""
    idx = np.flatnonzero(ok)
    ly, lp = slog(y[idx]), slog(pred[idx])
    by_pred, by_y = np.argsort(lp, kind="stable"), np.argsort(ly, kind="stable")
    rank = np.empty(len(idx), dtype=np.int64)
    rank[by_y] = np.arange(len(idx))
    where = np.full(len(y), -1, dtype=np.int64)
    where[idx] = np.arange(len(idx))
    return idx, ly, lp, by_pred, by_y, rank, where


def _guess(own, y, index, window):
    """For each target row in ``own``: the released value of its partner, the row j (j !=
    own, its cell released, within ``window`` released ranks of the target's released value)
    minimising |L(pred_j) - L(y_own)| + |L(pred_own) - L(y_j)| on the signed log scale L,
    where the target is in turn the best such row for j (partners in pairs choose each other;
    without that the guess would be a released value near the target's own prediction, the
    prior again, not a partner).  ``index``: ``_index``.  NaN where there is none."""
    idx, ly, lp, by_pred, by_y, rank, where = index
    t = where[own]
    has = t >= 0
    guess = np.full(len(own), np.nan)
    if not has.any():
        return guess
    t = t[has]
    j = _best(t, ly, lp, by_pred, by_y, rank, window)
    back = np.full(len(t), -2, dtype=np.int64)
    found = j >= 0
    back[found] = _best(j[found], ly, lp, by_pred, by_y, rank, window)
    g = np.full(len(t), np.nan)
    mutual = found & (back == t)
    g[mutual] = y[idx[j[mutual]]]
    guess[has] = g
    return guess


def _best(t, ly, lp, by_pred, by_y, rank, window):
    """The best partner (a position among the released cells) of each position in ``t``, -1
    where no candidate is allowed."""
    cand = np.concatenate([by_pred[_nearest(lp[by_pred], ly[t], CANDIDATES)],
                           by_y[_nearest(ly[by_y], lp[t], CANDIDATES)]], axis=1)
    score = np.abs(lp[cand] - ly[t][:, None]) + np.abs(lp[t][:, None] - ly[cand])
    bad = cand == t[:, None]
    if window is not None:
        bad |= np.abs(rank[cand] - rank[t][:, None]) > window
    score[bad] = np.inf
    best = np.argmin(score, axis=1)
    pick = cand[np.arange(len(t)), best]
    return np.where(np.isfinite(score[np.arange(len(t)), best]), pick, -1)


# ---------------------------------------------------------------------------- the band-mates intruder
# A release that hands places round within blocks (the quantile exchange) keeps each block's set
# of places: a record's own place is one of its block-mates' released places.  The intruder, who
# knows the construction, fits the regression quantiles on the release (the public variables are
# released unchanged, so the fit is close to the original's), reads each record's band and place
# from its released value, rebuilds the blocks of records of similar predicted size within each
# band, and maps every block-mate's place into the target's own band: the candidates for its own
# value.  It guesses the candidate around which the most candidates lie within the tolerance (and,
# as alternatives, their median, and the places of the block matched to the records by the
# prior's prediction from what it knows, each place to one record); a candidate within the
# tolerance of the target's released
# value is dropped, as the construction repairs those.  (An outside intruder who did this by hand
# put 13-17 % of several size bands of Tarragona SALES within 5 % beyond the prior.)

BAND_QUANTILES = "0.1,0.5,0.9"  # the method's defaults, where its settings are not given
BAND_BLOCK = 10


def band_mates(ctx):
    """The band-mates intruder's guesses for the sampled records (``REGISTRY['band_mates']``),
    or None where it does not apply (no known variables, too few records)."""
    from .._methods.conditional import QUANTILES, _places, _values, blocks, planes

    if ctx.method is None:  # a release of an unknown construction: no published quantiles and block to read
        return None
    settings = ctx.settings or {}
    taus, size = QUANTILES[settings.get("quantiles", BAND_QUANTILES)], int(settings.get("block", BAND_BLOCK))
    y = ctx.released[:, ctx.target]
    known = list(ctx.known)
    ok = np.isfinite(y) & np.isfinite(ctx.released[:, known]).all(axis=1) if known else None
    if not known or ok.sum() < 2 * size:
        return None
    # the method's own predictors: the public variables, the codes it was given, the sensitive ones released before
    before = [c for c in range(ctx.target) if c not in set(known)]
    idx = np.flatnonzero(ok & np.isfinite(ctx.released[:, before]).all(axis=1))
    Z = ctx.released[np.ix_(idx, known + before)]
    codes = settings.get("codes")
    if codes is not None and len(codes) == len(y):
        Z = np.column_stack([Z, np.asarray(codes, float)[idx]])
    got = planes(y[idx], Z, Z, taus, np.random.default_rng(0))  # the fit: no draw below 20,000 records
    if got is None:
        return None
    floor = 0.0 if np.nanmin(y) >= 0 else -np.inf
    F = np.maximum(got[0], floor) if np.isfinite(floor) else got[0]
    band, place, spread = _places(y[idx], F, floor)
    blks = blocks(band, F, size)  # the method's own blocks, on the planes fitted on the release
    block = np.empty(len(idx), dtype=np.int64)  # each released record's block number
    for nb, blk in enumerate(blks):
        block[blk] = nb
    where = np.full(len(y), -1, dtype=np.int64)
    where[idx] = np.arange(len(idx))
    mode, median = (np.full(len(ctx.rows), np.nan) for _ in range(2))
    pred = _predictions(ctx)  # every record's prior prediction: the block's places matched to it
    matched = np.full(len(ctx.rows), np.nan) if pred is not None else None
    tol = ctx.tolerance
    done = {}
    for k, r in enumerate(ctx.rows):
        i = where[r]
        if i < 0:
            continue
        blk = np.sort(blks[block[i]])  # in record order, as the ties fall
        mates = blk[blk != i]
        if not len(mates):
            continue
        cand = _values(np.full(len(mates), i), place[mates], band, F, floor, spread)
        cand = cand[np.isfinite(cand) & (np.abs(cand - y[idx[i]]) > 1.05 * tol * np.abs(cand))]
        if not len(cand):
            continue
        near = (np.abs(cand[None, :] - cand[:, None]) <= tol * np.abs(cand[:, None])).sum(axis=1)
        mode[k] = cand[np.argmax(near)]
        median[k] = np.median(cand)
        if matched is not None:
            if block[i] not in done:
                done[block[i]] = _matched(blk, y[idx], pred[idx], place, band, F, floor, spread, tol, _values)
            matched[k] = done[block[i]][int(np.flatnonzero(blk == i)[0])]
    return [mode, median] + ([matched] if matched is not None else [])


def _matched(blk, y, pred, place, band, F, floor, spread, tol, values):
    """Each record of a block given one of the block's places, every place to one record (the
    exchange hands the places round a cycle), none its own nor one landing within the tolerance
    of its released value, the places matched to the prior's predictions on the log scale (the
    assignment of least total distance); NaN where no place is allowed."""
    from scipy.optimize import linear_sum_assignment

    B = len(blk)
    V = np.array([values(np.full(B, a), place[blk], band, F, floor, spread) for a in blk])
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(V) | np.eye(B, dtype=bool) | (np.abs(V - y[blk][:, None]) <= 1.05 * tol * np.abs(V))
        cost = np.abs(slog(V) - slog(pred[blk])[:, None])
    cost = np.where(bad | ~np.isfinite(cost), 1e6, cost)
    rows, cols = linear_sum_assignment(cost)
    out = np.full(B, np.nan)
    ok = cost[rows, cols] < 1e6
    out[rows[ok]] = V[rows[ok], cols[ok]]
    return out
