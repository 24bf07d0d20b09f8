"""PCA by removing the largest components, with a utility stop (D'Acquisto and Naldi).

The method of the framework paper (``pca-anonymization-utility-framework``, section III):
standardise the variables, take the principal components, remove the largest one, project
back onto the original variables, measure the utility left, and go on removing the next
largest while the utility stays acceptable.  The release keeps the records and the
variables (in their units) but not the directions of largest variance.

Conventions sdccore fixes where the paper is silent (each stated in the docs):

* PCA is of the correlation matrix (variables standardised by the original mean and sd),
  centred, once: after the largest component is removed the next largest of the residual
  data is the original second component, so removing them one at a time equals removing
  the r largest at once (tested both ways).  The mean is added back.
* What it keeps and what it does not:
  - every variable's mean, exactly (centred PCA; before ``bounds``/``rounding``);
  - NOT the variances and covariances: the release's correlation-scale covariance is
    R - sum over removed components of w_i a_i a_i', so each variable keeps only
    1 - (its removed share) of its variance and the correlations change.  The removed share
    is exact and known in advance (``removal_curve``); it is the "perturbed share" the risk
    floors check.
  - NOT the distributions' shape: removing the size component of positive, skewed
    business data leaves values that are negative; ``bounds='sign'`` clips them at 0,
    which moves the means (the plausibility report shows by how much).
* The stop rule: components are removed one by one while the utility metric still meets
  the threshold; the release is the last one that met it (the paper's step 6).  If even
  the largest component cannot be removed, nothing is released.
* Deterministic: no randomness at all (``rng`` is accepted and recorded for the common
  API).  Repeated runs give the same file.

The utility metrics (section IV) are computed on the two data sets standardised by the
ORIGINAL's mean and population sd (so that shrinking shows), D = Z - Z':

  correlation -- Pearson correlation of the flattened matrices (eq. 5-6); higher is better.
  mean_abs    -- sum of |D| (eq. 2) divided by n m: mean absolute change in sds.
  max_row     -- the largest row sum of |D| (eq. 3, summed along each record) divided by
                 m: the mean absolute change of the most changed record, in sds.
  frobenius   -- ||D||_F (eq. 4) divided by sqrt(n m): root mean square change in sds.
                 (The paper's norms grow with n; divided by the cells a threshold reads
                 the same on any file.)
  kl          -- KL(N_original || N_release) of the fitted normals (eq. 8, means and
                 covariances), both covariances with ``KL_RIDGE`` (1 % of each variable's
                 variance) added on the diagonal: a release missing a component has a
                 singular covariance and an infinite divergence, so the ridge is what
                 makes the metric usable as a stop; lower is better.
  psnr        -- peak signal-to-noise ratio (eq. 9-10) with the original's standardised
                 range as the peak, in dB (scikit-image); higher is better.
  ssim        -- structural similarity (eq. 11; scikit-image, uniform 7 x 7 window, or
                 the largest odd window the data allow, at least 3 x 3) of the standardised
                 matrices read as images: records as rows, variables as columns.  Rows of
                 a database have no natural order, so SSIM depends on the file's record
                 order (the paper's caveat); higher is better.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = []

# name -> (label, higher is better)
UTILITY_METRICS = {
    "correlation": ("correlation of the flattened standardised data", True),
    "mean_abs": ("mean absolute change (sds)", False),
    "max_row": ("mean absolute change of the most changed record (sds)", False),
    "frobenius": ("root mean square change (sds)", False),
    "kl": ("Kullback-Leibler divergence of the fitted normals", False),
    "psnr": ("PSNR (dB)", True),
    "ssim": ("SSIM (data read as an image)", True),
}
DEFAULT_METRIC = "correlation"
# correlation 0.5: a quarter of the total variance kept; other metrics need a threshold chosen
# on their curve (their scales depend on the data)
DEFAULT_THRESHOLD = 0.5
KL_RIDGE = 0.01
SSIM_WINDOW = 7


def standardized_by(X, Y):
    """Both matrices standardised by X's mean and population sd (constant columns: sd 1)."""
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (X - mean) / sd, (Y - mean) / sd


def ssim_window(n, m):
    """The SSIM window: 7, or the largest odd size that fits the data; None below 3."""
    w = min(SSIM_WINDOW, n, m)
    if w % 2 == 0:
        w -= 1
    return w if w >= 3 else None


def _kl(Zx, Zy, ridge=KL_RIDGE):
    m = Zx.shape[1]
    C0 = np.cov(Zx, rowvar=False, bias=True).reshape(m, m) + ridge * np.eye(m)
    C1 = np.cov(Zy, rowvar=False, bias=True).reshape(m, m) + ridge * np.eye(m)
    d = Zy.mean(axis=0) - Zx.mean(axis=0)
    L = np.linalg.cholesky(C1)
    Li = np.linalg.solve(L, np.eye(m))
    C1i = Li.T @ Li
    ld1 = 2.0 * np.log(np.diag(L)).sum()
    ld0 = np.linalg.slogdet(C0)[1]
    return float(0.5 * (np.trace(C1i @ C0) + d @ C1i @ d - m + ld1 - ld0))


def utility_metrics(Zx, Zy, metrics=None):
    """The framework paper's metrics of release Zy against original Zx, both already
    standardised by the original (``standardized_by``).  Returns {name: value}; ssim is NaN
    when the data have fewer than 3 records or variables."""
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    names = list(UTILITY_METRICS) if metrics is None else list(metrics)
    n, m = Zx.shape
    D = np.abs(Zx - Zy)
    out = {}
    for name in names:
        if name == "correlation":
            a, b = Zx.ravel(), Zy.ravel()
            sa, sb = a.std(), b.std()
            out[name] = float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb)) if sa > 0 and sb > 0 else 0.0
        elif name == "mean_abs":
            out[name] = float(D.sum() / (n * m))
        elif name == "max_row":
            out[name] = float(D.sum(axis=1).max() / m)
        elif name == "frobenius":
            out[name] = float(np.sqrt((D ** 2).sum() / (n * m)))
        elif name == "kl":
            out[name] = _kl(Zx, Zy)
        elif name == "psnr":
            rng_ = float(Zx.max() - Zx.min())
            mse = float((D ** 2).mean())
            out[name] = float("inf") if mse == 0 else float(peak_signal_noise_ratio(Zx, Zy, data_range=rng_))
        elif name == "ssim":
            w = ssim_window(n, m)
            if w is None:
                out[name] = float("nan")
            else:
                out[name] = float(structural_similarity(Zx, Zy, win_size=w, data_range=float(Zx.max() - Zx.min())))
        else:
            raise ValueError(f"unknown utility metric {name!r}; choose one of {', '.join(UTILITY_METRICS)}.")
    return out


def meets(metric, value, threshold):
    """Whether ``value`` of ``metric`` still meets ``threshold`` (at least it for metrics
    where higher is better, at most it otherwise)."""
    if not np.isfinite(value):
        return bool(UTILITY_METRICS[metric][1] and value > 0)
    return value >= threshold if UTILITY_METRICS[metric][1] else value <= threshold


def removed_release(Z, A, r):
    """Z with its r largest components (columns of A, orthonormal) removed and projected back."""
    if r == 0:
        return Z.copy()
    Ar = A[:, :r]
    return Z - (Z @ Ar) @ Ar.T


def removed_release_stepwise(Z, r):
    """The paper's loop, literally: r times, the PCA of the current data (its covariance,
    centred) and the largest component removed.  For tests: equals ``removed_release``."""
    from .._core.decomp import pca_decomposition

    W = Z.copy()
    for _ in range(r):
        C = np.cov(W, rowvar=False, bias=True)
        A, _w = pca_decomposition(C)
        W = W - np.outer(W @ A[:, 0], A[:, 0])
    return W


def removed_share(A, w, r):
    """Per variable, the share of its (standardised) variance the r largest components carry."""
    if r == 0:
        return np.zeros(A.shape[0])
    return np.clip((A[:, :r] ** 2 * w[:r]).sum(axis=1) / np.maximum((A ** 2 * w).sum(axis=1), 1e-300), 0.0, 1.0)


def stop_rule(Zx, A, active, metric, threshold):
    """The number of components the stop rule removes, and the metric at each count tried
    (0, 1, ... up to the first that breaks the threshold).  Works on the standardised data
    Zx; only components with variance (``active``) are removed, and never all of them."""
    limit = min(int(np.count_nonzero(active)), A.shape[1] - 1)
    values = [utility_metrics(Zx, Zx, [metric])[metric]]
    r = 0
    for trial in range(1, limit + 1):
        v = utility_metrics(Zx, removed_release(Zx, A, trial), [metric])[metric]
        values.append(v)
        if not meets(metric, v, threshold):
            break
        r = trial
    return r, values


# ----------------------------------------------------------------------------- protect's use

def standardized_columns(prep):
    """The protected columns standardised by their mean and population sd (the utility
    metrics' scale), and the sd used."""
    Xk = prep.X[:, prep.keep]
    Zs, _ = standardized_by(Xk, Xk)
    sd = Xk.std(axis=0)
    return Zs, np.where(sd > 0, sd, 1.0)


def removal_count(prep, o, dec, active, notes):
    """How many of the largest components pca_remove removes: the stop rule's choice for
    removed='auto' (then recorded in ``o``, so the recipe reproduces it even if the rule
    changes), or the number given; explained in ``notes``."""
    metric, threshold = o["metric"], o.get("threshold")
    label = UTILITY_METRICS[metric][0]
    relation = "at least" if UTILITY_METRICS[metric][1] else "at most"
    Zs, _ = standardized_columns(prep)
    m = len(prep.keep)
    if o["removed"] == "auto":
        r, values = stop_rule(Zs, dec.G, active, metric, threshold)
        if r == 0:
            raise ValueError(
                f"removing even the largest principal component leaves {label} = {values[1]:.4g}, which breaks the "
                f"threshold ({relation} {threshold:g}): nothing would be protected. Relax the threshold (the curve on the "
                f"Configure page, sdccore.removal_curve, shows the utility after each removal) or use another method.")
        o["removed"] = r
        after = (f"; removing one more would give {values[r + 1]:.4g}" if len(values) > r + 1 else
                 " (no further component can be removed)")
        notes.append(f"removed the {r} largest of {m} principal components: the stop rule keeps {label} {relation} "
                     f"{threshold:g}; after {r} removed it is {values[r]:.4g}{after}")
        return r
    r = o["removed"]
    active_count = int(np.count_nonzero(active))
    if r > active_count:
        raise ValueError(f"removed={r}, but only {active_count} principal component(s) have any variance; remove at "
                         f"most {active_count}.")
    v = utility_metrics(Zs, removed_release(Zs, dec.G, r), [metric])[metric]
    text = f"removed the {r} largest of {m} principal components (as given): {label} {v:.4g}"
    if threshold is not None and not meets(metric, v, threshold):
        text += f", which breaks the utility threshold ({relation} {threshold:g})"
    notes.append(text)
    return r


def removal_keeps(prep, share, Xk, Xpk):
    """What pca_remove kept, in words: means exactly, the share of each variable's variance,
    the largest change of a correlation."""
    names = [prep.numeric[j] for j in prep.keep]
    kept = 1.0 - share
    lo, hi = int(np.argmin(kept)), int(np.argmax(kept))
    m = Xk.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        change = np.abs(np.nan_to_num(np.corrcoef(Xpk, rowvar=False).reshape(m, m))
                        - np.corrcoef(Xk, rowvar=False).reshape(m, m))
    np.fill_diagonal(change, 0.0)
    return (f"what the removal keeps: every mean exactly (before bounds and rounding); NOT the variances and "
            f"covariances: the variables keep {kept[lo]:.1%} ({names[lo]}) to {kept[hi]:.1%} ({names[hi]}) of their "
            f"variance, and correlations change by up to {change.max():.2f}")


@dataclass(frozen=True)
class RemovalCurve:
    """Utility and risk of removing the r largest principal components, r = 0, 1, ...

    Attributes
    ----------
    table : DataFrame
        One row per r: ``removed``, ``variance_removed`` (share of the total variance), each
        metric of UTILITY_METRICS, ``min_share`` (the smallest share of a checked
        variable's variance removed: what the risk floors check), ``max_cor_change``
        (largest change of a correlation between two variables).
    shares : DataFrame
        Variables x r: the share of each variable's variance removed.
    eigenvalues : ndarray
        Of the correlation matrix, largest first.
    metrics : dict
        {metric: (label, higher is better)}.
    """

    table: pd.DataFrame
    shares: pd.DataFrame
    eigenvalues: np.ndarray
    metrics: dict


def curve_arrays(Z, A, w, active, check, max_removed):
    """Rows of the removal curve for r = 0..max_removed (see RemovalCurve)."""
    m = Z.shape[1]
    R = np.corrcoef(Z, rowvar=False).reshape(m, m) if m > 1 else np.ones((1, 1))
    rows, shares = [], []
    top = min(max_removed, int(np.count_nonzero(active)), m - 1)
    for r in range(top + 1):
        Zr = removed_release(Z, A, r)
        vals = utility_metrics(Z, Zr)
        share = removed_share(A, w, r)
        with np.errstate(invalid="ignore", divide="ignore"):
            Rr = np.corrcoef(Zr, rowvar=False).reshape(m, m)
        change = np.abs(np.nan_to_num(Rr, nan=0.0) - R)
        np.fill_diagonal(change, 0.0)
        rows.append({"removed": r, "variance_removed": float(w[:r].sum() / w.sum()), **vals,
                     "min_share": float(share[check].min()) if len(check) else float("nan"),
                     "max_cor_change": float(change.max())})
        shares.append(share)
    return pd.DataFrame(rows), np.array(shares).T
