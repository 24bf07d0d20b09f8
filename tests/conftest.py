import contextlib
import os
import sys
from pathlib import Path

# Two pytest-xdist workers share this machine's two cores: each keeps its linear algebra to
# one thread (and so do the servers, CLI runs and Dask workers the tests start, which read
# these variables).  With two BLAS threads per worker the four threads fight for two cores,
# and a busy machine makes that up to ten times slower in CPU time (issue 42's audit:
# evaluate on EIA 0.67 CPU-s with one thread against 10.5 with two).  Set before numpy loads.
# The same for numba's parallel kernels (DBRL's nearest records, the k-NN prior, the floors'
# links): two threads each in two workers spin at their barriers while the other is
# descheduled (tests/risk and tests/measures: 131 CPU-s with two, 123 with one, measured);
# tests/package/test_reproducible.py runs them with two threads and checks the same text.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The dashboard draws a random seed for every session (ui.session.fresh_seed); the tests pin
# the first seed so that their figures are the same in every run (and so do the servers they
# start, which read it).  tests/dashboard/test_app.py checks the random seed without it.
os.environ.setdefault("SDCCORE_SEED", "12345")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import sdccore  # noqa: E402

threadpool_limits(1)  # in case numpy was loaded before this file (a plugin)

# The test files live in one folder per room (tests/core/, tests/methods/ ...); the helpers
# they share (this file's run_cli and raw_protect, toy_method.py, mdav_reference.py, prior_reference.py) stay
# here in tests/.  pytest's default "prepend" import mode puts this folder on sys.path when
# it imports this file; said here so that `import toy_method` from any folder does not rest
# on that detail.
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


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


def older_recipe(result, option, version):
    """The recipe of ``result`` as a recipe of format ``version`` wrote it, before ``option``
    existed (the option left out): what ``LEGACY_BEFORE`` must rebuild."""
    import json

    rec = json.loads(result.recipe_json())
    assert rec["recipe_version"] == sdccore.RECIPE_VERSION and option in rec
    rec["recipe_version"] = version
    del rec[option]
    return sdccore.Recipe.from_json(json.dumps(rec))


def raw_protect(data, **kw):
    """protect without its gate (the engine sdccore.protect wraps), plausible-value steps off:
    the floors are reported, not enforced, and an unchanged column is not refused, so the
    mechanics (e.g. exact reconstruction without perturbation) can be tested."""
    from sdccore._protect.pipeline import _protect

    kw = {**RAW, **kw}
    kw.pop("allow_unsafe", None)
    method = kw.pop("method", "fa")
    sensitive = kw.pop("sensitive", None)
    rng = kw.pop("rng", None)
    return _protect(data, method, sensitive, rng, kw)


def no_risk_profile(*args, **kwargs):
    """In place of the pipeline's risk profile, for tests of the released data alone."""
    return None


def releases_without_risk(monkeypatch, df, seeds, **kw):
    """raw_protect's released data for each seed, without the risk profile.  The risk profile
    is measured on the finished release and changes nothing in it, and it was about 97 % of
    each run's time (the intruder battery on every variable); the tests over many seeds are
    about the release's moments, so it is switched off for them.  The first seed's release is
    checked bit for bit against the whole pipeline's (risk profile measured)."""
    from sdccore._protect import pipeline

    seeds = list(seeds)
    whole = raw_protect(df, rng=seeds[0], **kw).data
    with monkeypatch.context() as m:
        m.setattr(pipeline, "risk_profile", no_risk_profile)
        out = [raw_protect(df, rng=s, **kw).data for s in seeds]
    pd.testing.assert_frame_equal(out[0], whole, check_exact=True)
    return out


@pytest.fixture()
def no_prefetch(monkeypatch):
    """The Explore page's numbers (the recommendation runs its candidate methods) are computed
    ahead in a background thread when the data or roles change (ui.compute.prefetch_explore):
    3-4 CPU-s a session start or a change of roles, going on after the test has ended.  The
    tests that never read them switch that off, as the dashboard runs where numba's kernels
    cannot run in a second thread (a page that needs them computes them when it asks,
    compute.cached); every page, the main flow and the tests of the prefetch and of the
    Download page keep it."""
    from ui import compute

    monkeypatch.setattr(compute, "_PREFETCHER", [None])


@contextlib.contextmanager
def prefetch_held():
    """The upload starts Explore's numbers (correlations, the recommendation, which runs the
    candidate methods) in the dashboard's background threads, for the Explore page to find
    ready.  A script that never opens Explore and waits for nothing left them running behind
    the later tests (about 50 CPU-s for test_hostile.py's uploads).  While the script runs,
    the prefetch goes to an executor whose one thread is held: the upload path calls and
    submits exactly as before; the submitted runs, never read, are cancelled afterwards."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from ui import compute

    gate = threading.Event()
    held = ThreadPoolExecutor(max_workers=1, thread_name_prefix="held-prefetch")
    held.submit(gate.wait)
    saved = list(compute._PREFETCHER)
    compute._PREFETCHER[:] = [held]
    try:
        yield
    finally:
        compute._PREFETCHER[:] = saved
        held.shutdown(wait=False, cancel_futures=True)
        gate.set()


@pytest.fixture(scope="module")
def component_manifests_scanned_once():
    """Each new AppTest has streamlit scan the metadata of every installed distribution for
    custom components (streamlit 1.67: about 0.8 CPU-s, four fifths of one upload case of
    test_hostile.py).  The installed packages do not change while the tests run, so the scan
    is made once in each test file that asks for it and its answer (the same list) handed to
    each of its AppTests; what the dashboard's pages do is untouched."""
    from streamlit.components.v2 import manifest_scanner

    found = manifest_scanner.scan_component_manifests()
    mp = pytest.MonkeyPatch()
    mp.setattr(manifest_scanner, "scan_component_manifests", lambda *a, **k: list(found))
    yield
    mp.undo()


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


def run_cli(args):
    """``python -m sdccore ARGS`` in this process: (exit code, standard output, standard error)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from sdccore.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


# ``python -m sdccore ARGS`` run inside a fresh Python process, as source text that a test's
# ``python -c`` script starts with (tests/release/test_recipes.py, tests/package/test_reproducible.py):
# ``cli(args)`` gives (exit code, standard output, standard error) as the command would.
CLI_IN_PROCESS = r"""
import contextlib, io, json, runpy, sys
def cli(args):
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["sdccore", *args]
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("sdccore", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()
"""


@pytest.fixture(scope="module")
def streamlit_url(tmp_path_factory):
    """``streamlit run app.py`` on a free local port with the project's config, its output in
    a log file (a pipe nobody reads fills up and blocks the server); yields its URL."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path_factory.mktemp("streamlit") / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "ui", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1"], cwd=root,
                            env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false"),
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not become healthy in 60 s")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def ws_upgrade(port, host, origin):
    """The status line of a websocket upgrade of the dashboard's /_stcore/stream on
    127.0.0.1:port with this Host and Origin headers (what a browser sends for a page that
    opens the socket)."""
    import base64
    import os
    import socket

    key = base64.b64encode(os.urandom(16)).decode()
    req = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
           f"Sec-WebSocket-Protocol: streamlit\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(req.encode())
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(1024)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n")[0].decode(errors="replace")


# pytest-xdist (pytest.ini: -n 2) hands the tests out in collection order, a worker taking
# the next one when it is nearly done (the browser tests go first as one group).  The
# longest are moved to the front, so that neither worker is left running one of them at the
# end while the other has nothing to do; the order within each part is kept.  Measured with
# --durations; a test missing here only runs later.
LONGEST_FIRST = (
    "tests/scale/test_dask.py::test_data_larger_than_the_worker_memory_limit",
    "tests/methods/test_dask_exchange.py::test_every_permutation_equally_likely_with_uneven_partitions",
    "tests/methods/test_dask_exchange.py::test_groups_are_independent_and_rows_of_a_group_move_together",
    "tests/scale/test_dask.py",
    "tests/choose/test_compare.py",
    "tests/io/test_dask_reading.py",
    "tests/package/test_hostile_two.py::test_killing_the_cli_mid_write_leaves_the_previous_file_whole",
    "tests/package/test_api.py::test_readme_library_example_runs",
    "tests/package/test_api.py::test_examples_run",
    "tests/package/test_safety.py::test_search_ranks_only_configurations_that_meet_the_floors",
    "tests/package/test_security_three.py::test_a_port_that_is_not_a_dask_scheduler_is_refused_within_20_s",
    "tests/cli/test_cli.py::test_compare_and_recommend",
    "tests/cli/test_interrupt.py",
    "tests/protect/test_strata.py::test_dashboard_strata_and_weights",
)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        return next((i for i, p in enumerate(LONGEST_FIRST) if item.nodeid.startswith(p)), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: the order within each part is kept


# Tests marked ``alone`` hold a wall-clock limit that covers processes they start (a refusal
# within 20 s, an exit within 20 s of Ctrl-C): under pytest-xdist each waits until the other
# worker's test has ended and runs while no other test does (the other worker waits for it
# at its next test), so that another test's processes do not take the cores the limit was
# set for.  Two locks of the run's own folder: every test holds "run" shared, an ``alone``
# test holds it exclusively; "gate", held by an ``alone`` test while it waits, keeps the
# other worker from taking "run" again in the meantime.  Without xdist there is nothing to do.
_LOCKS = []


def _run_locks(config):
    if not _LOCKS:
        import os

        if not os.environ.get("PYTEST_XDIST_WORKER") or not config.option.basetemp:
            _LOCKS.append(None)
        else:
            folder = Path(config.option.basetemp).resolve().parent  # the run's, shared by its workers
            _LOCKS.append(tuple(open(folder / name, "a+") for name in ("alone-gate.lock", "alone-run.lock")))
    return _LOCKS[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    import fcntl

    locks = _run_locks(item.config)
    if locks is None:
        yield
        return
    gate, run = locks
    alone = item.get_closest_marker("alone") is not None
    if alone:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(run, fcntl.LOCK_EX)
    else:
        fcntl.flock(gate, fcntl.LOCK_SH)
        fcntl.flock(run, fcntl.LOCK_SH)
        fcntl.flock(gate, fcntl.LOCK_UN)
    try:
        yield
    finally:
        fcntl.flock(run, fcntl.LOCK_UN)
        if alone:
            fcntl.flock(gate, fcntl.LOCK_UN)


def pytest_configure(config):
    """Before pytest-xdist's workers start (in its controller): numba's kernels compiled
    into its cache once, in two processes side by side (tests/warm_kernels.py), instead of
    by every worker and every process the first tests start.  On a warm checkout this takes about 3 s.  A failure here is not the tests'
    business: the kernels then compile where they are first used, as before."""
    import subprocess

    if hasattr(config, "workerinput") or config.option.collectonly or not getattr(config.option, "numprocesses", 0):
        return  # a worker, or one process (-n 0), which compiles each kernel once anyway
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    script = str(Path(__file__).resolve().parent / "warm_kernels.py")
    procs = [subprocess.Popen([sys.executable, script, part], cwd=root, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for part in ("mdav", "risk")]
    for p in procs:
        try:
            p.wait(300)
        except subprocess.TimeoutExpired:
            p.kill()


def same_frame(a, b):
    """The same columns and values, numeric columns with their dtypes (text may come back
    as Arrow strings from Parquet): the Dask engine's release against the in-memory one."""
    assert list(a.columns) == list(b.columns)
    text = [c for c in a.columns if not pd.api.types.is_numeric_dtype(b[c])]
    pd.testing.assert_frame_equal(a.drop(columns=text), b.drop(columns=text))
    for c in text:
        assert a[c].astype(object).tolist() == b[c].astype(object).tolist(), c

@pytest.fixture(autouse=True)
def _no_background_work_left():
    """The dashboard prefetches Explore's numbers and the recommendation in a background thread
    (``ui.compute.prefetch_explore``); an AppTest can end while that thread still runs
    candidate methods, and a later test's registered analysis was then called by it (a plug-in
    analysis counting its calls saw one too many).  Each test waits for that thread's work and
    leaves no executor behind (the next session makes its own)."""
    yield
    compute = sys.modules.get("ui.compute")
    if compute is not None and compute._PREFETCHER:
        pool = compute._PREFETCHER.pop()
        if pool is not None:
            pool.shutdown(wait=True)
