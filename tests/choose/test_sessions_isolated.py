"""One caller's cancel, disconnect or dead worker never reaches another caller's comparison
(issue 36): the dashboard's sessions share the worker processes of this server process.

Before, closing joblib's generator (a Cancel, or a closed tab's StopException raised in the
progress callback) aborted the shared loky executor: every other session's runs died with a
KeyError, a RuntimeError or a progress bar frozen for minutes."""

import os
import signal
import threading
import time

import pandas as pd
import pytest

import sdccore
from sdccore._choose import pool as _pool

psutil = pytest.importorskip("psutil")

CONFIGS = {"PCA": {"method": "pca"}, "Noise": {"method": "noise"}}


@pytest.fixture(scope="module")
def tarr():
    return sdccore.load_dataset("tarragona").iloc[:300].reset_index(drop=True)  # runs of about 0.2 CPU-s


# runs a configuration in the comparisons every parallel run is checked against: 6 runs in all, 3 in
# each of two worker processes (what is tested is where runs go and what comes back, not how many)
REPS = 3


@pytest.fixture(scope="module")
def alone(tarr):
    """The comparison computed in this process alone: what every parallel run must equal."""
    return sdccore.compare(tarr, CONFIGS, reps=REPS, rng=7, n_jobs=1)


def _same(a, b):
    cols = ["config", "run", "seed", "dbrl", "id", "pil", "summary", "floors_ok"]
    pd.testing.assert_frame_equal(a.runs[cols].reset_index(drop=True), b.runs[cols].reset_index(drop=True))


def _workers():
    kids = psutil.Process().children(recursive=True)
    out = []
    for k in kids:
        try:
            if "resource_tracker" not in " ".join(k.cmdline()):
                out.append(k)
        except psutil.Error:
            pass
    return out


def test_a_cancel_or_a_disconnect_never_reaches_another_callers_runs(tarr, alone):
    """Caller A stops after 2 runs: by returning False (Cancel) and by an exception that is
    no Exception (Streamlit's StopException when a tab closes) raised in its progress
    callback; caller B, running at the same time in the same pool, gets all its runs, equal
    to the runs computed alone."""

    class Gone(BaseException):  # as streamlit's StopException: BaseException, not Exception
        pass

    got, errors = {}, []

    def b():
        try:
            got["b"] = sdccore.compare(tarr, CONFIGS, reps=REPS, rng=7, n_jobs=2)
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    def a_cancel(done, total):
        return done < 2

    def a_gone(done, total):
        if done >= 2:
            raise Gone()

    for stop in (a_cancel, a_gone):
        t = threading.Thread(target=b)
        t.start()
        time.sleep(0.3)
        try:
            res = sdccore.compare(tarr, CONFIGS, reps=10, rng=1, n_jobs=2, progress=stop)
            assert res.cancelled and len(res.runs) == 2
        except Gone:
            pass
        t.join(300)
        assert not errors, errors
        _same(got.pop("b"), alone)


def test_a_dead_worker_is_replaced_and_its_runs_done_again(tarr, alone):
    """A worker killed mid-comparison (as the kernel's out-of-memory killer does): the pool
    is replaced, the lost runs computed again, the result equal to the runs computed alone;
    and the next comparison runs in working processes."""
    sdccore.warm_workers(n_jobs=2, wait=True)
    killed = []

    def progress(done, total):
        if done == 1 and not killed:
            w = _workers()
            assert w, "no worker processes to kill"
            os.kill(w[0].pid, signal.SIGKILL)
            killed.append(w[0].pid)

    res = sdccore.compare(tarr, CONFIGS, reps=REPS, rng=7, n_jobs=2, progress=progress)
    assert killed
    _same(res, alone)
    _same(sdccore.compare(tarr, CONFIGS, reps=REPS, rng=7, n_jobs=2), alone)


def test_a_run_lost_again_and_again_is_one_line():
    """A run that kills its worker each time it is tried: one RuntimeError that says what to
    do, after RETRIES tries, not an endless loop."""
    it = _pool.ordered_runs(os._exit, [((3,), {})] * 4, 2)
    with pytest.raises(RuntimeError, match="worker process stopped 3 times.*SDCCORE_JOBS=1"):
        next(it)
    it.close()
    assert list(_pool.ordered_runs(abs, [((-2,), {}), ((5,), {}), ((-7,), {}), ((1,), {})], 2)) == [2, 5, 7, 1]


def test_closing_cancels_only_the_runs_not_started():
    """What a caller has submitted and not started is cancelled when it stops; a run already
    running finishes in its worker (its result dropped), and nothing is killed."""
    pool = _pool.pool(2)
    before = {p.pid for p in _workers()}
    it = _pool.ordered_runs(time.sleep, [((0.2,), {})] * 40, 2)
    next(it)
    it.close()
    time.sleep(0.5)
    assert pool is _pool.pool(2)  # the same executor: nobody's processes were torn down
    assert before <= {p.pid for p in _workers()} or not before
    t = time.perf_counter()
    assert list(_pool.ordered_runs(abs, [((-1,), {})] * 4, 2)) == [1] * 4
    assert time.perf_counter() - t < 5  # the 38 cancelled sleeps were never run


def test_a_failure_is_one_line_for_the_user_and_a_logged_place_without_data(monkeypatch):
    """The user gets one line with a reference and what to do; the server's log gets the
    same reference, the exception's type and where it was raised, never its message (which
    can hold data values)."""
    import logging

    from ui import session

    shown, logged = [], []
    monkeypatch.setattr(session.st, "error", shown.append)

    class Keep(logging.Handler):
        def emit(self, record):
            logged.append(record.getMessage())

    h = Keep()
    session.LOG.addHandler(h)

    def deep():
        raise RuntimeError("SALES of firm 4711 is 7340000")

    try:
        try:
            deep()
        except RuntimeError as exc:
            session._show_error(exc)
    finally:
        session.LOG.removeHandler(h)
    assert len(shown) == 1 and len(logged) == 1
    ref = shown[0].split("reference ")[1][:8]
    assert "RuntimeError" in shown[0] and "run the step again" in shown[0] and "\n" not in shown[0]
    assert ref in logged[0] and "RuntimeError" in logged[0]
    assert "test_sessions_isolated.py:" in logged[0] and "in deep" in logged[0]
    assert not any(s in logged[0] + shown[0] for s in ("4711", "7340000", "SALES"))
