"""The replay intruder (issue 38): it knows the method and every published setting (the
recipe holds them; only the seed is secret), so it makes the release again, from the release
itself taken as the original, with seeds of its own (``IntruderContext.replays``: the
protection pipeline's replays, REPLAYS of them).  Each replay is a file whose "original" the
intruder holds (the release) beside what the construction made of it, so it learns there,
without any truth, how a record's released value relates to its own: whatever the
construction does to a record of a given size (IPSO's top band spread and guarded, a
shrinkage, a reflection of the residual about the fit, FA's shift of a whole row) shows in the
replays as it does in the release.

What it learns, per band of the size it can see (the fit of the variable on what it knows,
fitted on the release: ten bands by rank and the largest max(5, 1 %) records on their own),
from the replays' records of that band:

* ``fit + c (z - fit)``: the released value z moved towards or past the fit, c on a grid
  from -2 to 2 (c = 1 is the released value itself, c = 0 the fit, c < 0 the residual
  reflected about it);
* ``z / r``: the released value divided by the ratio of released to own value that the most
  replayed records share (the median of the ratios in the densest window of the tolerance's
  width);
* least squares of the own value on (1, z, fit, the release's regression of the variable on
  the record's released other values) on the raw and on the signed-log scale.

In each band it keeps the one map that gets the most replayed records within the tolerance
(chosen on the replays, never with the truth), and applies it to the release: one guess per
record.  A construction that a replay cannot make again (a refusal on the release) gives no
guess."""

from __future__ import annotations

import numpy as np

from .._core.plausible import close
from .construction import GRAM_ROWS, _apply, _finite, _moments, _ols, _on_whole, _related, _released, _solve
from .intruders import MAX_KNOWN, slog, slog_inverse

__all__ = []

GRID = np.round(np.linspace(-2.0, 2.0, 81), 2)  # the c of fit + c (z - fit)
BANDS = 10
TOP_SHARE, TOP_LEAST = 0.01, 5  # the band of the largest records: max(5, 1 %) by the fit
LEARN_MOST = 4000  # replayed records per band it learns from (evenly spaced above)


def replay(ctx):
    """The replay intruder's guess (module docstring), or None where no replay exists."""
    runs = ctx.replays() if ctx.replays is not None else None
    if not runs or not ctx.known or len(ctx.rows) < 3 * BANDS:
        return None
    j, K = ctx.target, list(ctx.known)
    Y = ctx.released
    y, _ = _released(ctx)  # the released cells of the target (and the columns related to it, below)
    if len(y) <= 3 * BANDS or np.std(y) == 0:
        return None
    cols = [K[c] for c in _related(ctx, MAX_KNOWN)]
    # the learning set: in each replay the release is the truth, the replay the release
    T, Z, F, G = [], [], [], []
    for Ys in runs:
        feats = _features(Ys, j, cols, Y, Ys)
        if feats is None:
            return None
        T.append(Y[:, j])
        Z.append(Ys[:, j])
        F.append(feats[0])
        G.append(feats[1])
    # the release's own: its fit applied to what the intruder knows of the sampled records
    feats = _features(Y, j, cols, ctx.original, Y[ctx.rows])
    if feats is None:
        return None
    f_now, g_now = feats
    z_now = Y[ctx.rows, j]
    guess = np.full(len(ctx.rows), np.nan)
    learn_bands = [_bands(f) for f in F]
    for b, now in enumerate(_bands(f_now)):
        if not len(now):
            continue
        pick = [(t[m], z[m], f[m], g[m]) for t, z, f, g, bands in zip(T, Z, F, G, learn_bands)
                for m in [_thin(bands[b])]]
        t, z, f, g = (np.concatenate(p) for p in zip(*pick))
        best = _best_map(t, z, f, g, ctx.tolerance)
        if best is not None:
            with np.errstate(all="ignore"):
                guess[now] = best(z_now[now], f_now[now], g_now[now])
    guess[~np.isfinite(guess)] = np.nan
    return [guess]


def _features(S, j, cols, A, B):
    """(the least-squares fit of column ``j`` of the file ``S`` on its columns ``cols``, applied
    to the rows of ``A``; the same fit applied to the rows of ``B``), or None where the fit
    cannot be made.  A whole file's fit is solved from its moments (once per file, shared by
    every checked variable: ``construction._moments``)."""
    whole = len(S) > GRAM_ROWS and _moments(S, 0) is not None
    b = _solve(*_moments(S, 0), j, cols) if whole else None
    if b is None:
        A_, y = S[:, cols], S[:, j]
        ok = np.isfinite(y) & np.isfinite(A_).all(axis=1)
        if ok.sum() <= len(cols) + 1:
            return None
        b = _ols(A_[ok], y[ok])
    with np.errstate(all="ignore"):
        return _applied(b, A, cols), _applied(b, B, cols)


def _applied(b, A, cols):
    """The fit ``b`` on columns ``cols`` applied to the rows of ``A`` (a whole file's by one
    product with every column, no copy of it)."""
    if len(A) > GRAM_ROWS and _finite(A):
        return _on_whole(b, A, cols)
    return _apply(b, A[:, cols])


def _bands(fit):
    """The records of each band of the fit: BANDS bands by rank and the largest max(5, 1 %)
    apart (each record in exactly one)."""
    n = len(fit)
    order = np.argsort(np.where(np.isfinite(fit), fit, -np.inf), kind="stable")
    top = min(n, max(TOP_LEAST, int(np.ceil(TOP_SHARE * n))))
    rest = order[:n - top]
    return [np.sort(b) for b in np.array_split(rest, BANDS)] + [np.sort(order[n - top:])]


def _thin(idx):
    if len(idx) <= LEARN_MOST:
        return idx
    return idx[np.unique(np.linspace(0, len(idx) - 1, LEARN_MOST).round().astype(np.int64))]


def _best_map(t, z, f, g, tol):
    """The map of (z, fit, g) to the own value that gets the most of the learning records
    within the tolerance (the first of ties, in the module docstring's order), or None."""
    ok = np.isfinite(t) & np.isfinite(z) & np.isfinite(f) & np.isfinite(g)
    t, z, f, g = t[ok], z[ok], f[ok], g[ok]
    if len(t) < 3:
        return None
    maps = []
    # fit + c (z - fit) on the grid: hits per c at once
    H = close(t[None, :], f[None, :] + GRID[:, None] * (z - f)[None, :], tol).sum(axis=1)
    c = float(GRID[int(np.argmax(H))])
    maps.append((int(H.max()), lambda z, f, g, c=c: f + c * (z - f)))
    pos = (z > 0) & (t > 0)
    if pos.sum() >= 3:
        r = _densest_median(z[pos] / t[pos], tol)
        maps.append((int(close(t, z / r, tol).sum()), lambda z, f, g, r=r: z / r))
    for fwd, inv in ((lambda v: v, lambda v: v), (slog, slog_inverse)):
        with np.errstate(all="ignore"):
            D = np.c_[np.ones(len(t)), fwd(z), fwd(f), fwd(g)]
            b = np.linalg.lstsq(D, fwd(t), rcond=None)[0]
            est = inv(D @ b)
        if np.isfinite(b).all():
            maps.append((int(close(t, est, tol).sum()),
                         lambda z, f, g, b=b, fwd=fwd, inv=inv: inv(b[0] + b[1] * fwd(z) + b[2] * fwd(f) + b[3] * fwd(g))))
    return max(maps, key=lambda m: m[0])[1] if maps else None


def _densest_median(rho, t):
    """The median of the ratios ``rho`` (positive) in the window [(1 - t) c, (1 + t) c] that
    holds the most of them (the first such): the ratio the replays give most often."""
    l = np.sort(np.log(rho))
    w = np.log((1 + t) / (1 - t))
    end = np.searchsorted(l, l + w, side="right")
    i = int(np.argmax(end - np.arange(len(l))))
    return float(np.exp(np.median(l[i:end[i]])))
