"""Correlated noise (Kim 1986; sdcMicro's addNoise 'correlated2'): normal noise with
covariance noise_cov % of the data's, in memory and at scale."""

from __future__ import annotations

import numpy as np

from .magg_kernel import correlated_noise, sqrt_psd
from ._base import Option, Perturbed, Scaled


def options(method):
    return [
        Option("noise_cov", "noise", "number", 50.0, "Noise",
               "Correlated noise with covariance noise_cov % of the data's covariance.", low=0, low_open=True,
               unit="% of the covariance"),
    ]


def perturb(prep, plan, method, o, gen, Xk, full):
    cols = prep.sens if prep.sensitive_names else list(range(len(prep.keep)))
    return Perturbed(X=correlated_noise(Xk, cols, o["noise_cov"], gen))


def keeps(method, opts):
    return "", "means and correlations (variances inflated)"


def perturb_scale(method, s):
    """e ~ N(0, noise_cov % of the covariance) on the protected columns, each partition from
    its own keyed generator (``_noise_block``)."""
    keepi = s.prep.keep
    cols = s.prep.sens if s.prep.sensitive_names else list(range(len(keepi)))
    sdn = np.where(s.sd_k[cols] > 0, s.sd_k[cols], 1.0)
    C = s.cov_k[np.ix_(cols, cols)] / np.outer(sdn, sdn)
    S = sqrt_psd(C) * sdn * np.sqrt(s.o["noise_cov"] / 100.0)
    Xpk = s.Xk.map_blocks(_noise_block, s.seed, cols, S, dtype=np.float64)
    return Scaled(X=Xpk, notes=[f"correlated noise with covariance {s.o['noise_cov']:g} % of the data's added to "
                                f"{len(cols)} variable(s), each partition from its own keyed stream"])


def _noise_block(B, seed, cols, S, block_info=None):
    """One partition's values with correlated noise added to ``cols``: standard normals from
    the partition's own keyed stream, times S (the noise covariance's square root)."""
    from .._core.streams import dask_sequence

    ss = dask_sequence(seed, "noise", block_info[0]["chunk-location"][0])
    out = np.array(B, dtype=np.float64, copy=True)
    out[:, cols] += np.random.default_rng(ss).standard_normal((B.shape[0], len(cols))) @ S
    return out
