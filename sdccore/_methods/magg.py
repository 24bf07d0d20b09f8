"""M-AGG: MDAV microaggregation in groups of at least k records plus noise for the lost
covariance (Calviño's M-AGG; sdcMicro's partition), in memory and at scale."""

from __future__ import annotations

from .magg_kernel import magg
from ._base import Option, Perturbed


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
    return Perturbed(Xpk, None, (), None, None, (f"MDAV formed {groups} groups of at least {o['k']} records",))


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
    from .._scale.magg import _magg_dask

    Xpk, notes = _magg_dask(s.Xk, s.mean_k, s.sd_k, s.cov_k, s.lengths, s.n, s.o, s.seed, s.scratch, s.progress)
    return Xpk, notes, None, None


MAGG_KS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100)


def search_candidates(data, method, sensitive, base, decompose):
    """The group sizes the search tries: (candidates, size of the space, what, unit)."""
    n = len(data)
    ks = [k for k in MAGG_KS if k <= n // 2]
    return [{"method": "magg", **base, "k": k} for k in ks], max(0, n // 2 - 1), f"k in {ks}", "k values"
