"""The Dask engine's ground floor: reading partitioned files (Parquet or CSV, typed as the
in-memory reader types them), writing one Parquet file a partition, the output folder (its
checks, partial folders of this and of dead processes), the pairwise tree
reduction every pass uses, and the engine's random-stream key (``DASK_STREAM``).  The engine
(``_dask``) and its parts (``_dask_exchange``, ``_dask_floors``, ``_dask_magg``,
``_dask_measures``) import from here; nothing here imports them."""

from __future__ import annotations

import glob
import os

import numpy as np
import pandas as pd

from .._core.streams import STREAMS

__all__ = []

DASK_STREAM = STREAMS["dask"]  # the engine's streams: _streams.dask_sequence


# ----------------------------------------------------------------------------- reading

def files_of(pattern):
    """The files a path or glob names, sorted; one kind (Parquet or CSV)."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("give a file, a folder or a glob such as 'big/*.parquet'.")
    if os.path.isdir(pattern):
        found = sorted(glob.glob(os.path.join(pattern, "*.parquet")) or glob.glob(os.path.join(pattern, "*.csv")))
    else:
        found = sorted(glob.glob(pattern))
    if not found:
        raise ValueError(f"no file matches {pattern!r}; check the path (quote the glob so the shell does not "
                         f"expand it).")
    kinds = {("parquet" if f.lower().endswith((".parquet", ".pq")) else "csv" if f.lower().endswith(
        (".csv", ".txt", ".csv.gz")) else "other") for f in found}
    if "other" in kinds:
        bad = [f for f in found if not f.lower().endswith((".parquet", ".pq", ".csv", ".txt", ".csv.gz"))][:3]
        raise ValueError(f"{bad} are neither Parquet nor CSV; the Dask engine reads *.parquet or *.csv files.")
    if len(kinds) > 1:
        raise ValueError(f"{pattern!r} matches Parquet and CSV files together; give one kind.")
    return found, kinds.pop()


HEAD_BYTES = 1 << 20  # the first MiB of the first file decides types, separator and decimal mark


def read_head(pattern):
    """The first records of the data set read exactly as ``read_table`` reads a file in
    memory (the one reading pipeline: separator and decimal mark detected, numbers written
    as text converted, missing-value marks read as missing), with its notes.  ``read_dask``
    types every partition by it and the CLI applies the in-memory role rules to it."""
    from .read import read_table

    files, kind = files_of(pattern)
    with open(files[0], "rb") as fh:
        raw = fh.read(HEAD_BYTES + 1)
    if kind == "parquet":
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(files[0])
            if pf.metadata.num_rows == 0 or pf.num_row_groups == 0:
                head = pf.schema_arrow.empty_table()
            else:
                head = pf.read_row_group(0).slice(0, 5000)
        except Exception as exc:
            raise _unreadable(files[0], exc) from None
        head = head.to_pandas()
        buf = __import__("io").BytesIO()
        head.to_parquet(buf)
        return read_table(buf.getvalue(), "head.parquet")
    if len(raw) > HEAD_BYTES:  # whole lines only
        raw = raw[:raw.rfind(b"\n", 0, HEAD_BYTES) + 1] or raw[:HEAD_BYTES]
    return read_table(raw, os.path.basename(files[0]))


_ENCODINGS = {"utf-8": "utf-8", "utf-8 (with BOM)": "utf-8-sig", "windows-1252": "cp1252", "utf-16": "utf-16"}


def read_dask(pattern, *, blocksize="64MB", head=None):
    """A Dask DataFrame over the files ``pattern`` names; every file must have the same
    columns with the same types (named in the error otherwise).  Each partition is read as
    ``read_table`` reads a file (``read_head``): CSV with the detected separator, decimal
    mark and encoding; columns of numbers written as text ("86,353", "12 %", "(5)") and
    missing-value marks ('-', 'n/a', ...) converted in every partition, a cell that is not a
    number there refused with its file and column; other text stays text (and needs a role)."""
    import dask.dataframe as dd

    files, kind = files_of(pattern)
    head = read_head(pattern) if head is None else head
    hd = head.data
    if kind == "parquet":
        return _read_parquet_files(files, hd)
    heads = []
    for f in files:
        with open(f, "rb") as fh:
            heads.append(fh.readline(HEAD_BYTES + 1).strip())  # bounded: a file of one 150 MB line
        if len(heads[-1]) > HEAD_BYTES:
            raise ValueError(f"{shown(f, files)}: its header line is longer than {HEAD_BYTES // 2**20} MB; check "
                             f"that it is a CSV file with one record a line.")
    for f, h in zip(files[1:], heads[1:]):
        if h != heads[0]:
            raise ValueError(f"{shown(f, files)} has another header than {shown(files[0], files)} "
                             f"({_header_difference(heads[0], h, head.sep)}); every file must have the same columns.")
    text_cols = [c for c in hd.columns if not pd.api.types.is_numeric_dtype(hd[c])]
    # every column read as text, then typed as the head was: the same converter as in memory
    meta = hd.iloc[:0].copy()
    ints = [c for c in hd.columns if pd.api.types.is_integer_dtype(hd[c])]
    meta = meta.astype({c: (np.int64 if c in ints else np.float64) for c in hd.columns
                        if pd.api.types.is_numeric_dtype(hd[c]) and not pd.api.types.is_bool_dtype(hd[c])})
    enc = _ENCODINGS.get(head.encoding, "utf-8")
    ddf = dd.read_csv(files, blocksize=None if enc == "utf-16" else blocksize, sep=head.sep, dtype=str,
                      keep_default_na=False, na_values=[], skipinitialspace=True, encoding=enc)
    unnamed = [c for c in ddf.columns if c not in hd.columns]
    if unnamed:
        ddf = ddf.drop(columns=unnamed)  # empty columns without a name, as read_table drops them
    return ddf.map_partitions(_typed_partition, list(meta.columns), text_cols, head.decimal, ints, meta=meta,
                              enforce_metadata=False)


def _read_parquet_files(files, hd):
    """Parquet files with one schema as a Dask DataFrame, one partition a file (dask's
    read_parquet may fuse files when columns are selected, which would change the
    partitioning between two passes); text columns the head read as numbers converted."""
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    schemas = []
    for f in files:
        try:
            schemas.append(pq.read_schema(f))
        except Exception as exc:
            raise _unreadable(f, exc) from None
    first = schemas[0]
    for f, s in zip(files[1:], schemas[1:]):
        if s.names != first.names or [str(t) for t in s.types] != [str(t) for t in first.types]:
            raise ValueError(f"{shown(f, files)} has other columns or types than {shown(files[0], files)} "
                             f"({_schema_difference(first, s, shown(files[0], files))}); every partition of the data "
                             f"set must have the same schema.")
    meta = first.empty_table().to_pandas()
    convert = {c: "." for c in meta.columns if c in hd.columns and not pd.api.types.is_numeric_dtype(meta[c])
               and pd.api.types.is_numeric_dtype(hd[c])}
    if convert:
        meta = meta.astype({c: np.float64 for c in convert})
    return dd.from_map(_read_parquet_file, files, meta=meta, enforce_metadata=False, convert=convert)


def shown(path, files):
    """A file of the data set as the user can find it: its path below the folder the files
    share (``nest/a/data.parquet`` and ``nest/b/data.parquet`` are ``a/data.parquet`` and
    ``b/data.parquet``, not two ``data.parquet``)."""
    try:
        root = os.path.commonpath([os.path.dirname(os.path.abspath(f)) for f in files])
        return os.path.relpath(os.path.abspath(path), root)
    except ValueError:  # paths on different drives
        return str(path)


def _header_difference(first, other, sep):
    """What differs between two CSV header lines, in words (as ``_schema_difference``)."""
    import csv

    def names(line):
        text = line.decode("utf-8", "replace").lstrip("\ufeff")
        return [c.strip() for c in next(csv.reader([text], delimiter=sep or ","), [])]

    a, b = names(first), names(other)
    missing, extra = [c for c in a if c not in b], [c for c in b if c not in a]
    parts = ([f"missing column(s) {_some(missing)}"] if missing else []) + \
        ([f"extra column(s) {_some(extra)}"] if extra else [])
    if not parts:
        parts.append(f"the same columns in another order: {_some(b, 8)}" if a != b else
                     "the same names, written differently (quotes or spaces)")
    return "; ".join(parts)


def _unreadable(path, exc):
    """A file of the data set that is no Parquet file (or a damaged one), named."""
    why = " ".join(str(exc).split()).split(". ")[0][:200] or type(exc).__name__
    return ValueError(f"{path} could not be read as Parquet ({why}); remove it from the data set or write it again.")


def _schema_difference(first, other, first_name):
    """What differs between two files' schemas, in words: columns missing or extra, types
    that differ, or the same columns in another order."""
    a = dict(zip(first.names, map(str, first.types)))
    b = dict(zip(other.names, map(str, other.types)))
    missing = [c for c in a if c not in b]
    extra = [c for c in b if c not in a]
    retyped = [f"{c} is {b[c]}, not {a[c]}" for c in a if c in b and a[c] != b[c]]
    parts = ([f"missing column(s) {_some(missing)}"] if missing else []) + \
        ([f"extra column(s) {_some(extra)}"] if extra else []) + \
        ([f"other type(s) than in {first_name}: {_some(retyped, 4)}"] if retyped else [])
    if not parts and len(set(other.names)) != len(other.names):
        parts.append("a column name repeated")
    if not parts:
        parts.append(f"the same columns in another order: {_some(list(other.names), 8)}")
    return "; ".join(parts)


def _some(items, k=5):
    return ", ".join(items[:k]) + (f" and {len(items) - k} more" if len(items) > k else "")


def _typed_partition(df, columns, text_cols, decimal, ints=()):
    """One CSV partition read as text, typed as ``read_table`` typed the head: numeric
    columns converted (a cell that is not a number, nor a missing-value mark, is refused)."""
    from .cells import _clean_cells, _parse_core

    out = {}
    for c in columns:
        s = df[c]
        if c in text_cols:
            out[c] = s.where(s != "", None) if s.dtype == object else s
            continue
        core, paren, _, _, missing = _clean_cells(s)
        num = _parse_core(core, decimal)
        bad = num.isna() & ~missing
        if bad.any():
            cell = str(s[bad].iloc[0])[:40]
            raise ValueError(f"column {c!r} holds numbers in the first records but {int(bad.sum())} cell(s) such as "
                             f"{cell!r} further on that are not numbers; correct the file, or give the column a role "
                             f"(--drop or --keep) after reading it as text.")
        v = num.where(~paren, -num).where(~missing).astype(np.float64).to_numpy()
        if c in ints and not np.isnan(v).any() and (v == np.round(v)).all() and (np.abs(v) < 2 ** 62).all():
            v = v.astype(np.int64)  # whole numbers stay whole, as read_table reads them
        out[c] = v
    return pd.DataFrame(out, index=df.index)


def _read_parquet_file(path, columns=None, convert=None):
    import pyarrow as pa

    try:
        frame = pd.read_parquet(path, columns=columns)
    except Exception as exc:  # a file damaged after its footer was read: named, not Arrow's words alone
        raise _unreadable(path, exc) from None
    for c, decimal in (convert or {}).items():  # numbers stored as text, as read_table converts them
        if c in frame.columns:
            frame[c] = _typed_partition(frame[[c]].astype(object).where(frame[[c]].notna(), ""), [c], [], decimal)[c]
    # hand Arrow's freed buffers back at once: kept in its pool they count against a worker's
    # memory limit as unmanaged memory, and a worker paused by them stays paused
    pa.default_memory_pool().release_unused()
    return frame


def _name(i):
    return f"part-{i:05d}.parquet"


def _write(frame, folder, progress=None):
    """Write ``frame`` as one Parquet file a partition (part-00000.parquet, ...)."""
    job = frame.to_parquet(folder, write_index=False, name_function=_name, compute=False)
    if progress is not None:
        progress(job)
    else:
        job.compute()


def _tree(parts, merge):
    """Delayed pairwise reduction of ``parts`` in their order (a merge sees the earlier
    partitions on its left)."""
    from dask import delayed

    while len(parts) > 1:
        parts = [delayed(merge)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def _add(a, b):
    """Elementwise sum of two arrays or (nested) dicts of arrays."""
    if not isinstance(a, dict):
        return a + b
    return {k: _add(a[k], b[k]) for k in a}


# ----------------------------------------------------------------------------- the output folder

def _check_out(out):
    if not isinstance(out, (str, os.PathLike)) or str(out) in ("", "-"):
        raise ValueError("give the release a folder, e.g. --out released/.")
    out = str(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"--out {out} is a file; give a folder for the Parquet data set.")
    if os.path.isdir(out) and os.listdir(out):
        raise ValueError(f"--out {out} is a folder that is not empty; give a new or empty folder (nothing is "
                         f"overwritten).")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise ValueError(f"the folder {parent} does not exist; create it or write elsewhere.")


def _partial(out, tag):
    out = os.path.abspath(str(out))
    return os.path.join(os.path.dirname(out),
                        f".{os.path.basename(out)}.sdccore-partial-{tag}-{_host()}-{os.getpid()}")


def _host():
    import socket

    return "".join(ch if ch.isalnum() else "_" for ch in socket.gethostname()) or "host"


def _remove_stale(out):
    """Remove the hidden partial folders an earlier run for ``out`` left on this machine when
    it was stopped (killed, out of time): its process no longer runs.  Returns a note, or
    None.  Folders of a running process or of another machine are left alone."""
    out = os.path.abspath(str(out))
    found, size = [], 0
    for path in glob.glob(os.path.join(os.path.dirname(out), f".{glob.escape(os.path.basename(out))}"
                                                              f".sdccore-partial-*-{_host()}-*")):
        try:
            pid = int(path.rsplit("-", 1)[1])
        except ValueError:
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        for root, _, files in os.walk(path):
            size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        _remove(path)
        found.append(path)
    if not found:
        return None
    return (f"removed {len(found)} partial folder(s) ({size / 2 ** 30:.2f} GB) that a stopped earlier run for "
            f"{out} left beside it")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's process
        return True
    return True


def _remove(folder):
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _read_folder(folder, meta):
    import dask.dataframe as dd

    files = sorted(glob.glob(os.path.join(str(folder), "part-*.parquet")))
    return dd.from_map(_read_parquet_file, files, meta=meta, enforce_metadata=False)


WORKER_WAIT = 60  # seconds to wait for a first running worker


_LOCAL = ("sync", "synchronous", "single-threaded", "threads", "threading", "processes", "multiprocessing")


def distributed_client():
    """The running distributed client the work goes to, or None: no client, one already closed,
    or a local scheduler asked for by name (``dask.config.set(scheduler="sync")``)."""
    import dask

    if dask.config.get("scheduler", None) in _LOCAL:
        return None
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return None  # no distributed client: Dask's local scheduler runs the work itself
    return client if client.status == "running" else None


def local_unless_client():
    """A context for Dask work: Dask's local threads where the configuration names the
    distributed scheduler but no client is running (one closed earlier in the process), else
    nothing changed."""
    import contextlib

    import dask

    if distributed_client() is None and dask.config.get("scheduler", None) not in _LOCAL:
        return dask.config.set(scheduler="threads")
    return contextlib.nullcontext()


def _workers_ready():
    """With a distributed client, wait until at least one worker runs; a cluster whose
    workers never start (or were all killed) would otherwise wait for ever."""
    client = distributed_client()
    if client is None:
        return
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise ValueError(f"the Dask cluster has no running worker after {WORKER_WAIT} s: its workers did not start or "
                         f"were killed (a memory limit too small to start one?). Check the scheduler's log and give "
                         f"each worker at least 1 GB.") from None


# ----------------------------------------------------------------------------- moments

def _partition_moments(df, cols):
    X = df[cols].to_numpy(dtype=np.float64)
    bad = (~np.isfinite(X)).sum(axis=0)
    n = X.shape[0]
    if n == 0 or bad.any():
        z = np.zeros(len(cols))
        return {"n": 0 if bad.any() else n, "mean": z, "M2": np.zeros((len(cols), len(cols))), "bad": bad,
                "min": np.full(len(cols), np.inf), "max": np.full(len(cols), -np.inf), "dec": [0] * len(cols)}
    from .._core.plausible import decimals

    mean = X.mean(axis=0)
    D = X - mean
    return {"n": n, "mean": mean, "M2": D.T @ D, "bad": bad, "min": X.min(axis=0), "max": X.max(axis=0),
            "dec": [decimals(X[:, j]) for j in range(X.shape[1])]}


def _merge(a, b):
    """Chan, Golub and LeVeque's pairwise update of count, mean and centred cross-products."""
    n = a["n"] + b["n"]
    out = {"bad": a["bad"] + b["bad"], "min": np.minimum(a["min"], b["min"]), "max": np.maximum(a["max"], b["max"]),
           "dec": [None if (x is None or y is None) else max(x, y) for x, y in zip(a["dec"], b["dec"])]}
    if a["n"] == 0 or b["n"] == 0:
        src = a if a["n"] else b
        out.update(n=n, mean=src["mean"], M2=src["M2"])
        return out
    delta = b["mean"] - a["mean"]
    out.update(n=n, mean=a["mean"] + delta * (b["n"] / n),
               M2=a["M2"] + b["M2"] + np.outer(delta, delta) * (a["n"] * b["n"] / n))
    return out


def moments(ddf, cols):
    """(n, mean, population covariance, min, max, decimals) of ``cols`` over every
    partition, merged in a tree; non-finite cells refused."""
    import dask
    from dask import delayed

    (m,) = dask.compute(_tree([delayed(_partition_moments)(p, cols) for p in ddf.to_delayed()], _merge))
    if m["bad"].any():
        which = [f"{c} ({int(k)})" for c, k in zip(cols, m["bad"]) if k]
        raise ValueError(f"missing or infinite values in {', '.join(which[:6])}; the Dask engine protects complete "
                         f"files: drop or fill those records first, or leave those columns out (exclude).")
    if m["n"] < 10:
        raise ValueError(f"the data set has {m['n']} record(s); at least 10 are needed (with fewer, protection "
                         f"leaves whole records in place).")
    return m["n"], m["mean"], m["M2"] / m["n"], m["min"], m["max"], m["dec"]


def stand_in(mean, cov, cols, rows):
    """A frame of ``rows`` records whose mean and population covariance are exactly
    ``mean`` and ``cov``: what the in-memory planner needs to see of the file."""
    m = len(mean)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((rows, m))
    A -= A.mean(axis=0)
    Q, _ = np.linalg.qr(A)  # centred (orthogonal to the ones vector) and orthonormal
    w, V = np.linalg.eigh((cov + cov.T) / 2)
    S = (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    X = mean + np.sqrt(rows) * Q @ S
    return pd.DataFrame(X, columns=cols)


def _assemble_part(orig, new, num, as_int, columns):
    o = orig.copy()
    for c in num:
        v = new[c].to_numpy()
        o[c] = np.round(v).astype(o[c].dtype) if c in as_int else v.astype(np.float64)
    return o[columns]
