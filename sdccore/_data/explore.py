"""What the Explore page shows: correlations in a clustered order, sampling adequacy (KMO,
Bartlett's sphericity test) and the scree of the correlation matrix."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

from .._core import decomp as dc
from .._core.validation import check_names, numeric_matrix

__all__ = ["correlation_matrix", "sampling_adequacy", "scree", "Adequacy", "correlation_indices", "CorrelationIndices"]


def correlation_matrix(data, *, columns=None, order="clustered"):
    """Pearson correlations of the numeric columns.

    Parameters
    ----------
    data : DataFrame
    columns : list of str, optional
        Default every numeric column.
    order : {'clustered', None}
        'clustered' sorts variables by average-linkage clustering on 1 - |r| so that blocks
        of related variables sit together; None keeps the column order.

    Returns
    -------
    DataFrame
        Variables x variables.

    Examples
    --------
    >>> import sdccore
    >>> R = sdccore.correlation_matrix(sdccore.load_dataset("tarragona"), order=None)
    >>> R.shape, float(R.iloc[0, 0])
    ((13, 13), 1.0)
    """
    cols, X = numeric_matrix(data, columns)
    R = np.corrcoef(X, rowvar=False)
    if order == "clustered" and len(cols) > 2:
        D = np.clip(1 - np.abs(R), 0, None)
        np.fill_diagonal(D, 0)
        link = hierarchy.linkage(squareform(D, checks=False), method="average")
        idx = hierarchy.leaves_list(hierarchy.optimal_leaf_ordering(link, squareform(D, checks=False)))
        cols = [cols[i] for i in idx]
        R = R[np.ix_(idx, idx)]
    return pd.DataFrame(R, index=cols, columns=cols)


@dataclass(frozen=True)
class Adequacy:
    """What ``sampling_adequacy`` returns.

    Attributes
    ----------
    kmo : float
        Overall Kaiser-Meyer-Olkin measure (0 to 1; above 0.6 suits factor analysis).
    kmo_per_variable : Series
        KMO of each variable.
    bartlett_chi2, bartlett_df, bartlett_p : float
        Bartlett's test that the correlation matrix is the identity (a small p says the
        variables share structure that factors can carry).
    verdict : str
        Kaiser's word for the overall KMO.
    """

    kmo: float
    kmo_per_variable: pd.Series
    bartlett_chi2: float
    bartlett_df: int
    bartlett_p: float
    verdict: str


def _kaiser(k):
    for lim, word in ((0.9, "marvelous"), (0.8, "meritorious"), (0.7, "middling"), (0.6, "mediocre"), (0.5, "miserable")):
        if k >= lim:
            return word
    return "unacceptable"


def sampling_adequacy(data, *, columns=None):
    """Whether the data suit a factor model: Kaiser-Meyer-Olkin and Bartlett's sphericity test.

    Parameters
    ----------
    data : DataFrame
    columns : list of str, optional
        Default every numeric column.

    Returns
    -------
    Adequacy

    Examples
    --------
    >>> import sdccore
    >>> a = sdccore.sampling_adequacy(sdccore.load_dataset("tarragona"))
    >>> 0 < a.kmo < 1 and a.bartlett_p < 0.05
    True
    """
    cols, X = numeric_matrix(data, columns)
    n, m = X.shape
    R = np.corrcoef(X, rowvar=False)
    # KMO from the partial correlations (pseudo-inverse: exact dependencies make R singular)
    Ri = np.linalg.pinv(R)
    d = np.sqrt(np.outer(np.diag(Ri), np.diag(Ri)))
    P = -Ri / d
    np.fill_diagonal(P, 0)
    R0 = R.copy()
    np.fill_diagonal(R0, 0)
    r2, p2 = R0 ** 2, P ** 2
    kmo_var = r2.sum(0) / (r2.sum(0) + p2.sum(0))
    kmo = r2.sum() / (r2.sum() + p2.sum())
    # Bartlett: chi2 = -(n - 1 - (2m + 5)/6) ln|R|, df = m(m-1)/2
    sign, logdet = np.linalg.slogdet(R)
    logdet = logdet if sign > 0 else -np.inf
    chi2 = -(n - 1 - (2 * m + 5) / 6) * logdet
    df = m * (m - 1) // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(stats.chi2.sf(chi2, df)) if np.isfinite(chi2) else 0.0
    verdict = (f"KMO {kmo:.2f} ({_kaiser(kmo)}); Bartlett's test "
               + ("rejects" if p < 0.05 else "does not reject")
               + (f" an identity correlation matrix (p = {p:.2g})" if p > 0 else " an identity correlation matrix (p < 1e-300)"))
    return Adequacy(float(kmo), pd.Series(kmo_var, index=cols, name="KMO"), float(chi2), int(df), p, verdict)


def scree(data, *, columns=None):
    """Eigenvalues of the correlation matrix with the share and cumulative share of variance.

    Parameters
    ----------
    data : DataFrame
    columns : list of str, optional
        Default every numeric column.

    Returns
    -------
    DataFrame
        One row per component, largest first: eigenvalue, share, cumulative.

    Examples
    --------
    >>> import sdccore
    >>> s = sdccore.scree(sdccore.load_dataset("tarragona"))
    >>> len(s), round(float(s["cumulative"].iloc[-1]), 12)
    (13, 1.0)
    """
    cols, X = numeric_matrix(data, columns)
    _, _, _, R = dc.standardize_with_correlation(X)
    _, lam = dc.pca_decomposition(R)
    share = lam / lam.sum()
    return pd.DataFrame({"component": [f"PC{i + 1}" for i in range(len(lam))], "eigenvalue": lam,
                         "share": share, "cumulative": np.cumsum(share)})


# ----------------------------------------------------------------------------- indices

@dataclass(frozen=True)
class CorrelationIndices:
    """What ``correlation_indices`` returns.

    Attributes
    ----------
    per_variable : DataFrame
        For each variable p taken alone as sensitive, Between(p) (FA paper eq. 6) and
        Within(-p) (eq. 7).
    between, within : float or None
        For the sensitive set S: the mean |cor| between S and the public variables and the
        mean |cor| over pairs of public variables (None without a set).
    sensitive : tuple of str
        The set S.
    """

    per_variable: pd.DataFrame
    between: float | None
    within: float | None
    sensitive: tuple


def _abs_corr(data):
    # two variables give 'between' (one sensitive, one public); 'within' needs two public ones
    # and is NaN below that
    num, X = numeric_matrix(data, min_columns=2)
    return num, np.abs(np.corrcoef(X, rowvar=False))


def _between_within(A, S):
    m = A.shape[0]
    P = [j for j in range(m) if j not in set(S)]
    between = float(A[np.ix_(S, P)].mean()) if P else float("nan")
    if len(P) >= 2:
        iu = np.triu_indices(len(P), 1)
        within = float(A[np.ix_(P, P)][iu].mean())
    else:
        within = float("nan")
    return between, within


def correlation_indices(data, *, sensitive=None):
    """The FA paper's between and within correlation indices.

    Parameters
    ----------
    data : DataFrame
    sensitive : list of str, optional
        The sensitive set S.

    Returns
    -------
    CorrelationIndices
        Per variable taken alone as sensitive: Between(p) (eq. 6) and Within(-p) (eq. 7);
        for S: the mean |cor| between S and the public variables and the mean |cor| over
        pairs of public variables.

    Examples
    --------
    >>> import sdccore
    >>> ci = sdccore.correlation_indices(sdccore.load_dataset("tarragona"), sensitive=["SALES"])
    >>> 0 < ci.between < 1 and 0 < ci.within < 1
    True
    """
    num, A = _abs_corr(data)
    rows = []
    for p in range(len(num)):
        b, w = _between_within(A, [p])
        rows.append({"variable": num[p], "between": b, "within": w})
    per = pd.DataFrame(rows).set_index("variable")
    if sensitive:
        sens = check_names(sensitive, num, "sensitive")
        b, w = _between_within(A, [num.index(s) for s in sens])
        return CorrelationIndices(per, b, w, tuple(sens))
    return CorrelationIndices(per, None, None, ())


# ----------------------------------------------------------------------------- compare
