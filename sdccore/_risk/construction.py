"""Intruders who know how the release was made (issue 38): each attacks what a construction
gives away, from the release itself and what the intruder knows, never from the original's
hidden values.

* ``residual``  residual assignment.  IPSO publishes the fit of each sensitive variable on
  the public ones exactly, so the released values minus that fit are the original residuals
  handed round; data shuffling and rank swapping publish the value set.  The intruder fits
  the released variable on the released known ones (on the raw and on the signed-log
  scale, the one whose fit predicts the released values best), so it holds the fit and the
  set of released residuals; it predicts each record's
  residual as its prior's prediction minus the fit, and (a) hands the released residuals out
  in that order, (b) takes the released residual nearest to the prediction ("snapped").
* ``residual_by_size``  (IPSO) the released residuals handed out by the size of the fit, the
  largest to the largest: a large record's residual is large.
* ``release_fit``  a model fitted on the release applied to what the intruder knows: least
  squares on the raw or on the signed-log scale, or the mean of the 5 nearest released
  records on the known variables, whichever predicts the released values best
  (leave-one-out, on the release itself: the intruder needs no truth to choose).  A conditional method's release carries the model's
  conditional law, which a regression on the release recovers.  Where records lack a known
  cell, also least squares within those records and within the complete ones apart (IPSO
  keeps the complete records' regression too, so the release holds a fit per group).
* ``correction``  general protection: the record's own released value, and the linked
  record's, corrected by the regression of the variable on the others fitted on the
  release, applied to the difference between what the intruder knows and what was released
  ("own + correction").  FA and PCA move the variables of a record together, so the part of
  the change the other variables show is taken back.

Each returns a list of alternative guesses (the battery counts the best one) or None."""

from __future__ import annotations

import threading
import weakref

import numpy as np
from scipy.spatial import cKDTree

from .._core.plausible import close
from .intruders import (KNN, KNN_VARIABLES, MAX_KNOWN, assignment, knn_loo, loo_fit, related_columns, slog,
                         slog_inverse)

__all__ = []

_SCALES = ((lambda v: v, lambda v: v), (slog, slog_inverse))


# what the intruders of one context share (the release's rows, the least-squares fits, the
# candidate models' scores), kept while the context lives: the residual, shrinkage,
# release-fit and correction intruders fit the same regressions on the same release in turn
# (general FA of 200,000 x 30: 90 fits of which 60 were repeats, 9 of 29 CPU-s)
_MEMO = {}
_MEMO_LOCK = threading.Lock()


def _held(store, lock, obj):
    """The dict ``store`` keeps for ``obj`` while it lives (by its id; the entry of a freed
    object whose id came round again is replaced)."""
    key = id(obj)
    with lock:
        m = store.get(key)
        if m is None or m["of"]() is not obj:
            m = store[key] = {"of": weakref.ref(obj)}
            weakref.finalize(obj, store.pop, key, None)
    return m


def _memo(ctx):
    return _held(_MEMO, _MEMO_LOCK, ctx)


def _released(ctx):
    """(released target over the records whose cell is released, their released known values,
    None where the fits use every record: ``_fitted`` and ``_known_columns`` read the whole
    file then, without a copy of it); shared by the context's intruders (not to be changed in
    place)."""
    m = _memo(ctx)
    if "released" not in m:
        m["released"] = (ctx.released[:, ctx.target], None) if _whole_rows(ctx) else _released_rows(ctx)
    return m["released"]


def _known_columns(ctx, cols):
    """The released known columns ``cols`` (positions in ``known``) of ``_released``'s records."""
    y, Yk = _released(ctx)
    return ctx.released[:, np.asarray(ctx.known)[cols]] if Yk is None else Yk[:, cols]


def _released_rows(ctx):
    y = ctx.released[:, ctx.target]
    Yk = ctx.released[:, list(ctx.known)]
    use = np.isfinite(y) & np.isfinite(Yk).all(axis=1)
    if ctx.observed is not None:
        use &= ctx.observed
    return y[use], Yk[use]


GRAM_ROWS = 2000  # least squares of more rows than this from the centred cross-products


def _ols(A, t):
    """Least-squares coefficients of t on [1, A] (the minimum-norm solution when A is rank
    deficient).  Of more than GRAM_ROWS rows from the cross-products of the centred columns
    (``_solve``: one pass and a p x p solve, about a fifth of the SVD's cost on 200,000 x 30)
    where they determine the fit well, else by the SVD of the rows as below."""
    if len(t) > GRAM_ROWS:
        F = np.c_[A, t]
        mu = F.mean(axis=0)
        Z = F - mu
        b = _solve(mu, Z.T @ Z, A.shape[1], np.arange(A.shape[1]))
        if b is not None:
            return b
    D = np.c_[np.ones(len(t)), A]
    return np.linalg.lstsq(D, t, rcond=None)[0]


WELL_DETERMINED = 1e-8  # the smallest eigenvalue of the unit-length columns' cross-products, relative


def _solve(mu, C, t, cols):
    """Least squares of column ``t`` on [1, columns ``cols``] from the columns' means ``mu``
    and centred cross-products ``C`` (the normal equations of the columns scaled to unit
    length), or None where they do not determine it to the SVD's precision: a column without
    variance (the SVD splits the intercept between it and the constant, and the coefficients
    then differ where it is applied to other values) or nearly collinear columns (an
    eigenvalue below WELL_DETERMINED of the largest: the squares of the data's singular
    values, so a relation the SVD of the rows still resolves would be cut).  The caller then
    fits the rows themselves."""
    cols = np.asarray(cols, dtype=np.int64)
    d = np.diag(C)[cols]
    if not len(cols) or not (d > 0).all():
        return None
    sd = np.sqrt(d)
    G = C[np.ix_(cols, cols)] / np.outer(sd, sd)
    w = np.linalg.eigvalsh(G)
    if w[0] < WELL_DETERMINED * w[-1]:
        return None
    beta = np.linalg.solve(G, C[cols, t] / sd) / sd
    return np.r_[mu[t] - mu[cols] @ beta, beta]


# what the intruders of every checked variable share about one whole file (the release, a
# replay): its columns on the signed-log scale and, per scale, the columns' means and centred
# cross-products, kept while the file lives.  Each checked variable's least-squares fits on
# the whole file are then a p x p solve: general FA of 200,000 x 30 fitted 150 regressions of
# 200,000 rows (the replay intruder's and the release's), 12 of 41 CPU-s (issue 42)
_WHOLE = {}
_WHOLE_LOCK = threading.Lock()


def _whole(A):
    return _held(_WHOLE, _WHOLE_LOCK, A)


def _scaled(A, scale):
    """The whole file ``A`` on scale ``scale`` (0 raw, 1 signed log), the log once per file."""
    if scale == 0:
        return A
    w = _whole(A)
    if "slog" not in w:
        with np.errstate(all="ignore"):
            w["slog"] = slog(A)
    return w["slog"]


def _finite(A):
    """Whether every cell of the whole file ``A`` is finite, once per file."""
    w = _whole(A)
    if "finite" not in w:
        w["finite"] = bool(np.isfinite(A).all())
    return w["finite"]


def _moments(A, scale):
    """(column means, centred cross-products) of the whole file ``A`` on ``scale``, once per
    file, or None where a cell is not finite (the fits then use the records they can)."""
    w = _whole(A)
    if ("moments", scale) not in w:
        F = _scaled(A, scale)
        if not _finite(A) or not np.isfinite(F).all():
            w[("moments", scale)] = None
        else:
            mu = F.mean(axis=0)
            Z = F - mu
            w[("moments", scale)] = (mu, Z.T @ Z)
    return w[("moments", scale)]


def _whole_rows(ctx):
    """Whether the release's fits use every record (every cell of the file released and
    finite): the fits are then solved from the whole file's moments."""
    m = _memo(ctx)
    if "whole" not in m:
        Y = ctx.released
        m["whole"] = (len(Y) > GRAM_ROWS and (ctx.observed is None or bool(np.all(ctx.observed)))
                      and _moments(Y, 0) is not None)
    return m["whole"]


def _fitted(ctx, scale, cols, b):
    """The fit ``b`` (on the related known columns ``cols``, scale ``scale``) applied to the
    released rows the fits use (``_released``'s records)."""
    if _whole_rows(ctx):
        return _on_whole(b, _scaled(ctx.released, scale), np.asarray(ctx.known)[cols])
    return _apply(b, _SCALES[scale][0](_known_columns(ctx, cols)))


def _on_whole(b, A, idx):
    """The fit ``b`` (the intercept, then a coefficient per column ``idx`` of ``A``) applied to
    every row of the whole file ``A`` by one product with all its columns, without copying
    those columns."""
    full = np.zeros(A.shape[1])
    full[idx] = b[1:]
    return b[0] + A @ full


def _release_ols(ctx, scale, cols):
    """``_ols`` of the released target on its released known columns ``cols``, on scale
    ``scale`` (0 raw, 1 signed log), once per context (from the whole file's moments where
    the fit uses every record)."""
    m = _memo(ctx)
    key = ("ols", scale, tuple(int(c) for c in cols))
    if key not in m:
        moments = _moments(ctx.released, scale) if _whole_rows(ctx) else None
        b = _solve(*moments, ctx.target, np.asarray(ctx.known)[cols]) if moments is not None else None
        if b is None:
            y = _released(ctx)[0]
            f = _SCALES[scale][0]
            with np.errstate(all="ignore"):
                b = _ols(f(_known_columns(ctx, cols)), f(y))
        m[key] = b
    return m[key]


def _related(ctx, most):
    """``related_columns`` of the released known columns to the released target, once per
    context (the correlations from the whole file's moments where the fits use every record)."""
    m = _memo(ctx)
    if ("related", most) not in m:
        if len(ctx.known) <= most:
            m[("related", most)] = np.arange(len(ctx.known))
        elif _whole_rows(ctx):
            _, C = _moments(ctx.released, 0)
            k, t = np.asarray(ctx.known), ctx.target
            with np.errstate(invalid="ignore", divide="ignore"):
                c = np.abs(np.nan_to_num(C[k, t] / np.sqrt(np.diag(C)[k] * C[t, t])))
            m[("related", most)] = np.sort(np.argsort(-c, kind="stable")[:most])
        else:
            y, Yk = _released(ctx)
            m[("related", most)] = related_columns(Yk, y, most)
    return m[("related", most)]


def _apply(b, A):
    return b[0] + A @ b[1:]


def _can(ctx):
    return bool(ctx.known) and len(ctx.rows) > 2


def _validated(ctx, candidates):
    """The position of the candidate model the intruder would pick WITHOUT the truth: the one
    whose leave-one-out prediction of the released values themselves (on the sampled
    records' released rows) puts the most within the tolerance.  One guess per intruder and
    scale, not the best of several chosen band by band with the truth (that would count
    chance hits).  The scores of the context last asked for are kept: the residual and the
    release-fit intruders ask for the same least-squares fits of one context in turn."""
    scores = _memo(ctx).setdefault("scores", {})
    for c in candidates:
        if c not in scores:
            scores[c] = _score(ctx, c)
    got = [scores[c] for c in candidates]
    return 0 if any(v is None for v in got) else int(np.argmax(got))


def _score(ctx, c):
    """The share of the sampled records' released values that candidate ``c`` predicts
    within the tolerance, leave-one-out (None: too few records to tell)."""
    rows = ctx.rows
    y = ctx.released[rows, ctx.target]
    Yk = ctx.released[np.ix_(rows, list(ctx.known))]
    ok = np.isfinite(y) & np.isfinite(Yk).all(axis=1)
    if ctx.observed is not None:
        ok &= ctx.observed[rows]
    if ok.sum() <= KNN + 1:
        return None
    y, Yk = y[ok], Yk[ok]
    with np.errstate(all="ignore"):
        if c == "knn":
            est = knn_loo(Yk[:, related_columns(Yk, y, KNN_VARIABLES)], y)
        else:
            f, finv = _SCALES[c]
            est = finv(loo_fit(f(Yk[:, related_columns(Yk, y, MAX_KNOWN)]), f(y)))
        return float(np.mean(close(y, np.where(np.isfinite(est), est, np.inf), ctx.tolerance)))


def _residual_inputs(ctx):
    """What the residual intruders start from: (released target, released known values, the
    best prior's prediction, the known columns most related to the target), or None."""
    if not _can(ctx):
        return None
    y, Yk = _released(ctx)
    if len(y) < 3 or y.std() == 0:
        return None
    from . import attacks  # the battery's own module (imports this one's guesses by name, on first use)

    pred = attacks.best_prior(ctx)
    if pred is None:
        return None
    return y, Yk, pred, _related(ctx, MAX_KNOWN)


def residual(ctx):
    """Residual assignment: the released residuals around the fit published by the release,
    handed out in the order of the prior's predicted residual, and snapped to the nearest."""
    got = _residual_inputs(ctx)
    if got is None:
        return None
    y, Yk, pred, cols = got
    K = ctx.known_values[:, cols]
    out = []
    scale = _validated(ctx, (0, 1))  # the scale whose fit predicts the release best
    f, finv = _SCALES[scale]
    b = _release_ols(ctx, scale, cols)
    with np.errstate(all="ignore"):
        res = np.sort(f(y) - _fitted(ctx, scale, cols, b))
        fit = _apply(b, f(K))
        want = f(pred) - fit
        handed = assignment(want, res, presorted=True)  # res is sorted above
        if handed is not None:
            out.append(finv(fit + handed))
        r = np.clip(np.searchsorted(res, want), 1, len(res) - 1)
        near = np.where(np.abs(res[r] - want) < np.abs(want - res[r - 1]), res[r], res[r - 1])
        out.append(finv(fit + near))
    return [np.where(np.isfinite(g), g, np.nan) for g in out]


def residual_by_size(ctx):
    """Residual assignment by size (IPSO, whose release holds the fit exactly and the original
    residual set): a large record's residual is large, so the released residuals, in order,
    go to the records in the order of their fit on the raw scale (the largest residual to
    the largest fit); and their magnitudes in that order with the sign of the prior's
    predicted residual.  The outside audit of issue 39 took 2 of the 9 largest persons' wealth
    back within 1 % from IPSO's release this way, and 2 of Tarragona's 9 largest firms' SALES
    in every run, beyond every prior."""
    got = _residual_inputs(ctx)
    if got is None:
        return None
    y, Yk, pred, cols = got
    b = _release_ols(ctx, 0, cols)
    with np.errstate(all="ignore"):
        res = y - _fitted(ctx, 0, cols, b)
        fit = _apply(b, ctx.known_values[:, cols])
        handed = assignment(fit, res)
        if handed is None:
            return None
        mags = assignment(fit, np.abs(res))
        out = [fit + handed, fit + np.where(pred < fit, -mags, mags)]
    return [np.where(np.isfinite(g), g, np.nan) for g in out]


SHRINK_SIMULATIONS = 5


def shrinkage(ctx):
    """The shrinkage intruder (IPSO): the largest records' released values lie below their
    own (a record is among the largest partly by its own residual, which the release hands
    elsewhere: regression to the mean).  The intruder knows the construction, so it learns by
    how much from the release itself: taken as the original, its residuals around its fit
    handed round at random (5 fixed permutations) give the ratio of released to own value for
    its largest max(5, 1 %) records (none within the tolerance of 1: the construction leaves
    no value that close to its own).  Three ways to undo it: each record's released value
    divided by the median ratio, divided by the ratio the most simulated records share (the
    densest window of the tolerance's width), or plus the median shortfall; the intruder
    takes the one that undoes its own simulation best (one guess: the best of three chosen
    with the truth would count chance hits in a band of 5 records).  An outside audit took 2
    of the 9 largest persons' wealth back in 9 of 10 seeds with a ratio of 0.88 (32 % of the
    top 1 % beyond the prior)."""
    if not _can(ctx):
        return None
    y, Yk = _released(ctx)
    n = len(y)
    if n < 10 or y.std() == 0:
        return None
    cols = _related(ctx, MAX_KNOWN)
    b = _release_ols(ctx, 0, cols)
    with np.errstate(all="ignore"):
        fit = _fitted(ctx, 0, cols, b)
        res = y - fit
        top = np.argsort(y, kind="stable")[-max(5, int(np.ceil(0.01 * n))):]
        gen = np.random.default_rng(0)  # fixed: the intruder's simulation, not the release's seed
        sims = np.array([fit[top] + res[gen.permutation(n)][top] for _ in range(SHRINK_SIMULATIONS)])
        own = np.broadcast_to(y[top], sims.shape)
        t = ctx.tolerance
        # the construction leaves no value within the tolerance of its own: nor does the simulation
        keep = np.isfinite(sims) & (np.abs(sims - own) > t * np.abs(own))
        rho, d = (sims / own)[keep & (sims * own > 0)], (own - sims)[keep]
        if not len(rho) or not len(d):
            return None
        undo = [lambda v, c=float(np.median(rho)): v / c, lambda v, c=_densest(rho, t): v / c,
                lambda v, c=float(np.median(d)): v + c]
        # one guess, the one that undoes the simulation best (on the release: no truth needed)
        score = [np.sum(np.abs(f(sims[keep]) - own[keep]) <= t * np.abs(own[keep])) for f in undo]
        guess = undo[int(np.argmax(score))](ctx.released[ctx.linked, ctx.target])
    return [np.where(np.isfinite(guess), guess, np.nan)]


def _densest(rho, t):
    """The constant c whose window [(1 - t) c, (1 + t) c] holds the most of the ratios
    ``rho`` (positive), the first such window's: dividing by c gets the ratio the simulation
    gives most often."""
    l = np.sort(np.log(rho))
    w = np.log((1 + t) / (1 - t))
    count = np.searchsorted(l, l + w, side="right") - np.arange(len(l))
    i = int(np.argmax(count))
    return float(np.exp(l[i]) / (1 - t))  # the window's lower edge (1 - t) c at the i-th ratio


def release_fit(ctx):
    """Models fitted on the release (least squares on the raw and signed-log scale, the mean
    of the nearest released records) applied to the known values of the target; and that
    guess combined with the prior's (their mean on the signed-log scale, a fixed recipe):
    where the release publishes a fit on every record, that fit leans to each record's own
    value by its leverage, and halfway to the prior's guess it lands closer than either
    (statecrime, IPSO: 2 of the 5 states of the top decile, beyond every prior model, in
    every run; the held-out intruder of issue 38).  Selective protection only, where the
    release is a law of the sensitive variables given the public ones: in general protection
    of unrelated variables both guesses are near the mean, and halfway between them is one
    more constant that hits the records of a dense band by chance (6 independent lognormal
    columns, PCA: 20.5 % of a middle band "beyond the prior")."""
    if not _can(ctx):
        return None
    y, Yk = _released(ctx)
    if len(y) <= KNN or y.std() == 0:
        return None
    est = _release_model(ctx, y, Yk)
    out = [est]
    grouped = _group_fits(ctx)
    if grouped is not None:
        out.append(grouped)
    from . import attacks  # the battery's own module (imports this one's guesses by name, on first use)

    prior = attacks.best_prior(ctx) if ctx.selective else None
    if prior is not None:
        with np.errstate(all="ignore"):
            both = slog_inverse((slog(est) + slog(prior)) / 2)
        out.append(np.where(np.isfinite(both), both, np.nan))
    return out


def _group_fits(ctx):
    """Where some records lack a known cell, least squares fitted within the records with
    every known cell and within the others apart: IPSO keeps the regression on the complete
    records as well (missing_rows='both'), so the release holds one fit per group, and within
    the smaller group each record's own value weighs more (its leverage).  On the scale whose
    fit predicts the release best; None without incomplete records."""
    if ctx.cells is None:
        return None
    incomplete = ~np.asarray(ctx.cells)[:, list(ctx.known)].all(axis=1)
    if not incomplete.any() or min(incomplete.sum(), (~incomplete).sum()) <= KNN:
        return None
    y_all = ctx.released[:, ctx.target]
    use = np.isfinite(y_all)
    if ctx.observed is not None:  # as ``_released``: only the records whose target is released
        use &= ctx.observed
    f, finv = _SCALES[_validated(ctx, (0, 1))]
    K = ctx.known_values
    est = np.full(len(ctx.rows), np.nan)
    with np.errstate(all="ignore"):
        for group in (incomplete, ~incomplete):
            fit_rows = group & use
            if fit_rows.sum() <= len(ctx.known) + 1:
                continue
            b = _ols(f(ctx.released[np.ix_(fit_rows, list(ctx.known))]), f(y_all[fit_rows]))
            mine = group[ctx.rows]
            est[mine] = finv(_apply(b, f(K[mine])))
    return np.where(np.isfinite(est), est, np.nan)


def _release_model(ctx, y, Yk):
    """The guess of the model fitted on the release that predicts the release best."""
    K = ctx.known_values
    pick = _validated(ctx, (0, 1, "knn"))  # the model that predicts the release best, without the truth
    cols = _related(ctx, MAX_KNOWN)
    with np.errstate(all="ignore"):
        if pick < 2:
            f, finv = _SCALES[pick]
            b = _release_ols(ctx, pick, cols)
            est = finv(_apply(b, f(K[:, cols])))
            return np.where(np.isfinite(est), est, np.nan)
        near = _related(ctx, KNN_VARIABLES)
        N = _known_columns(ctx, near)
        mu, sd = N.mean(0), N.std(0)
        sd = np.where(sd > 0, sd, 1.0)
        tree = cKDTree((N - mu) / sd)
        Q = (K[:, near] - mu) / sd
        ok = np.isfinite(Q).all(axis=1)
        est = np.full(len(K), np.nan)
        if ok.any():
            _, idx = tree.query(Q[ok], k=KNN)
            est[ok] = y[idx].mean(axis=1)
    return est


def correction(ctx):
    """Own + correction (general protection): the own and the linked released value of the
    target, corrected by the release's regression of the target on the other variables
    applied to (known original - released) of that row."""
    if not _can(ctx):
        return None
    y, Yk = _released(ctx)
    if len(y) < 3 or y.std() == 0:
        return None
    cols = _related(ctx, MAX_KNOWN)
    b = _release_ols(ctx, 0, cols)
    K = ctx.known_values[:, cols]
    known = np.asarray(ctx.known)[cols]
    out = []
    with np.errstate(all="ignore"):
        for rows in (ctx.rows, ctx.linked):
            R = ctx.released[rows]
            est = R[:, ctx.target] + (K - R[:, known]) @ b[1:]
            out.append(np.where(np.isfinite(est), est, np.nan))
    return out
