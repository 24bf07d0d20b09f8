"""PCA-R: D'Acquisto and Naldi's removal of the largest principal components, stopped by a
utility metric (general protection; deterministic)."""

from __future__ import annotations

import numpy as np

from .._core import decomp as dc
from . import removal_kernel as rm
from ._base import OMIT, Option, Perturbed, Plan, loadings_frame, planned_share

METRIC_TEXT = {
    "correlation": "correlation of the flattened standardised data (higher is better)",
    "mean_abs": "mean absolute change, in sds (lower is better)",
    "max_row": "mean absolute change of the most changed record, in sds (lower is better)",
    "frobenius": "root mean square change, in sds (lower is better)",
    "kl": "Kullback-Leibler divergence of the fitted normals (lower is better)",
    "psnr": "PSNR of the data read as an image, dB (higher is better)",
    "ssim": "SSIM of the data read as an image (higher is better)",
}


def _removal_threshold(o, ctx):
    if o["metric"] == rm.DEFAULT_METRIC:
        return rm.DEFAULT_THRESHOLD
    if o["removed"] == "auto":
        raise ValueError(f"metric={o['metric']!r} needs a threshold chosen on its scale: pass threshold=..., read off "
                         f"sdccore.removal_curve(data) (the Configure page's curve), or give removed=<number>.")
    return OMIT


def options(method):
    return [
        Option("removed", "pca_remove", "removed", "auto", "Components removed",
               "'auto' (the utility stop rule) or the number of largest components to remove.", choices=("auto",),
               low=1),
        Option("metric", "pca_remove", "choice", rm.DEFAULT_METRIC, "Utility metric",
               "The framework paper's four families: matrix norms, correlation, divergence, image quality.",
               choices=tuple(rm.UTILITY_METRICS), choice_text=METRIC_TEXT),
        Option("threshold", "pca_remove", "number", _removal_threshold, "Threshold",
               "Components are removed while the metric still meets this (default 0.5 for 'correlation'; other "
               "metrics need one read off the removal curve)."),
    ]


def check(method, o, ctx):
    n, m = ctx.n, ctx.m
    if m < 2:
        raise ValueError("removing principal components needs at least 2 variables (never all components are "
                         "removed).")
    if o["removed"] != "auto" and o["removed"] > m - 1:
        raise ValueError(f"removed={o['removed']} would remove all {m} components; choose 1 to {m - 1}.")
    if o["metric"] == "ssim" and rm.ssim_window(n, m) is None:
        raise ValueError("metric='ssim' needs at least 3 records and 3 variables (the smallest image window); "
                         "choose another metric.")


def loadings_prefix(method):
    return "PC"


def variance_share(plan, method, m):
    return plan.dec.variances / m


def plan(prep, method, o):
    Rk = prep.R[np.ix_(prep.keep, prep.keep)]
    dec, active = dc.pca_as_decomposition(Rk)
    notes = list(dec.notes)
    T = np.eye(dec.L.shape[1])
    sel = list(range(rm.removal_count(prep, o, dec, active, notes)))
    sel = [s for s in sel if active[s]]
    if not sel:
        raise ValueError("the options select no component to perturb, so nothing would be protected; "
                         "lower the threshold, choose another criterion, or list the components to perturb.")
    return Plan(dec, T, sel, active, tuple(notes))


def perturb(prep, plan, method, o, gen, Xk, full):
    keep = prep.keep
    notes = list(plan.notes)
    Zs, sd_pop = rm.standardized_columns(prep)
    r = len(plan.sel)
    Xpk = prep.X[:, keep].mean(axis=0) + rm.removed_release(Zs, plan.dec.G, r) * sd_pop
    share = rm.removed_share(plan.dec.G, plan.dec.variances, r)
    notes.append(rm.removal_keeps(prep, share, prep.X[:, keep], Xpk))
    return Perturbed(X=Xpk, loadings=loadings_frame(plan, prep, "PC"), perturbed=tuple(range(1, r + 1)),
                     planned=planned_share(plan, prep), basis=plan.dec.G[:, :r] * sd_pop[:, None], notes=tuple(notes))


def keeps(method, opts):
    return "means", "(variances and covariances NOT kept)"
