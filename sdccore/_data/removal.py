"""The removal curve (``removal_curve``): what removing 0, 1, 2 ... of the largest principal
components would do to each utility metric and each checked variable, read before choosing
PCA-R's ``removed`` -- an exploring tool on the prepared data; the kernel (the curve's arrays,
the stop rule, the release) is the method's, in ``_methods.removal_kernel``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._core import decomp as dc
from .._core.validation import check_number
from .._methods.removal_kernel import UTILITY_METRICS, RemovalCurve, curve_arrays, standardized_by
from .._protect.prepare import _prepare

__all__ = ["removal_curve"]


def removal_curve(data, *, sensitive=None, exclude=None, max_removed=None, transform="none"):
    """Utility and risk after removing the r largest principal components, r = 0, 1, ...

    What ``protect(data, method='pca_remove', removed=r)`` would release, before bounds and
    rounding, for every r up to ``max_removed``: each utility metric of the framework paper,
    the share of each variable's variance removed (the risk floors need at least
    ``RiskFloors.min_perturbed_share`` for each checked variable: every variable in general
    protection, the ``sensitive`` ones otherwise) and the largest change of a correlation.

    Parameters
    ----------
    data : DataFrame
    sensitive : list of str, optional
        The variables the risk floors check (default every variable).
    exclude : list of str, optional
        Numeric columns left out.
    max_removed : int, optional
        Default every component but one, at most 25.
    transform : {'none', 'auto'} or list of str
        As for ``protect``.

    Returns
    -------
    RemovalCurve

    Examples
    --------
    >>> import sdccore
    >>> c = sdccore.removal_curve(sdccore.load_dataset("tarragona"), max_removed=2)
    >>> c.table["removed"].tolist()
    [0, 1, 2]
    """

    prep = _prepare(data, sensitive, exclude, transform)
    m = len(prep.keep)
    if m < 2:
        raise ValueError("removing principal components needs at least 2 variables.")
    top = 25 if max_removed is None else check_number(max_removed, "max_removed", low=1, integer=True)
    Xk = prep.X[:, prep.keep]
    Zs, _ = standardized_by(Xk, Xk)
    dec, active = dc.pca_as_decomposition(prep.R[np.ix_(prep.keep, prep.keep)])
    check = [prep.keep.index(j) for j in prep.check if j in prep.keep]
    table, shares = curve_arrays(Zs, dec.G, dec.variances, active, check, min(top, m - 1))
    names = [prep.numeric[j] for j in prep.keep]
    return RemovalCurve(table, pd.DataFrame(shares, index=names, columns=list(table.removed)),
                        dec.variances.copy(), dict(UTILITY_METRICS))
