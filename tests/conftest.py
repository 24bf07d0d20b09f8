import sys

import numpy as np
import pandas as pd
import pytest

import sdccore


@pytest.fixture(scope="session")
def tarragona():
    return sdccore.load_dataset("tarragona")


@pytest.fixture(scope="session")
def casc():
    return sdccore.load_dataset("casc")


def correlated(n=2000, m=6, seed=0):
    """Synthetic correlated data with skewed columns and different scales."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, m))
    X = rng.standard_normal((n, m)) @ A
    X[:, 0] = np.exp(X[:, 0] / 3) * 1000
    X *= rng.uniform(0.01, 1000, m)
    return pd.DataFrame(X, columns=[f"v{j}" for j in range(m)])


@pytest.fixture(scope="session")
def synthetic():
    return correlated()


# The engine's mechanics (exact means, unbiased covariances, exact rebuilds) are stated for
# values on the original scale, without rounding or clipping, and hold whatever the risk
# floors say; tests of those mechanics switch the release steps off and say why.
RAW = dict(transform="none", bounds="none", rounding="none")
MECHANISM = "testing the mechanism, not a release"


def raw_protect(data, **kw):
    """protect without its gate (the engine sdccore.protect wraps), plausible-value steps off:
    the floors are reported, not enforced, and an unchanged column is not refused, so the
    mechanics (e.g. exact reconstruction without perturbation) can be tested."""
    from sdccore._protect import _protect

    kw = {**RAW, **kw}
    kw.pop("allow_unsafe", None)
    method = kw.pop("method", "fa")
    sensitive = kw.pop("sensitive", None)
    rng = kw.pop("rng", None)
    return _protect(data, method, sensitive, rng, kw)


@pytest.fixture(autouse=True)
def _main_module_restored():
    """Streamlit's script runner (AppTest too) installs the page as ``sys.modules["__main__"]``
    and leaves it there.  A process started later with multiprocessing's spawn (a Dask
    LocalCluster's workers) then imports that page as its main module and runs the whole
    dashboard in every worker: in one pytest process after the AppTest files, a 400 MB Dask
    worker was paused by its memory limit at start-up and the suite hung.  Each test gets
    the interpreter's own ``__main__`` back."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main
