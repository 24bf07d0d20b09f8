"""Utility of a release: probabilistic information loss (PIL), the propensity score (PS),
selectivity and the further utility figures, spec sections 5-6.

Zero-variance variables: in PIL every statistic of a variable constant in X has V = 0, so
its pil is 0 if X' reproduces the statistic exactly and 1 otherwise; its IC uses |cor| = 1
if X' equals X on it and 0 otherwise (a correlation with a constant is undefined).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from .._risk.linkage import _indices, _pair
from .._core.missing import completed as _completed
from .._core.threads import blas_threads

__all__ = ["pil", "propensity_score", "propensity_score_shape", "selectivity", "polynomial_features"]

PIL_STATISTICS = ("mean", "var", "cov", "corr", "quantiles", "skew", "kurt")
PIL_STATISTICS_PCA = ("mean", "var", "cov", "corr", "quantiles")


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
    C = X - X.mean(axis=0)
    C2 = C * C
    return _corr_variance(C2.mean(axis=0), (C2 * C2).mean(axis=0), C2.T @ C2 / n, (C2 * C).T @ C / n,
                          C.T @ C / n, pairs, n)


def _safe_div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


def _corr_variance(mu2, mu4, M22, M31, M11, pairs, n):
    """``correlation_variance`` from central moments: mu2, mu4 per column and the matrices
    M22 = E[c_i^2 c_j^2], M31 = E[c_i^3 c_j], M11 = E[c_i c_j] (c centred); a column that
    does not vary standardises to 0."""
    i, j = pairs
    sd = np.sqrt(mu2)
    # expanded: E[x^2 y^2] - rho (E[x^3 y] + E[x y^3]) + rho^2 (E[x^4] + E[y^4] + 2 E[x^2 y^2]) / 4,
    # x, y standardised; clipped at 0 against rounding
    A = _safe_div(M22[i, j], mu2[i] * mu2[j])
    E31 = _safe_div(M31, np.outer(sd ** 3, sd))
    k4 = _safe_div(mu4, mu2 ** 2)
    rho = _safe_div(M11[i, j], sd[i] * sd[j])
    v = A - rho * (E31[i, j] + E31[j, i]) + rho ** 2 * (k4[i] + k4[j] + 2 * A) / 4
    return np.clip(v, 0.0, None) / n


def _pil_stats(X, Y, quantiles=True):
    """What PIL compares, from the two files in memory: the count, the means, X's central
    moments of orders 2-8 and Y's of orders 2-4, the moment matrices E[c_i c_j] of both and
    E[c_i^2 c_j^2], E[c_i^3 c_j] of X, the quantiles at QUANTILE_LEVELS and X's density there
    (Gaussian KDE).  ``_dask.pil_dask`` computes the same by map-reduce."""
    n = X.shape[0]
    Cy = Y - Y.mean(0)
    st = {"n": n, **_original_stats(X, quantiles), "mean_y": Y.mean(0),
          "muY": {r: (Cy ** r).mean(axis=0) for r in (2, 3, 4)},
          "M11y": Cy.T @ Cy / n, "qy": np.quantile(Y, QUANTILE_LEVELS, axis=0)}
    return st


def _original_stats(X, quantiles=True):
    """``_pil_stats``'s figures of the original alone (moments, moment matrices, quantiles,
    KDE densities): computed once per original and kept (``_intruders.cached``, keyed by a
    digest of X) across the runs of a comparison or a search, which evaluate against the same
    original every time.  Never modified by the callers."""
    from .._risk.intruders import cached, data_key

    def compute():
        n = X.shape[0]
        Cx = X - X.mean(0)
        C2 = Cx * Cx
        st = {"mean_x": X.mean(0), "mu": {r: (Cx ** r).mean(axis=0) for r in range(2, 9)},
              "M11x": Cx.T @ Cx / n, "M22": C2.T @ C2 / n, "M31": (C2 * Cx).T @ Cx / n,
              "qx": np.quantile(X, QUANTILE_LEVELS, axis=0)}
        st["dens"] = _densities(X, st["qx"], st["mu"][2]) if quantiles else None
        return st

    return cached(("pil original", data_key(X), bool(quantiles)), compute)


def _densities(X, q, mu2):
    """X's Gaussian KDE density at the quantiles q (NaN where a column does not vary)."""
    dens = np.full(q.shape, np.nan)
    for j in range(X.shape[1]):
        if mu2[j] > 0:
            dens[:, j] = stats.gaussian_kde(X[:, j])(q[:, j])
    return dens


def _pil_from(st, statistics=PIL_STATISTICS):
    """PIL's per-statistic values from ``_pil_stats``'s summary (the one formula both engines
    use)."""
    n = st["n"]
    mu, muY = dict(st["mu"]), st["muY"]
    m = len(st["mean_x"])
    iu = np.triu_indices(m, 1)
    res = {}
    # mean: V = s^2 / n (sample variance, n - 1)
    res["mean"] = _pil_values(st["mean_x"] - st["mean_y"], mu[2] * n / (n - 1) / n)
    # variance (central moment 2): V = (mu4 - mu2^2) / n
    res["var"] = _pil_values(mu[2] - muY[2], (mu[4] - mu[2] ** 2) / n)
    cov_x, cov_y = st["M11x"][iu], st["M11y"][iu]
    mu22 = st["M22"][iu]
    res["cov"] = _pil_values(cov_x - cov_y, (mu22 - cov_x ** 2) / n)
    sx, sy = np.sqrt(mu[2]), np.sqrt(muY[2])
    with np.errstate(divide="ignore", invalid="ignore"):
        rx = cov_x / (sx[iu[0]] * sx[iu[1]])
        ry = cov_y / (sy[iu[0]] * sy[iu[1]])
    rx = np.nan_to_num(rx)
    ry = np.nan_to_num(ry)
    res["corr"] = _pil_values(rx - ry, _corr_variance(mu[2], mu[4], st["M22"], st["M31"], st["M11x"], iu, n))
    qx, qy = st["qx"], st["qy"]
    Vq = np.zeros_like(qx)
    if st["dens"] is not None:
        lv = QUANTILE_LEVELS[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            Vq = np.where(np.isfinite(st["dens"]), lv * (1 - lv) / (n * st["dens"] ** 2), 0.0)
    res["quantiles"] = _pil_values(qx - qy, Vq).ravel()

    def vm(r):
        return (mu[2 * r] - mu[r] ** 2 + r * r * mu[2] * mu[r - 1] ** 2 - 2 * r * mu[r - 1] * mu[r + 1]) / n

    mu[1] = np.zeros(m)
    res["skew"] = _pil_values(mu[3] - muY[3], vm(3))
    res["kurt"] = _pil_values(mu[4] - muY[4], vm(4))
    per = {s: float(np.mean(res[s])) if res[s].size else 0.0 for s in statistics}
    return per, res


def _pil_arrays(X, Y, statistics=PIL_STATISTICS, quantiles=True):
    return _pil_from(_pil_stats(X, Y, quantiles), statistics)


def _pil_observed(X, Y, observed, statistics=PIL_STATISTICS):
    """PIL over the cells observed in both files: each variable's statistics (mean, variance,
    quantiles, moments) on its observed records, each pair's covariance and correlation on
    the records observed on both (pairwise deletion).  Equals ``_pil_arrays`` when nothing is
    missing."""
    n, m = X.shape
    comps = {s: [] for s in PIL_STATISTICS}
    for j in range(m):
        r = observed[:, j]
        _, c = _pil_arrays(X[r][:, [j]], Y[r][:, [j]], ())
        for s in ("mean", "var", "quantiles", "skew", "kurt"):
            comps[s].append(c[s])
    iu = np.triu_indices(m, 1)
    for i, j in zip(*iu):
        r = observed[:, i] & observed[:, j]
        if r.sum() < 3:
            comps["cov"].append(np.array([np.nan]))
            comps["corr"].append(np.array([np.nan]))
            continue
        _, c = _pil_arrays(X[r][:, [i, j]], Y[r][:, [i, j]], (), quantiles=False)
        comps["cov"].append(c["cov"])
        comps["corr"].append(c["corr"])
    res = {s: (np.concatenate(v) if v else np.empty(0)) for s, v in comps.items()}
    per = {s: float(np.nanmean(res[s])) if np.isfinite(res[s]).any() else 0.0 for s in statistics}
    return per, res


def pil(original, protected, *, statistics="7"):
    """Probabilistic information loss (Mateo-Sanz et al. 2005).

    The mean over statistics of the mean of 2 Phi(|theta - theta'| / sqrt(V)) - 1, where V
    is the statistic's sampling variance on the original.

    Parameters
    ----------
    original, protected : DataFrame
        Same shape and columns.
    statistics : {'7', '5'}
        '7': mean, variance, covariance, correlation, quantiles, third and fourth central
        moments; '5': the PCA paper's, without the moments.

    Returns
    -------
    float in [0, 1]
        Lower keeps more utility.

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> sdccore.pil(df, df)
    0.0
    """
    X, Y, _ = _pair(original, protected, missing=True)
    names = _pil_stat_names(statistics, "statistics")
    _, _, obs = _completed(X, Y)
    per, _ = _pil_arrays(X, Y, names) if obs is None else _pil_observed(X, Y, obs, names)
    return float(np.mean(list(per.values())))


def _pil_stat_names(statistics, arg="pil_statistics"):
    if isinstance(statistics, bool):
        raise TypeError(f"{arg} must be 7 or 5, not a bool.")
    if statistics in ("7", 7):
        return PIL_STATISTICS
    if statistics in ("5", 5):
        return PIL_STATISTICS_PCA
    raise ValueError(f"{arg}={statistics!r} is not supported; use 7 (with skewness and kurtosis) or 5 (the PCA "
                     f"paper's).")


def check_ps_order(order, arg="ps_order"):
    """The polynomial order of the propensity model: 2 or 3."""
    if isinstance(order, bool) or order not in (2, 3):
        raise ValueError(f"{arg}={order!r} is not supported; use 2 (the papers') or 3.")
    return int(order)


# ----------------------------------------------------------------------------- PS

def polynomial_features(Z, order=2):
    """Main effects, squares, all pairwise products; order 3 adds cubes."""
    n, m = Z.shape
    iu = np.triu_indices(m, 1)
    parts = [Z, Z ** 2, Z[:, iu[0]] * Z[:, iu[1]]]
    if order == 3:
        parts.append(Z ** 3)
    return np.column_stack(parts)


PS_RIDGE_C = 1e6  # the vanishing ridge of a PS fit whose plain maximum likelihood does not converge
SEPARATED_COEF = 1e3  # |coefficient| on standardised terms beyond which the fit separates the files
NEWTON_STEPS = 150  # Newton-Cholesky steps of a PS fit before Newton-CG continues from where it stopped
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
    # The logistic model by maximum likelihood with a vanishing ridge (C = PS_RIDGE_C on
    # standardised terms): the same fit as plain maximum likelihood wherever its maximum exists
    # and is well determined, and a fit at all where the polynomial terms (nearly) separate the
    # files, which on skewed data they often do: there plain maximum likelihood has no maximum,
    # ran to its iteration limit and stopped at an arbitrary score (EIA, rank swap: 0.48 after
    # 100 Newton steps, 0.81 after 3,000, still rising; 0.9 s), while the ridge fit converges in
    # a few dozen steps (0.80, 0.17 s).  Coefficients that the ridge alone holds back
    # (|b| > SEPARATED_COEF) mean the files are separated.
    # Newton with Cholesky steps converges in 5-50 steps; where its Hessian degenerates (nearly
    # separated files) scikit-learn hands over to lbfgs, which crawls (EIA general rank swap: 500
    # steps, 4.8 s, stopped at 0.908); from where it stopped, Newton-CG converges (36 steps,
    # 0.85 s in all, 0.925: the maximum).  Nearly separated files need more steps without a
    # degenerate Hessian: up to NEWTON_STEPS before Newton-CG takes over (EIA general rank swap,
    # seed 3: converged in 108 steps, 0.6 CPU-s, 4e-8 from a Newton-CG fit to tol 1e-12; stopped
    # at 60 and handed over, Newton-CG took 4 CPU-s and stopped 1.2e-6 from it)
    # each Newton step's Hessian is an (n x p) by (p x n) product: on one BLAS thread unless it
    # is large and a core is free (issue 42: two threads collapsed on a busy machine)
    with blas_threads(F.shape[0] * F.shape[1] ** 2), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = LogisticRegression(C=PS_RIDGE_C, solver="newton-cholesky", max_iter=NEWTON_STEPS, tol=1e-8,
                                   warm_start=True)
        model.fit(F, t)
    unconverged = False
    if any(issubclass(w.category, ConvergenceWarning) or "inner solver" in str(w.message) for w in caught):
        with blas_threads(F.shape[0] * F.shape[1] ** 2), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.set_params(solver="newton-cg", max_iter=300).fit(F, t)
        unconverged = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    separated = np.abs(model.coef_).max() > SEPARATED_COEF
    converged = "separated" if separated else ("ridge" if unconverged else True)
    p = model.predict_proba(F)[:, 1]
    c = len(Y) / len(W)
    # Woo et al.'s U = mean((p - c)^2), c = share of protected rows; divided by its maximum
    # c(1 - c) (= 1/4 for equal sizes, hence the papers' factor 4) so that it lies in [0, 1]
    score = float(np.clip(np.mean((p - c) ** 2) / (c * (1 - c)), 0.0, 1.0))
    return score, converged, p


def propensity_score_shape(original, protected, *, order=2):
    """A propensity score that sees distribution shape: the papers' PS (Woo et al.) fitted on
    the stacked data's column-wise normal scores (van der Waerden) instead of standardised
    values.

    On skewed data (revenues) a degree-2 logistic model on standardised values is dominated
    by a few huge records and cannot see a release whose values turned negative or lost
    their skew.  Ranks of the stacked file put original and protected records on one scale
    that every monotone distortion changes, and normal scores give the model a bounded,
    symmetric input.

    Parameters
    ----------
    original, protected : DataFrame
        Same columns.
    order : {2, 3}
        As for ``propensity_score``.

    Returns
    -------
    float in [0, 1]
        0: indistinguishable; 1: perfectly separated.

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> sdccore.propensity_score_shape(df, df) < 1e-12
    True
    """
    order = check_ps_order(order, "order")
    X, Y, _ = _pair(original, protected, missing=True)
    X, Y, _ = _completed(X, Y)
    return _ps_arrays(X, Y, order, "normal_scores")[0]


def propensity_score(original, protected, *, order=2):
    """Propensity-score utility (Woo et al. 2009).

    Logistic regression of "is protected" on a polynomial of the stacked, standardised data;
    PS = 4 mean((p - 1/2)^2).

    Parameters
    ----------
    original, protected : DataFrame
        Same columns.
    order : {2, 3}
        2: main effects, squares and pairwise products; 3 adds cubes.

    Returns
    -------
    float in [0, 1]
        0: indistinguishable; 1: perfectly separated.

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> sdccore.propensity_score(df, df) < 1e-12
    True
    """
    order = check_ps_order(order, "order")
    X, Y, _ = _pair(original, protected, missing=True)
    X, Y, _ = _completed(X, Y)
    return _ps_arrays(X, Y, order)[0]


# ----------------------------------------------------------------------------- selectivity

def _ic_arrays(X, Y, sens, observed=None):
    m = X.shape[1]
    ic = np.empty(m)
    cors = np.empty(m)
    for j in range(m):
        x, y = X[:, j], Y[:, j]
        if observed is not None:
            x, y = x[observed[:, j]], y[observed[:, j]]
        if not (x.std() > 0 and y.std() > 0):
            c = 1.0 if np.array_equal(x, y) else 0.0
        else:
            c = abs(float(np.corrcoef(x, y)[0, 1]))
        cors[j] = c
        ic[j] = c if j in sens else 1.0 - c
    return ic, cors


def selectivity(original, protected, *, sensitive):
    """How selective a release is: the mean IC, |cor(x, x')| for sensitive variables and
    1 - |cor(x, x')| for public ones.

    Parameters
    ----------
    original, protected : DataFrame
        Same shape and columns.
    sensitive : list of str
        The sensitive variables.

    Returns
    -------
    float in [0, 1]
        0: perfectly selective (sensitive variables scrambled, public ones kept).

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> o = pd.DataFrame({"s": [1.0, 2.0, 3.0, 4.0], "p": [4.0, 1.0, 3.0, 2.0]})
    >>> sdccore.selectivity(o, o, sensitive=["s"])
    0.5
    """
    X, Y, cols = _pair(original, protected, missing=True)
    sens = set(_indices(sensitive, cols, "sensitive"))
    _, _, obs = _completed(X, Y)
    return float(_ic_arrays(X, Y, sens, obs)[0].mean())


# ----------------------------------------------------------------------------- extras

def _extras(X, Y):
    from .._methods.removal_kernel import standardized_by, utility_metrics

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
