"""Post-randomisation (PRAM) of categorical key variables with an invariant transition matrix
(Gouweleeuw, Kooiman, Willenborg and de Wolf 1998, "Post randomisation for statistical
disclosure control: theory and implementation", J. Official Statistics 14(4); sdcMicro's
``pram``).  Each record's category is redrawn from a row of a transition matrix, so an intruder
can no longer trust a rare category; the matrix is built so that the expected count of every
category is its count in the file.

The matrix, as sdcMicro 5.8.1 builds it (``pramWORK``'s ``calcTransitionMatrix``), per
variable with the categories c_1 .. c_L and their shares p in the file (missing values left out):

* P: diagonal entries pds_i drawn uniformly in [pd, 1], each row's rest spread evenly,
  P_ij = (1 - pds_i) / (L - 1);
* Q, the backward matrix (the chance that a record showing c_k after P was c_j):
  Q_kj = P_jk p_j / sum_l p_l P_lk;
* R = P Q: p R = p (invariant), and p_i R_ij = p_j R_ji;
* Rs = alpha R + (1 - alpha) I: still invariant; its diagonal is at least 1 - alpha.

A record of category c_i gets category c_j with probability Rs_ij.  The categories are a
categorical column's categories (R's factor levels; unused ones too, which then are never
drawn), else the distinct values, sorted.  With ``strata`` the matrix is built and applied
within each stratum (the records sharing the strata columns' original values; sdcMicro's
``strata_variables``) from the stratum's shares; a category absent from a stratum is never
drawn there.  ``pd`` may instead be a transition matrix (sdcMicro's ``pd`` as a matrix): it is
used as it is, in every stratum, and ``alpha`` is ignored for that variable.

The draws, from the one generator ``numpy.random.default_rng(rng)``, in this order: variable
by variable (as listed), stratum by stratum (strata sorted by value, missing last), within a
stratum L uniforms for the pds (none for a given matrix), then for each category in order one
uniform per record of it, in file order, turned into a category by the row's cumulative sums.

Where this differs from sdcMicro: its shares divide the counts by the sum of the factor codes
(a slip that cancels in Q); a single category gives a 1 x 1 matrix of 1 here (sdcMicro's
[[alpha pds + 1 - alpha]] is no transition matrix; the record keeps its value either way); a
row of Q whose column of P meets no record (pd = 1 with an unused category) is the identity's
row here, NaN in sdcMicro (it is never used); a given matrix's rows must sum to 1 within 1e-9
(sdcMicro: 2.2e-16) and a DataFrame's labels may come in any order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe, check_names, check_number, make_rng
from .frequencies import named_columns

__all__ = ["Pram", "pram"]

MAX_LEVELS = 50   # a key with more categories is a continuous variable: recode it first
ROW_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Pram:
    """What ``pram`` returns.

    Attributes
    ----------
    data : DataFrame
        The file with the variables post-randomised (dtype and category labels kept, missing
        values left missing); every other column unchanged.
    changed : DataFrame
        One boolean column a variable: True where the value changed (the data's index).
    matrices : dict
        The transition matrix Rs applied, a DataFrame with the categories as index (from) and
        columns (to): keyed by variable, or with ``strata`` by (variable, stratum), the
        stratum a value (one strata column) or a tuple of values.
    variables : tuple of str
    pd : dict
        Variable -> the smallest diagonal entry of P (a number), or the transition matrix given.
    alpha : dict
        Variable -> the share of R in Rs (None where a transition matrix was given).
    strata : tuple of str
        The strata columns (empty without strata).
    """

    data: pd.DataFrame
    changed: pd.DataFrame
    matrices: dict
    variables: tuple
    pd: dict
    alpha: dict
    strata: tuple = ()

    @property
    def per_variable(self) -> dict:
        """Variable -> values changed."""
        return {v: int(self.changed[v].sum()) for v in self.variables}

    def summary(self) -> str:
        """The changes in one sentence."""
        per = ", ".join(f"{n:,} of {int(self.data[v].notna().sum()):,} values of {v}"
                        for v, n in self.per_variable.items())
        where = f" within the strata of {', '.join(self.strata)}" if self.strata else ""
        given = [v for v in self.variables if self.alpha[v] is None]
        how = (f"an invariant transition matrix that keeps every category's expected count"
               + (f" (for {', '.join(given)} the matrix given, as it is)" if given else ""))
        return f"PRAM changed {per}{where}, each redrawn from {how}."

    def __repr__(self):
        return f"Pram({', '.join(self.variables)}; changed {self.per_variable}" + \
            (f"; strata {', '.join(self.strata)})" if self.strata else ")")


def _matrices(p, pds, alpha):
    """(P, Q, R, Rs) of the module docstring for the category shares ``p`` (any positive
    scale: Q divides it out) and the diagonal entries ``pds`` of P."""
    p = np.asarray(p, dtype=np.float64)
    pds = np.asarray(pds, dtype=np.float64)
    L = len(p)
    if L == 1:
        P = np.ones((1, 1))
    else:
        P = np.repeat(((1.0 - pds) / (L - 1))[:, None], L, axis=1)
        np.fill_diagonal(P, pds)
    s = p @ P                                  # s_k = sum_j p_j P_jk
    met = s > 0
    Q = np.eye(L)
    Q[met] = (P * p[:, None]).T[met] / s[met, None]   # Q_kj = P_jk p_j / s_k
    R = P @ Q
    Rs = alpha * R + (1.0 - alpha) * np.eye(L)
    return P, Q, R, Rs


def _categories(col):
    """(codes with missing -1, the categories) of a column."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(np.int64), col.cat.categories
    try:
        codes, cats = pd.factorize(col, sort=True, use_na_sentinel=True)
    except TypeError:   # values that do not sort (numbers and text mixed): order of appearance
        codes, cats = pd.factorize(col, sort=False, use_na_sentinel=True)
    return codes.astype(np.int64), pd.Index(cats)


def _given_matrix(m, v, cats):
    """A transition matrix given for variable v, checked, as floats in the order of ``cats``."""
    L, arg = len(cats), f"pd[{v!r}]"
    if isinstance(m, pd.DataFrame):
        rows, cols = cats.get_indexer(m.index), cats.get_indexer(m.columns)
        if m.shape != (L, L) or (rows < 0).any() or (cols < 0).any() or len(set(rows)) < L or len(set(cols)) < L:
            raise ValueError(f"{arg}: a transition matrix given as a DataFrame needs the {L} categories of {v} "
                             f"as its index and as its columns (each once), as in Pram.matrices.")
        m = m.to_numpy()[np.argsort(rows)][:, np.argsort(cols)]
    m = np.asarray(m)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{arg}: a transition matrix must be square (a row and a column a category), "
                         f"not of shape {m.shape}.")
    if m.shape[0] != L:
        raise ValueError(f"{arg}: the transition matrix is {m.shape[0]} x {m.shape[0]} but {v} has {L} "
                         f"categories; give one row and one column a category, in the order of its categories.")
    try:
        m = m.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{arg}: the transition matrix must hold numbers (probabilities).") from None
    if not np.isfinite(m).all() or (m < 0).any():
        raise ValueError(f"{arg}: the transition matrix must hold probabilities (finite, not negative).")
    worst = float(np.abs(m.sum(axis=1) - 1.0).max())
    if worst > ROW_TOLERANCE:
        raise ValueError(f"{arg}: each row of the transition matrix must sum to 1 (one is off by {worst:.3g}); "
                         f"row i holds the chances that category i becomes each category.")
    return m


def _is_matrix(x):
    return isinstance(x, pd.DataFrame) or (isinstance(x, np.ndarray) and x.ndim == 2)


def _per_variable(value, variables, arg, check):
    """A number (or, for pd, a matrix when one variable is pram'd) or a dict naming every
    variable -> variable -> the checked value."""
    if isinstance(value, dict):
        missing = [v for v in variables if v not in value]
        extra = [k for k in value if k not in variables]
        if missing or extra:
            raise ValueError(f"{arg}: a dict must give a value for each variable and no other "
                             f"(missing: {', '.join(map(str, missing)) or 'none'}; "
                             f"not a variable: {', '.join(map(str, extra)) or 'none'}).")
        return {v: check(value[v], f"{arg}[{v!r}]") for v in variables}
    if _is_matrix(value) and len(variables) > 1:
        raise ValueError(f"{arg}: a transition matrix is for one variable; with several give a dict, "
                         f"e.g. {arg}={{{variables[0]!r}: matrix, {variables[1]!r}: 0.8}}.")
    checked = check(value, arg)
    return {v: checked for v in variables}


def _check_pd(x, arg):
    if _is_matrix(x):
        return x
    return check_number(x, arg, low=0.0, high=1.0, low_open=True)


def _check_alpha(x, arg):
    return None if x is None else check_number(x, arg, low=0.0, high=1.0)   # None: for a given matrix only


def _checked(data, variables, pd_, alpha, strata):
    variables = named_columns(variables, data, "variables", "categorical variables to post-randomise",
                              ["water", "roof"])
    strata = check_names(strata, list(data.columns), "strata", "the columns of data")
    both = [c for c in strata if c in variables]
    if both:
        raise ValueError(f"strata names {', '.join(map(str, both))}, which is also among the variables; a variable "
                         f"post-randomised within strata of its own values never changes. Stratify by other columns.")
    pds = _per_variable(pd_, variables, "pd", _check_pd)
    alphas = _per_variable(alpha, variables, "alpha", _check_alpha)
    none = [v for v in variables if alphas[v] is None and not _is_matrix(pds[v])]
    if none:
        raise ValueError(f"alpha is None for {', '.join(map(str, none))}; give a number in [0, 1] (None only "
                         f"where pd gives a variable its transition matrix).")
    return variables, strata, pds, alphas


def _strata_ids(data, strata):
    """(a stratum id per record, the strata's keys), strata sorted by value, missing last."""
    if not strata:
        return np.zeros(len(data), dtype=np.int64), [None]
    try:
        g = data.groupby(strata, sort=True, dropna=False, observed=True)
        ids, keys = g.ngroup().to_numpy(np.int64), list(g.size().index)
    except TypeError:   # values that do not sort: order of appearance
        g = data.groupby(strata, sort=False, dropna=False, observed=True)
        ids, keys = g.ngroup().to_numpy(np.int64), list(g.size().index)
    return ids, keys


def _redraw(codes, Rs, gen):
    """New codes for the records' codes (all >= 0), category by category in order."""
    new = codes.copy()
    for i in range(Rs.shape[0]):
        at = np.flatnonzero(codes == i)
        if len(at):
            cdf = np.cumsum(Rs[i])
            last = int(np.flatnonzero(Rs[i] > 0)[-1])
            new[at] = np.minimum(np.searchsorted(cdf, gen.random(len(at)), side="right"), last)
    return new


def pram(data, variables, *, pd=0.8, alpha=0.5, strata=None, rng=None) -> Pram:
    """Post-randomise categorical key variables with an invariant transition matrix (PRAM).

    Parameters
    ----------
    data : DataFrame
    variables : list of str
        The categorical variables to post-randomise (region, water source, roof ...), each of at
        most 50 categories; a missing value stays missing and none is made.
    pd : float, array, DataFrame or dict
        The smallest diagonal entry of P, in (0, 1] (default 0.8): each category's chance to
        stay under P is drawn uniformly in [pd, 1]; 1 changes nothing.  Or a transition matrix
        (square, rows summing to 1, a row and a column a category, in the order of the
        categories; a DataFrame labelled by them) used as it is.  A dict gives either per variable.
    alpha : float or dict
        The share of R in Rs = alpha R + (1 - alpha) I, in [0, 1] (default 0.5): 0 changes
        nothing; a dict gives it per variable (ignored, and may be None, for a given matrix).
    strata : list of str, optional
        Columns whose original values split the file into strata; PRAM runs within each.
    rng : None, int or numpy.random.Generator
        The seed: the same seed gives the same file.

    Returns
    -------
    Pram

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> r = sdccore.pram(d, ["water", "roof"], rng=1)
    >>> r.per_variable
    {'water': 320, 'roof': 201}
    >>> r.data.water.value_counts().sort_index().tolist()  # the file's: 600, 66, 1478, 1755, 584, 26, 36, 35
    [596, 64, 1481, 1769, 571, 30, 37, 32]
    """
    data = check_dataframe(data)
    variables, strata, pds, alphas = _checked(data, variables, pd, alpha, strata)
    columns = {v: _column(data[v], v, pds[v]) for v in variables}
    gen = make_rng(rng)
    return _post_randomise(data, variables, columns, pds, alphas, strata, gen)


def _column(col, v, pd_v):
    """(codes, categories, the given matrix or None) of variable v, checked."""
    codes, cats = _categories(col)
    if len(cats) > MAX_LEVELS:
        raise ValueError(f"variables: {v} has {len(cats)} distinct values (at most {MAX_LEVELS} categories); "
                         f"PRAM is for categorical variables: recode it into fewer groups first (e.g. age "
                         f"bands with pandas.cut, or drop unused categories).")
    return codes, cats, (_given_matrix(pd_v, v, cats) if _is_matrix(pd_v) else None)


def _post_randomise(data, variables, columns, pds, alphas, strata, gen):
    """The draws in the order of the module docstring; the result."""
    sid, skeys = _strata_ids(data, strata)
    order = np.argsort(sid, kind="stable")   # the records of stratum s: order[b[s]:b[s + 1]], in file order
    b = np.searchsorted(sid[order], np.arange(len(skeys) + 1))
    out, changed, matrices = data.copy(), {}, {}
    for v in variables:
        codes, cats, given = columns[v]
        L, new = len(cats), codes.copy()
        for s, key in enumerate(skeys):
            at = order[b[s]:b[s + 1]]
            at = at[codes[at] >= 0]
            if not len(at):
                continue
            if given is None:
                draws = pds[v] + (1.0 - pds[v]) * gen.random(L)
                Rs = _matrices(np.bincount(codes[at], minlength=L) / len(at), draws, alphas[v])[3]
            else:
                Rs = given
            new[at] = _redraw(codes[at], Rs, gen)
            matrices[v if not strata else (v, key)] = pd.DataFrame(Rs.copy(), index=cats.copy(), columns=cats.copy())
        changed[v] = new != codes
        if changed[v].any():
            at = np.flatnonzero(changed[v])
            col = out[v].copy()
            col.iloc[at] = cats.take(new[at]).to_numpy()
            out[v] = col
    return Pram(data=out, changed=pd.DataFrame(changed, index=data.index), matrices=matrices,
                variables=tuple(variables), pd=pds, alpha={v: None if columns[v][2] is not None else alphas[v]
                                                            for v in variables}, strata=tuple(strata))
