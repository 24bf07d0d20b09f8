"""Compile the package's numba kernels into numba's on-disk cache, in two processes at once,
before the test workers start (tests/conftest.py's ``pytest_configure``).

On a clean clone the cache is empty, and every process that needs a kernel compiles it:
both pytest-xdist workers, and the Dask workers, dashboard servers and CLI runs the first
tests start (67 CPU-s for the kernels of one process, measured: MDAV 36, the floors'
nearest-record and k-NN kernels 20, general protection's leave-one-out links 9).  Compiled
once here, in two halves side by side (MDAV in one, everything else in the other), every
later process loads them from the cache in about 3 s.  On a warm checkout this only loads
them.  Synthetic values only.

    python tests/warm_kernels.py mdav|risk
"""

import sys

import numpy as np
import pandas as pd


def mdav():
    from sdccore._methods.mdav import mdav_file_weighted, mdav_groups

    X = np.random.default_rng(0).standard_normal((300, 4))
    mdav_groups(X, 3)
    mdav_file_weighted(X, 3)


def risk():
    import sdccore

    rng = np.random.default_rng(0)
    toy = pd.DataFrame(np.exp(rng.standard_normal((60, 4)) @ np.triu(np.ones((4, 4)))), columns=list("abcd"))
    for method, sens in (("fa", ["a"]), ("rankswap", ["a"]), ("cfa", ["a"]), ("ipso", ["a"]), ("pca", None),
                         ("rankswap", None)):
        res = sdccore.protect(toy, method, sensitive=sens, rng=0, allow_unsafe="kernel warm-up, synthetic")
        sdccore.evaluate(toy, res.data, sensitive=sens)


if __name__ == "__main__":
    {"mdav": mdav, "risk": risk}[sys.argv[1]]()
