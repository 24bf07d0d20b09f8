"""Factor-score audit (Drechsler, Ronning and Bleninger; spec section 8).

If a variable is nearly uncorrelated with the others in a factor model, its Bartlett (or
least-squares) factor score reproduces it exactly, and Thomson's regression score up to the
factor 1/(1 + psi).  An intruder with access to factor scores therefore picks the variables
least correlated with the target and tries every number of factors.  This is why sdccore
never exports factor or component scores; the audit shows what such an intruder would get.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core.validation import check_names, numeric_matrix

__all__ = ["audit_factor_scores", "factor_scores", "Audit"]

FLAG = 0.995


def _loadings(R, k, extraction):
    if extraction == "principal":
        w, V = np.linalg.eigh(R)
        return V[:, ::-1][:, :k] * np.sqrt(np.clip(w[::-1][:k], 0, None))
    from factor_analyzer import FactorAnalyzer

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        fa = FactorAnalyzer(n_factors=k, rotation=None, method=extraction, is_corr_matrix=True)
        fa.fit(R)
    return np.asarray(fa.loadings_, dtype=float)


def factor_scores(Z, L, method):
    """Factor scores of standardised data Z for loadings L.

    bartlett: F = Z Psi^-1 L (L' Psi^-1 L)^-1; least_squares: F = Z L (L'L)^-1;
    thomson (regression, Thurstone): F = Z R^-1 L with R = L L' + Psi.
    """
    psi = np.clip(1.0 - (L * L).sum(axis=1), 1e-6, None)
    if method == "bartlett":
        Wt = L / psi[:, None]
        return Z @ Wt @ np.linalg.pinv(L.T @ Wt)
    if method == "least_squares":
        return Z @ L @ np.linalg.pinv(L.T @ L)
    if method == "thomson":
        R = L @ L.T + np.diag(psi)
        return Z @ np.linalg.solve(R, L)
    raise ValueError("method must be 'bartlett', 'least_squares' or 'thomson'.")


@dataclass(frozen=True)
class Audit:
    """What ``audit_factor_scores`` returns.

    Attributes
    ----------
    table : DataFrame
        Per target variable the best |cor(score, variable)| an intruder reaches, with the
        method and number of factors, the share of records recovered within 0.5 % and
        whether it reaches the flag (>= 0.995).
    flagged : tuple of str
        The variables that reach the flag.
    n_helpers : int
        The number of helper variables used.
    """

    table: pd.DataFrame
    flagged: tuple
    n_helpers: int


def audit_factor_scores(data, *, target=None, n_helpers=8, methods=("bartlett", "thomson"),
                        extractions=("minres", "principal")):
    """Per variable, the best an intruder with factor scores reaches.

    The ``n_helpers`` variables least correlated with the target join it in a factor model;
    every number of factors and each extraction (minres; principal components, whose
    isolated eigenvector is the FA paper's eq. 8 case) is tried, with Bartlett and Thomson
    scores.

    Parameters
    ----------
    data : DataFrame
    target : list of str, optional
        The variables to audit; default every numeric column.
    n_helpers : int
        How many other variables join each target.
    methods : tuple of {'bartlett', 'thomson'}
    extractions : tuple of {'minres', 'principal'}

    Returns
    -------
    Audit

    Examples
    --------
    >>> import sdccore
    >>> a = sdccore.audit_factor_scores(sdccore.load_dataset("tarragona"), target=["SALES"])
    >>> a.table.index.tolist()
    ['SALES']
    """
    num, X = numeric_matrix(data, min_columns=3)
    sd = X.std(axis=0)
    targets = check_names(target, num, "target") if target is not None else num
    mean = X.mean(axis=0)
    Zall = (X - mean) / sd
    C = np.abs(np.corrcoef(X, rowvar=False))
    rows = []
    for t in targets:
        j = num.index(t)
        others = [i for i in np.argsort(C[j], kind="stable") if i != j][:n_helpers]
        cols = [j] + others
        Z = Zall[:, cols]
        R = np.corrcoef(Z, rowvar=False)
        best = (0.0, None, None, None)
        for k, extraction in itertools.product(range(1, len(cols)), extractions):
            try:
                L = _loadings(R, k, extraction)
            except Exception:  # a fit that fails is a model the intruder cannot use
                continue
            if not np.isfinite(L).all():
                continue
            for meth in methods:
                F = factor_scores(Z, L, meth)
                for c in range(F.shape[1]):
                    f = F[:, c]
                    if not f.std() > 0:
                        continue
                    r = abs(np.corrcoef(f, Z[:, 0])[0, 1])
                    if r > best[0]:
                        best = (r, f"{meth} ({extraction})", k, f)
        r, meth, k, f = best
        if f is not None:
            # the intruder knows the variable's mean and sd (allowed queries) and the sign
            s = np.sign(np.corrcoef(f, Z[:, 0])[0, 1])
            est = mean[j] + sd[j] * s * (f - f.mean()) / f.std()
            x = X[:, j]
            within = float(np.mean(np.abs(est - x) <= 0.005 * np.abs(x)))
        else:
            within = 0.0
        rows.append({"variable": t, "best_abs_cor": r, "method": meth, "n_factors": k,
                     "helpers": ", ".join(num[i] for i in others), "share_within_0.5pct": within,
                     "flag": bool(r >= FLAG)})
    table = pd.DataFrame(rows).set_index("variable")
    return Audit(table, tuple(table.index[table.flag]), n_helpers)
