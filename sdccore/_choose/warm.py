"""Every compiled kernel built once, ahead of the first real use (issue 42: the first run).

numba compiles a kernel the first time it is called and keeps the machine code on disk
(its disk cache, in the ``__pycache__`` folder beside the source, or numba's user cache where
that folder cannot be written).  On a fresh install the first comparison of the dashboard
waited about 30 s for it (Tarragona, 8 methods x 10 runs, 2 cores): MDAV's kernels 10 s, the
nearest-record kernel 4.5 s, the leave-one-out nearest neighbours 2.9 s, IPSO's repair 0.6 s,
numba's own sorts the rest.  ``compile_kernels`` calls every method and measure on a small
synthetic file (no user data): selective and general protection, sampling weights, missing
cells and the risk and utility measures, so that every kernel is compiled with the argument
types real files give.  ``python -m sdccore warm`` runs it (the README's install commands do),
and the dashboard runs it in the background as it starts.

``kernels`` lists the package's compiled kernels; a test checks that ``compile_kernels`` leaves
none of them uncompiled, so a new kernel cannot slip past it.
"""

from __future__ import annotations

import importlib
import time

import numpy as np

__all__ = []

# the modules holding compiled kernels (a test checks that no other sdccore module has one)
# kernels that are not compiled on their own: a test's reference implementation
REFERENCE_ONLY = ("sdccore._methods.perturbations._rankswap_order_scan",)
KERNEL_MODULES = ("sdccore._methods.mdav", "sdccore._methods.perturbations", "sdccore._methods.conditional_kernel",
                  "sdccore._risk.linkage", "sdccore._core.nearest", "sdccore._risk.intruders")


def kernels():
    """{'module.function': dispatcher} of every numba kernel of the package that is compiled on
    its own (not those inlined into their callers, nor a test's reference)."""
    from numba.core.registry import CPUDispatcher

    out = {}
    for name in KERNEL_MODULES:
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            key = f"{name}.{attr}"
            if (isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name and key not in REFERENCE_ONLY
                    and obj.targetoptions.get("inline") != "always"):
                out[key] = obj
    return out


def _toy():
    """A small skewed file with a code column, a weight column and a few missing cells
    (synthetic: no user data)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 80
    X = np.exp(rng.standard_normal((n, 4)) @ np.triu(np.ones((4, 4))) * 0.5)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    df["region"] = np.repeat(["north", "south"], n // 2)
    df["w"] = rng.uniform(1.0, 3.0, n)
    return df


def compile_kernels(*, progress=None):
    """Compile the numerical kernels once, ahead of the first real run: each built-in method and
    the risk and utility measures run once on a small synthetic file (no user data), so that
    numba compiles every kernel (about 25 CPU-seconds after an install) or loads it from its
    disk cache (about a second).  ``python -m sdccore warm`` calls it; the dashboard calls it in
    the background as it starts.

    Parameters
    ----------
    progress : callable, optional
        Called with a short line per step (the command line prints them).

    Returns
    -------
    dict
        {step: seconds} for each method and protection run, e.g. ``'M-AGG, selective'``.

    Examples
    --------
    >>> import sdccore
    >>> steps = sdccore.compile_kernels()
    >>> "M-AGG, selective, weighted" in steps and "IPSO, selective, missing cells" in steps
    True
    """
    import warnings

    from .._measures.evaluate import evaluate
    from .._methods import BUILT_IN, method_info
    from .._protect.pipeline import protect

    say = progress or (lambda line: None)
    done = {}
    df = _toy()
    num = df[["a", "b", "c", "d"]]
    gaps = num.copy()
    gaps.iloc[[3, 17, 40], 1] = np.nan
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in BUILT_IN:
            info = method_info(name)
            selective = ["a"]
            cases = [(num, selective, {})]
            if not info.conditional:
                cases.append((num, None, {}))
            if info.strata:  # the methods that take sampling weights (M-AGG's weighted MDAV kernel)
                cases.append((df.drop(columns="region"), selective, {"weights": "w"}))
            if info.conditional:  # the conditional methods' repair kernel with missing cells
                cases.append((gaps, selective, {}))
            for data, sens, opts in cases:
                t = time.perf_counter()
                res = protect(data, name, sensitive=sens, rng=0, allow_unsafe="kernel warm-up on synthetic data",
                              **opts)
                evaluate(data, res.data, sensitive=sens, _with_plugins=False)  # a user's analyses: not on a toy
                step = (f"{info.label}, {'selective' if sens else 'general'}"
                        f"{', weighted' if 'weights' in opts else ''}{', missing cells' if data is gaps else ''}")
                done[step] = time.perf_counter() - t
                say(f"{step}: {done[step]:.1f} s")
    # M-AGG's blocks on the Dask engine call the weighted MDAV kernel directly
    from .._methods.mdav import mdav_file_weighted

    t = time.perf_counter()
    mdav_file_weighted(np.asarray(num, dtype=np.float64), 3)
    done["M-AGG, in blocks (Dask)"] = time.perf_counter() - t
    say(f"M-AGG, in blocks (Dask): {done['M-AGG, in blocks (Dask)']:.1f} s")
    # rank swapping in pairs (sdcMicro's rankSwap, recipes before format 8): its own kernel
    from .._methods.perturbations import rankswap

    t = time.perf_counter()
    rankswap(np.asarray(num["a"], dtype=np.float64), 40.0, np.random.default_rng(0))
    done["Rank swapping in pairs"] = time.perf_counter() - t
    say(f"Rank swapping in pairs: {done['Rank swapping in pairs']:.1f} s")
    # the floors' leave-one-out link screens the tiles of a release of 16 x SCREEN_TILE records or more
    from .._core.nearest import SCREEN_TILE, nearest_without

    t = time.perf_counter()
    big = np.random.default_rng(0).standard_normal((16 * SCREEN_TILE, 3))
    nearest_without(big[:4], big, [[0], [1, 2]], seed=np.arange(4))
    done["Leave-one-out link, large release"] = time.perf_counter() - t
    say(f"Leave-one-out link, large release: {done['Leave-one-out link, large release']:.1f} s")
    say(f"every kernel ready in {time.perf_counter() - t0:.1f} s")
    return done
