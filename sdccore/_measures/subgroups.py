"""Two ways an analyst reads an OLS that the battery's pooled OLS (``battery.py``) cannot see:

* ``ols_robust``  the same regression with heteroskedasticity-robust (HC1, White's with the
  n / (n - p) factor: Stata's ``regress, robust``, R's ``sandwich::vcovHC(type = "HC1")``)
  standard errors, t intervals on n - p degrees of freedom.  A release that keeps the OLS
  coefficients and their classical errors by construction (IPSO: X'e = 0 and e'e kept) can
  still move the residuals' spread between records: on a persons file the classical
  intervals coincided (overlap 1.00) while the robust ones overlapped .61-.77;
* ``domain_ols``  the regression within each domain level (each level of each domain column,
  the set-apart or strata columns: women and men, each region) with at least DOMAIN_FIT
  records per coefficient: the subgroup regressions and the interactions of a predictor with
  a domain that researchers fit.  A release that keeps the pooled slopes can make them up
  out of different slopes per domain (the persons file's rent x sex interaction: +8.3, SE
  1.2, where the original had -0.15).  The other domain columns' indicators stay in the
  design; the worst overlap over the levels is the figure.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = []

LEVEL = 0.95
DOMAIN_FIT = 10     # records per coefficient a domain level needs for its own regression
DOMAIN_LEAST = 30   # ... and at least this many


def ols_intervals(y, X, robust=False, level=LEVEL):
    """(coefficients, lower and upper limits, R squared) of the OLS of y on X (its first column
    the intercept, full column rank) by one QR decomposition: statsmodels' OLS figures (t
    intervals on n - p degrees of freedom, the centred R squared); ``robust``: HC1 standard
    errors, (X'X)^-1 X' diag(e^2) X (X'X)^-1 n / (n - p)."""
    n, p = X.shape
    Q, R = np.linalg.qr(X)
    beta = np.linalg.solve(R, Q.T @ y)
    resid = y - X @ beta
    ssr = float(resid @ resid)
    sst = float(np.sum((y - y.mean()) ** 2))
    Ri = np.linalg.solve(R, np.eye(p))
    if robust:
        A = Ri @ Q.T  # (X'X)^-1 X'
        se = np.sqrt(np.sum((A * A) * (resid * resid), axis=1) * n / (n - p))
    else:
        se = np.sqrt(ssr / (n - p) * np.sum(Ri * Ri, axis=1))
    h = stats.t.ppf(0.5 + level / 2, n - p) * se
    return beta, beta - h, beta + h, (1.0 - ssr / sst) if sst > 0 else np.nan


def ols_robust(yo, Xo, yr, Xr, w, overlap):
    """The pooled OLS with robust errors, as the battery's tuple (original R squared, released
    R squared, kept, note, forced); ``overlap`` is the battery's slope overlap."""
    if w is not None:
        return (np.nan, np.nan, np.nan, "does not apply: with sampling weights the OLS above has robust (HC1) "
                                         "errors already", None)
    ov, r2o, r2r, note, forced = overlap("robust", yo, Xo, yr, Xr, None)
    return (r2o, r2r, ov, "HC1 standard errors; " + note, forced)


def domain_ols(original, yo, yr, doms, levels, design, w, overlap, independent):
    """The regression within each domain level (module docstring) as the battery's tuple;
    ``levels[d]``: domain column d's levels.  ``design(others)``: the (original, released)
    designs with the predictors and the indicators of the domain columns ``others``; ``overlap(kind, yo, Xo, yr, Xr, w)``: the battery's slope
    overlap; ``independent(X)``: the columns of X kept against exact collinearity."""
    if not doms:
        return (np.nan, np.nan, np.nan, "no domain column", None)
    found = []
    for d in doms:
        Do, Dr = design([e for e in doms if e != d])
        g = original[d].to_numpy()
        for lv in levels[d]:
            m = (g == lv) & np.isfinite(yo)
            if m.sum() < max(DOMAIN_LEAST, DOMAIN_FIT * Do.shape[1]):
                continue
            keep = independent(np.nan_to_num(Do[m]))
            ov, _, _, note, forced = overlap("ols", yo[m], Do[m][:, keep], yr[m], Dr[m][:, keep],
                                             None if w is None else w[m])
            if not np.isfinite(ov) and forced is not False:
                continue
            found.append((forced is not False, ov if np.isfinite(ov) else -np.inf, f"{d} = {lv}: {note}", forced))
    if not found:
        return (np.nan, np.nan, np.nan, f"no domain level with {DOMAIN_FIT} records per coefficient (at least "
                                        f"{DOMAIN_LEAST})", None)
    _, ov, text, forced = min(found, key=lambda t: (t[0], t[1]))
    return (np.nan, np.nan, ov if np.isfinite(ov) else np.nan, f"worst of {len(found)} domain level(s): {text}", forced)

