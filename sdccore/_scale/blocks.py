"""Random blocks on the Dask engine (``protect_dask``): the file cut into random blocks, each
block protected by the in-memory pipeline.  A method's ``perturb_scale`` uses it through
``_ScaleInput.in_blocks`` (IPSO, data shuffling and conditional FA do, ``_methods.conditional``).

Each record is put in one of B = ceil(n / BLOCK_MAX) blocks uniformly at random (its own
draw, keyed by seed and partition), the blocks are gathered by Dask's shuffle, and within
each block (records in file order) the in-memory pipeline binds the recipe's options and
runs the method, exactly as ``protect`` does on a file of the block's records: the residual
exchange, its repairs and the guard of the largest records for IPSO, the normal-score draw
for shuffling, the factor model's law for conditional FA, the codes released unchanged as
indicators where IPSO is conditioned on them.  The blocks' releases are put back in the
file's order.

What the whole file keeps, and why:

* **IPSO**: each block keeps its own OLS of the sensitive variables on the public ones (and
  on the codes) exactly, that is X_b'S*_b = X_b'S_b and S*_b'S*_b = S_b'S_b for its regressors
  X_b; summed over the blocks, X'S* = X'S and S*'S* = S'S, so the OLS on the whole file
  (coefficients, residual covariance, R^2), every mean and every domain mean of the codes
  are kept exactly as well.  The residuals are exchanged within a block: a block is a
  uniform random sample of the file, so a record's residual goes to a record drawn at
  random from the file, as in memory.
* **Shuffling**: each block's values are handed out again within the block, so the whole
  file's values (every marginal: mean, quantiles, the largest values) are kept exactly;
  rank correlations are kept in expectation, as in memory.
* **Conditional FA**: each block draws from the factor model of its own correlations (a
  random block of 100,000 records: within about 0.003 of the file's) with the number of
  factors chosen once on the whole file; the whole file's means are exact (each block
  keeps its own).

A file of at most BLOCK_MAX records is one block drawn with the in-memory stream
(``numpy.random.default_rng(seed)``): the release is ``protect``'s, byte for byte.  Blocks
of 100,000 records cost IPSO about 1.3 CPU-s each (the residual exchange's repairs and the
guard of the top band, with the partner search and the window counts by sorting).
"""

from __future__ import annotations

import glob
import math
import os

import numpy as np
import pandas as pd

from .._core.streams import dask_sequence
from .._methods import CODE_MAX_LEVELS as MAX_LEVELS  # the in-memory rule's limit, so both see the same columns

__all__ = []

BLOCK_MAX = 100_000  # records per random block (at most; a file this small is one block)
CODE_LEVELS = MAX_LEVELS  # a column released unchanged joins the blocks as a code with at most this many levels


def blocks_for(n):
    """The number of random blocks of a file of n records."""
    return max(1, math.ceil(n / BLOCK_MAX))


def _levels(p, cols):
    """Per column of partition ``p``: its distinct values (None past CODE_LEVELS)."""
    out = {}
    for c in cols:
        u = pd.unique(p[c])
        out[c] = None if len(u) > CODE_LEVELS else set(u.tolist())
    return out


def _merge_levels(a, b):
    return {c: None if a[c] is None or b[c] is None or len(a[c] | b[c]) > CODE_LEVELS else a[c] | b[c] for c in a}


def code_columns(frame, num):
    """The columns released unchanged that can condition IPSO (``codes``): 2 to CODE_LEVELS
    distinct values over the whole file (one pass; a column past the limit in any partition
    is out)."""
    import dask

    from .._io.partitions import _tree

    cand = [c for c in frame.columns if c not in set(num)]
    if not cand:
        return []
    (lv,) = dask.compute(_tree([dask.delayed(_levels)(p, cand) for p in frame[cand].to_delayed()], _merge_levels))
    return [c for c in cand if lv[c] is not None and len(lv[c]) >= 2]


def _keyed(p, names, codes, nb, seed, offset, part):
    """One original partition as (record number, block, the numeric columns, the codes)."""
    out = p[names + codes].reset_index(drop=True)
    u = np.random.default_rng(dask_sequence(seed, "cond_blocks", part)).random(len(p))
    out.insert(0, "_block", np.minimum((u * nb).astype(np.int64), nb - 1))
    out.insert(0, "_row", np.arange(offset, offset + len(p), dtype=np.int64))
    return out


def block_seed(seed, b, nb):
    """The seed block b is protected with: the recipe's own with one block (protect's stream),
    else one drawn from the block's stream."""
    if nb == 1:
        return int(seed)
    return int(np.random.default_rng(dask_sequence(seed, "cond_block", b)).integers(0, 2 ** 63 - 1))


def protect_block(frame, names, method, sensitive, opts, seed, keep):
    """The in-memory pipeline's binding and perturbation of one block (records in file
    order): the protected kept columns ``keep`` (indices into ``names``), on the original
    scale.  A public column that takes one value in this block (a column with few values off
    its common one: in the whole file it varies) is released unchanged in the block and left
    out of its regression, where the intercept stands for it (X_b'S*_b = X_b'S_b still holds
    for it, so the whole file's OLS stays exact); in memory a constant column is refused."""
    from .._protect.pipeline import _bind, _perturb

    sensitive = list(sensitive or [])
    const = [c for c in names if len(frame) and np.ptp(frame[c].to_numpy(dtype=np.float64)) == 0]
    try:
        flat = [c for c in const if c in sensitive]
        if flat:
            raise ValueError(f"the sensitive variable(s) {', '.join(flat)} take one value in it; protect in memory, "
                             f"or leave {', '.join(flat)} out of the sensitive variables")
        o2 = dict(opts)
        if const:
            o2["exclude"] = list(dict.fromkeys(list(o2.get("exclude") or []) + const))
        m2, prep, o = _bind(frame, method, sensitive or None, o2, seed=seed)
        kept = [prep.numeric[j] for j in prep.keep]
        if kept != [names[j] for j in keep if names[j] not in const]:
            raise ValueError("its records show an exact linear dependency between columns that the whole file does "
                             "not (a column with very few values other than its most common one); drop or keep "
                             "(--keep) that column")
        step = _perturb(prep, None, m2, o, np.random.default_rng(seed))
    except ValueError as exc:  # a block is a file of its own: say so, the cause stays the in-memory one
        raise ValueError(f"a random block of {len(frame):,} records could not be protected as protect() protects a "
                         f"file (the Dask engine protects {method} block by block): {exc}") from None
    X = np.empty((len(frame), len(keep)))
    for a, j in enumerate(keep):
        c = names[j]
        X[:, a] = frame[c].to_numpy(dtype=np.float64) if c in const else step.X[:, kept.index(c)]
    return X


def _block_part(df, method, sensitive, opts, seed, nb, names, codes, keep, scratch, offsets, partition_info=None):
    """Every block of a shuffled partition, protected; each original partition's share of
    the result (record number, protected values) saved in the scratch folder as
    ``cond-{original partition}-{this partition}.npy``.  Returns the records done."""
    from .._core.exchange import _save

    df = df.sort_values("_row", kind="stable")
    blocks = df["_block"].to_numpy()
    rows = df["_row"].to_numpy()
    V = np.empty((len(df), len(keep)))
    for b in np.unique(blocks):
        sel = np.flatnonzero(blocks == b)
        frame = df.iloc[sel][names + codes].reset_index(drop=True)
        V[sel] = protect_block(frame, names, method, sensitive, opts, block_seed(seed, int(b), nb), keep)
    src = partition_info["number"] if partition_info else 0
    dest = np.searchsorted(offsets, rows, side="right") - 1
    for p in np.unique(dest):
        sel = dest == p
        _save(os.path.join(scratch, f"cond-{int(p):06d}-{src:06d}.npy"),
              np.column_stack([rows[sel].astype(np.float64), V[sel]]))
    return pd.DataFrame({"records": [len(df)]})


def _put_back(B, scratch, offsets, block_info=None):
    """One original partition's protected values, from the blocks' pieces in the scratch
    folder (each record by its number)."""
    part = block_info[0]["chunk-location"][0]
    out = np.empty(B.shape, dtype=np.float64)
    seen = 0
    for f in sorted(glob.glob(os.path.join(scratch, f"cond-{part:06d}-*.npy"))):
        A = np.load(f)
        out[A[:, 0].astype(np.int64) - offsets[part]] = A[:, 1:]
        seen += len(A)
    if seen != B.shape[0]:
        raise RuntimeError(f"partition {part} has {B.shape[0]} records but the blocks returned {seen}: the scratch "
                           f"folder is incomplete")
    return out


def perturb_blocks(method, s, extra=None, codes=False):
    """The protected kept columns (a dask array in the file's partitions), the number of
    blocks and the codes the blocks were conditioned on.  ``s`` the engine's ``_ScaleInput``;
    ``extra`` options every block gets beyond the recipe's (a choice the method made on the
    whole file); ``codes``: the columns released unchanged with 2 to CODE_LEVELS levels join
    the blocks (for a method that conditions on them)."""
    import dask
    import dask.dataframe as dd

    nb, names, frame = blocks_for(s.n), list(s.num), s.frame
    keep = list(s.prep.keep)
    sensitive = list(s.prep.sensitive_names or []) or None
    codes = code_columns(frame, names) if codes else []
    opts = {k: v for k, v in s.options.items() if k not in ("method", "seed", "rng", "sensitive", "exclude")}
    excluded = [c for c in (s.options.get("exclude") or []) if c in codes]  # numeric codes, released unchanged
    if excluded:
        opts["exclude"] = excluded
    opts.update(extra or {})
    offsets = np.concatenate([[0], np.cumsum(s.lengths)])
    parts = [dask.delayed(_keyed)(p, names, codes, nb, s.seed, int(offsets[i]), i)
             for i, p in enumerate(frame[names + codes].to_delayed())]
    meta = _keyed(frame._meta, names, codes, nb, 0, 0, 0)
    keyed = dd.from_delayed(parts, meta=meta, verify_meta=False)
    shuffled = keyed.shuffle("_block", npartitions=max(1, min(len(s.lengths), nb)))
    where = os.path.join(s.scratch, "blocks")
    os.makedirs(where, exist_ok=True)
    done = shuffled.map_partitions(_block_part, method, sensitive, opts, s.seed, nb, names, codes, keep, where,
                                   offsets, meta=pd.DataFrame({"records": pd.Series([], dtype=np.int64)}))
    if s.progress is not None:
        s.progress(done)
    else:
        done.compute()
    Xpk = s.Xk.rechunk({0: tuple(s.lengths), 1: -1}).map_blocks(_put_back, where, offsets, dtype=np.float64)
    return Xpk, nb, codes
