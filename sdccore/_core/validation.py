"""Input validation at the public boundary.

Every check raises ``ValueError`` or ``TypeError`` with a message that names the
argument, says what is wrong and how to fix it.  Messages never quote data values
(the data are confidential); they name columns and count rows instead.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = []

MIN_ROWS = 3
MIN_COLUMNS = 2


def make_rng(rng):
    """Return ``numpy.random.default_rng(rng)`` after checking the type of ``rng``."""
    if rng is not None and not isinstance(rng, (numbers.Integral, np.random.Generator)):
        raise TypeError(
            "rng must be None, an int seed or a numpy.random.Generator, "
            f"not {type(rng).__name__}; pass for example rng=12345."
        )
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool) and int(rng) < 0:
        raise ValueError("rng (the seed) must be a non-negative integer; pass for example rng=12345.")
    return np.random.default_rng(rng)


def resolve_seed(rng) -> int:
    """Turn ``rng`` into a recorded integer seed.

    An int is used as it is; ``None`` draws a fresh seed from the operating system; a
    ``Generator`` gives the seed it draws next.  The caller then builds its one generator
    with ``numpy.random.default_rng(seed)``, so the recorded seed reproduces the output.
    """
    if isinstance(rng, bool):
        raise TypeError("rng must be None, an int seed or a numpy.random.Generator, not a bool.")
    if isinstance(rng, numbers.Integral):
        make_rng(rng)  # type and sign check
        return int(rng)
    gen = make_rng(rng)
    return int(gen.integers(0, 2**63 - 1))


def check_dataframe(data, name: str = "data") -> pd.DataFrame:
    if not isinstance(data, pd.DataFrame):
        raise TypeError(
            f"{name} must be a pandas DataFrame, not {type(data).__name__}; "
            f"wrap an array with pandas.DataFrame(array, columns=[...])."
        )
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{name} is empty ({data.shape[0]} rows x {data.shape[1]} columns); load a data set with records and numeric columns.")
    dup = data.columns[data.columns.duplicated()].tolist()
    if dup:
        raise ValueError(
            f"{name} has duplicated column names: {', '.join(map(str, dup))}; rename them so every column name is unique."
        )
    return data


def numeric_columns(data: pd.DataFrame) -> list:
    """Columns with a real numeric dtype (booleans are not numeric here)."""
    out = []
    for c in data.columns:
        dt = data[c].dtype
        if pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt) and not pd.api.types.is_complex_dtype(dt):
            out.append(c)
    return out


def name_list(value) -> list:
    """An option naming columns ('x', ['x', 'y'] or None) as a list of names."""
    return [value] if isinstance(value, str) else list(value or [])


def check_names(names, available, arg: str, what: str = "the numeric columns to protect") -> list:
    """Check that ``names`` (None, a string or a list) are columns in ``available``."""
    if names is None:
        return []
    if isinstance(names, str):
        names = [names]
    try:
        names = list(names)
    except TypeError:
        raise TypeError(f"{arg} must be a list of column names, not {type(names).__name__}.") from None
    seen = set()
    for n in names:
        if n in seen:
            raise ValueError(f"{arg} names column {n!r} twice; list each column once.")
        seen.add(n)
    missing = [n for n in names if n not in available]
    if missing:
        avail = ", ".join(map(str, available[:20])) + (" ..." if len(available) > 20 else "")
        raise ValueError(
            f"{arg} names {', '.join(map(repr, missing))}, which "
            f"{'is' if len(missing) == 1 else 'are'} not among {what} "
            f"({avail}); check the spelling or the column's type."
        )
    return names


def check_matrix(X: np.ndarray, columns, name: str = "data", min_rows: int = MIN_ROWS,
                 min_columns: int = MIN_COLUMNS) -> np.ndarray:
    """Check a numeric float matrix: size, finiteness and constant columns."""
    n, m = X.shape
    if n < min_rows:
        raise ValueError(
            f"{name} has {n} record{'s' if n != 1 else ''}; at least {min_rows} are needed. "
            f"Protect a file with more records."
        )
    if m < min_columns:
        raise ValueError(
            f"{name} has {m} numeric column{'s' if m != 1 else ''}; at least {min_columns} are needed. "
            f"Check that numbers are stored as numbers (not text) and that columns are not all excluded."
        )
    with np.errstate(over="ignore", invalid="ignore"):
        quick = np.isfinite(X.sum(axis=0)).all()  # NaN and inf propagate into the sums
    if not quick:
        finite = np.isfinite(X)
        if finite.all():
            raise ValueError(
                f"{name} has values so large that their sums overflow (about 1e308); "
                f"rescale those columns (e.g. to thousands or millions) before protecting."
            )
        empty = [columns[j] for j in np.flatnonzero(np.isnan(X).all(axis=0))] if n else []
        if empty:
            raise ValueError(f"{name} has empty column(s) {', '.join(map(str, empty))} (no values at all); exclude "
                             f"them (exclude=[...]) or drop them.")
        bad_cols = [columns[j] for j in np.flatnonzero(~finite.all(axis=0))]
        nan_rows = int((~finite).any(axis=1).sum())
        kinds = []
        if np.isnan(X).any():
            kinds.append("missing values (NaN)")
        if np.isinf(X).any():
            kinds.append("infinite values")
        raise ValueError(
            f"{name} has {' and '.join(kinds)} in {nan_rows} record(s), in column(s) "
            f"{', '.join(map(str, bad_cols))}; drop or impute those records before protecting."
        )
    return X


# a column whose spread is below this share of its size varies only in its last digits:
# protected values would round back to the originals at float resolution (about 1e-16)
MIN_RELATIVE_SPREAD = 1e-9
# magnitudes whose squares leave the float range (overflow near 1e308, underflow near 1e-308)
MAX_MAGNITUDE = 1e150
MIN_MAGNITUDE = 1e-150


def scale_problems(X, columns):
    """(too large, too small): columns with values of magnitude >= 1e150, and columns whose
    largest magnitude is nonzero but <= 1e-150.  Their squares overflow or underflow, so
    variances and correlations are lost; the fix is to rescale the column."""
    with np.errstate(invalid="ignore"):
        big = np.nanmax(np.where(np.isfinite(X), np.abs(X), 0.0), axis=0) if X.size else np.zeros(X.shape[1])
    large = [columns[j] for j in range(X.shape[1]) if big[j] >= MAX_MAGNITUDE]
    small = [columns[j] for j in range(X.shape[1]) if 0 < big[j] <= MIN_MAGNITUDE]
    return large, small


def check_scale(X, columns, name="data"):
    large, small = scale_problems(X, columns)
    if large:
        raise ValueError(f"{name} has values of 1e150 or more in column(s) {', '.join(map(str, large))}; their squares "
                         f"overflow. Rescale those columns (divide by a power of ten) before protecting.")
    if small:
        raise ValueError(f"{name} has only values of 1e-150 or less in column(s) {', '.join(map(str, small))}; their "
                         f"squares underflow. Rescale those columns (multiply by a power of ten) before protecting.")


def last_digit_columns(X, sd, mean, columns):
    """Columns that vary, but only in their last digits relative to their size."""
    return [columns[j] for j in range(len(columns))
            if np.ptp(X[:, j]) > 0 and sd[j] > 0 and sd[j] < MIN_RELATIVE_SPREAD * abs(mean[j])]


def check_spread(X, sd, mean, columns, name="data"):
    """Reject constant columns (found from the sd computed anyway, confirmed exactly), and
    columns that vary only in their last digits (protection cannot change them)."""
    suspect = np.flatnonzero(~(sd > 1e-12 * np.abs(mean)))
    const = [columns[j] for j in suspect if np.ptp(X[:, j]) == 0 or not sd[j] > 0]
    if const:
        raise ValueError(
            f"{name} has constant column(s) {', '.join(map(str, const))}; a constant carries no information "
            f"to protect: exclude it (exclude=[...]) or drop it."
        )
    tiny = last_digit_columns(X, sd, mean, columns)
    if tiny:
        raise ValueError(
            f"{name} has column(s) {', '.join(map(str, tiny))} that vary only in their last digits (spread below "
            f"1e-9 of their size), so protected values would round back to the originals: subtract a reference "
            f"value (e.g. the column's minimum) before protecting, or exclude the column."
        )


def numeric_matrix(data, columns=None, min_columns=MIN_COLUMNS, name="data"):
    """(column names, float matrix) of the numeric columns of a DataFrame, checked as
    ``protect`` checks its input: size, missing or infinite values, constant columns."""
    data = check_dataframe(data, name)
    cols = list(columns) if columns is not None else numeric_columns(data)
    X = data[cols].to_numpy(dtype=float) if cols else np.empty((len(data), 0))
    if X.size and X.shape[1] >= 2 and X.shape[0] >= 3 and np.isnan(X).any() and not np.isinf(X).any():
        # missing cells: completed as protect completes them (EM conditional draws), from the
        # "impute" stream of seed 0, so exploring an incomplete file shows what protection sees
        from .missing import complete_for_protection

        X = complete_for_protection(X, cols, None)[0]
    check_matrix(X, cols, name, min_columns=min_columns)
    check_scale(X, cols, name)
    check_spread(X, X.std(axis=0), X.mean(axis=0), cols, name)
    return cols, X


def check_choice(value, choices, arg: str):
    if value not in choices:
        raise ValueError(f"{arg}={value!r} is not supported; use one of {', '.join(map(repr, choices))}.")
    return value


def check_number(value, arg: str, low=None, high=None, integer=False, low_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{arg} must be a number, not {type(value).__name__}.")
    # finiteness first, on a float: int(nan) and int(inf) fail, and numpy's isfinite does
    # not take Python ints too large for a float (1e23 as an int, 10**400)
    try:
        as_float = float(value)
    except OverflowError:
        as_float = float("inf")
    if not np.isfinite(as_float):
        what = "not a number (NaN)" if as_float != as_float else "infinite or too large to be a number"
        raise ValueError(f"{arg} must be a finite number; the value given is {what}.")
    if integer and int(value) != value:
        raise ValueError(f"{arg} must be a whole number, got {value}.")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{arg} must be {'greater than' if low_open else 'at least'} {low}, got {value:.6g}.")
    if high is not None and value > high:
        raise ValueError(f"{arg} must be at most {high}, got {value:.6g}.")
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class Layout:
    """How a DataFrame splits into the matrix to protect and pass-through columns."""

    columns: tuple      # all columns, in order
    numeric: tuple      # numeric columns that are protected (released, possibly changed)
    passthrough: tuple  # non-numeric or excluded columns, untouched


def split_columns(data: pd.DataFrame, exclude=None) -> Layout:
    num = numeric_columns(data)
    excl = check_names(exclude, list(data.columns), "exclude", "the columns of data") if exclude is not None else []
    numeric = [c for c in num if c not in excl]
    passthrough = [c for c in data.columns if c not in numeric]
    return Layout(tuple(data.columns), tuple(numeric), tuple(passthrough))
