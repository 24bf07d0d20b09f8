"""Microaggregation plus noise (Oganian and Karr 2006) and the two classic baselines
(rank swapping and correlated noise on the original variables), spec sections 2-3.

sdcMicro has no M-AGG: its ``microaggregation(method="mdav")`` stops at the group means
(our ``noise_model="none"``), and its ``addNoise`` adds noise to the original values, not to
the aggregated ones.
"""

from __future__ import annotations

import numpy as np

from .mdav import group_means, mdav_groups
from .perturbations import rankswap, rankswap_shifted

__all__ = []


def sqrt_psd(D):
    """Symmetric square root of a positive semi-definite matrix (tiny negative eigenvalues set to 0)."""
    w, U = np.linalg.eigh((D + D.T) / 2)
    w = np.clip(w, 0.0, None)
    return (U * np.sqrt(w)) @ U.T


def _orthogonal_noise(N, design):
    """N with its projection on the columns of ``design`` removed, then whitened (N'N/n = I)."""
    Q, _ = np.linalg.qr(design)
    Rz = N - Q @ (Q.T @ N)
    n = N.shape[0]
    C = Rz.T @ Rz / n
    w, U = np.linalg.eigh((C + C.T) / 2)
    return Rz @ ((U / np.sqrt(w)) @ U.T)


def magg(X, cols, k, noise, rng):
    """M-AGG on the columns ``cols`` of X (all columns for general protection).

    Returns (X', number of groups).  ``noise``: 'published' adds e ~ N(0, D) with D the
    within-group scatter / n (mean and covariance kept in expectation); 'exact' builds e
    orthogonal to [1, group means, untouched columns] with e'e/n = D exactly, so mean and
    covariance of the aggregated columns equal those of X; 'none' is plain MDAV.
    """
    n = X.shape[0]
    labels = mdav_groups(X[:, cols], k)  # MDAV weighs by 1/variance: the partition ignores units
    # the noise is built in standardised units, so columns of 1e-12 and 1e12 keep full precision
    mean, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (X - mean) / sd
    Zs = Z[:, cols]
    Zbar = group_means(Zs, labels)
    out = X.copy()
    if noise == "none":
        out[:, cols] = group_means(X[:, cols], labels)
        return out, int(labels.max()) + 1
    W = Zs - Zbar
    others = [j for j in range(X.shape[1]) if j not in set(cols)]
    if others:
        return _selective(X, Z, Zs, Zbar, W, labels, cols, others, noise, rng, mean, sd), int(labels.max()) + 1
    D = W.T @ W / n
    Dh = sqrt_psd(D)
    N = rng.standard_normal((n, len(cols)))
    if noise == "exact":
        design = np.column_stack([np.ones(n), Zbar - Zbar.mean(axis=0)])
        N = _orthogonal_noise(N, design)
    out[:, cols] = (Zbar + N @ Dh) * sd[cols] + mean[cols]
    return out, int(labels.max()) + 1


def _selective(X, Z, Zs, Zbar, W, labels, cols, others, noise, rng, mean, sd):
    """Selective M-AGG that keeps the covariance of S with the public P.

    Grouping on S alone leaves the within-group part W = S - S_bar correlated with P, and
    noise independent of P drops cov(W, P): cov(S, P) was biased (up to 0.04 in correlation
    units on Tarragona/SALES).  Construction (standardised units):

        S' = S_bar + W_hat + e,   W_hat = P_w B,  B = lstsq(P_w, W),  P_w = P - P_bar (within groups)
        e with covariance D_e = W'(W - W_hat)/n  (the scatter of W that P_w does not explain, PSD)

    P_w sums to zero within every group, so S_bar'W_hat = 0 and W'P = W'P_w, hence
    cov(W_hat, P) = cov(W, P) exactly; e is independent of P ('published': drawn, centred,
    so means are kept exactly, and scaled by sqrt(n/(n-1)), so cov(e) = D_e in expectation)
    or orthogonal to [1, S_bar, P, P_bar] with e'e/n = D_e exactly ('exact').  So the mean of
    S is kept exactly, and cov(S, S) and cov(S, P) in expectation ('published') or exactly
    ('exact'); P is untouched."""
    n = X.shape[0]
    P = Z[:, others]
    Pbar = group_means(P, labels)
    Pw = P - Pbar
    B = np.linalg.lstsq(Pw, W, rcond=None)[0]
    What = Pw @ B
    De = W.T @ (W - What) / n
    Dh = sqrt_psd(De)
    N = rng.standard_normal((n, len(cols)))
    if noise == "exact":
        design = np.column_stack([np.ones(n), Zbar - Zbar.mean(axis=0), P, Pbar])
        N = _orthogonal_noise(N, design)
    else:
        N = (N - N.mean(axis=0)) * np.sqrt(n / (n - 1))
    out = X.copy()
    out[:, cols] = (Zbar + What + N @ Dh) * sd[cols] + mean[cols]
    return out


def rankswap_columns(X, cols, p, rng, observed=None, exchange="shifted"):
    """Rank swapping of ``cols`` (``exchange`` 'shifted': ``rankswap_shifted``; 'pairs':
    sdcMicro's ``rankswap``); with ``observed`` (an n x m mask) each column's observed cells
    are swapped among themselves only, so the released values of a column are a permutation
    of its observed values (never an imputed one)."""
    swap = rankswap_shifted if exchange == "shifted" else rankswap
    out = X.copy()
    for j in cols:
        if observed is None or observed[:, j].all():
            out[:, j] = swap(np.ascontiguousarray(X[:, j]), p, rng)
        else:
            ob = observed[:, j]
            out[ob, j] = swap(np.ascontiguousarray(X[ob, j]), p, rng)
    return out


def correlated_noise(X, cols, level, rng):
    """X + e on ``cols``, e ~ N(0, level/100 * Cov(X_cols)); the covariance grows by that factor."""
    n = X.shape[0]
    Xs = X[:, cols]
    sd = Xs.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    C = np.cov(Xs / sd, rowvar=False, bias=True).reshape(len(cols), len(cols))  # correlations: well scaled
    out = X.copy()
    out[:, cols] = Xs + (rng.standard_normal((n, len(cols))) @ sqrt_psd(C)) * sd * np.sqrt(level / 100.0)
    return out
