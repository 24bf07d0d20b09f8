"""FA and PCA protection of files that do not fit in memory, on Dask (``dask`` and
``dask.distributed``: a laptop's LocalCluster, Slurm/PBS through dask-jobqueue, Kubernetes).

The engine shares the in-memory pipeline's plan and guarantees:

1. **Moments by map-reduce**: one pass over the partitions gives each partition's count,
   mean, centred cross-product matrix, minimum, maximum and decimals; the partial moments
   are merged pairwise with Chan, Golub and LeVeque's update (numerically stable: no sums
   of squares of raw values).  Non-finite cells are refused, naming the column.
2. **The plan on the driver**: the options are bound and the factorization, rotation and
   factor selection planned by the same code as in memory (``_bind``, ``_plan``), run on a
   stand-in frame with exactly the file's mean and covariance (a centred orthonormal basis
   scaled by the covariance's square root), so the correlation matrix, exact linear
   dependencies and every choice are the file's own.
3. **Perturbation**: each perturbed factor's scores are put in a uniformly random order over
   *all* n records, by Dask's own global sort (``sort_values`` on iid random 63-bit keys:
   sorting by iid keys is a uniform permutation; the values are then realigned to the
   original partitions' lengths).  A swap within partitions would keep partition means and
   is a weaker method, so it is never used.  Each record's change is (F' - F) L' sd, as in
   memory: means exact, covariance unbiased, reconstruction exact without perturbation,
   exact linear dependencies rebuilt from the protected columns.
4. **Release steps as in memory**: bounds from the file's own minimum and maximum, rounding
   to the file's decimals (integers stay integers), identifiers dropped, formula-like text
   neutralised, rows shuffled globally when the recipe says so.
5. **Risk floors on a sample**: ``sample`` records (default 20,000, drawn uniformly) and
   their protected versions go through the in-memory ``risk_profile`` (every floor, per
   variable and size band, with the structural intruder).  Linking against the sample's
   protected records rather than all n is conservative: an intruder with fewer decoys links
   more often.  Closeness shares are estimated (binomial sampling error about 0.3 points at
   20,000); the perturbed shares are the plan's exact ones.

Correlated noise (``method='noise'``) fits the same frame: each partition adds its own
draws of N(0, noise_cov % of the file's covariance) to the protected columns, from a
generator keyed by (seed, partition); the covariance comes from step 1.

M-AGG (``method='magg'``, general, noise_model 'published' or 'none'): MDAV is quadratic,
so it runs within blocks: a k-d split built on a sample of up to 200,000 records (median of
the widest standardised variable, until a block stands for at most 0.8 * BLOCK_MAX of the
file's records), every record assigned to its block, the blocks gathered by Dask's shuffle,
MDAV within each block with the whole file's variances as weights (groups never cross
blocks), then noise N(0, D) from the pooled within-group scatter as in memory:
n D = Z'Z - Zbar'Zbar, Z'Z from the file's correlation matrix.  Blocking costs
information: whole-file MDAV at 100k x 13 (k=3) loses SSE/SST 0.0335, blocks of at most
50k 0.0396 (1.18x), of at most 10k 0.0464 (1.39x) (benchmarks/bench_magg_blocks.py).

Reproducibility: the keys come from ``SeedSequence(seed, spawn_key=(7, stream, partition))``,
so the same seed and the same partitioning give the same bytes.  What the engine does not do
(refused with a message, ``scale_refusal``): rank swapping (global ranks per column),
selective M-AGG and its 'exact' noise, pca_remove, the log transform, strata and weights,
missing cells.
"""

from __future__ import annotations

import glob
import os
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

DASK_STREAM = 7
DASK_METHODS = ("fa", "pca", "noise", "magg")
BLOCK_MAX = 50_000  # M-AGG at scale: MDAV within k-d blocks of at most this many records


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


def read_dask(pattern, *, blocksize="64MB"):
    """A Dask DataFrame over the files ``pattern`` names; every file must have the same
    columns with the same types (named in the error otherwise)."""
    import dask.dataframe as dd

    files, kind = files_of(pattern)
    if kind == "parquet":
        import pyarrow.parquet as pq

        first = pq.read_schema(files[0])
        for f in files[1:]:
            s = pq.read_schema(f)
            if s.names != first.names or [str(t) for t in s.types] != [str(t) for t in first.types]:
                diff = sorted(set(map(str, zip(s.names, s.types))) ^ set(map(str, zip(first.names, first.types))))
                raise ValueError(f"{os.path.basename(f)} has other columns or types than "
                                 f"{os.path.basename(files[0])} ({'; '.join(diff[:4])}); every partition of the "
                                 f"data set must have the same schema.")
        # one partition a file (dask's read_parquet may fuse files when columns are selected,
        # which would change the partitioning between two passes)
        meta = pq.read_schema(files[0]).empty_table().to_pandas()
        return dd.from_map(_read_parquet_file, files, meta=meta, enforce_metadata=False)
    heads = []
    for f in files:
        with open(f, "rb") as fh:
            heads.append(fh.readline().strip())
    for f, h in zip(files[1:], heads[1:]):
        if h != heads[0]:
            raise ValueError(f"{os.path.basename(f)} has another header than {os.path.basename(files[0])}; every "
                             f"file must have the same columns.")
    return dd.read_csv(files, blocksize=blocksize)


def _read_parquet_file(path, columns=None):
    return pd.read_parquet(path, columns=columns)


# ----------------------------------------------------------------------------- moments

def _partition_moments(df, cols):
    X = df[cols].to_numpy(dtype=np.float64)
    bad = (~np.isfinite(X)).sum(axis=0)
    n = X.shape[0]
    if n == 0 or bad.any():
        z = np.zeros(len(cols))
        return {"n": 0 if bad.any() else n, "mean": z, "M2": np.zeros((len(cols), len(cols))), "bad": bad,
                "min": np.full(len(cols), np.inf), "max": np.full(len(cols), -np.inf), "dec": [0] * len(cols)}
    from ._plausible import decimals

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

    parts = [delayed(_partition_moments)(p, cols) for p in ddf.to_delayed()]
    while len(parts) > 1:
        parts = [delayed(_merge)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    (m,) = dask.compute(parts[0])
    if m["bad"].any():
        which = [f"{c} ({int(k)})" for c, k in zip(cols, m["bad"]) if k]
        raise ValueError(f"missing or infinite values in {', '.join(which[:6])}; the Dask engine protects complete "
                         f"files: drop or fill those records first, or leave those columns out (exclude).")
    if m["n"] < 3:
        raise ValueError(f"the data set has {m['n']} record(s); at least 3 are needed.")
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


# ----------------------------------------------------------------------------- protection

@dataclass(frozen=True)
class DaskRelease:
    """What ``protect_dask`` returns: the release (lazy), its risk profile on the sample and
    the effective options."""

    data: object          # dask DataFrame
    risk: object          # RiskProfile on the sample
    options: dict
    notes: tuple
    n: int
    sample: int


@dataclass(frozen=True)
class DaskEvaluation:
    """What ``evaluate_dask`` returns: per score its estimate, 95 % interval and how it was
    obtained; the number of records and of sampled records; PIL per statistic; the sampled
    records' own DBRL and ID values (indexed by record number)."""

    table: object
    n: int
    sample: int
    pil: dict
    records: object


def _keys(seed, stream, part, n):
    ss = np.random.SeedSequence(int(seed), spawn_key=(DASK_STREAM, stream, part))
    return (np.random.default_rng(ss).integers(0, 2 ** 63 - 1, size=n, dtype=np.int64))


def _with_keys(p, seed, stream, partition_info=None):
    return p.assign(_sdc_key=_keys(seed, stream, partition_info["number"], len(p)))


def _scores_with_keys(p, seed, k, partition_info=None):
    i = partition_info["number"]
    return p.assign(**{f"k{j}": _keys(seed, j, i, len(p)) for j in range(k)})


def _permute_scores(F, lengths, seed, scratch, progress=None):
    """Each column of the scores F (n x k dask array) in its own uniformly random order over
    all records (a global sort on iid random keys per column: the same keys, so the same
    permutation, as ``_permute_rows`` gives column by column), as a dask array chunked like
    the partitions."""
    import dask.array as da
    import dask.dataframe as dd

    k = F.shape[1]
    names = [f"f{j}" for j in range(k)]
    frame = dd.from_dask_array(F.rechunk({1: k}), columns=names)
    meta = frame._meta.assign(**{f"k{j}": pd.Series([], dtype=np.int64) for j in range(k)})
    _write(frame.map_partitions(_scores_with_keys, seed, k, meta=meta), os.path.join(scratch, "scores"), progress)
    files = sorted(glob.glob(os.path.join(scratch, "scores", "part-*.parquet")))
    cols = []
    for j in range(k):
        part = dd.from_map(partial(_read_parquet_file, columns=[f"k{j}", f"f{j}"]), files,
                           meta=meta[[f"k{j}", f"f{j}"]], enforce_metadata=False)
        where = os.path.join(scratch, f"perm{j}")
        # realigned to the original partitions as it is written (small pieces of one column),
        # so that assembling a release partition later reads one aligned file per factor
        ordered = part.sort_values(f"k{j}")[f"f{j}"].to_dask_array(lengths=True)
        aligned = dd.from_dask_array(da.rechunk(ordered, chunks=(tuple(lengths),)), columns=f"f{j}").to_frame()
        _write(aligned, where, progress)
        back = sorted(glob.glob(os.path.join(where, "part-*.parquet")))
        col = dd.from_map(partial(_read_parquet_file, columns=[f"f{j}"]), back, meta=meta[[f"f{j}"]],
                          enforce_metadata=False)
        cols.append(col.to_dask_array(lengths=lengths))
    return da.concatenate(cols, axis=1)


# ----------------------------------------------------------------------------- M-AGG in blocks

def kd_tree(Z, n, block_max=BLOCK_MAX):
    """A k-d split of the standardised sample Z (rows drawn from n records): each node splits
    its records at the median of its widest variable (values at or below the median go
    left) until a leaf stands for at most 0.8 * block_max of the n records (the margin keeps
    the blocks of the whole file below block_max despite the sample's error).  Returns
    (dims, thresholds, left, right, leaf) arrays: dims -1 at a leaf, leaf its block number."""
    per = n / max(len(Z), 1)
    dims, thr, left, right, leaf = [], [], [], [], []

    def build(idx):
        me = len(dims)
        dims.append(-1), thr.append(0.0), left.append(-1), right.append(-1), leaf.append(-1)
        if len(idx) * per > 0.8 * block_max and len(idx) >= 2:
            spread = Z[idx].max(axis=0) - Z[idx].min(axis=0)
            d = int(np.argmax(spread))
            t = float(np.median(Z[idx, d]))
            lo, hi = idx[Z[idx, d] <= t], idx[Z[idx, d] > t]
            if spread[d] > 0 and len(lo) and len(hi):
                dims[me], thr[me] = d, t
                left[me] = build(lo)
                right[me] = build(hi)
                return me
        leaf[me] = max(leaf) + 1
        return me

    build(np.arange(len(Z)))
    return tuple(np.asarray(a) for a in (dims, thr, left, right, leaf))


def kd_assign(Z, tree):
    """Each row of Z's block under ``kd_tree``'s split."""
    dims, thr, left, right, leaf = tree
    node = np.zeros(len(Z), dtype=np.int64)
    rows = np.arange(len(Z))
    while True:
        d = dims[node]
        inner = d >= 0
        if not inner.any():
            return leaf[node]
        go = Z[rows, np.where(inner, d, 0)] > thr[node]
        node = np.where(inner, np.where(go, right[node], left[node]), node)


def _blocked(p, mean, sd, tree, partition_info=None):
    """One original partition as (record number, block, standardised values)."""
    Z = (p.to_numpy(dtype=np.float64) - mean) / sd
    first = partition_info["offset"]
    out = pd.DataFrame(Z, columns=[f"z{j}" for j in range(Z.shape[1])])
    out.insert(0, "_block", kd_assign(Z, tree))
    out.insert(0, "_row", np.arange(first, first + len(Z), dtype=np.int64))
    return out


def _mdav_part(df, k, c):
    """MDAV within each block of a shuffled partition (records in record-number order, so
    the result does not depend on the shuffle's order); blocks of fewer than 2k records
    are pooled with each other, and a pool below k joins the largest block.  Returns
    (record number, block, group means)."""
    from ._mdav import group_means, mdav_file_weighted

    df = df.sort_values("_row", kind="stable")
    zc = [f"z{j}" for j in range(c)]
    Z = df[zc].to_numpy(dtype=np.float64)
    blocks = df["_block"].to_numpy().copy()
    ids, counts = np.unique(blocks, return_counts=True)
    small = ids[counts < 2 * k]
    if len(small):
        pool = int(small.min())
        blocks[np.isin(blocks, small)] = pool
        big = ids[counts >= 2 * k]
        if (blocks == pool).sum() < k and len(big):
            blocks[blocks == pool] = int(big[np.argmax(counts[counts >= 2 * k])])
    Zbar = np.empty_like(Z)
    groups = np.zeros(len(Z), dtype=np.int64)
    for b in np.unique(blocks):
        sel = np.flatnonzero(blocks == b)
        lab = mdav_file_weighted(Z[sel], k) if len(sel) >= 2 * k else np.zeros(len(sel), dtype=np.int64)
        Zbar[sel] = group_means(Z[sel], lab)
        groups[sel[0]] += int(lab.max()) + 1  # counted once per block
    out = pd.DataFrame(Zbar, columns=zc)
    out.insert(0, "_groups", groups)
    out.insert(0, "_block", blocks)
    out.insert(0, "_row", df["_row"].to_numpy())
    return out


def _gram(df, c):
    Zb = df[[f"z{j}" for j in range(c)]].to_numpy(dtype=np.float64)
    return {"G": Zb.T @ Zb, "groups": np.array([df["_groups"].sum()])}


def _magg_noise(df, c, Dh, seed):
    """Group means plus each block's own noise draws (keyed by seed and block), in the
    partition's record order."""
    zc = [f"z{j}" for j in range(c)]
    out = df[["_row"]].copy()
    V = df[zc].to_numpy(dtype=np.float64).copy()
    if Dh is not None:
        blocks = df["_block"].to_numpy()
        for b in np.unique(blocks):
            sel = np.flatnonzero(blocks == b)
            ss = np.random.SeedSequence(int(seed), spawn_key=(DASK_STREAM, 10 ** 5 + 2, int(b)))
            V[sel] += np.random.default_rng(ss).standard_normal((len(sel), c)) @ Dh
    for j, z in enumerate(zc):
        out[z] = V[:, j]
    return out


def _magg_dask(Xk, mean_k, sd_k, cov_k, lengths, n, o, seed, scratch, progress):
    """M-AGG at scale (general protection): MDAV within k-d blocks of at most BLOCK_MAX
    records (groups never cross blocks), then noise N(0, D) with D the pooled within-group
    scatter (standardised units, as in memory): n D = Z'Z - Zbar'Zbar, Z'Z from the file's
    correlation matrix.  Returns (X', notes)."""
    import dask
    import dask.array as da
    import dask.dataframe as dd

    from ._magg import sqrt_psd

    k, model = int(o["k"]), o["noise_model"]
    if n < 2 * k:
        raise ValueError(f"magg needs at least {2 * k} records for k={k}; the file has {n}.")
    c = Xk.shape[1]
    sdv = np.where(sd_k > 0, sd_k, 1.0)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(DASK_STREAM, 10 ** 6 + 2)))
    s = int(min(n, 200_000))
    rows = np.sort(rng.choice(n, size=s, replace=False))
    Zs = (np.asarray(Xk[rows].compute(), np.float64) - mean_k) / sdv
    tree = kd_tree(Zs, n, BLOCK_MAX)
    nblocks = int(tree[4].max()) + 1
    frame = dd.from_dask_array(Xk, columns=[f"x{j}" for j in range(c)])
    meta = pd.DataFrame({"_row": pd.Series([], dtype=np.int64), "_block": pd.Series([], dtype=np.int64),
                         **{f"z{j}": pd.Series([], dtype=np.float64) for j in range(c)}})
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    parts = [dask.delayed(_blocked)(p, mean_k, sdv, tree, {"offset": int(offsets[i])})
             for i, p in enumerate(frame.to_delayed())]
    keyed = dd.from_delayed(parts, meta=meta, verify_meta=False)
    nparts = max(1, min(len(lengths), nblocks))
    shuffled = keyed.shuffle("_block", npartitions=nparts)
    meta2 = meta.assign(_groups=pd.Series([], dtype=np.int64))[["_row", "_block", "_groups"] +
                                                                 [f"z{j}" for j in range(c)]]
    grouped = shuffled.map_partitions(_mdav_part, k, c, meta=meta2)
    where = os.path.join(scratch, "groups")
    _write(grouped, where, progress)
    files = sorted(glob.glob(os.path.join(where, "part-*.parquet")))
    back = dd.from_map(_read_parquet_file, files, meta=meta2, enforce_metadata=False)
    (gr,) = dask.compute(_tree([dask.delayed(_gram)(p, c) for p in back.to_delayed()], _add))
    R = cov_k / np.outer(sdv, sdv)  # Z'Z / n: the correlation matrix
    D = R - gr["G"] / n
    Dh = sqrt_psd(D) if model == "published" else None
    noisy = back.map_partitions(_magg_noise, c, Dh, seed,
                                meta=pd.DataFrame({"_row": pd.Series([], dtype=np.int64),
                                                   **{f"z{j}": pd.Series([], dtype=np.float64) for j in range(c)}}))
    ordered = noisy.sort_values("_row")[[f"z{j}" for j in range(c)]].to_dask_array(lengths=True)
    Zp = da.rechunk(ordered, chunks=(tuple(lengths), (c,)))
    notes = [f"MDAV (k={k}) within {nblocks} k-d block{'s' if nblocks > 1 else ''} of at most about {BLOCK_MAX:,} "
             f"records (groups never cross "
             f"blocks; distances weighted by the whole file's variances); "
             f"{int(gr['groups'][0]):,} groups" + ("; noise N(0, D) from the pooled within-group scatter"
                                                  if Dh is not None else "; no noise")]
    return Zp * sdv + mean_k, notes


def _noise_block(B, seed, cols, S, block_info=None):
    """One partition's values with correlated noise added to ``cols``: standard normals from
    the partition's own keyed stream, times S (the noise covariance's square root)."""
    part = block_info[0]["chunk-location"][0]
    ss = np.random.SeedSequence(int(seed), spawn_key=(DASK_STREAM, 10 ** 5 + 1, part))
    out = np.array(B, dtype=np.float64, copy=True)
    out[:, cols] += np.random.default_rng(ss).standard_normal((B.shape[0], len(cols))) @ S
    return out


def _permute_rows(A, lengths, seed, stream):
    """A dask array: the rows of ``A`` (n x c dask array, chunks = partitions) in a uniformly
    random order over all records (Dask's global sort on iid random keys), rechunked to
    ``lengths``; the c columns move together."""
    import dask.array as da
    import dask.dataframe as dd

    c = A.shape[1]
    names = [f"v{j}" for j in range(c)]
    frame = dd.from_dask_array(A.rechunk({1: c}), columns=names)
    meta = frame._meta.assign(_sdc_key=pd.Series([], dtype=np.int64))
    keyed = frame.map_partitions(_with_keys, seed, stream, meta=meta)
    ordered = keyed.sort_values("_sdc_key")[names]
    return da.rechunk(ordered.to_dask_array(lengths=True), chunks=(tuple(lengths), (c,)))


def scale_refusal(options):
    """Why the Dask engine cannot apply a recipe with these options, or None if it can (the
    one rule ``protect_dask`` enforces and the dashboard's Download page shows).

    Parameters
    ----------
    options : dict
        A recipe's options (``Recipe.options``, or ``protect``'s keyword arguments with
        ``method``).

    Returns
    -------
    str or None
        The reason, with what to do instead; None when ``--engine dask`` can apply them.

    Examples
    --------
    >>> import sdccore
    >>> sdccore.scale_refusal({"method": "pca"}) is None
    True
    >>> sdccore.scale_refusal({"method": "rankswap"})[:32]
    "method 'rankswap' is not availab"
    """
    method = options.get("method", "fa")
    if method not in DASK_METHODS:
        return (f"method {method!r} is not available with --engine dask: fa, pca, noise and magg run at scale (rank "
                f"swapping needs global ranks). Protect a sample in memory, or use fa, pca, noise or magg.")
    if method == "magg" and (options.get("sensitive") or options.get("noise_model", "published") == "exact"):
        return ("magg with --engine dask is general (every variable aggregated) with noise_model 'published' or "
                "'none'; selective M-AGG and noise_model='exact' need the whole file at once: protect in memory.")
    for key in ("strata", "weights"):
        if options.get(key):
            return (f"{key} is not available with --engine dask yet; protect each group's files separately, or "
                    f"protect in memory.")
    if options.get("transform", "none") not in ("none", None, [], ()):
        return "transform (log scale) is not available with --engine dask; use transform='none'."
    if method in ("fa", "pca") and (options.get("perturbation", "swap") != "swap"
                                    or options.get("residuals", "keep") not in ("keep", "swap_rows")):
        return (f"--engine dask perturbs by swapping factor scores (perturbation='swap') with residuals kept or "
                f"swapped by rows; the recipe asks for perturbation={options.get('perturbation')!r}, "
                f"residuals={options.get('residuals')!r}.")
    return None


def protect_dask(ddf, options, out, *, drop=(), keep=(), sample=20000, allow_unsafe=None, shuffle=False,
                 progress=None):
    """Protect the Dask DataFrame ``ddf`` with a recipe's options (fa, pca or noise) into the Parquet
    data set ``out`` (a new or empty folder: one file a partition).  Returns a
    ``DaskRelease`` whose ``data`` reads the written release lazily."""
    import dask.array as da
    import dask.dataframe as dd

    from ._io import neutralize_formulas
    from ._magg import sqrt_psd
    from ._protect import _bind, _link_columns, _plan, _planned_share
    from ._safety import UnsafeReleaseError, change_structure, risk_profile
    from ._validation import resolve_seed

    _check_out(out)
    if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 100:
        raise ValueError(f"sample={sample!r} must be a whole number of records of at least 100 (default 20000).")
    _workers_ready()
    opts = dict(options)
    why = scale_refusal(opts)
    if why:
        raise ValueError(why)
    method = opts.pop("method", "fa")
    opts["transform"] = "none"
    seed = resolve_seed(opts.pop("seed", opts.pop("rng", None)))
    sensitive = opts.pop("sensitive", None)
    exclude = list(opts.get("exclude") or [])
    drop, keep = list(drop), list(keep)
    missing = [c for c in drop + keep + exclude + list(sensitive or []) if c not in ddf.columns]
    if missing:
        raise ValueError(f"column(s) {missing} are not in the data set; check the recipe and --drop/--keep.")
    work = ddf.drop(columns=drop) if drop else ddf
    num = [c for c in work.columns if pd.api.types.is_numeric_dtype(work.dtypes[c]) and c not in set(exclude)]
    if len(num) < 2:
        raise ValueError(f"the data set has {len(num)} numeric column(s) to protect; at least 2 are needed.")
    n, mean, cov, lo, hi, dec = moments(work, num)
    # centred: the planner sees the correlations and sds without an offset that costs digits;
    # the engine uses the file's own mean and sd below
    syn = stand_in(np.zeros(len(num)), cov, num, rows=int(min(n, max(5 * len(num), 2000))))
    method, prep, o = _bind(syn, method, sensitive, {k: v for k, v in opts.items() if k != "exclude"}, seed=seed)
    keepi = prep.keep
    sd = np.sqrt(np.diag(cov))
    mean_k, sd_k = mean[keepi], sd[keepi]
    lengths = work.map_partitions(len).compute().tolist()
    X = work[num].to_dask_array(lengths=lengths).astype(np.float64)
    Xk = X[:, keepi]
    scratch = _partial(out, "s")
    plan, scale, planned = None, None, None
    if method == "noise":
        # correlated noise as in memory: e ~ N(0, noise_cov % of the covariance) on the
        # protected columns, each partition from its own keyed generator
        cols_n = prep.sens if prep.sensitive_names else list(range(len(keepi)))
        sdn = np.where(sd_k[cols_n] > 0, sd_k[cols_n], 1.0)
        C = cov[np.ix_(keepi, keepi)][np.ix_(cols_n, cols_n)] / np.outer(sdn, sdn)
        S = sqrt_psd(C) * sdn * np.sqrt(o["noise_cov"] / 100.0)
        Xpk = Xk.map_blocks(_noise_block, seed, cols_n, S, dtype=np.float64)
        notes0 = [f"correlated noise with covariance {o['noise_cov']:g} % of the data's added to "
                  f"{len(cols_n)} variable(s), each partition from its own keyed stream"]
    elif method == "magg":
        try:
            Xpk, notes0 = _magg_dask(Xk, mean_k, sd_k, cov[np.ix_(keepi, keepi)], lengths, n, o, seed, scratch,
                                     progress)
        except BaseException:
            _remove(scratch)
            raise
    else:
        plan = _plan(prep, method, o)
        if o["perturbation"] != "swap" or o["residuals"] not in ("keep", "swap_rows"):
            raise ValueError(f"--engine dask perturbs by swapping factor scores (perturbation='swap') with residuals "
                             f"kept or swapped by rows; the recipe asks for perturbation={o['perturbation']!r}, "
                             f"residuals={o['residuals']!r}.")
        G, L, sel = plan.dec.G, plan.dec.L, plan.sel
        scale = L[:, sel].T * sd_k
        F = ((Xk - mean_k) / sd_k) @ G[:, sel]
        # each factor its own permutation over all records, through a scratch folder next to
        # ``out`` (removed at the end): the scores are written once, and each factor's sort
        # reads only its own column instead of recomputing the scores from the whole file
        try:
            Fp = _permute_scores(F, lengths, seed, scratch, progress)
        except BaseException:
            _remove(scratch)
            raise
        Xpk = Xk + (Fp - F) @ scale
        GL = G @ L.T
        zero_residuals = GL.shape[0] == GL.shape[1] and np.allclose(GL, np.eye(GL.shape[0]), atol=1e-10)
        if o["residuals"] == "swap_rows" and not zero_residuals:  # one permutation for the whole residual row
            Zk = (Xk - mean_k) / sd_k
            E = Zk - (Zk @ G) @ L.T
            Xpk = Xpk + (_permute_rows(E, lengths, seed, 10 ** 5) - E) * sd_k
        planned = _planned_share(plan, prep)
        notes0 = [f"{len(sel)} of {L.shape[1]} {'factors' if method == 'fa' else 'components'} swapped over all "
                  f"{n:,} records"] + list(plan.notes)
    cols = []
    for j in range(len(num)):
        if j in keepi:
            cols.append(Xpk[:, keepi.index(j)])
        else:  # an exact linear dependency, rebuilt from the protected columns
            d = next(d for d in prep.deps if d.target == j)
            Zp = (Xpk - mean_k) / sd_k
            cols.append(mean[j] + sd[j] * (Zp @ d.beta))
    Xp = da.stack(cols, axis=1)
    bounds, rounding = o["bounds"], o["rounding"]
    lo_b = np.where((bounds == "sign") & (lo >= 0), 0.0, -np.inf) if bounds == "sign" else (
        lo if bounds == "observed" else np.full(len(num), -np.inf))
    hi_b = hi if bounds == "observed" else np.full(len(num), np.inf)
    Xp = da.clip(Xp, lo_b, hi_b)
    decs = [d if rounding == "original" else None for d in dec]
    if rounding == "original":
        Xp = da.stack([da.round(Xp[:, j], d) if d is not None else Xp[:, j] for j, d in enumerate(decs)], axis=1)
    as_int = [c for c, d in zip(num, decs) if d == 0 and pd.api.types.is_integer_dtype(work.dtypes[c])]
    # the release frame, partition by partition (the protected values have the same partitions)
    prot = dd.from_dask_array(Xp, columns=num)
    rel = dd.map_partitions(_assemble_part, work, prot, num, as_int, list(work.columns), meta=work._meta,
                            align_dataframes=False, enforce_metadata=False)
    text = [c for c in rel.columns if not pd.api.types.is_numeric_dtype(rel.dtypes[c])]
    if text:
        rel = rel.map_partitions(neutralize_formulas, meta=work._meta)
    # written once into a hidden folder next to ``out`` (the sorts run once), then the risk
    # floors are checked on a uniform sample of records and their protected versions read
    # back; a refused release is deleted, an accepted one renamed into place
    tmp = _partial(out, "a")
    _write(rel, tmp, progress)
    try:
        written = _read_folder(tmp, work._meta)
        rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(DASK_STREAM, 10 ** 6)))
        s = int(min(n, sample))
        rows = np.sort(rng.choice(n, size=s, replace=False))
        X0s, Xps = da.compute(X[rows], written[num].to_dask_array(lengths=lengths)[rows])
        basis = scale.T.copy() if scale is not None and o["residuals"] == "keep" else None
        risk = risk_profile(X0s, np.asarray(Xps, dtype=np.float64), num, prep.check, o["floors"], planned,
                            link_on=_link_columns(prep), structure=change_structure(prep, basis))
        if not risk.ok and allow_unsafe is None:
            raise UnsafeReleaseError("release refused, it breaks the risk floors (on a sample of "
                                     f"{s:,} records): " + risk.message() + ". Nothing was written. Change the recipe, "
                                     "or pass --allow-unsafe REASON for a file that is not published.", risk=risk)
        if shuffle:
            tmp2 = _partial(out, "b")
            _write(shuffle_rows(written, seed), tmp2, progress)
            _remove(tmp)
            tmp = tmp2
        if os.path.isdir(out):
            os.rmdir(out)  # empty (checked before any work)
        os.rename(tmp, out)
    except BaseException:
        _remove(tmp)
        raise
    finally:
        _remove(scratch)
    notes = notes0 + [f"risk floors checked on {s:,} records drawn at random"]
    eff = {"method": method, **{k: v for k, v in o.items()}, "sensitive": sensitive, "seed": seed,
           "exclude": exclude or None, "engine": "dask"}
    out = _read_folder(out, work._meta)
    return DaskRelease(out, risk, eff, tuple(notes), n, s)


WORKER_WAIT = 60  # seconds to wait for a first running worker


def _workers_ready():
    """With a distributed client, wait until at least one worker runs; a cluster whose
    workers never start (or were all killed) would otherwise wait for ever."""
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return  # no distributed client: Dask's local scheduler runs the work itself
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise ValueError(f"the Dask cluster has no running worker after {WORKER_WAIT} s: its workers did not start or "
                         f"were killed (a memory limit too small to start one?). Check the scheduler's log and give "
                         f"each worker at least 1 GB.") from None


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
    return os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.sdccore-partial-{tag}-{os.getpid()}")


def _remove(folder):
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _name(i):
    return f"part-{i:05d}.parquet"


def _write(frame, folder, progress=None):
    """Write ``frame`` as one Parquet file a partition (part-00000.parquet, ...)."""
    job = frame.to_parquet(folder, write_index=False, name_function=_name, compute=False)
    if progress is not None:
        progress(job)
    else:
        job.compute()


def _read_folder(folder, meta):
    import dask.dataframe as dd

    files = sorted(glob.glob(os.path.join(str(folder), "part-*.parquet")))
    return dd.from_map(_read_parquet_file, files, meta=meta, enforce_metadata=False)


def _assemble_part(orig, new, num, as_int, columns):
    o = orig.copy()
    for c in num:
        v = new[c].to_numpy()
        o[c] = np.round(v).astype(o[c].dtype) if c in as_int else v.astype(np.float64)
    return o[columns]


def shuffle_rows(ddf, seed):
    """The rows in a uniformly random order over all partitions (Dask's global sort on iid
    random keys), the key column dropped."""
    meta = ddf._meta.assign(_sdc_key=pd.Series([], dtype=np.int64))
    keyed = ddf.map_partitions(_with_keys, seed, 2 ** 31 - 1, meta=meta)
    return keyed.sort_values("_sdc_key").drop(columns="_sdc_key")


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


def _link_part(B, A, cols, mean, sd, target, idv):
    """One partition of the protected file against the sampled original records A
    (standardised on ``cols``): each record's smallest squared distance here, how many
    records tie at it, whether its own record is among them, and the first nearest record's
    values on ``idv``."""
    from ._linkage import _nearest

    Y = B.to_numpy(dtype=np.float64)
    s = A.shape[0]
    if Y.shape[0] == 0:
        return {"d": np.full(s, np.inf), "t": np.zeros(s, np.int64), "o": np.zeros(s, bool),
                "y": np.full((s, len(idv)), np.nan)}
    first, ties, own, dist = _nearest(A, (Y[:, cols] - mean[cols]) / sd[cols], target)
    return {"d": dist, "t": ties, "o": own, "y": Y[first][:, idv]}


def _link_merge(a, b):
    d = np.minimum(a["d"], b["d"])
    ia, ib = a["d"] == d, b["d"] == d
    return {"d": d, "t": a["t"] * ia + b["t"] * ib, "o": (a["o"] & ia) | (b["o"] & ib),
            "y": np.where(ia[:, None], a["y"], b["y"])}


def _rank_part(B, idv, x, y):
    """Per sampled record and variable: how many of this partition's protected values are
    below x, at most x, and below y."""
    Y = B.to_numpy(dtype=np.float64)[:, idv]
    out = {"lx": np.zeros(x.shape, np.int64), "qx": np.zeros(x.shape, np.int64), "ly": np.zeros(x.shape, np.int64)}
    for a in range(Y.shape[1]):
        v = np.sort(Y[:, a])
        out["lx"][:, a] = np.searchsorted(v, x[:, a], "left")
        out["qx"][:, a] = np.searchsorted(v, x[:, a], "right")
        out["ly"][:, a] = np.searchsorted(v, y[:, a], "left")
    return out


def _pil_part(P, mean, orders, cross):
    """One partition's sums for PIL: central powers (about the file's mean) and the moment
    matrices."""
    C = P.to_numpy(dtype=np.float64) - mean
    out = {"S": {r: (C ** r).sum(axis=0) for r in orders}, "M11": C.T @ C}
    if cross:
        C2 = C * C
        out["M22"] = C2.T @ C2
        out["M31"] = (C2 * C).T @ C
    return out


QBINS = 4096  # bins per quantile bracket in the counting pass


def _q_count(P, edges):
    """Per column and level: how many of this partition's values lie below each bin edge."""
    X = P.to_numpy(dtype=np.float64)
    out = np.empty(edges.shape, np.int64)
    for j in range(X.shape[1]):
        v = np.sort(X[:, j])
        out[:, j] = np.searchsorted(v, edges[:, j].ravel(), "left").reshape(out[:, j].shape)
    return out


def _q_collect(P, lo, hi):
    """Per column and wanted order statistic: this partition's values in [lo, hi)."""
    X = P.to_numpy(dtype=np.float64)
    out = []
    for j in range(X.shape[1]):
        v = np.sort(X[:, j])
        a = np.searchsorted(v, lo[:, j], "left")
        b = np.searchsorted(v, hi[:, j], "left")
        out.append([v[x:y] for x, y in zip(a, b)])
    return out


def _q_join(a, b):
    return [[np.concatenate([x, y]) for x, y in zip(ca, cb)] for ca, cb in zip(a, b)]


def exact_quantiles(ddf, cols, levels, vmin, vmax, sample, n):
    """``np.quantile(X, levels, axis=0)`` (linear interpolation, the same bits) over every
    partition without sorting the file: each wanted order statistic is bracketed by the
    sample's quantiles (5 standard errors either side, the file's minimum and maximum at
    the ends), one pass counts the values below each of QBINS bin edges in the bracket,
    and a second pass collects the values of the one bin holding it (a bracket that misses,
    which 5 standard errors make rare, is widened to the whole range)."""
    import dask

    levels = np.asarray(levels, dtype=np.float64)
    m = len(cols)
    h = (n - 1) * levels  # numpy's virtual index, method 'linear'
    k1 = np.floor(h).astype(np.int64)
    k2 = np.minimum(k1 + 1, n - 1)
    gamma = h - k1
    ks = np.concatenate([k1, k2])  # the order statistics wanted, per level (x2), per column
    srt = np.sort(sample, axis=0)
    s = srt.shape[0]
    q = np.clip(ks / max(n - 1, 1), 0, 1)
    half = 5 * np.sqrt(q * (1 - q) / s) + 2.0 / s
    ilo = np.floor((q - half) * (s - 1)).astype(np.int64)
    ihi = np.ceil((q + half) * (s - 1)).astype(np.int64)
    lo = np.where(ilo[:, None] <= 0, vmin, srt[np.clip(ilo, 0, s - 1)])
    hi = np.where(ihi[:, None] >= s - 1, vmax, srt[np.clip(ihi, 0, s - 1)])
    parts = ddf[cols].to_delayed()
    for attempt in (0, 1):
        top = np.nextafter(hi, np.inf)  # bins half-open: the last one holds hi itself
        edges = lo[:, :, None] + (top - lo)[:, :, None] * (np.arange(QBINS + 1) / QBINS)[None, None, :]
        edges[:, :, -1] = top  # (wanted, column, edge)
        (below,) = dask.compute(_tree([dask.delayed(_q_count)(p, edges) for p in parts], _add))
        inside = (below[:, :, 0] <= ks[:, None]) & (below[:, :, -1] > ks[:, None])
        if inside.all() or attempt:
            break
        lo = np.where(inside, lo, vmin)
        hi = np.where(inside, hi, vmax)
    if not inside.all():
        raise RuntimeError("exact_quantiles: a bracket missed after widening to the whole range")
    # the bin holding each wanted order statistic, then its values
    b = np.array([[np.searchsorted(below[w, j], ks[w], "right") - 1 for j in range(m)] for w in range(len(ks))])
    b = np.clip(b, 0, QBINS - 1)
    blo = np.take_along_axis(edges, b[:, :, None], axis=2)[:, :, 0]
    bhi = np.take_along_axis(edges, b[:, :, None] + 1, axis=2)[:, :, 0]
    start = np.take_along_axis(below, b[:, :, None], axis=2)[:, :, 0]
    (vals,) = dask.compute(_tree([dask.delayed(_q_collect)(p, blo, bhi) for p in parts], _q_join))
    stat = np.empty((len(ks), m))
    for j in range(m):
        for w in range(len(ks)):
            v = np.sort(vals[j][w])
            stat[w, j] = v[ks[w] - start[w, j]]
    a, bb = stat[:len(levels)], stat[len(levels):]
    g = gamma[:, None]
    diff = bb - a
    return np.where(g >= 0.5, bb - diff * (1 - g), a + diff * g)


def _interval(v):
    """Mean of per-record values and its 95 % normal interval (sampling of records)."""
    v = np.asarray(v, dtype=np.float64)
    m = float(v.mean())
    h = 1.959963984540054 * float(v.std(ddof=1)) / np.sqrt(len(v)) if len(v) > 1 else np.nan
    return m, m - h, m + h


def evaluate_dask(original, protected, *, sensitive=None, sample=5000, groups=5, seed=0, pil_statistics=7,
                  ps_order=2):
    """The measures at scale (``evaluate``'s definitions; the release in the original's
    record order): per score its estimate, a 95 % interval and how it was obtained.

    - **DBRL**: ``sample`` original records drawn at random, each linked against *all* n
      protected records (nearest neighbours found partition by partition, with exact ties,
      then reduced); the estimate is the mean of the per-record scores (1/t if the own record
      is among t tied nearest), with its sampling interval.
    - **ID**: for the same records, the rank interval of ``evaluate`` counted exactly over
      all n protected values (each partition counts the values below and at most the
      original value and below the linked protected value); the linked record is the own
      one in selective protection and the DBRL-nearest on all variables in general
      protection, as in memory.  Ties among protected values take the lowest rank.
    - **PIL**: means, variances, covariances, correlations, skewness and kurtosis terms from
      map-reduce moments over all records; the quantiles exact (``exact_quantiles``: Dask's
      approximate quantiles moved the quantile term by 0.05 at 6,000 records, more than its
      own sampling error); the density at the quantiles (the term's variance) from a
      Gaussian KDE of the sample.
    - **PS**: fitted on ``groups`` disjoint subsamples of ``sample // groups`` record pairs,
      t interval over them; the PS of a small subsample is biased upwards against the whole
      file's (more model terms per record).

    Returns a ``DaskEvaluation``.
    """
    import dask
    import dask.array as da
    from dask import delayed

    from ._compare import mean_interval
    from ._utility import QUANTILE_LEVELS, _densities, _pil_from, _pil_stat_names, _ps_arrays, check_ps_order

    if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 100 * groups:
        raise ValueError(f"sample={sample!r} must be at least {100 * groups} records ({groups} samples of 100).")
    stat_names = _pil_stat_names(pil_statistics)
    order = check_ps_order(ps_order)
    _workers_ready()
    num = [c for c in original.columns if pd.api.types.is_numeric_dtype(original.dtypes[c])]
    miss = [c for c in num if c not in protected.columns]
    if miss:
        raise ValueError(f"the protected data set lacks column(s) {miss}; evaluate the same columns.")
    sens = None
    if sensitive:
        bad = [c for c in sensitive if c not in num]
        if bad:
            raise ValueError(f"sensitive variable(s) {bad} are not numeric columns of the original; check the names.")
        sens = [num.index(c) for c in sensitive]
    la = original.map_partitions(len).compute().tolist()
    lb = protected.map_partitions(len).compute().tolist()
    n = sum(la)
    if n != sum(lb):
        raise ValueError(f"the original has {n:,} records and the protected data set {sum(lb):,}; evaluate a release "
                         f"with the original's records in the original's order.")
    _, mean_x, cov_x, min_x, max_x, _ = moments(original, num)
    _, mean_y, _, min_y, max_y, _ = moments(protected[num], num)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(DASK_STREAM, 10 ** 6 + 1)))
    s = int(min(n, sample))
    rows = np.sort(rng.choice(n, size=s, replace=False))
    X = original[num].to_dask_array(lengths=la)
    Y = protected[num].to_dask_array(lengths=lb)
    X0, Y0 = da.compute(X[rows], Y[rows])
    X0, Y0 = np.asarray(X0, np.float64), np.asarray(Y0, np.float64)
    sd_x = np.sqrt(np.diag(cov_x))
    link = [j for j in (sens or range(len(num))) if sd_x[j] > 0]
    idv = [j for j in (sens or range(len(num))) if sd_x[j] > 0]
    A = (X0[:, link] - mean_x[link]) / sd_x[link]
    parts = protected[num].to_delayed()
    offsets = np.concatenate([[0], np.cumsum(lb)])
    linked = []
    for p, part in enumerate(parts):
        target = np.where((rows >= offsets[p]) & (rows < offsets[p + 1]), rows - offsets[p], -1)
        linked.append(delayed(_link_part)(part, A, link, mean_x, sd_x, target, idv))
    # 1. DBRL against all protected records
    (lk,) = dask.compute(_tree(linked, _link_merge))
    d_rec = np.where(lk["o"], 1.0 / np.maximum(lk["t"], 1), 0.0)
    # 2. ID: ranks counted over all protected values
    x = X0[:, idv]
    y = Y0[:, idv] if sens else lk["y"]
    (cnt,) = dask.compute(_tree([delayed(_rank_part)(part, idv, x, y) for part in parts], _add))
    hits = np.zeros((s, len(idv)))
    for pct in range(1, 11):
        w = int(np.ceil(pct * n / 100.0))
        lo_rank = np.maximum(0, cnt["ly"] - w)
        hi_rank = np.minimum(n - 1, cnt["ly"] + w)
        hits += (cnt["qx"] >= lo_rank + 1) & (cnt["lx"] <= hi_rank)
    id_rec = (hits / 10.0).mean(axis=1) if idv else np.zeros(s)
    # 3. PIL: map-reduce moments and exact quantiles
    px = _tree([delayed(_pil_part)(pt, mean_x, range(2, 9), True) for pt in original[num].to_delayed()], _add)
    py = _tree([delayed(_pil_part)(pt, mean_y, (2, 3, 4), False) for pt in parts], _add)
    px, py = dask.compute(px, py)
    qx = exact_quantiles(original, num, QUANTILE_LEVELS, min_x, max_x, X0, n)
    qy = exact_quantiles(protected, num, QUANTILE_LEVELS, min_y, max_y, Y0, n)
    mu = {r: px["S"][r] / n for r in range(2, 9)}
    summary = {"n": n, "mean_x": mean_x, "mean_y": mean_y, "mu": mu, "muY": {r: py["S"][r] / n for r in (2, 3, 4)},
               "M11x": px["M11"] / n, "M11y": py["M11"] / n, "M22": px["M22"] / n, "M31": px["M31"] / n,
               "qx": qx, "qy": qy}
    summary["dens"] = _densities(X0, summary["qx"], mu[2])
    per, _ = _pil_from(summary, stat_names)
    pil_score = float(np.mean(list(per.values())))
    # 4. PS on disjoint subsamples
    ps = []
    for g in np.array_split(rng.permutation(s), groups):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lbfgs fallbacks say so; the interval shows the spread
            ps.append(_ps_arrays(X0[g], Y0[g], order)[0])
    rows_ = []
    every = s == n  # every record: DBRL and ID are exact, no sampling interval
    dm = (float(d_rec.mean()), np.nan, np.nan) if every else _interval(d_rec)
    im = (float(id_rec.mean()), np.nan, np.nan) if every else _interval(id_rec)
    pm = mean_interval(np.asarray(ps))
    rows_.append({"score": "dbrl", "estimate": dm[0], "lo": dm[1], "hi": dm[2],
                  "how": f"{s:,} sampled records linked against all {n:,} protected records"})
    rows_.append({"score": "id", "estimate": im[0], "lo": im[1], "hi": im[2],
                  "how": f"{s:,} sampled records, ranks over all {n:,} protected values"})
    rows_.append({"score": "pil", "estimate": pil_score, "lo": np.nan, "hi": np.nan,
                  "how": "all records (quantiles exact; their density from the sample)"})
    rows_.append({"score": "ps", "estimate": pm[0], "lo": pm[1], "hi": pm[2],
                  "how": f"{groups} subsamples of {s // groups:,} record pairs"})
    est = [dm[0], im[0], pil_score, pm[0]]
    rows_.append({"score": "summary", "estimate": float(np.mean(est)),
                  "lo": float(np.mean([dm[0] if every else dm[1], im[0] if every else im[1], pil_score, pm[1]])),
                  "hi": float(np.mean([dm[0] if every else dm[2], im[0] if every else im[2], pil_score, pm[2]])),
                  "how": "mean of the four (bounds from theirs)"})
    return DaskEvaluation(pd.DataFrame(rows_).set_index("score"), n, s, per,
                          pd.DataFrame({"dbrl": d_rec, "id": id_rec}, index=rows))
