"""Disclosure risk, utility loss and selectivity (spec sections 4-6).

Conventions (stated once, used everywhere here):

* X is the original, X' the protected numeric matrix, rows aligned (record i of X' was
  produced from record i of X).  Every score lies in [0, 1]; lower is better.
* Zero-variance variables: a variable constant in X carries no information about anyone.
  It is left out of the DBRL distance and of ID; in PIL every statistic of it has V = 0, so
  its pil is 0 if X' reproduces the statistic exactly and 1 otherwise; its IC uses
  |cor| = 1 if X' equals X on it and 0 otherwise (a correlation with a constant is undefined).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import njit, prange
from scipy import stats

from ._safety import RiskProfile, risk_profile
from ._validation import check_dataframe, check_names, check_scale, make_rng, numeric_columns

__all__ = ["dbrl", "interval_disclosure", "pil", "propensity_score", "selectivity", "evaluate", "Evaluation"]

PIL_STATISTICS = ("mean", "var", "cov", "corr", "quantiles", "skew", "kurt")
PIL_STATISTICS_PCA = ("mean", "var", "cov", "corr", "quantiles")


# ----------------------------------------------------------------------------- validation

def _pair(original, protected, min_rows=2):
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
CAP = 32      # candidates kept per record before falling back to an exact scan


@njit(cache=True, parallel=True)
def _nearest_kernel(A, Bt, A32, Bt32, Emax, TB):
    n, m = A.shape
    nb = Bt.shape[1]
    R = 4
    first = np.empty(n, np.int64); ties = np.empty(n, np.int64); own = np.zeros(n, np.bool_)
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
        for s in range(0, nb, TB):
            L = min(TB, nb - s)
            d0 = D[0]; d1 = D[1]; d2 = D[2]; d3 = D[3]
            for q in range(L):
                d0[q] = 0.0; d1[q] = 0.0; d2[q] = 0.0; d3[q] = 0.0
            for j in range(m):
                a0 = a[0, j]; a1 = a[1, j]; a2 = a[2, j]; a3 = a[3, j]
                row = Bt32[j, s:s + L]
                for q in range(L):
                    v = row[q]
                    t0 = v - a0; t1 = v - a1; t2 = v - a2; t3 = v - a3
                    d0[q] += t0 * t0; d1[q] += t1 * t1; d2[q] += t2 * t2; d3[q] += t3 * t3
            for r in range(rows):
                d = D[r]
                tm = np.float32(np.inf)
                for q in range(L):
                    if d[q] < tm:
                        tm = d[q]
                b = min(best[r], tm)
                tol = 2.0 * (2.0 * np.sqrt(b) * E[r] + E[r] * E[r] + 2.0 * m * 6.0e-8 * b) + 1e-30
                if tm > best[r] + tol:
                    continue
                best[r] = b
                lim = b + tol
                for q in range(L):
                    if d[q] <= lim:
                        if nc[r] < CAP:
                            cand[r, nc[r]] = s + q
                            nc[r] += 1
                        else:
                            over[r] = True
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
                    h = q == i
                elif dd == mn:
                    c += 1
                    if q == i:
                        h = True
            first[i] = f
            ties[i] = c
            own[i] = h
    return first, ties, own


def _nearest(A, B):
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
    Returns (first nearest index, number of tied nearest, whether the own record is among them).
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    Bt = np.ascontiguousarray(np.asarray(B, dtype=np.float64).T)
    Emax = np.abs(Bt).max(axis=1) if Bt.shape[1] else np.zeros(Bt.shape[0])
    return _nearest_kernel(A, Bt, A.astype(np.float32), Bt.astype(np.float32), Emax, _TILE)


def _standardized_pair(X, Y, cols):
    Xs = X[:, cols]
    mean = Xs.mean(axis=0)
    sd = Xs.std(axis=0)
    keep = sd > 0
    return (Xs[:, keep] - mean[keep]) / sd[keep], (Y[:, cols][:, keep] - mean[keep]) / sd[keep]


def _dbrl_arrays(X, Y, cols):
    A, B = _standardized_pair(X, Y, cols)
    if A.shape[1] == 0:
        # nothing varies: every protected record is equally near; own is one of n
        n = X.shape[0]
        return 1.0 / n, np.arange(n), np.full(n, n), np.ones(n, bool)
    first, ties, own = _nearest(A, B)
    score = float(np.where(own, 1.0 / ties, 0.0).mean())
    return score, first, ties, own


def dbrl(original, protected, linkage=None):
    """Distance-based record linkage: share of original records whose nearest protected
    record (standardised Euclidean distance on ``linkage`` variables, all by default) is
    their own; a tie among t records that includes the own one counts 1/t."""
    X, Y, cols = _pair(original, protected)
    return _dbrl_arrays(X, Y, _indices(linkage, cols, "linkage"))[0]


# ----------------------------------------------------------------------------- ID

def _id_arrays(X, Y, cols, linked, ps=range(1, 11)):
    n = X.shape[0]
    out = np.zeros((len(cols), len(ps)))
    for a, j in enumerate(cols):
        y = Y[:, j]
        if not X[:, j].std() > 0:
            out[a] = np.nan
            continue
        order = np.argsort(y, kind="stable")
        ys = y[order]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        r = rank[linked]
        x = X[:, j]
        for b, p in enumerate(ps):
            w = int(np.ceil(p * n / 100.0))
            lo = ys[np.maximum(0, r - w)]
            hi = ys[np.minimum(n - 1, r + w)]
            out[a, b] = np.mean((x >= lo) & (x <= hi))
    return out


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
    """Selective protection: the record's own protected version on the sensitive variables
    (FA paper: intervals "around their protected versions"; the thesis measures security on
    the variables to be protected only).  General protection: linked on all variables (PCA
    paper, Table 4)."""
    return "own" if selective else "linked_all"


def _id_linked(X, Y, var, reference, linkage=None):
    """The one linking policy of interval disclosure (evaluate and interval_disclosure):
    which protected record each original record's intervals are centred on."""
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
    return _dbrl_arrays(X, Y, cols)[1]


def interval_disclosure(original, protected, variables=None, linkage=None, reference=None):
    """Rank interval disclosure, mean over records, ``variables`` (all by default) and p = 1..10 %.

    For variable j the protected values are sorted; the interval around the protected value of
    rank r runs from rank max(1, r - w) to min(n, r + w), w = ceil(p n / 100).  The original
    value is disclosed if it falls inside.  Which protected value the interval is centred on
    is the threat model, ``reference`` (one policy with ``evaluate``'s ``id_reference``):
    'own' (the record's own protected version), 'linked_all' (the record DBRL links on all
    variables), 'linked_public' (linked on the variables not in ``variables``),
    'linked_sensitive' (linked on ``variables`` themselves; near 1 by construction),
    'linked' (linked on ``linkage``).  Default: 'linked_all' when every variable is measured
    (general protection, the PCA paper), 'own' when ``variables`` is a subset (selective
    protection, the FA paper), so ``interval_disclosure(o, p, variables=S)`` equals
    ``evaluate(o, p, sensitive=S).scores['id']``.
    """
    X, Y, cols = _pair(original, protected)
    var = _indices(variables, cols, "variables")
    lk = _indices(linkage, cols, "linkage") if linkage else None
    if reference is None:
        reference = "linked" if lk else default_id_reference(len(var) < len(cols))
    linked = _id_linked(X, Y, var, reference, lk)
    table = _id_arrays(X, Y, var, linked)
    return float(np.nanmean(table)) if np.isfinite(table).any() else 0.0


# ----------------------------------------------------------------------------- PIL

def _central_moments(X, orders):
    C = X - X.mean(axis=0)
    return {r: (C ** r).mean(axis=0) for r in orders}


def _pil_values(diff, V):
    V = np.asarray(V, dtype=float)
    diff = np.abs(np.asarray(diff, dtype=float))
    out = np.empty_like(diff)
    zero = ~(V > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[~zero] = 2 * stats.norm.cdf(diff[~zero] / np.sqrt(V[~zero])) - 1
    out[zero] = np.where(diff[zero] == 0, 0.0, 1.0)
    return out


QUANTILE_LEVELS = np.arange(5, 100, 5) / 100.0


def correlation_variance(X, pairs=None):
    """Distribution-free large-sample variance of Pearson's r for column pairs of X.

    Delta method (Kendall and Stuart's large-sample variances, the family the PIL variances
    of means, variances and covariances come from): with x, y standardised (population sd)
    and rho = mean(x y),

        Var(r) = mean((x y - rho (x^2 + y^2) / 2)^2) / n,

    non-negative by construction; under normality E[x^2 y^2] = 1 + 2 rho^2, E[x^3 y] =
    3 rho and E[x^4] = 3 reduce it to (1 - rho^2)^2 / n, the normal-theory variance the
    methods specification used.  On skewed business data the normal-theory variance is far
    too small (so PIL's correlation term was too high): PCA paper Table 4, rank-swapping rows,
    whose quantile term is exactly 0 (swapping keeps every marginal), so the quantile
    term (Gaussian KDE density) was checked and was not the cause.  ``pairs``: (rows, cols)
    index arrays, default the upper triangle."""
    n, m = X.shape
    if pairs is None:
        pairs = np.triu_indices(m, 1)
    sd = X.std(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        Z = np.where(sd > 0, (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    i, j = pairs
    # expanded: E[x^2 y^2] - rho (E[x^3 y] + E[x y^3]) + rho^2 (E[x^4] + E[y^4] + 2 E[x^2 y^2]) / 4,
    # all pairs at once from three matrix products; clipped at 0 against rounding
    Z2 = Z * Z
    A = (Z2.T @ Z2 / n)[i, j]
    B = Z2 * Z
    E31 = (B.T @ Z / n)
    k4 = (Z2 * Z2).mean(axis=0)
    rho = (Z.T @ Z / n)[i, j]
    v = A - rho * (E31[i, j] + E31[j, i]) + rho ** 2 * (k4[i] + k4[j] + 2 * A) / 4
    return np.clip(v, 0.0, None) / n


def _pil_arrays(X, Y, statistics=PIL_STATISTICS):
    n, m = X.shape
    mu = _central_moments(X, range(2, 9))
    muY = _central_moments(Y, (2, 3, 4))
    iu = np.triu_indices(m, 1)
    res = {}
    # mean: V = s^2 / n (sample variance, n - 1)
    res["mean"] = _pil_values(X.mean(0) - Y.mean(0), X.var(0, ddof=1) / n)
    # variance (central moment 2): V = (mu4 - mu2^2) / n
    res["var"] = _pil_values(mu[2] - muY[2], (mu[4] - mu[2] ** 2) / n)
    Cx = X - X.mean(0)
    Cy = Y - Y.mean(0)
    cov_x = (Cx.T @ Cx / n)[iu]
    cov_y = (Cy.T @ Cy / n)[iu]
    mu22 = ((Cx ** 2).T @ (Cx ** 2) / n)[iu]
    res["cov"] = _pil_values(cov_x - cov_y, (mu22 - cov_x ** 2) / n)
    sx, sy = np.sqrt(mu[2]), np.sqrt(muY[2])
    with np.errstate(divide="ignore", invalid="ignore"):
        rx = cov_x / (sx[iu[0]] * sx[iu[1]])
        ry = cov_y / (sy[iu[0]] * sy[iu[1]])
    rx = np.nan_to_num(rx)
    ry = np.nan_to_num(ry)
    res["corr"] = _pil_values(rx - ry, correlation_variance(X, iu))
    qx = np.quantile(X, QUANTILE_LEVELS, axis=0)
    qy = np.quantile(Y, QUANTILE_LEVELS, axis=0)
    Vq = np.zeros_like(qx)
    for j in range(m):
        if mu[2][j] > 0:
            dens = stats.gaussian_kde(X[:, j])(qx[:, j])
            with np.errstate(divide="ignore"):
                Vq[:, j] = QUANTILE_LEVELS * (1 - QUANTILE_LEVELS) / (n * dens ** 2)
    res["quantiles"] = _pil_values(qx - qy, Vq).ravel()

    def vm(r):
        return (mu[2 * r] - mu[r] ** 2 + r * r * mu[2] * mu[r - 1] ** 2 - 2 * r * mu[r - 1] * mu[r + 1]) / n

    mu[1] = np.zeros(m)
    res["skew"] = _pil_values(mu[3] - muY[3], vm(3))
    res["kurt"] = _pil_values(mu[4] - muY[4], vm(4))
    per = {s: float(np.mean(res[s])) if res[s].size else 0.0 for s in statistics}
    return per, res


def pil(original, protected, statistics="7"):
    """Probabilistic information loss (Mateo-Sanz et al. 2005): the mean over statistics of the
    mean of 2 Phi(|theta - theta'| / sqrt(V)) - 1.  ``statistics='7'`` (mean, variance,
    covariance, correlation, quantiles, third and fourth central moments) or ``'5'`` (the PCA
    paper's, without the moments)."""
    X, Y, _ = _pair(original, protected)
    per, _ = _pil_arrays(X, Y, _pil_stat_names(statistics))
    return float(np.mean(list(per.values())))


def _pil_stat_names(statistics):
    if statistics in ("7", 7):
        return PIL_STATISTICS
    if statistics in ("5", 5):
        return PIL_STATISTICS_PCA
    raise ValueError("pil_statistics must be 7 (with skewness and kurtosis) or 5 (the PCA paper's).")


# ----------------------------------------------------------------------------- PS

def polynomial_features(Z, order=2):
    """Main effects, squares, all pairwise products; order 3 adds cubes."""
    n, m = Z.shape
    iu = np.triu_indices(m, 1)
    parts = [Z, Z ** 2, Z[:, iu[0]] * Z[:, iu[1]]]
    if order == 3:
        parts.append(Z ** 3)
    return np.column_stack(parts)


MAX_PS_FEATURES = 2000  # the logistic model's Hessian is features^2 floats (2000: 32 MB)


def ps_terms(m, order, rows):
    """Which polynomial the PS model uses for m variables and ``rows`` stacked records:
    'full' (main effects, squares, products[, cubes]) while it has at most
    min(MAX_PS_FEATURES, rows / 2) terms; else 'squares' (main effects and squares), else
    'main' (main effects).  Wide data (hundreds of variables) would otherwise need tens of
    thousands of terms: a 48 GB Hessian at 400 variables, and more terms than records, which
    a logistic model without penalty separates perfectly."""
    limit = min(MAX_PS_FEATURES, rows // 2)
    full = 2 * m + m * (m - 1) // 2 + (m if order == 3 else 0)
    if full <= limit:
        return "full"
    return "squares" if 2 * m <= limit else "main"


def _bounded_features(Z, order, rows):
    terms = ps_terms(Z.shape[1], order, rows)
    if terms == "full":
        return polynomial_features(Z, order)
    return np.column_stack([Z, Z ** 2]) if terms == "squares" else Z


def normal_scores(W):
    """Column-wise van der Waerden scores of the stacked data: Phi^-1((rank - 1/2) / N),
    ties given their mean rank."""
    N = W.shape[0]
    R = stats.rankdata(W, axis=0, method="average")
    return stats.norm.ppf((R - 0.5) / N)


def _ps_arrays(X, Y, order=2, scale="standardised"):
    from sklearn.linear_model import LogisticRegression
    from sklearn.exceptions import ConvergenceWarning

    W = np.vstack([X, Y])
    t = np.r_[np.zeros(len(X)), np.ones(len(Y))]
    sd = W.std(axis=0)
    keep = sd > 0
    if scale == "normal_scores":
        Z = normal_scores(W[:, keep])
        Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)
    else:
        Z = (W[:, keep] - W[:, keep].mean(axis=0)) / sd[keep]
    F = _bounded_features(Z, order, len(W))
    fs = F.std(axis=0)
    good = fs > 1e-12
    F = (F[:, good] - F[:, good].mean(axis=0)) / fs[good]
    converged = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = LogisticRegression(penalty=None, solver="newton-cholesky", max_iter=100, tol=1e-8)
        model.fit(F, t)
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        converged = False
    p = model.predict_proba(F)[:, 1]
    c = len(Y) / len(W)
    # Woo et al.'s U = mean((p - c)^2), c = share of protected rows; divided by its maximum
    # c(1 - c) (= 1/4 for equal sizes, hence the papers' factor 4) so that it lies in [0, 1]
    score = float(np.clip(np.mean((p - c) ** 2) / (c * (1 - c)), 0.0, 1.0))
    return score, converged, p


def propensity_score_shape(original, protected, order=2):
    """A propensity score that sees distribution shape: the papers' PS (Woo et al.) fitted on
    the stacked data's column-wise normal scores (van der Waerden) instead of standardised
    values.

    Why normal scores: on skewed data (revenues) a degree-2 logistic model on standardised
    values is dominated by a few huge records and cannot see a release whose values turned
    negative or lost their skew (EIA, FA with TOTREVENUE and RESREVENUE sensitive: PS
    0.0004).  Ranks of the stacked file put original and protected records on one scale that
    every monotone distortion changes (a negative revenue ranks below every original one),
    and normal scores give the model a bounded, symmetric input without choosing which
    variables to log (a log scale needs positive values; normal scores take any).  Same
    scaling as PS: 0 = indistinguishable, 1 = perfectly separated."""
    X, Y, _ = _pair(original, protected)
    return _ps_arrays(X, Y, order, "normal_scores")[0]


def propensity_score(original, protected, order=2):
    """Propensity-score utility (Woo et al. 2009): logistic regression of "is protected" on a
    polynomial of the stacked, standardised data; PS = 4 mean((p - 1/2)^2) in [0, 1]."""
    X, Y, _ = _pair(original, protected)
    if order not in (2, 3):
        raise ValueError("ps_order must be 2 or 3.")
    return _ps_arrays(X, Y, order)[0]


# ----------------------------------------------------------------------------- selectivity

def _ic_arrays(X, Y, sens):
    m = X.shape[1]
    ic = np.empty(m)
    cors = np.empty(m)
    for j in range(m):
        x, y = X[:, j], Y[:, j]
        if not (x.std() > 0 and y.std() > 0):
            c = 1.0 if np.array_equal(x, y) else 0.0
        else:
            c = abs(float(np.corrcoef(x, y)[0, 1]))
        cors[j] = c
        ic[j] = c if j in sens else 1.0 - c
    return ic, cors


def selectivity(original, protected, sensitive):
    """Mean IC: |cor(x, x')| for sensitive variables, 1 - |cor(x, x')| for public ones.
    0 means perfectly selective (sensitive variables scrambled, public ones kept)."""
    X, Y, cols = _pair(original, protected)
    sens = set(_indices(sensitive, cols, "sensitive"))
    return float(_ic_arrays(X, Y, sens)[0].mean())


# ----------------------------------------------------------------------------- extras

def _extras(X, Y):
    from ._removal import standardized_by, utility_metrics

    Zx, Zy = standardized_by(X, Y)
    # the framework paper's utility metrics (one definition with pca_remove's stop rule);
    # "frobenius" is the root mean square change in original sds, "flat_correlation" the
    # correlation of the flattened standardised matrices, "kl" with the ridge of _removal
    um = utility_metrics(Zx, Zy)
    out = {"frobenius": um["frobenius"], "flat_correlation": um["correlation"], "kl": um["kl"],
           "mean_abs": um["mean_abs"], "max_row": um["max_row"], "psnr": um["psnr"], "ssim": um["ssim"]}
    sdy = Y.std(0)
    tol = np.where(sdy > 0, 0.05 * sdy, 0.0)
    odr = float(np.mean((np.abs(X - Y) <= tol).all(axis=1)))
    sk_x, sk_y = stats.skew(X, axis=0), stats.skew(Y, axis=0)
    ku_x, ku_y = stats.kurtosis(X, axis=0), stats.kurtosis(Y, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        skb = np.abs(sk_y - sk_x) / np.abs(sk_x)
        kub = np.abs(ku_y - ku_x) / np.abs(ku_x)
    return {**out, "odr": odr, "outliers": _outlier_score(X, Y),
            "skewness_bias": float(np.nanmean(np.where(np.isfinite(skb), skb, np.nan))),
            "kurtosis_bias": float(np.nanmean(np.where(np.isfinite(kub), kub, np.nan)))}


def _outlier_score(X, Y):
    """Thesis outlier measure: each original outlier scores 0.5 if still an outlier and
    +0.5 if at the same sorted position; normalised per variable, averaged over variables
    with outliers (NaN when no variable has outliers)."""
    scores = []
    for j in range(X.shape[1]):
        x, y = X[:, j], Y[:, j]
        q1, q3 = np.percentile(x, [25, 75])
        lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        out = (x < lo) | (x > hi)
        if not out.any():
            continue
        qy1, qy3 = np.percentile(y, [25, 75])
        loy, hiy = qy1 - 1.5 * (qy3 - qy1), qy3 + 1.5 * (qy3 - qy1)
        still = (y < loy) | (y > hiy)
        rx = np.argsort(np.argsort(x, kind="stable"), kind="stable")
        ry = np.argsort(np.argsort(y, kind="stable"), kind="stable")
        s = 0.5 * still[out] + 0.5 * (still[out] & (rx[out] == ry[out]))
        scores.append(s.mean())
    return float(np.mean(scores)) if scores else float("nan")


# ----------------------------------------------------------------------------- evaluate

@dataclass(frozen=True)
class Evaluation:
    """Scores in [0, 1], lower is better, and their breakdown.

    scores  -- "dbrl", "id", "pil", "ps", "summary"; with sensitive variables also
               "selectivity" and "overall".
    details -- "id" (variables x p), "pil" (per statistic), "pil_components", "pil1", "pil2",
               "ic" (per variable: |cor(x, x')| and IC), "odr", "outliers", "skewness_bias",
               "kurtosis_bias", "ps_converged", and the framework paper's utility metrics
               (see ``UTILITY_METRICS``): "flat_correlation" (its "correlation"),
               "mean_abs", "max_row", "frobenius", "kl", "psnr", "ssim".
    options -- the effective options.
    risk    -- RiskProfile: each sensitive variable (each variable in general protection)
               and each of its size bands against the risk floors (``floors`` option).
    """

    scores: dict
    details: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    risk: RiskProfile | None = None


def evaluate(original, protected, sensitive=None, rng=None, _with_risk=True, **options):
    """Disclosure risk, utility loss and (with ``sensitive``) selectivity of a release.

    The result's ``risk`` checks each sensitive variable (each variable in general
    protection) and each of its size bands against the risk floors (``floors``: a dict of
    ``RiskFloors`` fields), as ``protect`` does before it returns a release.

    Options: ``linkage`` (variables for DBRL: the sensitive ones for selective protection,
    all for general), ``id_reference`` (the intruder of interval disclosure, one of
    ID_REFERENCES, explained in ID_REFERENCE_TEXT; default 'own' in selective protection, as
    the FA paper, 'linked_all' in general protection, as the PCA paper; 'linked' with
    ``linkage``), ``pil_statistics`` (7 or 5),
    ``ps_order`` (2 or 3).  ``rng`` is accepted for API symmetry; every measure here is
    deterministic.
    """
    make_rng(rng)
    allowed = {"linkage", "id_reference", "pil_statistics", "ps_order", "floors"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))}; evaluate takes {', '.join(sorted(allowed))}.")
    X, Y, cols = _pair(original, protected)
    sens = _indices(sensitive, cols, "sensitive") if sensitive else None
    linkage = options.get("linkage")
    link = _indices(linkage, cols, "linkage") if linkage else (sens or list(range(len(cols))))
    ref = options.get("id_reference")
    if ref is None:
        ref = "linked" if linkage else default_id_reference(bool(sens))
    stat_names = _pil_stat_names(options.get("pil_statistics", 7))
    order = options.get("ps_order", 2)
    if order not in (2, 3):
        raise ValueError("ps_order must be 2 or 3.")
    d_score, first, ties, own = _dbrl_arrays(X, Y, link)
    id_vars = sens or list(range(len(cols)))
    # one linking policy with interval_disclosure (see ID_REFERENCE_TEXT); linking on S alone
    # ('linked_sensitive') would find the protected record whose S is nearest the original
    # S, so its interval almost always holds it (0.999 on Tarragona/SALES for every method)
    linked = _id_linked(X, Y, id_vars, ref, link if linkage else None)
    id_table = _id_arrays(X, Y, id_vars, linked)
    id_score = float(np.nanmean(id_table)) if np.isfinite(id_table).any() else 0.0
    per, comps = _pil_arrays(X, Y, stat_names)
    pil_score = float(np.mean(list(per.values())))
    ps_score, converged, _ = _ps_arrays(X, Y, order)
    ps_shape = _ps_arrays(X, Y, order, "normal_scores")[0]
    scores = {"dbrl": d_score, "id": id_score, "pil": pil_score, "ps": ps_score}
    scores["summary"] = (pil_score + ps_score + d_score + id_score) / 4
    # reported beside the papers' PS, not inside their summary/overall (so those stay comparable)
    scores["ps_shape"] = ps_shape
    ic, cors = _ic_arrays(X, Y, set(sens or range(len(cols))))
    if sens:
        sel = float(ic.mean())
        scores["selectivity"] = sel
        scores["overall"] = (pil_score + ps_score + d_score + id_score + 2 * sel) / 6
    details = {
        "id": pd.DataFrame(id_table, index=[cols[j] for j in id_vars], columns=[f"p={p}" for p in range(1, 11)]),
        "pil": pd.Series(per, name="pil"),
        "pil1": float(np.mean([per.get(s, np.nan) for s in ("mean", "var", "cov")])),
        "pil2": float(np.nanmean([per.get(s, np.nan) for s in ("quantiles", "skew", "kurt")])),
        "pil_components": {s: comps[s] for s in stat_names},
        "ic": pd.DataFrame({"abs_cor": cors, "ic": ic, "sensitive": [j in set(sens or range(len(cols))) for j in range(len(cols))]}, index=cols),
        "ps_converged": converged,
        "ps_terms": ps_terms(len(cols), order, 2 * X.shape[0]),
    }
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # constant columns make skewness/KL undefined: NaN/inf, no spam
        details.update(_extras(X, Y))
    check = sens or list(range(len(cols)))
    pub = [j for j in range(len(cols)) if j not in set(check)]
    risk = risk_profile(X, Y, cols, check, options.get("floors"), link_on=pub if sens and pub else None) \
        if _with_risk else None
    eff = {"sensitive": [cols[j] for j in sens] if sens else None, "linkage": [cols[j] for j in link],
           "id_reference": ref, "pil_statistics": len(stat_names), "ps_order": order,
           "floors": risk.floors.to_dict() if risk else None}
    return Evaluation(scores, details, eff, risk)
