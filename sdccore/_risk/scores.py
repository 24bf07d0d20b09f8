"""Disclosure risk of a release: distance-based record linkage (DBRL) and rank interval
disclosure (ID), spec section 4.  The linking policy lives in ``_linkage``."""

from __future__ import annotations

import numpy as np

from .linkage import _dbrl_arrays, _indices, _pair, default_id_reference, linked_records
from .._core.missing import completed as _completed

__all__ = ["dbrl", "interval_disclosure"]


def dbrl(original, protected, *, linkage=None):
    """Distance-based record linkage: the share of original records whose nearest protected
    record is their own.

    Distances are Euclidean on the standardised ``linkage`` variables; a tie among t records
    that includes the own one counts 1/t.

    Parameters
    ----------
    original, protected : DataFrame
        Same shape and columns, record i of one is record i of the other.
    linkage : list of str, optional
        The variables the intruder knows; default all.

    Returns
    -------
    float in [0, 1]
        Lower is safer.

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> o = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [0.0, 1.0, 0.0, 1.0]})
    >>> sdccore.dbrl(o, o)
    1.0
    >>> sdccore.dbrl(o, o.iloc[::-1].reset_index(drop=True))
    0.0
    """
    X, Y, cols = _pair(original, protected, missing=True)
    X, Y, _ = _completed(X, Y)
    return _dbrl_arrays(X, Y, _indices(linkage, cols, "linkage"))[0]


def _id_arrays(X, Y, cols, linked, ps=range(1, 11), observed=None):
    n = X.shape[0]
    out = np.zeros((len(cols), len(ps)))
    for a, j in enumerate(cols):
        y = Y[:, j]
        if not X[:, j].std() > 0:
            out[a] = np.nan
            continue
        order = np.argsort(y, kind="stable")
        ys = y[order]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        r = rank[linked]
        x = X[:, j]
        for b, p in enumerate(ps):
            w = int(np.ceil(p * n / 100.0))
            lo = ys[np.maximum(0, r - w)]
            hi = ys[np.minimum(n - 1, r + w)]
            hit = (x >= lo) & (x <= hi)
            out[a, b] = np.mean(hit if observed is None else hit[observed[:, j]])
    return out



def interval_disclosure(original, protected, *, variables=None, linkage=None, reference=None):
    """Rank interval disclosure: mean over records, ``variables`` and p = 1..10 % of whether the
    original value falls in the rank interval around a protected value.

    For variable j the protected values are sorted; the interval around the protected value
    of rank r runs from rank max(1, r - w) to min(n, r + w), w = ceil(p n / 100).

    Parameters
    ----------
    original, protected : DataFrame
        Same shape and columns, record i of one is record i of the other.
    variables : list of str, optional
        The variables measured; default all.
    linkage : list of str, optional
        The variables linked on with ``reference='linked'``.
    reference : str, optional
        The threat model, one of ``ID_REFERENCES`` (one policy with ``evaluate``'s
        ``id_reference``): 'own' (the record's own protected version), 'linked_all' (the
        record DBRL links on all variables), 'linked_public' (linked on the variables not in
        ``variables``), 'linked_sensitive' (linked on ``variables``; near 1 by
        construction), 'linked' (linked on ``linkage``).  Default 'linked_all' when every
        variable is measured (general protection, the PCA paper), 'own' when ``variables``
        is a subset (selective protection, the FA paper), so ``interval_disclosure(o, p,
        variables=S)`` equals ``evaluate(o, p, sensitive=S).scores['id']``.

    Returns
    -------
    float in [0, 1]
        Lower is safer.

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> o = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0], "y": [2.0, 1.0, 4.0, 3.0, 5.0]})
    >>> sdccore.interval_disclosure(o, o)
    1.0
    """
    X, Y, cols = _pair(original, protected, missing=True)
    X, Y, obs = _completed(X, Y)
    var = _indices(variables, cols, "variables")
    lk = _indices(linkage, cols, "linkage") if linkage else None
    if reference is None:
        reference = "linked" if lk else default_id_reference(len(var) < len(cols))
    linked = linked_records(X, Y, var, reference, lk)
    table = _id_arrays(X, Y, var, linked, observed=obs)
    return float(np.nanmean(table)) if np.isfinite(table).any() else 0.0
