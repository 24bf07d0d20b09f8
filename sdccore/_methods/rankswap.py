"""Rank swapping (Moore 1996; sdcMicro's rankSwap): each value exchanged with another whose
rank differs by about p % of the records, in memory and at scale.  By default every record's
rank is shifted by a random amount and the values handed out in the shifted order
(``exchange='shifted'``); sdcMicro's reciprocal pairs (``exchange='pairs'``) hand every
record's own value to its partner's row, which an intruder who knows the records' other
variables finds (the partner intruder)."""

from __future__ import annotations

import os

import numpy as np

from .magg_kernel import rankswap_columns
from ._base import Option, Perturbed, Scaled


def options(method):
    return [
        Option("p", "rankswap", "number", 40.0, "Rank window p",
               "Each value is swapped with another whose rank differs by at most p % of the records. Default 40 %: "
               "smaller windows kept too many values within 5 % of the truth in some size band on the samples.",
               low=0, high=100, low_open=True, unit="% of records"),
        Option("exchange", "rankswap", "choice", "shifted", "Exchange",
               "How the values are exchanged. 'shifted' (default): every record's rank r is shifted to r + 2w u "
               "(u uniform, w = p % of the records) and the values are handed out in the shifted order, so a value "
               "moves up to about p % of the ranks, up or down, evenly spread (p/2 % on average, as in pairs), and "
               "no record is paired with another. 'pairs': sdcMicro's rankSwap, records swap values in pairs within "
               "p % of the ranks; a record's own value is then in its partner's row, which an intruder who knows "
               "the records' other variables can find (recipes written before format 8 used pairs).",
               choices=("shifted", "pairs"),
               choice_text={"shifted": "every rank shifted by a random amount; no pairs",
                            "pairs": "records swap values in pairs (sdcMicro's rankSwap)"}),
    ]


def perturb(prep, plan, method, o, gen, Xk, full):
    cols = prep.sens if prep.sensitive_names else list(range(len(prep.keep)))
    observed = None if prep.missing is None else ~(prep.missing if full else prep.missing[:, prep.keep])
    return Perturbed(X=rankswap_columns(Xk, cols, o["p"], gen, observed, o["exchange"]))


def risk_window(method, o):
    """The rank window an intruder who knows the method can exploit (a share of the records):
    p % of the ranks (shifted ranks move a value about as far: rarely 6 % further)."""
    return o["p"] / 100


def keeps(method, opts):
    return "the variable's values: mean, variance, quantiles", "(relations with other variables attenuated)"


def perturb_scale(method, s):
    cols = s.prep.sens if s.prep.sensitive_names else list(range(len(s.prep.keep)))
    Xpk = rankswap_dask(s.Xk, s.lengths, cols, s.o["p"], s.seed, s.scratch, s.o["exchange"])
    return Scaled(X=Xpk, notes=[f"rank swapping ({s.o['exchange']}) of {len(cols)} variable(s) within {s.o['p']:g} % of the ranks over "
                                f"all {s.n:,} records (each column's sequential pass on the driver: the in-memory "
                                f"release for this seed)"])


# ----------------------------------------------------------------------------- at scale
# Rank swapping at scale for the Dask engine: the in-memory kernel over *all* records.
# 
# Rank swapping is one sequential pass over each column's ranks (a record's partner is drawn
# among the records not yet swapped within p % of the ranks, so every draw depends on all
# earlier ones, and with the default p = 40 % a partner can be 40 % of the file away).  It
# cannot be cut into partitions without becoming another method, so the engine does not cut
# it: the swapped columns (only those) are gathered on the driver in one pass, each goes
# through the in-memory ``rankswap`` (stable ranks, the Fenwick pass, O(n log n)) with the
# in-memory random stream (``numpy.random.default_rng(seed)``, columns in the same order),
# and each partition's slice of the result is written to the scratch folder for its
# partition to pick up.  So the release is the one ``protect(..., 'rankswap')`` gives on the
# whole file in its partition order, byte for byte, and each released column is a
# permutation of its values: means, variances and every marginal distribution exact.
# 
# Cost: the driver holds the swapped columns twice (gathered and swapped: 16 bytes a record
# each) and, one column at a time, the pass's working arrays (about 40 bytes a record): about
# 1.2 GB at 20 million records with one swapped column (measured 1.18 GB), 17 GB at 300
# million; the workers hold one partition at a time.


def rankswap_dask(Xk, lengths, cols, p, seed, scratch, exchange="shifted"):
    """The dask array ``Xk`` (n x m, chunked by partition ``lengths``) with the columns
    ``cols`` rank-swapped within ``p`` % of the ranks, exactly as in memory for ``seed``.
    Returns the lazy protected array; writes one slice a partition into ``scratch``."""
    from .._core.exchange import _save

    cols = [int(c) for c in cols]
    V = np.asarray(Xk[:, cols].compute(), dtype=np.float64)  # one pass: the swapped columns only
    # the in-memory function and stream, so the release is protect()'s
    V = rankswap_columns(V, range(len(cols)), p, np.random.default_rng(seed), exchange=exchange)
    os.makedirs(scratch, exist_ok=True)
    at = np.concatenate([[0], np.cumsum(lengths)])
    for part in range(len(lengths)):
        _save(os.path.join(scratch, f"rs-{part:06d}.npy"), np.ascontiguousarray(V[at[part]:at[part + 1]]))
    del V
    return Xk.rechunk({0: tuple(lengths), 1: -1}).map_blocks(_put, scratch, cols, dtype=np.float64)


def _put(B, scratch, cols, block_info=None):
    """One partition with its swapped columns from the scratch folder."""
    part = block_info[0]["chunk-location"][0]
    out = np.array(B, dtype=np.float64, copy=True)
    V = np.load(os.path.join(scratch, f"rs-{part:06d}.npy"))
    if V.shape[0] != out.shape[0]:
        raise RuntimeError(f"partition {part} has {out.shape[0]} records but its swapped slice {V.shape[0]}: the "
                           f"scratch folder is incomplete")
    out[:, cols] = V
    return out
