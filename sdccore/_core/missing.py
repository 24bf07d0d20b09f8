"""Missing cells: the EM estimate of the mean and covariance of incomplete data and the
completion protection runs on.

What protection does with a file that has missing cells (``protect``):

1. The mean vector and covariance matrix are estimated by EM under a multivariate normal
   model (Dempster, Laird and Rubin 1977; Little and Rubin 2002, ch. 11), which uses every
   observed cell and is consistent when cells are missing at random (MAR).
2. Each missing cell is drawn from its conditional normal distribution given the record's
   observed cells (stochastic regression imputation), clipped to the observed range of its
   column, from a child stream of the seed ("impute"), so the same seed gives the same file.
3. The method protects the completed file exactly as it protects a complete one.
4. The missing cells are set missing again: the release has missing cells in exactly the
   original's places, and an imputed value is never released.

What is still exact and what is unbiased:

- For the completed file every guarantee of the method holds as stated (FA/PCA/M-AGG
  means exact, covariances exact or unbiased).
- For the observed (released) cells: each column's mean is the original observed mean
  exactly (with ``bounds='none'`` and ``rounding='none'``, as for complete files): the
  method keeps the completed file's mean, and a constant shift per column then moves the
  released cells' mean onto the observed one (a shift changes no covariance and no record's
  position).  Rank swapping swaps each column's observed values among themselves, so its
  released values are a permutation of the observed ones.  Covariances of observed pairs
  are not exact: their expectation over the perturbation is close to the original's (the
  imputed cells come from the EM model), checked over 40 seeds in ``tests/core/test_missing.py``
  (within 5 %).
- The risk floors are checked on the observed cells only (an imputed cell is never released,
  so it discloses nothing); the intruder links on the completed values.

``evaluate`` completes both files by their EM conditional means (deterministic) for linkage,
interval disclosure and the propensity score, and compares only cells observed in both files
for PIL, selectivity and the risk floors.
"""

from __future__ import annotations

import numpy as np

__all__ = ["em_normal", "complete", "completed", "prior_completion"]


def _patterns(mask):
    """Row groups sharing one missingness pattern: (pattern, row indices)."""
    keys, inverse = np.unique(mask, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    cuts = np.cumsum(np.bincount(inverse, minlength=len(keys)))[:-1]
    return list(zip(keys, np.split(order, cuts)))


def _conditional(mu, S, pat, Xo):
    """Conditional mean of the missing cells given observed ``Xo`` (rows), and the
    conditional covariance, under N(mu, S)."""
    mis, obs = np.flatnonzero(pat), np.flatnonzero(~pat)
    if not len(obs):
        return np.broadcast_to(mu[mis], (Xo.shape[0], len(mis))).copy(), S[np.ix_(mis, mis)].copy()
    Soo = S[np.ix_(obs, obs)]
    Smo = S[np.ix_(mis, obs)]
    try:
        B = np.linalg.solve(Soo, Smo.T).T  # Smo Soo^-1
    except np.linalg.LinAlgError:  # singular (an exact combination among the observed)
        B = np.linalg.lstsq(Soo, Smo.T, rcond=None)[0].T
    cond = mu[mis] + (Xo - mu[obs]) @ B.T
    C = S[np.ix_(mis, mis)] - B @ Smo.T
    return cond, (C + C.T) / 2


def em_normal(X, *, max_iter=500, tol=1e-7):
    """EM estimate of the mean and covariance (divisor n) of ``X`` with NaN cells under a
    multivariate normal model.

    Returns (mean, covariance, iterations).  Complete data give the sample moments in one
    step.  Converged when no entry of the mean or covariance moves by more than ``tol``
    times the column scales.
    """
    X = np.asarray(X, dtype=np.float64)
    n, m = X.shape
    mask = np.isnan(X)
    mu = np.nanmean(X, axis=0)
    var = np.nanvar(X, axis=0)
    if not mask.any():
        C = X - mu
        return mu, C.T @ C / n, 0
    S = np.diag(var)
    groups = _patterns(mask)
    scale = np.sqrt(np.where(var > 0, var, 1.0))
    it = 0
    for it in range(1, max_iter + 1):
        T1 = np.zeros(m)
        T2 = np.zeros((m, m))
        for pat, rows in groups:
            Xr = X[rows].copy()
            if pat.any():
                cond, C = _conditional(mu, S, pat, Xr[:, ~pat])
                Xr[:, pat] = cond
                T2[np.ix_(pat, pat)] += len(rows) * C
            T1 += Xr.sum(axis=0)
            T2 += Xr.T @ Xr
        mu_new = T1 / n
        S_new = T2 / n - np.outer(mu_new, mu_new)
        S_new = (S_new + S_new.T) / 2
        move = max(np.max(np.abs(mu_new - mu) / scale), np.max(np.abs(S_new - S) / np.outer(scale, scale)))
        mu, S = mu_new, S_new
        if move < tol:
            break
    return mu, S, it


def complete(X, gen=None):
    """``X`` with its NaN cells filled, and the mask of those cells.

    ``gen`` (a numpy Generator): each missing cell drawn from its conditional normal given
    the record's observed cells (EM estimates), clipped to its column's observed range; None:
    the conditional mean (deterministic), also clipped.  Rows are drawn in the order of the
    missingness patterns (``numpy.unique`` order), so the draws depend only on the data and
    the generator."""
    X = np.asarray(X, dtype=np.float64)
    mask = np.isnan(X)
    if not mask.any():
        return X, mask
    mu, S, _ = em_normal(X)
    lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
    out = X.copy()
    for pat, rows in _patterns(mask):
        if not pat.any():
            continue
        cond, C = _conditional(mu, S, pat, X[np.ix_(rows, ~pat)])
        if gen is not None:
            w, V = np.linalg.eigh(C)
            root = V * np.sqrt(np.clip(w, 0.0, None))
            cond = cond + gen.standard_normal(cond.shape) @ root.T
        out[np.ix_(rows, np.flatnonzero(pat))] = np.clip(cond, lo[pat], hi[pat])
    return out, mask


def complete_for_protection(X, numeric, seed):
    """Fill the missing cells of X for protection (module docstring): refuse columns with no
    value or fewer than 3 observed values, then draw each missing cell from its conditional
    normal given the record's observed cells, from the "impute" stream of ``seed`` (0 when
    None).  X must hold no infinite value (the callers check).  Returns (completed, mask)."""
    from .streams import child_rng

    empty = [numeric[j] for j in range(X.shape[1]) if not np.isfinite(X[:, j]).any()]
    if empty:
        raise ValueError(f"empty column(s) {', '.join(map(str, empty))} hold no value; exclude them "
                         f"(exclude={list(map(str, empty))!r}, released as they are) or drop them from the file.")
    few = [numeric[j] for j in range(X.shape[1]) if np.isfinite(X[:, j]).sum() < 3]
    if few:
        raise ValueError(f"column(s) {', '.join(map(str, few))} have fewer than 3 observed values; exclude them "
                         f"(exclude=[...]) or drop them: there is nothing to estimate their relations from.")
    return complete(X, child_rng(0 if seed is None else seed, "impute"))


def completed(X, Y):
    """Both files with their missing cells at the EM conditional means (deterministic, each
    file from its own estimate) and the mask of cells observed in both (None when nothing is
    missing): linkage, interval disclosure and the propensity score run on the completed
    files, PIL, selectivity and the risk floors compare observed cells only.

    The one place where a pair of files with missing cells becomes completed files and the
    mask of what is compared; ``protect`` passes its own mask (the original's missing cells,
    completed by stochastic imputation) to ``risk_profile`` as ``observed``."""
    nan = np.isnan(X) | np.isnan(Y)
    if not nan.any():
        return X, Y, None
    few = [j for j in range(X.shape[1]) if (~nan[:, j]).sum() < 3]
    if few:
        raise ValueError(f"column(s) at position(s) {few} have fewer than 3 cells observed in both files; leave them "
                         f"out of the evaluation.")
    return complete(X)[0], complete(Y)[0], ~nan


def prior_completion(X0, missing):
    """What the risk floors' priors read (``risk_profile(prior_original=...)``) for a file with
    missing cells: ``X0`` (a run's completed original) with those cells drawn again as a run
    draws them (``complete``) but from a fixed stream ("prior" of seed 0), the same in every
    run, so that the priors are fitted once per data set (households with 5 % of incomes
    blank: the boosted prior was fitted again in every run, 28 of the Run page's 34 s).  Drawn,
    not the conditional means: a missing known cell's conditional mean is conditioned on the
    record's target too, and handed the prior 78 % of those records within 5 % where draws
    give 32 %, as for the others (an outside review).  The run's own draws stay in X0 for
    every other intruder.  None without missing cells."""
    if missing is None or not missing.any():
        return None
    from .streams import child_rng

    X = np.array(X0, dtype=np.float64)
    X[missing] = np.nan
    return complete(X, child_rng(0, "prior"))[0]
