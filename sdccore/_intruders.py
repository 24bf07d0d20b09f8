"""The intruder battery: what an intruder predicts of a checked value without the release
(the prior) and with it (each attack), as estimates over the linked sample of records.

Every function here returns point estimates of the original value ``x_j`` for the records
``rows``; ``_safety.risk_profile`` turns them into closeness shares and subtracts, per record,
what the prior already gets right.  Each intruder is a small function with its own
hand-made test (``tests/test_intruders.py``).

Prior (no release; the intruder's knowledge ``known`` and the law of x_j given it, fitted
leave-one-out on the original, so a record never predicts itself):

* ``ols``      linear least squares on the known variables;
* ``log-ols``  the same on signed log scale (sign(v) log(1 + |v|)), back-transformed: the law
  of skewed amounts such as sales or incomes;
* ``knn``      the mean of the 5 nearest records on the known variables (standardised).

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

KNN = 5             # neighbours of the k-nearest-neighbour prior
KNN_VARIABLES = 8   # known variables it uses (those most correlated with the target)
MAX_KNOWN = 31      # known variables the regression models use (those most correlated with the target)
IDENTITY_SHARE = 0.5   # an identity must hold exactly for at least this share of records
IDENTITY_REL = 1e-6    # "exactly": |x - identity| <= this * (|x| + 1)

PRIOR_MODELS = ("ols", "log-ols", "knn")
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


def most_related(P, t, count):
    """The ``count`` columns of P most correlated with t (all of them if fewer)."""
    if P.shape[1] <= count:
        return P
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.abs(np.nan_to_num(((P - P.mean(0)) * (t - t.mean())[:, None]).mean(0) / (P.std(0) * t.std())))
    return P[:, np.sort(np.argsort(-c, kind="stable")[:count])]


def knn_loo(K, t, k=KNN):
    """Leave-one-out k-nearest-neighbour mean of t on the standardised columns of K (the
    record itself never among its neighbours; the first of ties by record order)."""
    from sklearn.neighbors import NearestNeighbors

    n = len(t)
    if n <= k + 1 or K.shape[1] == 0:
        return (t.sum() - t) / max(n - 1, 1)
    sd = K.std(axis=0)
    K = K[:, sd > 0]
    if K.shape[1] == 0:
        return (t.sum() - t) / (n - 1)
    K = (K - K.mean(0)) / K.std(0)
    idx = NearestNeighbors(n_neighbors=k + 1).fit(K).kneighbors(K, return_distance=False)
    self_ = idx == np.arange(n)[:, None]
    # drop the record itself; where a duplicate displaced it from the list, drop the last
    drop = np.where(self_.any(axis=1), self_.argmax(axis=1), k)
    keep = np.ones_like(idx, dtype=bool)
    keep[np.arange(n), drop] = False
    return t[idx[keep].reshape(n, k)].mean(axis=1)


def prior_estimates(Xr, t, known):
    """{model: leave-one-out estimate of t} from the known columns of ``Xr`` (the sampled
    records of the original): the intruder's best guesses WITHOUT the release."""
    if not known:
        mean = (t.sum() - t) / max(len(t) - 1, 1)
        return {m: mean for m in PRIOR_MODELS}
    K = Xr[:, known]
    with np.errstate(all="ignore"):
        ols = loo_fit(most_related(K, t, MAX_KNOWN), t)
        lt, lK = slog(t), slog(K)
        log_ols = slog_inverse(loo_fit(most_related(lK, lt, MAX_KNOWN), lt))
        knn = knn_loo(most_related(K, t, KNN_VARIABLES), t)
    return {"ols": ols, "log-ols": log_ols, "knn": knn}


def assignment(pred, released, n_total=None):
    """The value-set attack: the released values sorted and handed out in the order of
    ``pred`` (ties in record order).  ``released``: every released value of the variable;
    when ``pred`` covers a sample of the records, the value at the same rank fraction."""
    pred = np.asarray(pred, dtype=float)
    order = np.argsort(np.nan_to_num(pred, nan=-np.inf), kind="stable")
    rank = np.empty(len(pred), dtype=np.int64)
    rank[order] = np.arange(len(pred))
    values = np.sort(np.asarray(released, dtype=float))
    if len(values) == 0:
        return None
    if len(values) == len(pred):
        return values[rank]
    pos = np.floor((rank + 0.5) * len(values) / len(pred)).astype(np.int64)
    return values[np.clip(pos, 0, len(values) - 1)]


def window_clip(est, own_released, released, window):
    """Rank swapping's published window: the original value lies within ``window`` ranks
    (a count of records) of the record's own released value, so each estimate is clipped to
    the released values within that many ranks of it."""
    values = np.sort(np.asarray(released, dtype=float))
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
