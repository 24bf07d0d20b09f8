"""M-AGG: MDAV microaggregation in groups of at least k records plus noise for the lost
covariance (Calviño's M-AGG; sdcMicro's partition), in memory and at scale."""

from __future__ import annotations

import glob
import os

import numpy as np
import pandas as pd

from .._core.streams import dask_sequence
from .._io.partitions import _add, _read_parquet_file, _tree, _write
from .magg_kernel import magg
from ._base import Option, Perturbed, Scaled


def options(method):
    return [
        Option("k", "magg", "integer", 3, "Group size k",
               "MDAV groups of at least k records (sdcMicro's partition). Small k keeps more utility.", low=2,
               unit="records"),
        Option("noise_model", "magg", "choice", "published", "Noise",
               "published: N(0, lost covariance); exact: mean and covariance kept exactly; none: plain MDAV.",
               choices=("published", "exact", "none")),
    ]


def check(method, o, ctx):
    if ctx.n < 4:
        raise ValueError(f"microaggregation needs at least 4 records (two groups of at least 2); the data have "
                         f"{ctx.n}. Use a file with more records.")


def perturb(prep, plan, method, o, gen, Xk, full):
    n, mk = prep.X.shape[0], len(prep.keep)
    cols = prep.sens if prep.sensitive_names else list(range(mk))
    if o["noise_model"] == "exact":
        need = 1 + len(cols) + (mk - len(cols)) + len(cols)
        if n < need:
            raise ValueError(f"noise_model='exact' needs at least {need} records for {len(cols)} aggregated "
                             f"variables; use noise_model='published'.")
    Xpk, groups = magg(Xk, cols, o["k"], o["noise_model"], gen)
    return Perturbed(X=Xpk, notes=(f"MDAV formed {groups} groups of at least {o['k']} records",))


_KEEPS = {
    "published": ("", "means, variances and covariances"),
    "exact": ("means, variances and covariances", ""),
    "none": ("means", "(variances reduced by the aggregation)"),
}


def keeps(method, opts):
    return _KEEPS.get(opts.get("noise_model", "published"), ("", ""))


def min_stratum_size(method, m, k=3):
    return max(6, 2 * int(k))


def scale_refusal(method, options):
    if options.get("sensitive") or options.get("noise_model", "published") == "exact":
        return ("magg with --engine dask is general (every variable aggregated) with noise_model 'published' or "
                "'none'; selective M-AGG and noise_model='exact' need the whole file at once: protect in memory.")
    return None


def perturb_scale(method, s):
    Xpk, notes = _magg_dask(s.Xk, s.mean_k, s.sd_k, s.cov_k, s.lengths, s.n, s.o, s.seed, s.scratch, s.progress)
    return Scaled(X=Xpk, notes=notes)


MAGG_KS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100)


def search_candidates(data, method, sensitive, base, decompose):
    """The group sizes the search tries: (candidates, size of the space, what, unit)."""
    n = len(data)
    ks = [k for k in MAGG_KS if k <= n // 2]
    return [{"method": "magg", **base, "k": k} for k in ks], max(0, n // 2 - 1), f"k in {ks}", "k values"


# ----------------------------------------------------------------------------- at scale
# M-AGG at scale for the Dask engine (``protect_dask`` with method 'magg'): MDAV within
# the blocks of a k-d split built on a sample, groups never crossing blocks, then noise from
# the pooled within-group scatter.  The module docstring of ``_dask`` gives the design and the
# measured information-loss cost.

BLOCK_MAX = 50_000  # MDAV within k-d blocks of at most this many records


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
    from .mdav import group_means, mdav_file_weighted

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
            ss = dask_sequence(seed, "magg_noise", int(b))
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

    from .magg_kernel import sqrt_psd

    k, model = int(o["k"]), o["noise_model"]
    if n < 2 * k:
        raise ValueError(f"magg needs at least {2 * k} records for k={k}; the file has {n}.")
    c = Xk.shape[1]
    sdv = np.where(sd_k > 0, sd_k, 1.0)
    rng = np.random.default_rng(dask_sequence(seed, "magg_sample"))
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
