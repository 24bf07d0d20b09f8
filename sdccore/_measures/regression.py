"""Does my analysis still hold?  A researcher's linear regression fitted on the original
and on the release, coefficient by coefficient, with the confidence-interval overlap of Karr
et al. (2006).

For a coefficient with interval (L_o, U_o) on the original and (L_p, U_p) on the release,
with L = max(L_o, L_p) and U = min(U_o, U_p):

    overlap = ((U - L) / (U_o - L_o) + (U - L) / (U_p - L_p)) / 2

1 when the intervals coincide, 0 when they just touch, negative when they are apart (as
synthpop's ``ci.overlap`` reports it: how far apart, not only that they are).  The
standardised difference is (b_p - b_o) / se_o.  Fits: statsmodels OLS through a formula
read by ``_formula`` without evaluating any of it as code (patsy's formulas run Python: a
formula typed into the dashboard or carried by a recipe could run commands on the server),
records with a missing cell in the model's variables left out of that fit.
"""

from __future__ import annotations

import warnings

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe

__all__ = ["regression_check", "RegressionCheck"]



@dataclass(frozen=True)
class RegressionCheck:
    """What ``regression_check`` returns.

    Attributes
    ----------
    model : str
        The formula as given.
    table : DataFrame
        One row a coefficient ('Intercept' and each term): coef_original, lo_original,
        hi_original, coef_protected, lo_protected, hi_protected, overlap (Karr et al.),
        std_diff ((b_p - b_o) / se_o), and whether the sign is kept (sign_kept).
    mean_overlap : float
        The mean overlap over the coefficients.
    n_original, n_protected : int
        Records used in each fit (those complete on the model's variables).
    r2_original, r2_protected : float
        The fits' R squared.
    level : float
        The confidence level of the intervals.
    """

    model: str
    table: pd.DataFrame
    mean_overlap: float
    n_original: int
    n_protected: int
    r2_original: float
    r2_protected: float
    level: float


def _fit(df, model, level, which):
    """OLS of the formula on ``df``: records with a missing cell in the model's variables,
    or whose transformed values are not finite (the log of 0), are left out of the fit.  The
    formula is read by ``_formula`` (never evaluated as code)."""
    from .formula import design_matrices

    try:
        y, X = design_matrices(model, df)
    except ValueError as exc:
        raise ValueError(f"the model could not be read on the {which} data: {exc}") from None
    import statsmodels.api as sm  # after the formula is read: a refusal need not wait for its import (~2 s)

    ok = np.isfinite(y.to_numpy()).all(axis=1) & np.isfinite(X.to_numpy()).all(axis=1)
    y, X = y[ok], X[ok]
    if len(y) - X.shape[1] < 1:
        raise ValueError(f"the model has {len(y)} usable record(s) on the {which} data for {X.shape[1]} "
                         f"coefficient(s) (records with missing cells or non-finite transformed values, such as "
                         f"the log of 0, are left out); use fewer predictors or another transformation.")
    with warnings.catch_warnings():  # statsmodels' singular-design warnings printed source lines on the CLI
        warnings.simplefilter("ignore")
        fit = sm.OLS(y, X).fit()
        ci = fit.conf_int(alpha=1 - level)
    return fit.params, ci[0], ci[1], fit.bse, int(fit.nobs), float(fit.rsquared)


def _overlap(lo_o, hi_o, lo_p, hi_p):
    lo, hi = np.maximum(lo_o, lo_p), np.minimum(hi_o, hi_p)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 0.5 * ((hi - lo) / (hi_o - lo_o) + (hi - lo) / (hi_p - lo_p))


def regression_check(original, protected, model, *, level=0.95):
    """Fit the linear regression ``model`` on the original and on the release and compare
    the coefficients.

    Parameters
    ----------
    original, protected : DataFrame
        The original and the release (same column names for the model's variables; the
        rows need not be aligned: a shuffled release works).
    model : str
        A formula 'response ~ predictor + ...' in patsy's notation, read without running
        code: column names (bare, such as FIXED.ASSETS, or ``Q("a name")``), ``+ - : *``,
        ``-1``, ``C(region)``, the transformations log, log1p, log10, log2, sqrt, exp, abs
        (``np.log(SALES)``) and ``I(...)`` of arithmetic on names and numbers; anything
        else is refused with a message naming the part.
    level : float
        Confidence level of the intervals, in (0, 1).

    Returns
    -------
    RegressionCheck

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> rel = sdccore.protect(df, "pca", rng=1, allow_unsafe="internal file").data
    >>> chk = sdccore.regression_check(df, rel, "SALES ~ LABOR.COSTS + FIXED.ASSETS")
    >>> list(chk.table.index)
    ['Intercept', 'LABOR.COSTS', 'FIXED.ASSETS']
    >>> bool(-1 < chk.mean_overlap <= 1)
    True
    """
    return _against(_original_fit(original, model, level), protected)


def _original_fit(original, model, level=0.95):
    """The model fitted on the original, once (``compare`` compares every run's release
    with it): (model, formula, level, the fit)."""
    original = check_dataframe(original, "original")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level={level!r} must be a number between 0 and 1, e.g. 0.95.")
    if not isinstance(model, str):
        raise ValueError(f"model={model!r} must be a formula 'response ~ predictor + predictor ...', e.g. "
                         f"'SALES ~ LABOR.COSTS + FIXED.ASSETS'.")
    return model, model, level, _fit(original, model, level, "original")


def _against(original_fit, protected):
    """The release's fit beside the original's (``regression_check``'s table)."""
    model, formula, level, (po, lo_o, hi_o, se_o, n_o, r2_o) = original_fit
    protected = check_dataframe(protected, "protected")
    pp, lo_p, hi_p, _, n_p, r2_p = _fit(protected, formula, level, "protected")
    pp, lo_p, hi_p = pp.reindex(po.index), lo_p.reindex(po.index), hi_p.reindex(po.index)
    names = list(po.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        std = (pp.to_numpy() - po.to_numpy()) / se_o.to_numpy()
    table = pd.DataFrame({
        "coef_original": po.to_numpy(), "lo_original": lo_o.to_numpy(), "hi_original": hi_o.to_numpy(),
        "coef_protected": pp.to_numpy(), "lo_protected": lo_p.to_numpy(), "hi_protected": hi_p.to_numpy(),
        "overlap": _overlap(lo_o.to_numpy(), hi_o.to_numpy(), lo_p.to_numpy(), hi_p.to_numpy()),
        "std_diff": std, "sign_kept": np.sign(po.to_numpy()) == np.sign(pp.to_numpy()),
    }, index=pd.Index(names, name="term"))
    return RegressionCheck(str(model), table, float(np.nanmean(table["overlap"])), n_o, n_p, r2_o, r2_p, float(level))
