"""The identity risk of the key variables of a file that does not fit in memory (issue 42):
``key_risk``'s figures by group-bys on Dask.

``key_risk`` counts, for each record, the records that share its key values, a missing value
matching every value (sdcMicro's ``freqCalc``), by missing-value pattern: records with the same
set of missing keys form a pattern, and for each pair of patterns (a, b) the records of a
count those of b that agree with them on the keys both observe (``_keys.frequencies``).  Here
one pass over the file groups the records by pattern and key values (a row per combination,
with its count and weight sum, gathered on the driver); each pair's table is that pattern's rows
summed over the keys the other pattern does not observe (pandas, on the driver); one more pass
looks every record up in the tables of its own pattern: fk, Fk and the individual risk per
record, exactly the in-memory figures.

The grouped table holds one row per key combination: a file whose keys single out most records
(a key with a level per record, an exact income) makes it as long as the file, and the driver
and every worker must hold it; past ``MAX_COMBINATIONS`` rows the function stops and says so
(recode the keys first).

Households (``household_risk``) are not computed at scale: a household's members may sit in
different partitions (group the file by household first, then use ``key_risk`` per group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["DaskKeyRisk", "key_risk_dask"]

MAX_COMBINATIONS = 5_000_000  # rows of the grouped table (pattern x key combination) held on the driver
_PATTERN = "__sdccore_pattern"


@dataclass(frozen=True)
class DaskKeyRisk:
    """What ``key_risk_dask`` returns: ``key_risk``'s figures for a Dask DataFrame.

    Attributes
    ----------
    keys : tuple of str
        The key variables.
    k : int
        The k of k-anonymity that ``below_k`` counts against.
    n : int
        Records in the file.
    sample_uniques : int
        Records whose key combination no other record shares (fk = 1).
    below_k : int
        Records with fewer than k records sharing their keys.
    expected_reidentifications : float
        The sum of the individual risks.
    max_risk : float
        The highest individual risk.
    unweighted : bool
        True where Fk <= fk for some record (no weights): those risks are 1 / fk.
    patterns : int
        The missing-value patterns of the keys (group-bys: patterns squared).
    records : dask DataFrame
        Per record (the file's index, lazy): the keys, ``fk``, ``Fk`` and ``risk``.
    weights : str or None
    """

    keys: tuple
    k: int
    n: int
    sample_uniques: int
    below_k: int
    expected_reidentifications: float
    max_risk: float
    unweighted: bool
    patterns: int
    records: object
    weights: str | None = None

    @property
    def global_risk(self) -> float:
        return self.expected_reidentifications / self.n if self.n else 0.0

    def summary(self) -> str:
        """The figures in plain words."""
        from .._keys.risk import summary_lines

        return "\n".join(summary_lines(self, self.n))


def _pattern(df, keys):
    """The missing-value pattern of each record's keys, as a number (bit j: key j missing)."""
    out = np.zeros(len(df), dtype=np.int64)
    for j, c in enumerate(keys):
        out |= df[c].isna().to_numpy().astype(np.int64) << j
    return pd.Series(out, index=df.index)


def _observed(p, keys):
    return [c for j, c in enumerate(keys) if not (p >> j) & 1]


def _lookup(part, keys, tables):
    """fk, Fk and the risk of a partition's records from the pattern tables."""
    from .._keys.risk import individual_risk

    pat = part[_PATTERN].to_numpy()
    fk = np.zeros(len(part), dtype=np.int64)
    Fk = np.zeros(len(part), dtype=np.float64)
    for (a, b), (cols, table) in tables.items():
        rows = np.flatnonzero(pat == a)
        if not len(rows):
            continue
        if not cols:  # no key observed by both: every record of b matches
            fk[rows] += int(table["fk"].iloc[0])
            Fk[rows] += float(table["Fk"].iloc[0])
            continue
        left = part.iloc[rows][cols].reset_index(drop=True)
        got = left.merge(table, on=cols, how="left", sort=False)
        fk[rows] += got["fk"].fillna(0).to_numpy(np.int64)
        Fk[rows] += got["Fk"].fillna(0.0).to_numpy(np.float64)
    risk, _ = individual_risk(fk, Fk) if len(part) else (np.zeros(0), False)
    out = part[list(keys)].copy()
    out["fk"], out["Fk"], out["risk"] = fk, Fk, risk
    return out


def key_risk_dask(ddf, keys, *, weights=None, k=3) -> DaskKeyRisk:
    """The identity risk of the key variables of a Dask DataFrame: ``key_risk``'s figures (fk, Fk,
    sdcMicro's individual risk, k-anonymity) by group-bys, exactly the in-memory values.

    Parameters
    ----------
    ddf : dask DataFrame
        The file (e.g. ``dask.dataframe.read_parquet``); a distributed client is used when one
        is running, else Dask's local scheduler.
    keys : list of str
        The key variables; a missing value matches every value.
    weights : str, optional
        The column of sampling weights (positive numbers).
    k : int
        The k of k-anonymity that ``below_k`` counts against (default 3).

    Returns
    -------
    DaskKeyRisk

    Examples
    --------
    >>> import dask.dataframe as dd, sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> r = sdccore.key_risk_dask(dd.from_pandas(d, npartitions=4), ["urbrur", "water", "sex", "age"],
    ...                           weights="sampling_weight")
    >>> r.sample_uniques, r.below_k, round(r.expected_reidentifications, 4)
    (330, 674, 24.7839)
    """
    from .._io.partitions import local_unless_client

    with local_unless_client():
        return _key_risk_dask(ddf, keys, weights, k)


def dask_keys(ddf, keys, in_memory):
    """The key names checked against a Dask DataFrame's columns (a TypeError naming the
    in-memory function ``in_memory`` where ``ddf`` is no Dask DataFrame)."""
    import dask.dataframe as dd

    from .._keys.frequencies import named_columns

    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"ddf must be a Dask DataFrame (dask.dataframe.read_parquet or from_pandas), not "
                        f"{type(ddf).__name__}; for a pandas DataFrame use sdccore.{in_memory}.")
    return named_columns(keys, pd.DataFrame(columns=list(ddf.columns)), "keys", "key variables",
                         ["region", "sex", "age"])


def _key_risk_dask(ddf, keys, weights, k):
    """The work of ``key_risk_dask``."""
    import dask
    import dask.dataframe as dd

    from .._io.partitions import _workers_ready, distributed_client
    from .._keys.risk import check_k

    keys = dask_keys(ddf, keys, "key_risk")
    check_k(k)
    if weights is not None:
        if weights not in ddf.columns:
            raise ValueError(f"weights={weights!r} is not a column of the file; name its sampling-weight column.")
        if weights in keys:
            raise ValueError(f"weights={weights!r} is also a key; a sampling weight is no quasi-identifier.")
    _workers_ready()
    work = ddf[list(keys) + ([weights] if weights else [])]
    work = work.assign(**{_PATTERN: work.map_partitions(_pattern, keys, meta=(_PATTERN, "i8"))})
    w = dd.to_numeric(work[weights], errors="coerce") if weights else None
    work = work.assign(__w=w if weights else 1.0)
    # one pass: every key combination of every missing-value pattern, with its count and weight
    # sum (a row per combination, gathered on the driver), and the weights' check
    client = distributed_client()
    with dask.config.set({"dataframe.shuffle.method": "p2p" if client is not None else "tasks"}):
        grouped = work.groupby([_PATTERN] + list(keys), dropna=False, observed=True).agg(
            fk=("__w", "size"), Fk=("__w", "sum"))
        grouped, bad = dask.compute(grouped, (~(w > 0) | w.isna()).sum() if weights else 0)
    if bad:
        raise ValueError(f"weights={weights!r} has {int(bad)} value(s) that are missing, not numbers or not "
                         f"positive; every record needs a positive sampling weight.")
    grouped = grouped.reset_index()
    if len(grouped) > MAX_COMBINATIONS:
        raise ValueError(f"the keys {', '.join(keys)} have {len(grouped):,} combinations (more than "
                         f"{MAX_COMBINATIONS:,}): they single out most records. Recode them first (bands for an age or "
                         f"an amount, merged categories), then measure.")
    patterns = sorted(int(p) for p in grouped[_PATTERN].unique())
    # per pair of patterns (a, b): b's combinations summed over the keys a does not observe
    tables = {}
    for b in patterns:
        gb = grouped[grouped[_PATTERN] == b]
        for a in patterns:
            cols = [c for c in _observed(a, keys) if c in _observed(b, keys)]
            if cols:
                t = gb.groupby(cols, dropna=False, observed=True, sort=False)[["fk", "Fk"]].sum().reset_index()
            else:
                t = pd.DataFrame({"fk": [int(gb["fk"].sum())], "Fk": [float(gb["Fk"].sum())]})
            tables[(a, b)] = (cols, t)
    if client is not None:  # on a cluster: one copy on every worker, not in the task graph (67 MB at 5 M records)
        tables = client.scatter([tables], broadcast=True, hash=False)[0]
    else:
        tables = dask.delayed(tables, traverse=False)  # one copy in the local graph, shared by every partition
    meta = pd.DataFrame({**{c: work[c]._meta for c in keys}, "fk": pd.Series([], dtype="i8"),
                         "Fk": pd.Series([], dtype="f8"), "risk": pd.Series([], dtype="f8")})
    records = work.map_partitions(_lookup, keys, tables, meta=meta)
    stats = dask.compute((records.fk == 1).sum(), (records.fk < k).sum(), records.risk.sum(), records.risk.max(),
                         (records.Fk <= records.fk).any(), records.shape[0])
    uniques, below, total, top, flat, n = stats
    return DaskKeyRisk(keys=tuple(keys), k=int(k), n=int(n), sample_uniques=int(uniques), below_k=int(below),
                       expected_reidentifications=float(total), max_risk=float(top) if n else 0.0,
                       unweighted=bool(flat), patterns=len(patterns), records=records, weights=weights)
