"""Uniformly random permutations over all records of a partitioned array, all of them in
one exchange through a scratch folder (the Dask engine's swap of factor scores and
residual rows).

A Dask sort on random keys is a uniform permutation too, but it costs two shuffles of the
whole column per permutation: with 30 factors that is 60 passes over the file.  Here every
permutation moves in the same pass, exactly uniform, in three steps:

1. **Counts on the driver.**  For each permutation g, ``N[g, s, d]`` is how many of source
   partition s's records land in destination partition d.  Under a uniform permutation the
   destinations of source 0's records are a uniform subset of all n positions, so row 0 is
   multivariate hypergeometric (colours: the destination lengths; draws: source 0's
   length); given it, the rest is again uniform on the remaining positions, row by row.
2. **Scatter, one task a source partition.**  Each permutation's rows of the partition are
   put in a uniformly random order (the partition's own keyed stream); the first
   ``N[g, s, 0]`` go to destination 0, the next ``N[g, s, 1]`` to destination 1, and so on.
   The pieces are written destination by destination, so that what a destination needs from
   a source is one contiguous read.
3. **Gather, one task a destination partition.**  The pieces from every source, in source
   order, then a uniformly random order within the destination (its own keyed stream).

Why this is uniform: given N, step 2 makes every way of choosing which records of s go to d
equally likely, and step 3 every order within d; every permutation with counts N is one such
choice and order, so all of them are equally likely given N, and N has exactly the
distribution it has under a uniform permutation.  The columns of one group (a residual row)
share their permutation; different groups use independent streams.

The scratch folder must be visible to every worker (the release folder's file system).
The same seed and partitioning give the same bytes.  numpy's multivariate hypergeometric
needs fewer than 10**9 records.
"""

from __future__ import annotations

import os

import numpy as np

from .streams import dask_sequence

MAX_RECORDS = 10 ** 9 - 1  # numpy's multivariate_hypergeometric ('marginals') needs sum(colors) < 1e9


def exchange_counts(lengths, rng):
    """``N[s, d]``: how many of source partition s's records a uniformly random permutation of
    all records sends to destination partition d (destinations have the same lengths)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    left = lengths.copy()
    N = np.zeros((len(lengths), len(lengths)), dtype=np.int64)
    for s, ls in enumerate(lengths):
        if ls:
            N[s] = rng.multivariate_hypergeometric(left, int(ls))
            left -= N[s]
    return N


def _write_counts(lengths, seed, groups, scratch):
    """Step 1: every group's counts, stored (S, G, S) so that a source reads its own in one go."""
    os.makedirs(scratch, exist_ok=True)
    counts = np.stack([exchange_counts(lengths, _stream(seed, stream, 0, 2)) for stream, _ in groups], axis=1)
    _save(os.path.join(scratch, "counts.npy"), counts)


def _stream(seed, stream, part, side):
    return np.random.default_rng(dask_sequence(seed, stream, part, side))


def _layout(counts_s, widths):
    """Where each destination's pieces start in a source's flat file: ``start[d, g]``."""
    per = counts_s.T * np.asarray(widths)  # (S, G): values group g sends to destination d
    flat = per.ravel()
    start = np.concatenate([[0], np.cumsum(flat)[:-1]]).reshape(per.shape)
    return start


def _rows_cols(B, rows, cols):
    """``B[np.ix_(rows, cols)]`` by two takes, the narrower first: numpy's two-axis fancy
    indexing took 16 ms for 60,000 rows x 24 columns, the takes 3-5 ms (the same values)."""
    if 4 * len(cols) < B.shape[1]:
        return B.take(cols, axis=1).take(rows, axis=0)
    return B.take(rows, axis=0).take(cols, axis=1)


def _scatter(B, scratch, seed, groups, block_info=None):
    """One source partition: each group's rows in a random order, cut by the counts and
    written destination by destination (``x{s}.npy``), with the table of starts and counts
    (``t{s}.npy``: row d holds the G starts then the G counts).  Returns the length."""
    s = block_info[0]["chunk-location"][0]
    ls = B.shape[0]
    counts = np.load(os.path.join(scratch, "counts.npy"), mmap_mode="r")
    Ns = np.array(counts[s], dtype=np.int64)  # (G, S)
    widths = [len(cols) for _, cols in groups]
    start = _layout(Ns, widths)
    flat = np.empty(ls * sum(widths), dtype=np.float64)
    for g, (stream, cols) in enumerate(groups):
        rows = _stream(seed, stream, s, 0).permutation(ls)
        V = _rows_cols(np.asarray(B, dtype=np.float64), rows, cols)
        cum = np.concatenate([[0], np.cumsum(Ns[g])])
        dest = np.repeat(np.arange(Ns.shape[1]), Ns[g])  # destination of each row in the new order
        pos = start[dest, g] + (np.arange(ls) - cum[dest]) * widths[g]
        flat[pos[:, None] + np.arange(widths[g])] = V
    table = np.concatenate([start, Ns.T], axis=1)
    _save(os.path.join(scratch, f"x{s:06d}.npy"), flat)
    _save(os.path.join(scratch, f"t{s:06d}.npy"), table)
    return np.array([ls], dtype=np.int64)


def _save(path, array):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)  # a retried task never leaves half a file


def _gather(scratch, d, ld, nsrc, seed, groups):
    """One destination partition: every source's pieces, then a random order per group."""
    widths = [len(cols) for _, cols in groups]
    G = len(groups)
    out = np.empty((ld, sum(widths)), dtype=np.float64)
    at = np.zeros(G, dtype=np.int64)
    for s in range(nsrc):
        t = np.load(os.path.join(scratch, f"t{s:06d}.npy"), mmap_mode="r")
        row = np.array(t[d])
        start, cnt = row[:G], row[G:]
        total = int(np.dot(cnt, widths))
        if total == 0:
            continue
        x = np.load(os.path.join(scratch, f"x{s:06d}.npy"), mmap_mode="r")
        chunk = np.array(x[start[0]:start[0] + total])
        off = 0
        for g, (_, cols) in enumerate(groups):
            c = int(cnt[g])
            out[at[g]:at[g] + c, cols] = chunk[off:off + c * widths[g]].reshape(c, widths[g])
            off += c * widths[g]
            at[g] += c
    if not np.array_equal(at, np.full(G, ld)):
        raise RuntimeError(f"partition {d} received {at.tolist()} records of {ld}: the scratch folder is incomplete")
    for g, (stream, cols) in enumerate(groups):
        out[:, cols] = _rows_cols(out, _stream(seed, stream, d, 1).permutation(ld), cols)
    return out


def exchange(A, lengths, seed, groups, scratch, progress=None):
    """The rows of the dask array ``A`` (n x C, chunked by partition ``lengths``) permuted
    uniformly over all records, one independent permutation per group: ``groups`` is a list
    of (stream, column indices); the columns of one group move together.  Returns a dask
    array chunked like ``A``.  The scatter runs now (into ``scratch``); the gather is lazy."""
    import dask.array as da
    from dask import delayed

    lengths = [int(v) for v in lengths]
    n = sum(lengths)
    if n > MAX_RECORDS:
        raise ValueError(f"the file has {n:,} records; the Dask engine's swap handles at most {MAX_RECORDS:,}. "
                         "Protect it in parts of fewer records.")
    groups = [(int(stream), [int(c) for c in cols]) for stream, cols in groups]
    _write_counts(lengths, seed, groups, scratch)
    A = A.rechunk({0: tuple(lengths), 1: -1})
    job = A.map_blocks(_scatter, scratch, seed, groups, drop_axis=1, chunks=((1,) * len(lengths),),
                       dtype=np.int64)
    if progress is not None:
        progress(job)
    else:
        job.compute()
    C = A.shape[1]
    parts = [da.from_delayed(delayed(_gather, pure=True)(scratch, d, ld, len(lengths), seed, groups),
                             shape=(ld, C), dtype=np.float64) for d, ld in enumerate(lengths)]
    # da.concatenate leaves out empty pieces; the rechunk puts the empty partitions back
    return da.concatenate(parts, axis=0).rechunk({0: tuple(lengths), 1: -1})
