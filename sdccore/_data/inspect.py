"""Checking data before protection (``inspect_data``: each problem with its fix) and the two
repairs it offers (dropping incomplete records or columns).  Messages name columns and
count records; they never quote cell values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core import decomp as dc
from .._io.read import EMPTY_SHARE, MOSTLY_NUMERIC, _number_cells, looks_numeric
from .._core.validation import last_digit_columns, numeric_columns, scale_problems

__all__ = ["Problem", "inspect_data", "drop_incomplete_rows", "drop_incomplete_columns"]


@dataclass(frozen=True)
class Problem:
    """One problem ``inspect_data`` found.

    Attributes
    ----------
    kind : str
        What kind of problem ('missing', 'constant', 'text', ...).
    columns : tuple of str
        The columns concerned.
    message : str
        What is wrong, in plain words (never quoting data values).
    fix : str
        What to do about it.
    rows : int
        How many records are concerned (0 when it is about whole columns).
    blocking : bool
        Whether it stops protection.
    """
    kind: str          # non_numeric, missing, infinite, constant, linear_combination, duplicated_names, size
    columns: tuple
    message: str
    fix: str
    rows: int = 0
    blocking: bool = True


def _every(which, mask, names):
    """Every column named, with its count of cells: 'age (3), bmi (5)' (never cut: a list that
    ends in '...' hides the columns a user has to look at)."""
    counts = dict(zip(names, mask.sum(axis=0)))
    return ", ".join(f"{c} ({int(counts[c])})" for c in which)


def inspect_data(data: pd.DataFrame, *, protect_columns=None):
    """Problems that stop or distort protection, each with its fix, in plain words.

    Parameters
    ----------
    data : DataFrame
    protect_columns : list of str, optional
        The columns the user wants protected (sensitive and public); default every numeric
        column.

    Returns
    -------
    list of Problem
        Empty when nothing stands in the way.  A ``blocking`` problem stops ``protect``.

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> df = pd.DataFrame({"a": [float(i) for i in range(12)], "b": [5.0] * 12})
    >>> [p.kind for p in sdccore.inspect_data(df)]
    ['constant']
    """
    out = []
    dup = data.columns[data.columns.duplicated()].unique().tolist()
    if dup:
        out.append(Problem("duplicated_names", tuple(dup), f"duplicated column names: {', '.join(map(str, dup))}",
                           "rename the columns so that every name is unique"))
    num = numeric_columns(data.loc[:, ~data.columns.duplicated()])
    cols = [c for c in (protect_columns if protect_columns is not None else num)]
    out += _text_problems(data, cols, num)
    numeric_cols = [c for c in cols if c in num]
    if numeric_cols:
        found, stop = _value_problems(data[numeric_cols].to_numpy(dtype=float), numeric_cols)
        out += found
        if stop:  # values no arithmetic can handle: the other checks would only repeat it
            return out
    return out + _size_problems(data.shape[0], numeric_cols)


def _text_problems(data, cols, num):
    """Columns to protect that are not numeric, and text columns that are mostly numbers."""
    out = []
    for c in cols:
        if c not in data.columns:
            continue
        s = data[c]
        if isinstance(s, pd.DataFrame):
            continue
        if c not in num:
            present = s.notna() & (s.astype("string").str.strip() != "")
            bad = int((present & pd.to_numeric(s, errors="coerce").isna()).sum())
            out.append(Problem("non_numeric", (c,), f"column {c!r} has {bad} non-numeric value(s)",
                               "correct those cells, or give the column the role 'excluded' or 'identifier'", bad))
    for c in data.columns:
        if c in num or c in cols or isinstance(data[c], pd.DataFrame):
            continue
        s = data[c]
        if looks_numeric(s) >= MOSTLY_NUMERIC:
            present, number = _number_cells(s)
            bad = int((present & ~number).sum())
            what = (f"has {bad} non-numeric value(s)" if bad else
                    "has numbers that could be read two ways (decimal comma or thousands separator)")
            out.append(Problem("non_numeric", (c,), f"column {c!r} is mostly numbers but {what}, "
                               f"so it is treated as text and released unchanged",
                               "correct those cells (or choose the decimal mark by hand) and upload again if the column "
                               "should be protected; otherwise confirm below that it is released unchanged",
                               bad, blocking=False))
    return out


def _value_problems(X, numeric_cols):
    """Empty columns, missing and infinite cells, then what the complete records' values
    allow (overflow, scale, last digits, constants, exact combinations): (problems, stop),
    ``stop`` when the values are beyond arithmetic."""
    nan, inf = np.isnan(X), np.isinf(X)
    out, rest = _cell_problems(X, nan, inf, numeric_cols)
    ok = ~((nan & rest) | inf).any(axis=1)
    Xo = X[ok][:, rest]
    full_cols = [c for c, r in zip(numeric_cols, rest) if r]
    with np.errstate(over="ignore", invalid="ignore"):
        overflow = [full_cols[j] for j in range(Xo.shape[1]) if not np.isfinite(Xo[:, j].sum())]
    if overflow:
        out.append(Problem("overflow", tuple(overflow), f"values so large that their sums overflow in {', '.join(overflow)}",
                           "rescale those columns (e.g. to thousands or millions) before uploading"))
        return out, True
    large, small = scale_problems(Xo, full_cols)
    if large:
        out.append(Problem("scale", tuple(large), f"values of 1e150 or more in {', '.join(large)}, whose squares "
                           f"overflow", "rescale those columns (divide by a power of ten) before uploading"))
    if small:
        out.append(Problem("scale", tuple(small), f"only values of 1e-150 or less in {', '.join(small)}, whose "
                           f"squares underflow", "rescale those columns (multiply by a power of ten) before uploading"))
    if large or small:
        return out, True
    return out + _spread_problems(Xo, full_cols), False


def _cell_problems(X, nan, inf, numeric_cols):
    """Empty or mostly empty columns, missing cells, infinite values: (problems, the columns
    that are not empty)."""
    out = []
    n = X.shape[0]
    # a column that is empty or mostly empty is excluded, not a reason to drop records
    empty = np.flatnonzero(nan.mean(axis=0) >= EMPTY_SHARE) if n else np.array([], dtype=int)
    if len(empty):
        names = [numeric_cols[j] for j in empty]
        out.append(Problem("empty_column", tuple(names),
                           f"column(s) {', '.join(names)} are empty or mostly empty (at least "
                           f"{EMPTY_SHARE:.0%} of the records have no value)",
                           "give them the role 'excluded' (released as they are) or remove them from the file",
                           int(nan[:, empty].any(axis=1).sum())))
    rest = np.ones(X.shape[1], dtype=bool)
    rest[empty] = False
    miss = nan & rest
    if miss.any():
        rows = int(miss.any(axis=1).sum())
        which = [numeric_cols[j] for j in np.flatnonzero(miss.any(axis=0))]
        few = [numeric_cols[j] for j in np.flatnonzero(rest & ((~nan).sum(axis=0) < 3))]
        if few:
            out.append(Problem("missing", tuple(few), f"column(s) {', '.join(few)} have fewer than 3 observed "
                               f"values", "give them the role 'excluded' or remove them from the file", rows))
        else:
            out.append(Problem("missing", tuple(which),
                               f"{int(miss.sum())} missing cell(s) in {rows} record(s) (in {_every(which, miss, numeric_cols)}): "
                               f"they stay missing, in place, in the release, and the observed cells are protected",
                               "nothing to do; or drop those records, or leave those columns out of the file",
                               rows, blocking=False))
    if inf.any():
        rows = int(inf.any(axis=1).sum())
        which = [numeric_cols[j] for j in np.flatnonzero(inf.any(axis=0))]
        fix_text = (f"drop those {rows} records" if n - rows >= 3 else
                    f"only {n - rows} record(s) would remain after dropping them, too few to protect: correct the "
                    f"values, or give the column(s) the role 'excluded'")
        out.append(Problem("infinite", tuple(which), f"{rows} record(s) have infinite values (in "
                           f"{_every(which, inf, numeric_cols)})", fix_text, rows))
    return out, rest


def _spread_problems(Xo, full_cols):
    """Columns that vary only in their last digits, constants, exact linear combinations."""
    out = []
    if Xo.shape[0] >= 2:
        tiny = last_digit_columns(Xo, Xo.std(axis=0), Xo.mean(axis=0), full_cols)
        if tiny:
            out.append(Problem("scale", tuple(tiny), f"column(s) {', '.join(tiny)} vary only in their last digits "
                               f"(spread below 1e-9 of their size), so protection cannot change them",
                               "subtract a reference value (e.g. the column's minimum) before uploading, or give "
                               "them the role 'excluded'"))
    if Xo.shape[0] >= 1:
        const = [full_cols[j] for j in range(Xo.shape[1]) if np.ptp(Xo[:, j]) == 0]
        if const:
            out.append(Problem("constant", tuple(const), f"constant column(s): {', '.join(const)}",
                               "give them the role 'excluded' (they are released unchanged) or drop them"))
        var = [j for j in range(Xo.shape[1]) if np.ptp(Xo[:, j]) > 0]
        if len(var) >= 2 and Xo.shape[0] >= 3:
            _, sd, _, R = dc.standardize_with_correlation(Xo[:, var])
            _, deps = dc.linear_dependencies(R, sd)
            for d in deps:
                terms = [full_cols[var[i]] for i, b in zip(d.predictors, d.beta) if abs(b) > 1e-9]
                tgt = full_cols[var[d.target]]
                out.append(Problem("linear_combination", (tgt, *terms),
                                   f"{tgt} is an exact linear combination of {', '.join(terms)}",
                                   f"nothing to do: {tgt} is left out of the decomposition and rebuilt from the "
                                   f"protected columns, so the identity still holds in the release", blocking=False))
    return out


def _size_problems(n, numeric_cols):
    """Too few records for the variables, too few variables, too few records."""
    out = []
    if len(numeric_cols) >= 2 and n <= len(numeric_cols):
        out.append(Problem("size", tuple(numeric_cols), f"{n} records for {len(numeric_cols)} variables to protect",
                           "protection needs more records than variables: protect fewer variables (give some the role "
                           "'excluded') or use a file with more records"))
    if len(numeric_cols) < 2:
        out.append(Problem("size", tuple(numeric_cols), f"{len(numeric_cols)} numeric column(s) to protect",
                           "at least 2 are needed: give numeric columns the role 'sensitive' or 'public' "
                           "(if numbers were read as text, choose the separator and decimal mark by hand)"))
    if n < 10:
        out.append(Problem("size", (), f"{n} record(s)", "at least 10 records are needed: with fewer, "
                           "protection leaves whole records in place"))
    return out


def drop_incomplete_rows(data: pd.DataFrame, columns):
    """Remove the records with a missing or infinite value in some columns.

    Parameters
    ----------
    data : DataFrame
    columns : list of str
        The columns that must be complete (usually the ones to protect).

    Returns
    -------
    (DataFrame, int)
        The remaining records (index kept) and how many were removed.

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> df = pd.DataFrame({"a": [1.0, None, 3.0], "b": [1.0, 2.0, 3.0]})
    >>> kept, removed = sdccore.drop_incomplete_rows(df, ["a", "b"])
    >>> len(kept), removed
    (2, 1)
    """
    X = data[list(columns)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(X).all(axis=1)
    return data.loc[~bad].copy(), int(bad.sum())


def drop_incomplete_columns(data: pd.DataFrame, columns):
    """Remove the columns (of ``columns``) with a missing or infinite value: they are left
    out of the file and so out of the release.

    Parameters
    ----------
    data : DataFrame
    columns : list of str
        The columns checked (usually the ones to protect).

    Returns
    -------
    (DataFrame, list of str)
        The remaining columns and the names removed.

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> df = pd.DataFrame({"a": [1.0, None, 3.0], "b": [1.0, 2.0, 3.0]})
    >>> kept, removed = sdccore.drop_incomplete_columns(df, ["a", "b"])
    >>> list(kept.columns), removed
    (['b'], ['a'])
    """
    X = data[list(columns)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = [c for c, ok in zip(columns, np.isfinite(X).all(axis=0)) if not ok]
    return data.drop(columns=bad), bad
