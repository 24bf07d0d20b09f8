"""Decompositions: standardisation, exact linear dependencies, FA (whitened scores), PCA,
rotations and the choice of factors to perturb (spec sections 1.1-1.4).

All functions work on numpy arrays.  A decomposition is represented by
``G`` (m x k, scores are ``F = Z @ G``) and ``L`` (m x k, the loadings used to rebuild
``Z = F @ L.T + E``).  Protecting columns ``sel`` of ``F`` then changes the data by
``(F'[:, sel] - F[:, sel]) @ L[:, sel].T``, which is how ``protect`` rebuilds the data
without forming ``E``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg

__all__ = []

DEPENDENCE_TOL = 1e-13  # residual variance share below which a column is an exact combination


def standardize(X):
    """Mean, population sd (ddof=0) and Z = (X - mean) / sd."""
    mean, sd, Z, _ = standardize_with_correlation(X)
    return mean, sd, Z


def standardize_with_correlation(X):
    """Mean, population sd, Z and R = Z'Z/n in two passes over the data (one BLAS syrk).

    A column with zero spread gets sd = 0 and a NaN row/column in R; callers reject those.
    """
    n = X.shape[0]
    mean = X.mean(axis=0)
    Z = X - mean
    # each column scaled by a power of two (exact) before squaring, so that values near 1e200
    # do not overflow and values near 1e-200 do not underflow; for ordinary data the powers
    # cancel exactly and the result is the same bit for bit
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        big = np.abs(Z).max(axis=0) if n else np.zeros(X.shape[1])
    e = np.where(np.isfinite(big) & (big > 0), np.frexp(np.where(np.isfinite(big) & (big > 0), big, 1.0))[1], 0)
    e = np.where(np.abs(e) > 60, e, 0)  # only where squares could leave the float range
    scale = np.ldexp(1.0, -e)
    Zs = Z * scale
    Cs = Zs.T @ Zs / n
    ssd = np.sqrt(np.clip(np.diag(Cs), 0.0, None))
    sd = ssd / scale
    with np.errstate(divide="ignore", invalid="ignore"):
        Z = Zs / ssd
        R = Cs / np.outer(ssd, ssd)
    R = (R + R.T) / 2
    np.fill_diagonal(R, 1.0)
    return mean, sd, Z, R


def correlation(Z):
    R = (Z.T @ Z) / Z.shape[0]
    R = (R + R.T) / 2
    np.fill_diagonal(R, 1.0)
    return R


@dataclass(frozen=True)
class Dependency:
    """Column ``target`` = intercept + sum(coef * columns), exactly (standardised coefficients in ``beta``)."""

    target: int
    predictors: tuple
    beta: np.ndarray  # z_target = z_predictors @ beta
    residual_share: float


def linear_dependencies(R, sd, tol=DEPENDENCE_TOL):
    """Columns that are exact linear combinations of the others.

    Works on the correlation matrix only.  While R is singular (smallest eigenvalue below
    ``tol`` times the largest), the column with the largest standard deviation among those
    in the null space is set aside (a total is usually the largest of its parts); then each
    set-aside column is regressed on the kept ones.
    """
    m = R.shape[0]
    keep = list(range(m))
    dropped = []
    while len(keep) > 1:
        w, V = np.linalg.eigh(R[np.ix_(keep, keep)])
        small = w <= tol * max(w[-1], 1.0)
        if not small.any():
            break
        null = V[:, small]
        involved = np.flatnonzero(np.abs(null).max(axis=1) > 1e-6)
        cand = [keep[i] for i in involved] or [keep[-1]]
        j = max(cand, key=lambda c: (sd[c], c))
        dropped.append(j)
        keep.remove(j)
    deps = []
    Rk = R[np.ix_(keep, keep)]
    for j in sorted(dropped):
        r = R[keep, j]
        beta = linalg.lstsq(Rk, r)[0]
        share = float(max(0.0, 1.0 - r @ beta))
        deps.append(Dependency(j, tuple(keep), beta, share))
    return keep, deps


def _inv_sqrt_psd(C, rel=1e-10):
    w, U = np.linalg.eigh((C + C.T) / 2)
    keep = w > rel * w.max()
    return w, U, keep


_EPS100 = np.finfo(float).eps * 100
PSI_BOUNDS = (0.005, 1.0)  # uniquenesses, as factor_analyzer's default bounds
FIT_OPTIONS = {"maxiter": 10000, "ftol": 1e-15, "gtol": 1e-11}


def _uls_objective(psi, R, k):
    """factor_analyzer's MINRES (ULS) objective with its exact gradient.

    f(psi) = sum of squares of R* - L L', R* = R with diagonal 1 - psi, L the first k
    eigenvectors of R* scaled by sqrt(max(eigenvalue, 100 eps)).  R* - L L' = V diag(c) V'
    with c the discarded eigenvalues (and the clamp's shortfall), so f = sum c^2 and, as
    d eigenvalue_i / d R*_jj = v_ij^2, df/dpsi_j = -2 (V^2 c)_j."""
    S = R.copy()
    np.fill_diagonal(S, 1.0 - psi)
    w, V = np.linalg.eigh(S)
    w, V = w[::-1], V[:, ::-1]
    c = w.copy()
    c[:k] = w[:k] - np.maximum(w[:k], _EPS100)
    return float(c @ c), -2.0 * ((V * V) @ c)


def _ml_objective(psi, R, k):
    """factor_analyzer's (R factanal's) ML objective with its exact gradient: with
    S = Psi^-1/2 R Psi^-1/2 and e its eigenvalues after the first k,
    f = -sum(log e - e) - k + m and df/dpsi_j = -(1/psi_j) sum_i (e_i - 1) v_ij^2."""
    sc = 1.0 / np.sqrt(psi)
    S = R * np.outer(sc, sc)
    w, V = np.linalg.eigh(S)
    w, V = w[::-1], V[:, ::-1]
    e = w[k:]
    if (e <= 0).any():
        return np.inf, np.zeros_like(psi)
    f = float(-(np.sum(np.log(e) - e) - k + R.shape[0]))
    return f, -((V[:, k:] ** 2) @ (e - 1.0)) / psi


def fa_loadings(R, k, extraction):
    """Unrotated FA loadings (m x k) fitted on the correlation matrix.

    'principal' is principal-component factoring.  'minres' and 'ml' minimise the same
    objectives as factor_analyzer (same start: 1 - squared multiple correlations; same
    bounds; L-BFGS-B), but with their exact gradients instead of finite differences: a
    fit on 400 variables takes seconds instead of minutes, and the fit converges to
    1e-15 relative change of the objective instead of stopping near 1e-6, so loadings
    differ across machines (BLAS kernels, thread counts) by rounding, not by optimiser
    noise.  tests/protect/test_engine.py checks them against factor_analyzer."""
    m = R.shape[0]
    if extraction == "principal":
        w, V = np.linalg.eigh(R)
        w, V = w[::-1][:k], V[:, ::-1][:, :k]
        return V * np.sqrt(np.clip(w, 0, None))
    from scipy.optimize import minimize

    try:
        inv_diag = np.diag(np.linalg.inv(R))
        start = np.clip(1.0 / inv_diag, *PSI_BOUNDS) if np.isfinite(inv_diag).all() and (inv_diag > 0).all() \
            else np.full(m, 0.5)
    except np.linalg.LinAlgError:
        start = np.full(m, 0.5)
    objective = _ml_objective if extraction == "ml" else _uls_objective
    with np.errstate(all="ignore"):
        res = minimize(objective, start, args=(R, k), jac=True, method="L-BFGS-B", bounds=[PSI_BOUNDS] * m,
                       options=FIT_OPTIONS)
        psi = res.x
        if extraction == "ml":
            sc = np.sqrt(psi)
            w, V = np.linalg.eigh(R / np.outer(sc, sc))
            w, V = w[::-1][:k], V[:, ::-1][:, :k]
            L = sc[:, None] * (V * np.sqrt(np.maximum(w - 1.0, 0.0)))
        else:
            S = R.copy()
            np.fill_diagonal(S, 1.0 - psi)
            w, V = np.linalg.eigh(S)
            w, V = w[::-1][:k], V[:, ::-1][:, :k]
            L = V * np.sqrt(np.maximum(w, 0.0))
    if not np.isfinite(L).all():
        raise ValueError(
            f"factor extraction {extraction!r} failed on this correlation matrix (nearly collinear variables?); "
            f"try extraction='minres' or 'principal', fewer factors, or drop one of a pair of near-duplicate columns."
        )
    return L


@dataclass(frozen=True)
class Factorization:
    """Score weights, rebuild loadings, the loadings shown and score variances of a factor
    analysis or PCA (internal; the public ``sdccore.Decomposition`` is what ``decompose``
    returns)."""

    G: np.ndarray          # scores F = Z @ G
    L: np.ndarray          # loadings used to rebuild Z
    loadings: np.ndarray   # correlations cor(Z, F) shown to users
    variances: np.ndarray  # variance of each score column
    notes: tuple


NULL_FACTOR = 1e-6  # sum of squared loadings (correlation units) below which a factor carries nothing


def bartlett_p(R, n):
    """p-value of Bartlett's sphericity test (all correlations zero)."""
    from scipy import stats

    m = R.shape[0]
    sign, logdet = np.linalg.slogdet(R)
    if sign <= 0:
        return 0.0
    chi2 = -(n - 1 - (2 * m + 5) / 6) * logdet
    return float(stats.chi2.sf(chi2, m * (m - 1) / 2))


def fa_decomposition(R, k, extraction="minres", scores="whitened"):
    """FA with whitened (Loewdin) scores, spec 1.1; ``scores='regression'`` gives the papers' literal F0."""
    notes = []
    L = fa_loadings(R, k, extraction)
    ss = (L * L).sum(axis=0)
    # an absolute tolerance (loadings are correlations): whitening would rescale a factor the
    # model gives no variance (sum of squared loadings 1e-16 on data with between = within =
    # 0) to unit variance and show loadings of 0.6-0.8 on it
    nz = ss > NULL_FACTOR
    if not nz.any():
        raise ValueError("factor analysis finds no common factor: the variables are (nearly) uncorrelated, so "
                         "there is nothing for factors to carry. Use PCA, M-AGG or noise instead.")
    if not nz.all():
        notes.append(f"{int((~nz).sum())} of {k} {extraction} factors carry no variance (sum of squared loadings "
                     f"below {NULL_FACTOR:g}) and were dropped")
        L = L[:, nz]
    # B = R^+ L (regression-score weights), with a pseudo-inverse for near-singular R
    w, V = np.linalg.eigh(R)
    inv = np.where(w > 1e-12 * w.max(), 1.0 / np.where(w > 0, w, 1.0), 0.0)
    B = (V * inv) @ (V.T @ L)
    if scores == "regression":
        C = B.T @ R @ B
        return Factorization(B, L, L.copy(), np.diag(C).copy(), tuple(notes))
    C = B.T @ R @ B  # = F0'F0/n
    e, U, keep = _inv_sqrt_psd(C)
    if keep.all():
        W = (U / np.sqrt(e)) @ U.T
    else:
        notes.append(f"the regression scores span only {int(keep.sum())} dimensions; "
                     f"{int((~keep).sum())} degenerate factor direction(s) dropped")
        W = U[:, keep] / np.sqrt(e[keep])
    G = B @ W
    Lt = R @ G  # = Z'F/n = cor(Z, F)
    return Factorization(G, Lt, Lt.copy(), np.ones(G.shape[1]), tuple(notes))


def pca_decomposition(R):
    """PCA of R with the sign rule: the largest-|weight| entry of each eigenvector is positive."""
    w, A = np.linalg.eigh(R)
    w, A = w[::-1].copy(), A[:, ::-1].copy()
    w = np.clip(w, 0.0, None)
    big = np.argmax(np.abs(A), axis=0)
    signs = np.sign(A[big, np.arange(A.shape[1])])
    signs[signs == 0] = 1.0
    A *= signs
    return A, w


def pca_as_decomposition(R):
    A, w = pca_decomposition(R)
    keep = w > 1e-12 * w.max()
    notes = () if keep.all() else (f"{int((~keep).sum())} component(s) with zero variance left unchanged",)
    return Factorization(A, A, A * np.sqrt(w), w, notes), keep


def procrustes_rotation(L, L_target):
    """Orthogonal T minimising ||L T - L_target|| (recovers a rotation exactly)."""
    U, _, Vt = np.linalg.svd(L.T @ L_target)
    return U @ Vt


def standard_rotation(L, method):
    """Orthogonal varimax / quartimax / equamax via factor_analyzer.Rotator.

    factor_analyzer's ``rotation_`` cannot be trusted (sign flips), so T is recovered from the
    rotated loadings by an orthogonal Procrustes fit.
    """
    k = L.shape[1]
    if k < 2:
        return np.eye(k)
    from factor_analyzer import Rotator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Lr = Rotator(method=method).fit_transform(L)
    return procrustes_rotation(L, Lr)


def isolating_rotation(L, rows, tol=1e-8):
    """Orthogonal T with L[rows] @ T lower-trapezoidal (spec 1.3).

    Rows are taken in order; a row lying in the span of earlier ones is skipped; at most k
    rows are isolated.  Column signs are flipped so each isolated row loads positively on
    its own factor.  Returns (T, isolated row indices).
    """
    k = L.shape[1]
    chosen = []
    for r in rows:
        if len(chosen) == k:
            break
        M = L[chosen + [r]].T
        Rr = linalg.qr(M, mode="r")[0]
        if abs(Rr[len(chosen), len(chosen)]) > tol * max(1.0, np.linalg.norm(L[r])):
            chosen.append(r)
    if not chosen:
        return np.eye(k), []
    Q, Rr = linalg.qr(L[chosen].T, mode="full")
    d = np.sign(np.diag(Rr))
    d[d == 0] = 1.0
    Q[:, : len(chosen)] *= d
    return Q, chosen


def select_factors(L, sens, pub, criterion, threshold):
    """0-based factor indices to perturb by the FA paper's criteria (spec 1.4)."""
    A = np.abs(L)
    smax = A[sens].max(axis=0) if len(sens) else np.zeros(L.shape[1])
    pmax = A[pub].max(axis=0) if len(pub) else np.zeros(L.shape[1])
    if criterion == "sensitive_threshold":
        sel = smax >= threshold
    elif criterion == "public_threshold":
        sel = ~(pmax >= threshold)
    else:  # sensitive_over_public
        sel = smax > pmax
    return [int(i) for i in np.flatnonzero(sel)]


def select_components(loadings, sens, threshold):
    """PCA rule: for each sensitive variable take components by decreasing |loading| while >= t."""
    sel = set()
    A = np.abs(loadings)
    for s in sens:
        for c in np.argsort(-A[s], kind="stable"):
            if A[s, c] >= threshold:
                sel.add(int(c))
            else:
                break
    return sorted(sel)
