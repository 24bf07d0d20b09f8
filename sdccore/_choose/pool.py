"""The worker processes of repeated runs (``compare``, ``search``, ``stronger_settings``):
one pool of processes per worker count, shared by every caller of this process (the
dashboard's sessions), and never torn down by one of them.

Each caller submits its own runs, at most ``2 x workers`` ahead of the one it waits for,
and cancels only its own when it stops (a Cancel, a closed tab, Ctrl-C): runs another
caller submitted are never touched.  joblib's ``Parallel`` did not allow that: closing
its generator aborted the shared executor and killed the runs of every other session
(issue 36: one closed tab broke the comparisons of two other sessions).  A worker that
dies (killed, out of memory) breaks the pool for everyone: the pool is replaced and each
caller submits its lost runs again, at most ``RETRIES`` times a run."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import threading

__all__ = []

IDLE_SECONDS = 300     # a worker idle this long stops (started again when runs come)
RETRIES = 2            # a run lost with a dead worker is submitted again at most this often
AHEAD = 2              # runs a caller keeps submitted per worker

WORKER_NICENESS = 5    # worker processes yield the CPU to the process that serves the user

_LOCK = threading.Lock()
_POOLS = {}            # workers -> executor


@contextlib.contextmanager
def children_ignore_sigint():
    """Start worker processes with SIGINT ignored: a process started so inherits the
    ignored signal and Python installs no KeyboardInterrupt handler in it, so Ctrl-C in the
    terminal (sent to every process of the foreground group) reaches only this process,
    which prints one line and stops them.  Held only while processes are started (a few
    milliseconds), never while they work: a Ctrl-C then would be lost.  Outside the main
    thread signals cannot be changed; the workers' initializer ignores SIGINT itself."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def children_hold_sigint():
    """Start processes with SIGINT both blocked in this thread and ignored: the processes
    started inherit the ignored signal (a worker in the middle of its imports printed a
    KeyboardInterrupt traceback when only blocked: starting a process unblocks it there), and a
    Ctrl-C that comes meanwhile stays pending here (Linux keeps a blocked signal pending even
    while it is ignored) and is handled the moment the start is over, the handler restored
    first (ignored alone, it was lost: a loaded CI run went on to the end)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        with children_ignore_sigint():
            yield
        return
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _init_worker():
    """First thing in every worker process: Ctrl-C is the parent's to handle, and the
    worker runs at a lower priority than the process that serves the user."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):
        pass
    if hasattr(os, "nice"):
        try:
            os.nice(WORKER_NICENESS)
        except OSError:  # not allowed here: run at normal priority
            pass


def _broken_types():
    from concurrent.futures.process import BrokenProcessPool

    from joblib.externals.loky.process_executor import BrokenProcessPool as LokyBroken
    from joblib.externals.loky.process_executor import ShutdownExecutorError

    return (BrokenProcessPool, LokyBroken, ShutdownExecutorError)


def quiet_tracker(tracker):
    """A resource tracker (multiprocessing's, or loky's for this module's pools) started, and
    started again if it dies, with its standard error on os.devnull.  What it would say is no
    user's message: it cleans up after the processes (loky's printed "There appear to be 1
    leaked semlock objects to clean up at shutdown" after a command line's comparison, whose
    workers are killed at its end).  The tracker inherits this process's descriptor 2, so that
    descriptor points to os.devnull for the few milliseconds of a start (only when one is due):
    around its ``_launch`` where it has one (loky's, whose registrations launch it without
    ``ensure_running``), else around ``ensure_running``."""
    import warnings

    name = "_launch" if hasattr(tracker, "_launch") else "ensure_running"
    start = getattr(tracker, name)
    if getattr(start, "_sdccore_quiet", False):
        return
    alive = getattr(tracker, "_check_alive", None) if name == "ensure_running" else None

    def quiet(*args, **kwargs):
        if alive is not None and getattr(tracker, "_fd", None) is not None and alive():
            return None
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
            with warnings.catch_warnings():  # "process died unexpectedly, relaunching": not the user's concern
                warnings.simplefilter("ignore")
                return start(*args, **kwargs)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(null)

    quiet._sdccore_quiet = True
    setattr(tracker, name, quiet)


def pool(workers: int, *, replace=None):
    """The shared executor of ``workers`` processes (created on first use; ``replace``,
    an executor found broken, is replaced unless another caller did it already)."""
    from joblib.externals.loky import ProcessPoolExecutor

    with _LOCK:
        ex = _POOLS.get(workers)
        if ex is not None and replace is not None and ex is replace:
            try:
                ex.shutdown(wait=False, kill_workers=True)
            except Exception:  # noqa: BLE001 - a broken pool may fail to shut down: it is dropped anyway
                pass
            ex = None
        if ex is None:
            from multiprocessing import resource_tracker as mp_tracker

            from joblib.externals.loky.backend import resource_tracker

            quiet_tracker(resource_tracker._resource_tracker)  # and multiprocessing's, which loky starts too
            quiet_tracker(mp_tracker._resource_tracker)
            ex = ProcessPoolExecutor(max_workers=workers, timeout=IDLE_SECONDS, initializer=_init_worker)
            _POOLS[workers] = ex
        return ex


def _submit(workers, fn, args, kwargs):
    """Submit one run, replacing a broken pool once; (executor, future)."""
    ex = pool(workers)
    try:
        # a submit may start the worker processes: they start with SIGINT ignored, and a Ctrl-C
        # meanwhile stays pending here and is handled the moment the submit is over
        with children_hold_sigint():
            return ex, ex.submit(fn, *args, **kwargs)
    except _broken_types():
        ex = pool(workers, replace=ex)
        with children_hold_sigint():
            return ex, ex.submit(fn, *args, **kwargs)


def ordered_runs(fn, calls, workers):
    """``fn(*args, **kwargs)`` for each ``(args, kwargs)`` of ``calls``, as a generator of
    results in order, computed in the shared pool of ``workers`` processes.  Closing the
    generator cancels this caller's runs not yet started (never anyone else's); an
    exception of a run is raised here; a run lost with a dead worker is submitted again."""
    calls = list(calls)
    queue = collections.deque()   # (index, executor, future), in order
    tries = collections.Counter()
    nxt = 0
    try:
        for _ in calls:
            while nxt < len(calls) and len(queue) < AHEAD * workers:
                queue.append((nxt, *_submit(workers, fn, *calls[nxt])))
                nxt += 1
            idx, ex, fut = queue.popleft()
            try:
                out = fut.result()
            except _broken_types():
                out = _again(workers, fn, calls, idx, ex, queue, tries)
            yield out
    finally:
        for _, _, fut in queue:
            fut.cancel()


def _again(workers, fn, calls, idx, ex, queue, tries):
    """A run lost with a dead worker: the pool is replaced, the run and the runs submitted
    after it (lost with the same pool) are submitted again; the run's result."""
    while True:
        tries[idx] += 1
        if tries[idx] > RETRIES:
            raise RuntimeError(
                f"a worker process stopped {RETRIES + 1} times while computing the same run (often: too little "
                f"memory); run again with fewer records or variables, or with n_jobs=1 (SDCCORE_JOBS=1).")
        pool(workers, replace=ex)
        for k, (j, ex_j, fut_j) in enumerate(list(queue)):
            if ex_j is ex:
                fut_j.cancel()
                queue[k] = (j, *_submit(workers, fn, *calls[j]))
        ex, fut = _submit(workers, fn, *calls[idx])
        try:
            return fut.result()
        except _broken_types():
            continue


def warm(workers: int, fn, *, wait: bool):
    """Start the pool's processes and ``fn`` in each (the imports a run needs); with
    ``wait``, return when they are ready (the SIGINT-ignoring window covers only the start,
    never the wait).  This module imports nothing of the package: the caller says what to
    import."""
    futs = [_submit(workers, fn, (), {})[1] for _ in range(workers)]
    if wait:
        for f in futs:
            try:
                f.result()
            except Exception:  # noqa: BLE001 - a warm-up that failed is retried by the first run
                pass


def shutdown_all():
    """Stop every pool's processes now (tests; the command line stops them on exit)."""
    with _LOCK:
        for ex in _POOLS.values():
            try:
                ex.shutdown(wait=False, kill_workers=True)
            except Exception:  # noqa: BLE001
                pass
        _POOLS.clear()
