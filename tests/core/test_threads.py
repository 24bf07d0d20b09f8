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


def test_a_measurement_runs_on_one_blas_thread_and_a_small_one_on_one_numba_thread():
    """``by_work``: evaluate's whole call on one BLAS thread; below SMALL_WORK distance cells
    numba's kernels on one thread too (threadpoolctl does not see numba's OpenMP pool, so
    ``one_thread(None)`` left it at two: evaluate EIA 0.53 -> 0.50 CPU-s); the calling
    thread's numba count restored after the call, also when it raises."""
    import numba

    before = numba.get_num_threads()
    outside = _blas_threads()
    with threads.by_work(threads.SMALL_WORK - 1):
        assert numba.get_num_threads() == 1
        if outside:
            assert set(_blas_threads()) == {1}
    assert numba.get_num_threads() == before and _blas_threads() == outside
    with threads.by_work(threads.SMALL_WORK):  # a large file: numba's threads kept
        assert numba.get_num_threads() == before
    with pytest.raises(RuntimeError), threads.by_work(10):
        raise RuntimeError("a measurement that fails")
    assert numba.get_num_threads() == before and _blas_threads() == outside


def test_evaluate_is_the_same_on_one_thread_or_the_machine_s_own():
    """The thread choice changes the time, not the figures: evaluate on a small file (one numba
    thread) against the same call with the large-file rule forced (numba's own threads)."""
    g = np.random.default_rng(5)
    X = pd.DataFrame(g.standard_normal((400, 5)), columns=list("abcde"))
    Y = X + g.normal(0, 0.5, X.shape)
    small = sdccore.evaluate(X, Y, sensitive=["a"])
    old = threads.SMALL_WORK
    try:
        threads.SMALL_WORK = 0
        large = sdccore.evaluate(X, Y, sensitive=["a"])
    finally:
        threads.SMALL_WORK = old
    assert small.scores == large.scores
    assert small.risk.variables.equals(large.risk.variables)
