"""Analysis validity: what a researcher's analysis of each protected variable keeps.

PIL and the propensity score average over every column of the file, so a release that
scrambles one sensitive variable out of thirteen still scores well on them.  Analysis
validity looks at each checked variable on its own (each sensitive variable in selective
protection, each protected variable in general protection), the way an analyst uses it:

* ``overlap``: the OLS of the variable on the others (the public variables in selective
  protection, what the analyst of a sensitive variable explains it by; every other variable
  in general protection), fitted on the original and on the
  release; per slope coefficient the confidence-interval overlap of Karr et al. (2006) at
  95 % (``_regression``), clipped to [0, 1] (a negative overlap, intervals apart, counts
  as 0), and its mean over the slopes;
* ``r2_kept``: min(R2_o, R2_p) / max(R2_o, R2_p), the explained share kept (1 when equal);
* ``cor_kept``: 1 - the mean absolute change of its correlations with the other variables
  (at least 0);
* ``marginal_kept``: 1 - the Wasserstein-1 distance between the original and released
  values, both standardised by the original's mean and sd (at least 0): 1 when the release
  has the same values, 0 when they moved by a standard deviation on average in
  distribution.

The variable's validity is the mean of the four, in [0, 1], higher is better; the release's
**analysis validity** is the validity of its worst-kept checked variable (never an average
that a well-kept variable could lift), and ``validity_loss`` = 1 - analysis validity is
the score ``evaluate`` and ``compare`` report beside PIL and PS (lower is better, like
every score).  Details per variable also give the median relative coefficient error and
both R squared.

The predictors are the other variables without exact collinearity on the original (a
pivoted Cholesky of their correlations drops those it cannot separate, tolerance 1e-9), the
same set in both fits, both fitted from cross-products in the original's standardised units
(one pass over each file for every variable); records with a missing cell in either file are left out of the
fits, the marginal uses the cells observed in both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._core.validation import check_dataframe, name_list

__all__ = ["analysis_validity", "AnalysisValidity"]

COMPONENTS = ("overlap", "r2_kept", "cor_kept", "marginal_kept")
LEVEL = 0.95


@dataclass(frozen=True)
class AnalysisValidity:
    """What ``analysis_validity`` returns.

    Attributes
    ----------
    validity : float
        The analysis validity in [0, 1] (higher is better): the worst checked variable's.
    loss : float
        1 - validity (the ``validity_loss`` score).
    variables : DataFrame
        One row per checked variable: overlap, r2_kept, cor_kept, marginal_kept, validity
        (their mean), r2_original, r2_protected, coef_error (median relative error of the
        slopes), wasserstein (standardised), cor_change (mean absolute change), predictors.
    """

    validity: float
    loss: float
    variables: pd.DataFrame


def _gram(A, mean, sd):
    """Cross-products of A standardised by the ORIGINAL's mean and sd (the same units for both
    files, so that their coefficients compare), and A's own column means in those units."""
    Z = (A - mean) / sd
    mu = Z.mean(axis=0)
    D = Z - mu
    return D.T @ D


def _ols(G, j, pred, n):
    """OLS with intercept of column j on columns ``pred`` from the centred cross-products G:
    (slopes, standard errors, R squared, residual df)."""
    Gpp = G[np.ix_(pred, pred)]
    gpj = G[pred, j]
    try:
        inv = np.linalg.inv(Gpp)
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(Gpp)
    beta = inv @ gpj
    sst = float(G[j, j])
    rss = max(sst - float(beta @ gpj), 0.0)
    df = n - len(pred) - 1
    r2 = 1.0 - rss / sst if sst > 0 else 0.0
    if df < 1:
        return beta, np.full(len(pred), np.inf), r2, df
    se = np.sqrt(np.clip(np.diag(inv), 0, None) * rss / df)
    return beta, se, r2, df


def _predictors(R, cand, tol=1e-9):
    """The candidates the OLS can use: a pivoted Cholesky of their correlation matrix R drops
    those (nearly) exact linear combinations of the others (squared multiple correlation above
    1 - tol), in the order of the largest remaining variance."""
    cand = [i for i in cand if R[i, i] > 0]
    chosen = []
    if not cand:
        return chosen
    A = R[np.ix_(cand, cand)].copy()
    left = list(range(len(cand)))
    while left:
        d = np.array([A[k, k] for k in left])
        k = left[int(np.argmax(d))]
        if A[k, k] <= tol:
            break
        chosen.append(cand[k])
        col = A[:, k] / np.sqrt(A[k, k])
        A -= np.outer(col, col)
        left.remove(k)
    return sorted(chosen)


def _overlap(bo, so, bp, sp, df_o, df_p):
    """Karr et al.'s interval overlap per coefficient (95 % t intervals; ``_regression``'s
    formula); an unchanged fit, zero-width intervals included, overlaps fully."""
    from .regression import _overlap as karr

    to, tp = stats.t.ppf(0.5 + LEVEL / 2, max(df_o, 1)), stats.t.ppf(0.5 + LEVEL / 2, max(df_p, 1))
    J = karr(bo - to * so, bo + to * so, bp - tp * sp, bp + tp * sp)
    same = (bo == bp) & (so == sp)
    return np.where(same, 1.0, np.nan_to_num(J, nan=0.0, neginf=0.0, posinf=0.0))


def validity_arrays(X, Y, check, observed=None, predictors=None):
    """The per-variable table and the analysis validity of release ``Y`` of ``X`` (numpy,
    rows aligned) for the column indices ``check``, each regressed on ``predictors``
    (indices; default every other column).  ``observed``: optional n x m mask of the cells
    observed in both files (NaN cells are left out either way)."""
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    m = X.shape[1]
    ok = np.isfinite(X) & np.isfinite(Y)
    if observed is not None:
        ok &= observed
    full = ok.all(axis=1)
    Xf, Yf = X[full], Y[full]
    nf = len(Xf)
    rows = []
    mean0 = Xf.mean(axis=0) if nf else np.zeros(m)
    sd0 = Xf.std(axis=0) if nf else np.ones(m)
    sd0 = np.where(sd0 > 0, sd0, 1.0)
    with np.errstate(all="ignore"):
        G0 = _gram(Xf, mean0, sd0) if nf > 2 else np.zeros((m, m))
        G1 = _gram(Yf, mean0, sd0) if nf > 2 else np.zeros((m, m))
        d0, d1 = np.sqrt(np.diag(G0)), np.sqrt(np.diag(G1))
        Ro = np.nan_to_num(G0 / np.outer(d0, d0)) if nf > 2 else np.eye(m)
        Rp = np.nan_to_num(G1 / np.outer(d1, d1)) if nf > 2 else np.eye(m)
    for j in check:
        others = [i for i in range(m) if i != j]
        pool = others if predictors is None else [i for i in predictors if i != j]
        pred = _predictors(Ro, [i for i in pool if d0[i] > 0]) if nf > 2 else []
        if pred and nf > len(pred) + 1 and d0[j] > 0:
            overlap, r2_kept, coef_err, r2o, r2p = _regression_kept(G0, G1, j, pred, nf)
        else:
            overlap, r2_kept, coef_err, r2o, r2p = 1.0, 1.0, 0.0, np.nan, np.nan
        dcor = float(np.abs(Ro[j, others] - Rp[j, others]).mean()) if others else 0.0
        cor_kept = max(0.0, 1.0 - dcor)
        w = _marginal_distance(X[:, j], Y[:, j], ok[:, j])
        marginal = max(0.0, 1.0 - w)
        validity = (overlap + r2_kept + cor_kept + marginal) / 4
        rows.append({"overlap": overlap, "r2_kept": r2_kept, "cor_kept": cor_kept, "marginal_kept": marginal,
                     "validity": validity, "r2_original": r2o, "r2_protected": r2p, "coef_error": coef_err,
                     "wasserstein": w, "cor_change": dcor, "predictors": len(pred)})
    table = pd.DataFrame(rows, index=list(check))
    v = float(table["validity"].min()) if len(table) else 1.0
    return v, table


def _regression_kept(G0, G1, j, pred, nf):
    """What the release keeps of variable j's OLS on ``pred``: (interval overlap, R² kept,
    median relative coefficient error, R² of the original, R² of the release)."""
    bo, so, r2o, dfo = _ols(G0, j, pred, nf)
    bp, sp, r2p, dfp = _ols(G1, j, pred, nf)
    if r2o > 1.0 - 1e-9:  # an exact identity: kept when the release's coefficients are the same
        J = (np.abs(bp - bo) <= 1e-6 * np.maximum(np.abs(bo), 1e-12)).astype(float)
    else:
        J = _overlap(bo, so, bp, sp, dfo, dfp)
    overlap = float(np.clip(J, 0.0, 1.0).mean())
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(bp - bo) / np.abs(bo)
    coef_err = float(np.nanmedian(np.where(np.isfinite(rel), rel, np.nan))) if np.isfinite(rel).any() else 0.0
    top, bot = max(r2o, r2p, 0.0), min(max(r2o, 0.0), max(r2p, 0.0))
    return overlap, 1.0 if top <= 1e-12 else bot / top, coef_err, r2o, r2p


def _marginal_distance(x, y, o):
    """The Wasserstein distance of the two distributions, in the original's sds (cells
    observed in both)."""
    mu, sd = x[o].mean() if o.any() else 0.0, x[o].std() if o.any() else 0.0
    if o.any() and sd > 0:
        return float(stats.wasserstein_distance((x[o] - mu) / sd, (y[o] - mu) / sd))
    return 0.0 if o.any() and np.array_equal(x[o], y[o]) else float(o.any())


def analysis_validity(original, protected, *, sensitive=None):
    """Analysis validity of a release: what the OLS of each checked variable on the others,
    its correlations and its distribution keep (module docstring).

    Parameters
    ----------
    original, protected : DataFrame
        Same numeric columns, rows aligned (record i of one is record i of the other).
    sensitive : list of str, optional
        The variables checked (selective protection); None checks every numeric column.

    Returns
    -------
    AnalysisValidity

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> av = sdccore.analysis_validity(df, df, sensitive=["SALES"])
    >>> av.validity, av.loss
    (1.0, 0.0)
    """
    from .._risk.linkage import _indices, _pair

    original = check_dataframe(original, "original")
    protected = check_dataframe(protected, "protected")
    X, Y, cols = _pair(original, protected, missing=True)
    check = _indices(sensitive, cols, "sensitive") if sensitive else list(range(len(cols)))
    pub = [j for j in range(len(cols)) if j not in set(check)] if sensitive else None
    v, table = validity_arrays(X, Y, check, predictors=pub or None)
    table.index = pd.Index([cols[j] for j in check], name="variable")
    return AnalysisValidity(v, 1.0 - v, table)


def release_battery(original, released, sensitive, exclude, options):
    """What analysts keep in a release (``battery.analyst_checks`` on every numeric column
    both files hold): the set-apart and strata columns with 2 to 30 levels are the domains,
    the rest of them (ids) stay out, and so are the text columns released unchanged with 2 to
    30 levels and no missing cell (region, sex: before, the suggestion's battery left them out
    and never saw a region's mean), and the key variables as published with 2 to 30 levels (age
    in bands: ``_keys_as_published``); weighted by the options' weights."""
    from .battery import analyst_checks
    from .domains import find_domains

    w = options.get("weights")
    apart = [c for c in list(exclude) + name_list(options.get("strata")) if c in released.columns and c != w]
    doms = [c for c in dict.fromkeys(apart) if 2 <= original[c].nunique() <= 30]
    # and the text columns released unchanged with 2 to 30 levels and no missing cell (region, sex)
    doms += [c for c in find_domains(original, released, None, set(apart) | set(name_list(sensitive)), True)
             if c not in doms]
    original, keyed = _keys_as_published(original, released, options, doms)
    doms += keyed
    cols = [c for c in original.columns if c in released.columns
            and (c in doms or c not in apart and pd.api.types.is_numeric_dtype(original[c]))]
    return analyst_checks(original[cols], released[cols], sensitive=list(sensitive) if sensitive else None,
                          domains=doms, weights=w if w in cols else None)


def _keys_as_published(original, released, options, doms):
    """(original with its key variables recoded as published, the keys that are domains): a key
    with 2 to 30 levels after its recoding (age in bands of 5, region, sex) is a domain an office
    publishes (a mean income by age band), each record in its own original band; its blanks are
    the release's missing cells.  Before, a key recoded into bands was neither a domain nor a
    number, and an audit found age-band means moved by 10 % that the battery never saw."""
    keys = [c for c in name_list(options.get("keys")) if c in released.columns and c in original.columns
            and c not in doms]
    if not keys:
        return original, []
    from .._protect.keystep import recoded

    rules = {c: r for c, r in (options.get("recode") or {}).items() if c in keys}
    shown = recoded(original[keys], rules) if rules else original[keys]
    keyed = [c for c in keys if 2 <= shown[c].nunique() <= 30 and shown[c].notna().all()]
    return original.assign(**{c: shown[c] for c in keyed}), keyed
