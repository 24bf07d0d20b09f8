"""The intruder battery: what an intruder predicts of a checked value without the release
(the prior) and with it (each attack), as estimates over the linked sample of records.

Every estimator here returns point estimates of the original value ``x_j`` for the records
``rows``; the intruders that use them are declared in ``registry`` (their guesses in
``attacks``), whose ``battery`` runs them all for one variable and turns them into hits
(records within the tolerance), and ``floors.risk_profile`` into shares beyond what the prior
already gets right.  Each intruder is a small function with its own hand-made test
(``tests/risk/test_intruders.py``, ``tests/risk/test_reconstruction.py``).  Besides the priors, the
assignment and the identities below, this module holds the linking (``link``, and
``link_leave_one_out`` for wide files), the reconstruction intruders (``regression_estimate``,
``structural_estimate`` with ``change_structure``) and the residual |cor| of selective
protection (``residual_cor``).

Prior (no release; the intruder's knowledge ``known`` and the law of x_j given it, fitted
leave-one-out on the original, so a record never predicts itself):

* ``ols``      linear least squares on the known variables;
* ``log-ols``  the same on signed log scale (sign(v) log(1 + |v|)), back-transformed: the law
  of skewed amounts such as sales or incomes;
* ``knn``      the mean of the 5 nearest records on the known variables (standardised);
* ``mean``, ``median``, ``P5`` ... ``P95``  the variable's own mean and percentiles (of the
  other records): its distribution, which every release keeps or shows, so a guess of one
  value for every record (which hits the records near that value, whichever band it falls
  in) discloses nobody;
* ``boosting``  (selective protection) cross-fitted gradient boosting on the known variables:
  a nonlinear law (on CASC it puts 63 % of FEDTAX within 5 % where OLS puts 35 %); not in
  general protection, where every other variable is known and a boosted fit per variable
  would cost about a CPU-second each;
* ``ols-by-size``  cross-fitted least squares with its spread: the other folds' residuals
  handed out in the order of the fit (``by_size_fit``), the conditional law any useful
  release shows;
* ``ols-ranked``, ``log-ols-ranked``, ``knn-ranked``, ``boosting-ranked``  the other records'
  values handed out in the order of that model's prediction (``ranked_loo``): the model
  calibrated to the variable's distribution, which every release that keeps the distribution
  shows.  The assignment intruder does the same with the released values; what it gets
  beyond this is what the released value set adds, the record's own value among it (rank
  swapping on Tarragona NET.PROFIT: 3 size bands over the floor against the plain models, the
  top 1 % alone against these);
* ``ols + ols-ranked`` ... (each fit with each ranked model)  halfway between the two on the
  signed log scale: the release-fit intruder's combination of a model fitted on the release
  with the prior's guess, made without the release (a leave-one-out fit in place of the
  release's), so that it is charged with what the release adds to it, not with two errors
  that cancel by chance (IPSO on Tarragona SALES: 2 of the 9 largest firms at 7 of 11 seeds
  against the fits and ranked models alone, within the floor at all 11 against these);
The prior holds no fit on every record (the in-sample regression): a record's own value is
in that fit, with a weight of its leverage, so for a record of high leverage the fit is the
record (statecrime's DC, leverage 0.81, is within 5 % of it at every seed).  A release that
publishes the fit exactly (IPSO) is charged with what it adds to the leave-one-out laws
(issue 38's held-out intruder).

With the release (besides the own-record, linked-record and reconstruction intruders of
``_safety``):

* ``assignment``  the value-set attack: rank the records by a prediction of x_j (each prior
  model's, and the identity intruder's) and hand out the released values of x_j in that
  order.  Exact when the release is a permutation of the original values (rank swapping,
  shuffling) and the prediction orders the records; where the method publishes a swap window
  (rank swapping's p), each estimate is also clipped to the values within that many ranks of
  the record's own released value.
* ``identity``    exact or near-exact linear identities between columns (a total and its
  parts: EIA's TOTREVENUE = RESREVENUE + COMREVENUE + INDREVENUE + OTHREVENUE holds exactly
  for 94 % of utilities), found by trimmed least squares on the original, solved for x_j
  from the values the intruder knows and the released values of the linked record for the
  others.

An intruder that fails to apply returns None.

The priors and identities depend on the original alone, so they are computed once per data
set and kept (``cached``: at most CACHE_ENTRIES results, in this process's memory only, keyed
by a digest of the sampled original) across the runs of a comparison or a search.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np
from numba import njit, prange

from .._core.plausible import forward, inverse

KNN = 5             # neighbours of the k-nearest-neighbour prior
KNN_VARIABLES = 8   # known variables it uses (those most correlated with the target)
MAX_KNOWN = 31      # known variables the regression models use (those most correlated with the target)
IDENTITY_SHARE = 0.5   # an identity must hold exactly for at least this share of records
IDENTITY_REL = 1e-6    # "exactly": |x - identity| <= this * (|x| + 1)

PRIOR_MODELS = ("ols", "log-ols", "knn", "mean", "median")  # and the percentiles (_constants)
CACHE_ENTRIES = 64

_cache = OrderedDict()
_lock = threading.Lock()


def data_key(Xr):
    """A digest of the sampled original (its shape and bytes): the key of its cached priors."""
    a = np.ascontiguousarray(Xr, dtype=np.float64)
    return hashlib.blake2b(repr(a.shape).encode() + a.tobytes(), digest_size=20).hexdigest()


def cached(key, compute):
    """compute() once per key (least recently used dropped beyond CACHE_ENTRIES); results are
    never modified by their users."""
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    value = compute()
    with _lock:
        _cache[key] = value
        while len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)
    return value


def slog(v):
    """Signed log scale: sign(v) log(1 + |v|) (defined for zero and negative amounts)."""
    return np.sign(v) * np.log1p(np.abs(v))


def slog_inverse(v):
    return np.sign(v) * np.expm1(np.abs(v))


def loo_fit(P, t):
    """Leave-one-out least-squares prediction of t from the columns of P (plus an
    intercept): each record's prediction is fitted without it."""
    sd = P.std(axis=0) if P.shape[1] else np.zeros(0)
    P = P[:, sd > 0]
    if P.shape[1] == 0 or t.std() == 0:
        return np.full_like(t, t.mean()) if len(t) < 2 else (t.sum() - t) / (len(t) - 1)
    A = np.c_[np.ones(len(t)), (P - P.mean(0)) / P.std(0)]
    U, sv, _ = np.linalg.svd(A, full_matrices=False)
    U = U[:, sv > sv[0] * 1e-10]
    fit = U @ (U.T @ t)
    h = np.minimum((U * U).sum(axis=1), 1.0 - 1e-12)
    return t - (t - fit) / (1.0 - h)


def related_columns(P, t, count):
    """The positions of the ``count`` columns of P most correlated with t (all if fewer), in
    column order."""
    if P.shape[1] <= count:
        return np.arange(P.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.abs(np.nan_to_num(((P - P.mean(0)) * (t - t.mean())[:, None]).mean(0) / (P.std(0) * t.std())))
    return np.sort(np.argsort(-c, kind="stable")[:count])


def most_related(P, t, count):
    """The ``count`` columns of P most correlated with t (all of them if fewer)."""
    return P if P.shape[1] <= count else P[:, related_columns(P, t, count)]


def knn_loo(K, t, k=KNN):
    """Leave-one-out k-nearest-neighbour mean of t on the standardised columns of K (the
    record itself never among its neighbours; the first of ties by record order)."""
    n = len(t)
    if n <= k + 1 or K.shape[1] == 0:
        return (t.sum() - t) / max(n - 1, 1)
    sd = K.std(axis=0)
    K = K[:, sd > 0]
    if K.shape[1] == 0:
        return (t.sum() - t) / (n - 1)
    K = (K - K.mean(0)) / K.std(0)
    idx = _knn_without_self(np.ascontiguousarray(K), np.ascontiguousarray(K.T), k)
    return t[idx].mean(axis=1)


@njit(cache=True, parallel=True)
def _knn_without_self(K, Kt, k):
    """For each row i of K, the k other rows nearest to it (exact float64 squared distances
    summed in column order; the first of ties by row order), nearest first."""
    n, p = K.shape
    out = np.empty((n, k), np.int64)
    for i in prange(n):
        d = np.zeros(n)
        for c in range(p):
            a = K[i, c]
            row = Kt[c]
            for q in range(n):
                w = row[q] - a
                d[q] += w * w
        d[i] = np.inf
        bd = np.full(k, np.inf)
        bi = np.full(k, -1, np.int64)
        worst = np.inf
        for q in range(n):
            if d[q] < worst or bi[k - 1] < 0:
                if q == i:
                    continue
                # insert after every kept record at a distance <= d[q]: the earlier record
                # stays ahead of a tie
                pos = k - 1
                while pos > 0 and (bi[pos - 1] < 0 or bd[pos - 1] > d[q]):
                    bd[pos] = bd[pos - 1]
                    bi[pos] = bi[pos - 1]
                    pos -= 1
                bd[pos] = d[q]
                bi[pos] = q
                worst = bd[k - 1]
        out[i] = bi
    return out


def loo_quantile(t, q, sorted_ranks=None):
    """Each record's q-quantile of the other records' values (the order statistic of rank
    round(q (n - 2)) among the n - 1 others, 0-based; the median of an even count is the mean of
    the two middle ones).  ``sorted_ranks``: ``_sorted_ranks(t)``, when the caller has it."""
    n = len(t)
    if n < 3:
        return np.full(n, np.quantile(t, q) if n else np.nan)
    s, rank = sorted_ranks or _sorted_ranks(t)
    m = n - 1

    def at(i):  # the i-th smallest of the others
        return _others_at(s, rank, i)
    if q == 0.5 and m % 2 == 0:
        k = m // 2
        return (at(np.full(n, k - 1)) + at(np.full(n, k))) / 2
    return at(np.full(n, int(round(q * (m - 1)))))


# the constants the prior knows: the variable's mean and its percentiles (a published
# distribution: every release keeps it or shows it), so a guess of one value for every record
# -- which hits the records of whichever band that value falls in -- discloses nobody
PERCENTILES = tuple(range(2, 100, 2))  # the prior's constants: 2 points apart, so that one
# constant guess (the released median) finds no dense band between two of them (5 points apart: 15.7 %
# of Tarragona SALES's size band 5 beyond the prior, from the median of an IPSO release)


def _constants(t):
    out = {"mean": (t.sum() - t) / max(len(t) - 1, 1)}
    order = _sorted_ranks(t) if len(t) >= 3 else None  # one sort for the 49 percentiles
    for p in PERCENTILES:
        out["median" if p == 50 else f"P{p}"] = loo_quantile(t, p / 100, order)
    return out


BOOST_ITERATIONS = 50   # the boosted prior: trees per fit (0.9 CPU-s for CASC's FEDTAX, 5 folds)
BOOST_FOLDS = 5


def boosted_fit(K, t):
    """Cross-fitted gradient boosting (scikit-learn's HistGradientBoostingRegressor, 5 folds
    in a fixed shuffled order, one thread): each record's prediction from a model fitted on
    the other folds, so a record never predicts itself."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.model_selection import KFold
    from threadpoolctl import threadpool_limits

    n = len(t)
    if n < 2 * BOOST_FOLDS or t.std() == 0:
        return np.full_like(t, t.mean())
    est = np.empty(n)
    with threadpool_limits(1):
        for train, test in KFold(BOOST_FOLDS, shuffle=True, random_state=0).split(K):
            m = HistGradientBoostingRegressor(max_iter=BOOST_ITERATIONS, early_stopping=False, random_state=0)
            est[test] = m.fit(K[train], t[train]).predict(K[test])
    return est


def prior_estimates(Xr, t, known, boosting=False):
    """{model: leave-one-out estimate of t} from the known columns of ``Xr`` (the sampled
    records of the original): the intruder's best guesses WITHOUT the release.  Besides the
    models of what it knows, the variable's own mean and median (of the other records): every
    release keeps them or publishes them, so a guess of the middle of the distribution that
    hits the records near it discloses nothing of any one of them."""
    const = _constants(t)
    mean = const["mean"]
    if not known:
        return {m: mean for m in PRIOR_MODELS[:3]} | const
    K = Xr[:, known]
    with np.errstate(all="ignore"):
        Kr = most_related(K, t, MAX_KNOWN)
        ols = loo_fit(Kr, t)
        lt, lK = slog(t), slog(K)
        lKr = most_related(lK, lt, MAX_KNOWN)
        log_ols = slog_inverse(loo_fit(lKr, lt))
        knn = knn_loo(most_related(K, t, KNN_VARIABLES), t)
        boosted = {"boosting": boosted_fit(Kr, t)} if boosting else {}
        by_size = by_size_fit(Kr, t)
    fits = {"ols": ols, "log-ols": log_ols, "knn": knn, **boosted}
    ranked = {f"{m}-ranked": ranked_loo(e, t) for m, e in fits.items()}
    with np.errstate(all="ignore"):  # halfway (signed log scale) between a fit and a ranked model
        mixed = {f"{a} + {b}": np.nan_to_num(slog_inverse((slog(fits[a]) + slog(ranked[b])) / 2), nan=np.inf)
                 for a in fits for b in ranked}
    return {**fits, "ols-by-size": by_size, **ranked, **mixed, **const}


def ranked_loo(pred, t):
    """The other records' values of t handed out in the order of ``pred``: record i, ranked r
    (0-based, ties in record order) among the n predictions, gets the value at the same rank
    fraction, floor((r + 1/2)(n - 1)/n), among the n - 1 values of the others (its own left
    out, as in every prior model)."""
    n = len(t)
    if n < 3:
        return np.full(n, t.mean() if n else np.nan)
    s, own = _sorted_ranks(t)
    _, rank = _sorted_ranks(np.nan_to_num(pred, nan=-np.inf))
    return _others_at(s, own, np.floor((rank + 0.5) * (n - 1) / n).astype(np.int64))


def _sorted_ranks(t):
    """(t sorted, each record's rank in it: stable, ties in record order)."""
    order = np.argsort(t, kind="stable")
    rank = np.empty(len(t), dtype=np.int64)
    rank[order] = np.arange(len(t))
    return t[order], rank


def _others_at(s, own, i):
    """Each record's i-th smallest value (0-based) among the others: the sorted values ``s``
    without the record's own rank ``own``."""
    n = len(s)
    return np.where(i < own, s[np.minimum(i, n - 1)], s[np.minimum(i + 1, n - 1)])


def by_size_fit(K, t):
    """The law of t given K with its spread (cross-fitted, 5 folds in a fixed shuffled order):
    each fold's records ranked by the fit of a least-squares model fitted on the other folds,
    and handed that model's residuals there, in order of size (the largest residual to the
    largest fit).  A release that keeps the conditional law of a skewed amount shows its spread
    (a large record has a large residual); placing the largest fits at the top of that spread
    then hits some of the largest records whoever they are (diabetes: 1 or 2 of the 5 largest
    targets, from a release of the fit plus fresh normal residuals that holds nothing of any
    record's own).  The residual intruder's assignment by size is charged with what it gets
    beyond this."""
    from sklearn.model_selection import KFold

    n = len(t)
    if n < 2 * BOOST_FOLDS or t.std() == 0:
        return np.full_like(t, t.mean())
    est = np.empty(n)
    for train, test in KFold(BOOST_FOLDS, shuffle=True, random_state=0).split(K):
        D = np.c_[np.ones(len(train)), K[train]]
        b = np.linalg.lstsq(D, t[train], rcond=None)[0]
        fit = b[0] + K[test] @ b[1:]
        est[test] = fit + assignment(fit, t[train] - D @ b)
    return est


def assignment(pred, released, n_total=None, presorted=False):
    """The value-set attack: the released values sorted and handed out in the order of
    ``pred`` (ties in record order).  ``released``: every released value of the variable
    (``presorted``: already in increasing order, as ``np.sort`` leaves them); when ``pred``
    covers a sample of the records, the value at the same rank fraction."""
    pred = np.asarray(pred, dtype=float)
    order = np.argsort(np.nan_to_num(pred, nan=-np.inf), kind="stable")
    rank = np.empty(len(pred), dtype=np.int64)
    rank[order] = np.arange(len(pred))
    values = np.asarray(released, dtype=float) if presorted else np.sort(np.asarray(released, dtype=float))
    if len(values) == 0:
        return None
    if len(values) == len(pred):
        return values[rank]
    pos = np.floor((rank + 0.5) * len(values) / len(pred)).astype(np.int64)
    return values[np.clip(pos, 0, len(values) - 1)]


def window_clip(est, own_released, released, window, presorted=False):
    """Rank swapping's published window: the original value lies within ``window`` ranks
    (a count of records) of the record's own released value, so each estimate is clipped to
    the released values within that many ranks of it (``presorted`` as in ``assignment``)."""
    values = np.asarray(released, dtype=float) if presorted else np.sort(np.asarray(released, dtype=float))
    n = len(values)
    r = np.searchsorted(values, own_released, side="left")
    lo = values[np.clip(r - window, 0, n - 1)]
    hi = values[np.clip(r + window, 0, n - 1)]
    return np.clip(est, lo, hi)


def find_identity(Xr, j, candidates):
    """An exact or near-exact linear identity x_j = c + sum b_k x_k over ``candidates``
    holding to IDENTITY_REL for at least IDENTITY_SHARE of the records ``Xr``, by trimmed
    least squares (refit on the records that fit best, until the set is stable).  Returns
    (c, columns, coefficients, share holding) or None."""
    x = Xr[:, j]
    cand = [k for k in candidates if Xr[:, k].std() > 0]
    if not cand or len(x) < len(cand) + 3:
        return None
    A = np.c_[np.ones(len(x)), Xr[:, cand]]
    use = np.ones(len(x), dtype=bool)
    tol = IDENTITY_REL * (np.abs(x) + 1.0)
    with np.errstate(all="ignore"):
        for _ in range(6):
            if use.sum() < A.shape[1] + 2:
                return None
            coef = np.linalg.lstsq(A[use], x[use], rcond=None)[0]
            res = np.abs(x - A @ coef)
            holds = res <= tol
            if holds.mean() >= IDENTITY_SHARE:
                coef = np.linalg.lstsq(A[holds], x[holds], rcond=None)[0]
                holds = np.abs(x - A @ coef) <= tol
                if holds.mean() >= IDENTITY_SHARE:
                    big = np.abs(coef[1:]) * Xr[:, cand].std(0) > 1e-9 * x.std()
                    return float(coef[0]), [c for c, b in zip(cand, big) if b], coef[1:][big], float(holds.mean())
            nxt = res <= np.quantile(res, 0.5 if use.all() else 0.8)
            if np.array_equal(nxt, use):
                return None
            use = nxt
    return None


def identity_estimate(identity, Xr, Ylinked, known):
    """x_j solved from an identity: the known columns' original values, the linked record's
    released values for the rest."""
    c, cols, coef, _ = identity
    known = set(known)
    V = np.column_stack([Xr[:, k] if k in known else Ylinked[:, k] for k in cols]) if cols else np.zeros((len(Xr), 0))
    return c + V @ coef


# ----------------------------------------------------------------- linking and reconstruction

def link(X, Y, rows, cols):
    """For each original record in ``rows``, the protected record nearest on ``cols``
    (standardised by the original's sd), the first of ties."""
    from .linkage import _nearest, _standardized_pair  # the exact DBRL kernel and its scaling

    A, B = _standardized_pair(X, Y, cols)
    if A.shape[1] == 0:
        return np.asarray(rows)
    return _nearest(A[rows], B)[0]


def link_leave_one_out(X, Y, rows, targets, out_sets):
    """For each target j, ``link(X, Y, rows, all columns but out_sets[j])``, the same indices,
    from one pass: the pair is standardised once, each tile of float32 distances on every
    column is summed once and each target's left-out columns subtracted from it
    (``_linkage.nearest_without``), so m targets cost one distance pass plus m subtractions,
    not m passes over m - 1 columns."""
    from .linkage import _standardized_pair, nearest_without

    use = np.flatnonzero(np.asfortranarray(X).std(axis=0) > 0)  # summed per column as _standardized_pair sums
    where = {c: i for i, c in enumerate(use)}
    A, B = _standardized_pair(X, Y, use, rows)  # as ``link`` scales, so the same records tie
    out = {}
    sets = []
    for j in targets:
        cols = sorted({where[c] for c in out_sets[j] if c in where})
        if len(cols) == len(use):  # nothing left to link on: each record keeps its own
            out[j] = np.asarray(rows, dtype=np.int64)
        elif not cols:  # nothing varying to leave out (a constant target): linked on every column
            out[j] = link(X, Y, rows, list(use))
        else:
            sets.append((j, cols))
    if sets:
        found = nearest_without(A, B, [c for _, c in sets], seed=rows)
        out.update({j: found[t] for t, (j, _) in enumerate(sets)})
    return out


def change_structure(prep, basis):
    """(basis, forward, inverse) for the structural intruder (``structural_estimate``), from
    protect's prepared data (``prep``) and the span of the perturbed factors' loadings: the span of
    every record's change on the protection scale, one row per numeric column (rows of exact
    dependencies rebuilt from the others; NaN where the change is not linear on one scale:
    a dependency of log-scale columns), or None."""
    if basis is None:
        return None
    full = np.full((len(prep.numeric), basis.shape[1]), np.nan)
    full[prep.keep] = basis
    if prep.deps and not prep.log_cols:
        per_sd = basis / prep.sd0[prep.keep][:, None]
        for d in prep.deps:
            full[d.target] = prep.sd0[d.target] * (d.beta @ per_sd)
    if not prep.log_cols:
        return full, (lambda M: M), (lambda v, j: v)
    cols, scales = prep.log_cols, prep.log_scales

    def inv(v, j):
        if j not in cols:
            return v
        M = v[:, None].copy()
        return inverse(M, [0], [scales[cols.index(j)]])[:, 0]

    return full, (lambda M: forward(M, cols, scales)), inv


def regression_estimate(X, Y, rows, j, known, linked=None):
    """The regression intruder's estimate of x_j for the records ``rows``: knowing a record's
    original values on ``known`` and its released row, it predicts the change d_j = y_j - x_j
    from the changes d_known by the linear law of the changes (fitted on ``rows``: the intruder
    knows the method, or estimates the law from records it knows; leave-one-out, so a record
    never predicts itself), and subtracts it.  Undoes any perturbation whose changes are
    linear in the changes it can see; sees nothing when the known variables are unchanged.
    ``linked`` (general protection): the released rows the intruder links the records to,
    instead of their own."""
    own = rows if linked is None else linked
    d = Y[own, j] - X[rows, j]
    Dk = most_related(Y[np.ix_(own, known)] - X[np.ix_(rows, known)], d, MAX_KNOWN)
    return Y[own, j] - loo_fit(Dk, d)


def structural_estimate(Xs, Ys, j, known, structure):
    """The structural intruder's estimate of x_j, or None: for fa, pca and pca_remove the
    change of every record lies in the span of the perturbed factors' loadings
    (``basis``, on the protection scale), which an intruder who knows the method estimates
    from the release itself (FA and PCA keep the covariance).  Knowing a record's values on
    ``known`` it solves for the record's change and reads x_j back exactly when the known
    variables determine it (rank of their loadings = number of perturbed factors).  ``Xs``,
    ``Ys``: the linked records of original and release on the protection scale."""
    basis, _, inv = structure
    if basis is None or not np.isfinite(basis[j]).all():
        return None
    Bk = basis[known]
    if not np.isfinite(Bk).all() or Bk.shape[0] < Bk.shape[1] or np.linalg.matrix_rank(Bk) < Bk.shape[1]:
        return None
    with np.errstate(all="ignore"):
        Dk = Ys[:, known] - Xs[:, known]
        ok = np.isfinite(Dk).all(axis=1)
        delta = np.linalg.lstsq(Bk, np.where(ok[:, None], Dk, 0.0).T, rcond=None)[0]
        est = inv(Ys[:, j] - basis[j] @ delta, j)
    return np.where(ok, est, np.nan)


def _residual_fit(Xr, j, known, use):
    """The least-squares fit of x_j on the known variables (the original alone): (fit, x - fit)."""
    x = Xr[:, j]
    K = most_related(Xr[:, known], x, MAX_KNOWN)
    A = np.c_[np.ones(len(x)), K][use]
    with np.errstate(all="ignore"):
        fit = A @ np.linalg.lstsq(A, x[use], rcond=None)[0]
    return fit, x[use] - fit


def residual_cor(Xr, Yr, j, known, obr, key=None):
    """|cor| between the part of x_j that the known variables do not explain (least squares on
    the original) and the same part of the release (y_j less the same fit of the record's known
    values): how much of what the intruder does not know the release keeps.  ``Xr``, ``Yr``: the
    sampled records; ``obr``: their released cells of column j, or None.  The fit depends on the
    original alone: kept per data set (``key``) when no cell is missing."""
    x, y = Xr[:, j], Yr[:, j]
    use = np.ones(len(x), dtype=bool) if obr is None else obr
    if key is not None and obr is None:
        fit, ex = cached(("residual", key, j, tuple(known)), lambda: _residual_fit(Xr, j, known, use))
    else:
        fit, ex = _residual_fit(Xr, j, known, use)
    with np.errstate(all="ignore"):
        ey = y[use] - fit
        if ex.std() <= 1e-12 * max(np.abs(x[use]).max(), 1.0) or ey.std() == 0:
            # the known variables determine x exactly: nothing left for a release to disclose
            return 0.0
        return abs(float(np.corrcoef(ex, ey)[0, 1]))


def _assignments(preds, released, y_linked, window):
    """The assignment intruder's guesses: the released values handed out in the order of each
    prediction (and clipped to a published rank window)."""
    out = []
    values = np.sort(np.asarray(released, dtype=float))  # once for every prediction (issue 42)
    for p in preds:
        a = assignment(p, values, presorted=True)
        if a is not None:
            out.append(a)
            if window is not None:
                out.append(window_clip(a, y_linked, values, window, presorted=True))
    return out
