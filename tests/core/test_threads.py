"""Issue 42: BLAS gets a second thread only where the product pays for it and a core is free
(two OpenBLAS threads collapsed on the shared machine: the propensity fit of 50,000 x 13 took
12.4 s wall on two threads and 1.1 s on one at load 2.2; benchmarks/bench_speed.py prints both)."""
import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_info

import sdccore
from sdccore._core import threads


def _blas_threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_a_small_product_or_a_busy_machine_gets_one_thread(monkeypatch):
    if not _blas_threads():
        pytest.skip("no BLAS library loaded that threadpoolctl can limit")
    monkeypatch.setattr(threads, "busy", lambda: False)
    with threads.blas_threads(threads.SMALL_FLOP / 10):
        assert set(_blas_threads()) == {1}
    outside = _blas_threads()
    with threads.blas_threads(threads.SMALL_FLOP * 10):  # large, a core free: BLAS's own choice
        assert _blas_threads() == outside
    monkeypatch.setattr(threads, "busy", lambda: True)
    with threads.blas_threads(threads.SMALL_FLOP * 10):  # large, but no core free
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == outside  # restored after the call


def test_busy_reads_the_load_against_the_cores(monkeypatch):
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.6, 0.0, 0.0))
    assert threads.busy()  # within half a core of 2
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.4, 0.0, 0.0))
    assert not threads.busy()

    def unreadable():
        raise OSError("no load average here")
    monkeypatch.setattr(threads.os, "getloadavg", unreadable)
    assert not threads.busy()


def test_the_propensity_score_is_the_same_on_one_thread_or_two(monkeypatch):
    """The thread count changes the time, not the figure (the fit is the same to rounding)."""
    g = np.random.default_rng(3)
    X = pd.DataFrame(g.standard_normal((3000, 6)), columns=list("abcdef"))
    Y = X + g.normal(0, 0.3, X.shape)
    monkeypatch.setattr(threads, "busy", lambda: True)
    one = sdccore.propensity_score(X, Y)
    monkeypatch.setattr(threads, "busy", lambda: False)
    monkeypatch.setattr(threads, "SMALL_FLOP", 0)
    two = sdccore.propensity_score(X, Y)
    assert one == pytest.approx(two, rel=1e-9, abs=1e-12)
