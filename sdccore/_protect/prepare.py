"""Data preparation, the pipeline's ground floor: the numeric matrix, its missing cells
completed, the log scale, standardisation and exact linear dependencies (``_prepare``), which
``protect``, ``decompose``, ``removal_curve`` and the Dask engine share.  Imports only lower
floors (validation, decomposition, plausibility, missing cells, random streams)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core import decomp as dc
from .._core import plausible as pl
from .._core.missing import complete_for_protection
from .._core.validation import check_dataframe, check_matrix, check_names, check_scale, check_spread, split_columns

__all__ = []

MIN_RECORDS = 10  # fewer records: a swap of 3 records' scores leaves one in place a third of the time


# ----------------------------------------------------------------------------- preparation

@dataclass(frozen=True)
class _Prepared:
    data: pd.DataFrame
    numeric: list
    X0: np.ndarray       # the original values
    X: np.ndarray        # the values protected (log scale for log_cols); may be X0 itself
    mean: np.ndarray     # of X
    sd: np.ndarray
    Z: np.ndarray
    R: np.ndarray
    mean0: np.ndarray    # of X0 (dependencies are rebuilt on the original scale)
    sd0: np.ndarray
    keep: list
    deps: list
    sens: list           # indices into keep (0-based) of sensitive variables
    notes: tuple
    sensitive_names: list | None
    exclude: list | None
    log_cols: list       # indices into numeric of the log-scale columns
    log_scales: np.ndarray
    check: list          # indices into numeric of the variables the floors check
    missing: np.ndarray | None = None  # n x len(numeric) mask of the cells missing in data (completed in X0)
    weights: np.ndarray | None = None  # sampling weights: weighted means kept instead of unweighted (_strata)
    codes: pd.DataFrame | None = None  # data with the keys as published (recoded): what conditional methods are given

    @property
    def coded(self) -> pd.DataFrame:
        """The columns the conditional methods condition on, as released: the keys' published
        recodings applied (age in bands of 5, 15 levels, where 72 ages were too many to join)."""
        return self.data if self.codes is None else self.codes


def _log_columns(transform, X, numeric, keep):
    if transform == "none":
        return []
    if transform == "auto":
        names = pl.auto_log_columns(X, numeric, keep)
    else:
        names = check_names(transform, numeric, "transform")
        dep_targets = [numeric[j] for j in range(len(numeric)) if j not in keep]
        bad = [c for c in names if c in dep_targets]
        if bad:
            raise ValueError(f"transform lists {', '.join(bad)}, exact linear combination(s) of other columns that are "
                             f"rebuilt on the original scale; leave them out of transform.")
        neg = [c for c in names if X[:, numeric.index(c)].min() < 0]
        if neg:
            raise ValueError(f"transform lists {', '.join(neg)}, which have negative values; only non-negative "
                             f"variables can be protected on the log scale.")
    return sorted(numeric.index(c) for c in names)


def _check_text_numbers(data, layout, exclude):
    """A text column that is mostly numbers would be released unchanged: refuse unless the
    caller excluded it on purpose (currency, percent, '-' for missing, a decimal comma...)."""
    from .._io.read import MOSTLY_NUMERIC, looks_numeric

    chosen = set(exclude or ())
    bad = []
    for c in layout.passthrough:
        if c in chosen or pd.api.types.is_bool_dtype(data[c].dtype):
            continue
        if not (pd.api.types.is_object_dtype(data[c].dtype) or pd.api.types.is_string_dtype(data[c].dtype)):
            continue
        if looks_numeric(data[c]) >= MOSTLY_NUMERIC:
            bad.append(c)
    if bad:
        raise ValueError(
            f"column(s) {', '.join(map(repr, bad))} hold numbers stored as text and would be released unchanged; "
            f"convert them to numbers first (sdccore.read_table reads currency, percent, thousands separators and "
            f"missing-value marks; or pandas.to_numeric), or pass exclude={bad!r} to release them unchanged on purpose.")


def _complete_missing(X, numeric, seed):
    """``_missing.complete_for_protection``, after naming any column with infinite values."""
    if np.isinf(X).any():
        check_matrix(X, numeric)  # names the columns with infinite values
    return complete_for_protection(X, numeric, seed)


def _prepare(data, sensitive, exclude, transform="none", seed=None):
    data = check_dataframe(data)
    numeric, X, missing = _numeric_matrix(data, exclude, seed)
    sens_names = check_names(sensitive, numeric, "sensitive") if sensitive is not None else None
    if sens_names is not None and len(sens_names) == 0:
        sens_names = None
    mean, sd, Z, R = dc.standardize_with_correlation(X)
    check_spread(X, sd, mean, numeric)
    keep, deps = dc.linear_dependencies(R, sd)
    notes = []
    sens_set = _sensitive_with_sources(deps, numeric, set(numeric.index(s) for s in sens_names) if sens_names else set(),
                                       notes)
    sens = [keep.index(j) for j in sorted(sens_set) if j in keep]
    check = sorted(sens_set) if sens_names else list(range(len(numeric)))
    log_cols = _log_columns(transform, X, numeric, keep)
    scales = pl.log_scales(X, log_cols)
    mean0, sd0 = mean, sd
    X0 = X
    if log_cols:
        X = pl.forward(X0, log_cols, scales)
        mean, sd, Z, R = dc.standardize_with_correlation(X)
        check_spread(X, sd, mean, numeric)
        notes.append(f"protected on the log scale (skewed, non-negative): {', '.join(numeric[j] for j in log_cols)}")
    if missing is not None:
        cols = [f"{numeric[j]} ({int(c)})" for j, c in enumerate(missing.sum(axis=0)) if c]
        notes.append(f"{int(missing.sum())} missing cell(s) kept missing in the release, in place: {', '.join(cols)}; "
                     f"they were filled by EM conditional draws only to protect the observed cells")
    return _Prepared(data, numeric, X0, X, mean, sd, Z, R, mean0, sd0, keep, deps, sens, tuple(notes), sens_names,
                     list(exclude) if exclude is not None else None, log_cols, scales, check, missing)


def _numeric_matrix(data, exclude, seed):
    """The numeric columns to protect, their values (missing cells completed from the seed's
    "impute" stream) and the missing cells' mask (None without): refused with the fix when
    they cannot be protected."""
    layout = split_columns(data, exclude)
    numeric = list(layout.numeric)
    if len(numeric) < 2 and len(layout.numeric) < len(data.columns):
        non_num = [c for c in data.columns if c not in numeric and (exclude is None or c not in exclude)]
        if non_num:
            raise ValueError(
                f"data has {len(numeric)} numeric column(s) to protect; at least 2 are needed. "
                f"Column(s) {', '.join(map(str, non_num[:10]))} are not numeric: convert text numbers to numbers first."
            )
    _check_text_numbers(data, layout, exclude)
    X = data[numeric].to_numpy(dtype=np.float64, copy=True) if numeric else np.empty((len(data), 0))
    missing = None
    if X.size and np.isnan(X).any() and X.shape[1] >= 2 and X.shape[0] >= 3:
        X, missing = _complete_missing(X, numeric, seed)
    check_matrix(X, numeric)
    check_scale(X, numeric)
    if X.shape[0] < MIN_RECORDS:
        raise ValueError(
            f"data has {X.shape[0]} records; protection needs at least {MIN_RECORDS}: with so few, a permutation of "
            f"the records' scores or values leaves whole records in place (FA on 3 records released an original "
            f"record intact in 4 of 8 seeds). Use a file with more records.")
    if X.shape[0] <= X.shape[1]:
        raise ValueError(
            f"data has {X.shape[0]} records and {X.shape[1]} variables to protect: more variables than records "
            f"cannot be decomposed or linked meaningfully. Protect fewer variables (exclude=[...]) or use more records."
        )
    return numeric, X, missing


def _sensitive_with_sources(deps, numeric, sens_set, notes):
    """The sensitive columns with the columns each sensitive dependency target is built from
    (protected as sensitive too); the dependencies said in ``notes``."""
    for d in deps:
        notes.append(
            f"{numeric[d.target]} is an exact linear combination of other columns; it is left out of the "
            f"decomposition and rebuilt from the protected columns"
        )
        if d.target in sens_set:
            used = {d.predictors[i] for i in np.flatnonzero(np.abs(d.beta) > 1e-9)}
            added = sorted(used - sens_set)
            sens_set |= used
            if added:
                notes.append(
                    f"{numeric[d.target]} is sensitive, so the columns it is built from "
                    f"({', '.join(numeric[i] for i in added)}) are protected as sensitive too"
                )
    return sens_set


def _dependency_report(prep):
    """Each exact dependency on the original scale: the target's coefficients on its predictors
    and the intercept, by name."""
    out = {}
    for d in prep.deps:
        j = d.target
        coefs = {}
        intercept = prep.mean0[j]
        for i, b in zip(d.predictors, d.beta):
            c = b * prep.sd0[j] / prep.sd0[i]
            coefs[prep.numeric[i]] = float(c)
            intercept -= c * prep.mean0[i]
        coefs["(intercept)"] = float(intercept)
        out[prep.numeric[j]] = coefs
    return out
