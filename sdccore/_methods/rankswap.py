"""Rank swapping (Moore 1996; sdcMicro's rankSwap): each value exchanged with another whose
rank differs by at most p % of the records, in memory and at scale."""

from __future__ import annotations

from .magg_kernel import rankswap_columns
from ._base import Option, Perturbed


def options(method):
    return [
        Option("p", "rankswap", "number", 40.0, "Rank window p",
               "Each value is swapped with another whose rank differs by at most p % of the records. Default 40 %: "
               "smaller windows kept too many values within 5 % of the truth in some size band on the samples.",
               low=0, high=100, low_open=True, unit="% of records"),
    ]


def perturb(prep, plan, method, o, gen, Xk, full):
    cols = prep.sens if prep.sensitive_names else list(range(len(prep.keep)))
    observed = None if prep.missing is None else ~(prep.missing if full else prep.missing[:, prep.keep])
    return Perturbed(rankswap_columns(Xk, cols, o["p"], gen, observed), None, (), None, None, ())


def risk_window(method, o):
    """The rank window an intruder who knows the method can exploit (a share of the records)."""
    return o["p"] / 100


def keeps(method, opts):
    return "the variable's values: mean, variance, quantiles", "(relations with other variables attenuated)"


def perturb_scale(method, s):
    from .._scale.rankswap import rankswap_dask

    cols = s.prep.sens if s.prep.sensitive_names else list(range(len(s.prep.keep)))
    Xpk = rankswap_dask(s.Xk, s.lengths, cols, s.o["p"], s.seed, s.scratch)
    return Xpk, [f"rank swapping of {len(cols)} variable(s) within {s.o['p']:g} % of the ranks over all {s.n:,} "
                 f"records (each column's sequential pass on the driver: the in-memory release for this seed)"], \
        None, None
