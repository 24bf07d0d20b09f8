"""Local suppression to k-anonymity of a file that does not fit in memory (issue 42):
``local_suppression``'s blanks, exactly, from a reduced file on the driver.

Why a reduced file gives the same blanks.  ``local_suppression`` (``_keys.suppression``)
decides everything from counts compared with k: a record is at risk when fewer than k records
show its keys (fk < k), a blank lifts it when the records showing its other keys number at
least k, a person's true keys are covered when at least k released records agree with them,
and the records taken as its look-alikes ("donors") are the first k - cand in an order of
their keys and then of their row number.  Every such count is a sum, over key combinations
(within a stratum and a missing-value pattern), of how many records show that combination.
Keep of each combination only its first ``cap`` records in the file's order, cap >= k: a sum
over capped combinations is at least k exactly when the full one is (one capped term is k
already, and sums without one are unchanged), and the records at risk, whose combinations
hold fewer than k records, are all kept.  What could differ is a combination that gives
donors: each donor is blanked and stops counting as the rest of its combination, so a
combination that gave j donors must keep k + j records for its rest to count as in the full
file; and its donors are its first records in the file's order, which the reduced file
holds.  So the suppression runs on the reduced file, the combinations that gave donors get
cap = k + j (and some room), and it runs again until no capped combination gave more donors
than its room: the blanks are then ``local_suppression``'s on the whole file, record for
record (tests/scale/test_suppression_dask.py checks it against the in-memory function).

One pass over the file counts each combination (a table on the driver, a row per
combination); one pass per round gathers the records to keep, each partition's first
records of every combination merged in a tree (Dask's reduction) and cut again, so that no
worker holds more than the reduced file.  Households are refused, as in ``key_risk_dask``: a
household's members may sit in different partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["DaskSuppression", "local_suppression_dask"]

_ROW = "__sdccore_row"
# the working columns beside the keys (a key of the file may be called "total" or "cap")
_TOTAL, _CAP, _BLANKED = "__sdccore_total", "__sdccore_cap", "__sdccore_blanked"
_COMBO = "__sdccore_combination"
ROOM = 2  # a capped combination that gave j donors is kept to k + ROOM * j records in the next round
MAX_ROUNDS = 8
MAX_KEPT = 5_000_000  # records of the reduced file held on the driver


@dataclass(frozen=True)
class DaskSuppression:
    """What ``local_suppression_dask`` returns.

    Attributes
    ----------
    data : dask DataFrame
        The file with the suppressed key values blank (missing), lazy; everything else as it was.
    per_key : dict
        Key -> values blanked.
    keys : tuple of str
    k : int
    order : tuple of str
        The keys in the order they were tried (least important first).
    n : int
        Records in the file.
    kept : int
        Records of the reduced file the suppression ran on (at most k + room of each key
        combination, every record at risk among them).
    rounds : int
        Runs of the suppression until no combination needed more room.
    """

    data: object
    per_key: dict
    keys: tuple
    k: int
    order: tuple
    n: int
    kept: int
    rounds: int

    @property
    def cells(self) -> int:
        """The number of values blanked."""
        return int(sum(self.per_key.values()))

    def summary(self) -> str:
        per = ", ".join(f"{c} {v:,}" for c, v in self.per_key.items() if v) or "none"
        return (f"{self.cells:,} key value(s) blanked for {self.k}-anonymity on {', '.join(self.keys)} ({per}) "
                f"in {self.n:,} records; a blank matches every value. Decided on {self.kept:,} records (every "
                f"record at risk and the first of each key combination), the same blanks as on the whole file.")


def _numbered(part, offsets, cols, cats, partition_info=None):
    """The partition's key (and strata) columns as integer codes (-1: missing; ``cats``, the
    values of each column over the file) with each record's row number in the file: the
    reduced file's work on small integers, not on the values (text keys took a worker past 2 GB
    at 20 million records)."""
    i = partition_info["number"] if partition_info else 0
    out = pd.DataFrame({c: _codes(part[c], cats[c]) for c in cols}, index=part.index)
    out[_ROW] = np.arange(len(part), dtype=np.int64) + int(offsets[i])
    return out


def _codes(values, cats):
    return pd.Categorical(values, categories=cats).codes.astype(np.int32)


def _head(part, cols, k, raised):
    """Of each key combination, the first ``k`` records by row number (more of the combinations
    in ``raised``: cols and ``cap``): a partition's, or a group of such heads merged (the same
    cut again gives the file's first records of each combination)."""
    if not len(part):
        return part
    part = part.sort_values(_ROW, kind="stable")
    rank = part.groupby(cols, dropna=False, observed=True, sort=False).cumcount().to_numpy()
    if len(raised):
        cap = part[cols].merge(raised, on=cols, how="left", sort=False)[_CAP].fillna(k).to_numpy()
    else:
        cap = k
    return part[rank < cap]


def local_suppression_dask(ddf, keys, k=3, *, importance=None, strata=None) -> DaskSuppression:
    """Blank key values of a Dask DataFrame until every record shares its keys with at least
    k - 1 others: ``local_suppression``'s blanks, record for record, decided on a reduced file.

    Parameters
    ----------
    ddf : dask DataFrame
        The file (e.g. ``dask.dataframe.read_parquet``); a distributed client is used when one
        is running, else Dask's local scheduler.
    keys : list of str
        The key variables (a missing value already matches every value).
    k : int
        The k of k-anonymity (default 3).
    importance : list of str, optional
        The keys from most to least important (the least important are blanked first);
        default: the keys with the most distinct values first blanked.
    strata : str or list of str, optional
        Groups made k-anonymous each on their own (never blanked).

    Returns
    -------
    DaskSuppression

    Examples
    --------
    >>> import dask.dataframe as dd, sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> s = sdccore.local_suppression_dask(dd.from_pandas(d, npartitions=4), ["urbrur", "water", "sex", "age"], k=3)
    >>> s.cells, s.per_key["age"]  # as sdccore.local_suppression on the file in memory
    (676, 673)
    """
    from .._io.partitions import local_unless_client

    with local_unless_client():
        return _local_suppression_dask(ddf, keys, k, importance, strata)


def _checked(ddf, keys, k, strata):
    from .._keys.frequencies import named_columns
    from .keys import dask_keys

    keys = dask_keys(ddf, keys, "local_suppression")
    empty = pd.DataFrame(columns=list(ddf.columns))
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"k={k!r} must be a whole number of at least 2 (3 is usual).")
    strata = [] if strata is None else named_columns(strata, empty, "strata", "strata columns", ["region"])
    odd = [c for c in keys + strata if str(c).startswith("__sdccore_")]
    if odd:
        raise ValueError(f"column {odd[0]!r}: names beginning with '__sdccore_' are the function's own working "
                         f"columns; rename it (e.g. ddf.rename(columns={{{odd[0]!r}: 'key1'}})).")
    return keys, strata


def _local_suppression_dask(ddf, keys, k, importance, strata):
    import dask

    from .._io.partitions import _workers_ready
    from .._keys.suppression import local_suppression

    keys, strata = _checked(ddf, keys, k, strata)
    _workers_ready()
    cols = strata + [c for c in keys if c not in strata]
    lengths = ddf.map_partitions(len).compute()
    n = int(np.sum(lengths))
    if k > n:
        raise ValueError(f"k={k} is more than the {n} records; no blank can make every record share its keys "
                         f"with {k - 1} others. Choose k of at most {n}.")
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    # one pass: the records of each key combination (a row per combination, on the driver)
    total = ddf[cols].groupby(cols, dropna=False, observed=True).size().compute().rename(_TOTAL).reset_index()
    if len(total) * k > MAX_KEPT:
        raise ValueError(f"the keys {', '.join(keys)} have {len(total):,} combinations: the suppression would decide on "
                         f"up to {len(total) * k:,} records (more than {MAX_KEPT:,}). Recode them first (bands for an "
                         f"age or an amount, merged categories), then suppress.")
    cats = {c: pd.Index(total[c].dropna().unique()) for c in cols}
    total = pd.DataFrame({**{c: _codes(total[c], cats[c]) for c in cols}, _TOTAL: total[_TOTAL].to_numpy()})
    meta = pd.DataFrame({**{c: pd.Series(dtype="i4") for c in cols}, _ROW: pd.Series(dtype="i8")})
    work = ddf.map_partitions(_numbered, offsets, cols, cats, meta=meta)
    raised = total.iloc[:0][cols].assign(**{_CAP: pd.Series(dtype="i8")})
    for rounds in range(1, MAX_ROUNDS + 1):
        # one pass: the first k records of each combination (more where a round asked for room),
        # cut per partition and again as the partitions' heads are merged in a tree
        opts = {"cols": cols, "k": int(k), "raised": raised}
        reduced = work.reduction(_head, aggregate=_head, combine=_head, meta=work._meta, split_every=2,
                                 chunk_kwargs=opts, aggregate_kwargs=opts, combine_kwargs=opts).compute()
        reduced = reduced.sort_values(_ROW, kind="stable").reset_index(drop=True)
        coded = reduced[keys + [c for c in strata if c not in keys]]
        s = local_suppression(coded.astype(np.float64).where(coded >= 0), keys, k, importance=importance,
                              strata=strata or None)
        # a combination cut short that gave records as look-alikes (blanked) needs room for them
        blanked = reduced[cols].assign(**{_BLANKED: s.suppressed.to_numpy().any(axis=1).astype(np.int64)})
        per = blanked.groupby(cols, dropna=False, observed=True, sort=False)[_BLANKED].sum().reset_index()
        per = per[per[_BLANKED] > 0].merge(total, on=cols, how="left", sort=False)
        per = per.merge(raised, on=cols, how="left", sort=False)
        per[_CAP] = per[_CAP].fillna(k)
        short = per[(per[_TOTAL] > per[_CAP]) & (per[_CAP] < k + per[_BLANKED])]
        if not len(short):
            break
        grow = short[cols].assign(**{_CAP: np.minimum(short[_TOTAL], 2 * k + ROOM * short[_BLANKED]).astype(np.int64)})
        raised = pd.concat([raised.merge(grow[cols], on=cols, how="left", indicator=True, sort=False)
                            .query("_merge == 'left_only'").drop(columns="_merge"), grow], ignore_index=True)
    else:
        raise RuntimeError("local_suppression_dask: the reduced file did not settle; report this with the keys' "
                           "levels (no values).")
    rows = reduced[_ROW].to_numpy()
    blank = s.suppressed.to_numpy()
    hit = blank.any(axis=1)
    table = pd.DataFrame(blank[hit], columns=keys)
    table[_ROW] = rows[hit]
    per_key = {c: int(blank[:, j].sum()) for j, c in enumerate(keys)}
    out_meta = ddf._meta.copy()
    for c in keys:
        if per_key[c]:
            out_meta[c] = _blankable(out_meta[c])
    data = ddf.map_partitions(_apply, offsets, keys, dask.delayed(table, traverse=False), meta=out_meta)
    return DaskSuppression(data=data, per_key=per_key, keys=tuple(keys), k=int(k), order=tuple(s.order), n=n,
                           kept=len(reduced), rounds=rounds)


def _blankable(col):
    """The column's type able to hold a blank, as ``local_suppression`` makes it."""
    if pd.api.types.is_integer_dtype(col):
        return col.astype("Float64")
    if pd.api.types.is_bool_dtype(col):
        return col.astype("boolean")
    return col


def _apply(part, offsets, keys, table, partition_info=None):
    """The partition with its blanks (rows named by their row number in the file)."""
    i = partition_info["number"] if partition_info else 0
    rows = np.arange(len(part), dtype=np.int64) + int(offsets[i])
    t = table[(table[_ROW] >= rows[0]) & (table[_ROW] <= rows[-1])] if len(part) else table.iloc[:0]
    out = part.copy()
    for c in keys:
        if table[c].any():
            out[c] = _blankable(out[c])
        hit = t[_ROW].to_numpy()[t[c].to_numpy()] - (rows[0] if len(part) else 0)
        if len(hit):
            col = out[c]
            na = pd.NA if str(col.dtype) in ("Float64", "boolean", "string") else np.nan
            out.iloc[hit, out.columns.get_loc(c)] = na
    return out
