"""Regression quantiles and their confidence intervals, as R's quantreg computes them:
``rq(y ~ X, tau)`` solved exactly (the linear programme of Koenker and Bassett, 1978, in its
dual form, by SciPy's HiGHS; quantreg's "br" simplex reaches the same vertex) and
``summary.rq(fit, se = "nid")``: the Hendricks-Koenker (1992) sandwich, whose local density
of each record's response comes from the fits at tau +- h (Hall-Sheather bandwidth).

Why not statsmodels' ``QuantReg``: its standard errors ('robust', the default, as 'iid')
take one density at the fit for every record, so they hold only where the spread of y does
not change with X.  On firm accounts it does: on Tarragona (SALES on the other twelve
variables, 834 firms) they are 3 to 7 times narrower than the spread of the estimates over
pairs bootstrap samples (intercept 5,117 against 22,632), while "nid"'s are 0.5 to 1.3 times
it (17,611); with such narrow intervals a release that multiplies each value by
exp(N(0, 0.01)) (1 % noise) already left a slope's intervals overlapping by .67 to .72.
quantreg's own default is "nid" from 1,001 records (rank inversion below: on Tarragona its
intervals are 0.7 to 1.6 times as wide as "nid"'s); "nid" is used at every size here.

Weights (sampling weights, positive) multiply each record's y and x, as ``rq(weights = w)``
does; the sandwich is then that of the weighted rows, as quantreg's summary of such a fit.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats

__all__ = []

EPS = np.sqrt(np.finfo(float).eps)  # quantreg's guard in the density's denominator


def rq(y, X, tau=0.5):
    """The tau-th regression quantile's coefficients (exact), or None where the programme
    fails.  The dual: max y'a subject to X'a = (1 - tau) X'1 and 0 <= a <= 1; the
    coefficients are the multipliers of its equality constraints."""
    res = optimize.linprog(-np.asarray(y, float), A_eq=X.T, b_eq=(1 - tau) * X.sum(axis=0), bounds=(0, 1),
                           method="highs")
    if res.status != 0:
        return None
    return -np.asarray(res.eqlin.marginals, float)


def bandwidth(tau, n, level=0.95):
    """Hall and Sheather's bandwidth (quantreg's ``bandwidth.rq(tau, n, hs = TRUE)``)."""
    x0 = stats.norm.ppf(tau)
    f0 = stats.norm.pdf(x0)
    return n ** (-1 / 3) * stats.norm.ppf(1 - (1 - level) / 2) ** (2 / 3) * (1.5 * f0 ** 2 / (2 * x0 ** 2 + 1)) ** (1 / 3)


def check_loss(r, tau):
    return float(np.sum(r * (tau - (r < 0))))


def fit(y, X, tau=0.5, level=0.95, w=None):
    """(coefficients, lower, upper, pseudo R squared) of the tau-th regression quantile of y on
    X (X holds the intercept column), the interval at ``level`` from the "nid" sandwich; None
    where the programme fails or too few records remain."""
    y, X = np.asarray(y, float), np.asarray(X, float)
    if w is not None:
        y, X = y * w, X * w[:, None]
    n, p = X.shape
    b = rq(y, X, tau)
    if b is None:
        return None
    h = bandwidth(tau, n, level)
    while tau - h < 0 or tau + h > 1:
        h /= 2
    hi, lo = rq(y, X, tau + h), rq(y, X, tau - h)
    if hi is None or lo is None:
        return None
    f = np.maximum(0.0, 2 * h / (X @ (hi - lo) - EPS))
    R = np.linalg.qr(np.sqrt(f)[:, None] * X, mode="r")
    try:
        Ri = np.linalg.solve(R, np.eye(p))
    except np.linalg.LinAlgError:  # too few records with a positive density
        return None
    fxxinv = Ri @ Ri.T
    se = np.sqrt(np.clip(np.diag(tau * (1 - tau) * fxxinv @ (X.T @ X) @ fxxinv), 0.0, None))
    z = stats.norm.ppf(1 - (1 - level) / 2)
    # Koenker and Machado's R1: the check loss against that of the intercept alone
    null = _null_loss(y, X[:, 0], tau)
    r1 = 1 - check_loss(y - X @ b, tau) / null if np.isfinite(null) else np.nan
    return b, b - z * se, b + z * se, float(r1)


def _null_loss(y, x0, tau):
    """The check loss of the intercept-only fit, ``x0`` the intercept column (1, or each
    record's weight): the programme's minimiser is the x0-weighted tau-quantile of y / x0
    (the first value whose cumulative weight reaches tau of the total), no programme needed."""
    if not (x0 > 0).all():  # not an intercept column: the programme
        null = rq(y, x0[:, None], tau)
        return check_loss(y - x0 * null[0], tau) if null is not None else np.nan
    v = y / x0
    order = np.argsort(v, kind="stable")
    cw = np.cumsum(x0[order])
    c = v[order][min(int(np.searchsorted(cw, tau * cw[-1])), len(v) - 1)]
    return check_loss(y - x0 * c, tau)
