"""The named random streams every stochastic step draws from (ground floor: imports numpy only).

One master seed gives each step its own stream, ``numpy.random.SeedSequence(seed,
spawn_key=(STREAMS[name],))``, so that a step's draws never depend on how many another step
took.  ``RECIPE_VERSION`` is here because recipes before version 3 shuffled from another
generator (``child_rng`` gives them what they got).
"""

from __future__ import annotations

import numpy as np

__all__ = []

# 9: the margin off the own value recorded (IPSO's two scales, the quantile exchange; before it: 'fixed')
# 8: rank swapping's exchange recorded (a recipe before it swapped in reciprocal pairs: 'pairs')
# 7: the keys' suppression also gives every person's true keys k released candidates, household ids dropped by
#    default (a recipe with keys before it is refused: its rule left persons identifiable)
# 6: IPSO's condition recorded (a recipe before it conditioned on the public numeric variables only: 'public')
# 5: IPSO's top_band recorded (a recipe before it moved the top band's residuals only: 'guard')
# 4: IPSO's missing_rows recorded (a recipe before it kept the OLS with the missing cells filled only)
# 3: option names noise_sd / noise_model / noise_cov, versions stamped, SeedSequence streams
# 2: transform, bounds, rounding and floors recorded; no stamp: recipes from before them
RECIPE_VERSION = 9
STREAMS = {"shuffle": 1, "runs": 2, "search": 3, "bw_map": 4, "impute": 5, "strata": 6, "dask": 7, "pram": 8, "household": 9,
           "prior": 10}
# the Dask engine's sub-streams, SeedSequence(seed, spawn_key=(STREAMS["dask"], sub-stream,
# partition, ...)); the exchange of factor j uses sub-stream j (j < 10 ** 5)
DASK_STREAMS = {
    "residual_rows": 10 ** 5,         # the exchange of whole residual rows
    "noise": 10 ** 5 + 1,             # correlated noise, per partition
    "magg_noise": 10 ** 5 + 2,        # M-AGG's noise, per k-d block
    "cond_block": 10 ** 5 + 3,        # the seed of each random block of IPSO, shuffling, conditional FA
    "floors_sample": 10 ** 6,         # the records the floors' intruders are measured on
    "evaluate_sample": 10 ** 6 + 1,   # the records evaluate --engine dask links
    "magg_sample": 10 ** 6 + 2,       # the sample M-AGG's k-d split is built on
    "cond_blocks": 10 ** 6 + 3,       # each record's random block (IPSO, shuffling, conditional FA)
    "shuffle_keys": 2 ** 31 - 1,      # the random sort keys of the shuffled release
}


def dask_sequence(seed, sub, *more):
    """The SeedSequence of one of the Dask engine's streams: ``sub`` a name of DASK_STREAMS
    or a factor's number, ``more`` the partition (and side) numbers."""
    key = DASK_STREAMS[sub] if isinstance(sub, str) else int(sub)
    return np.random.SeedSequence(int(seed), spawn_key=(STREAMS["dask"], key) + tuple(int(m) for m in more))


def child_seeds(seed, stream, count=None):
    """Integer seeds of a named child stream of ``seed`` (non-negative int64): the
    SeedSequence with entropy ``seed`` and spawn key (stream number,).  ``count=None`` gives
    one int, else an array of ``count`` (an int or a shape)."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(STREAMS[stream],))
    shape = () if count is None else (count if isinstance(count, tuple) else (int(count),))
    size = int(np.prod(shape)) if shape else 1
    vals = (ss.generate_state(size, dtype=np.uint64) >> np.uint64(1)).astype(np.int64)
    return int(vals[0]) if count is None else vals.reshape(shape)


def child_rng(seed, stream, version=RECIPE_VERSION):
    """The generator of a named child stream of ``seed``; recipes before version 3 shuffled
    with ``default_rng([seed, 1])``, which is what they get."""
    if (version is None or version < 3) and stream == "shuffle":
        return np.random.default_rng([int(seed), 1])
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(STREAMS[stream],)))
