"""The command line's Dask cluster: a client for ``--engine dask`` (a running scheduler's
address, refused if it does not answer in SCHEDULER_WAIT seconds, or a local cluster whose
workers ignore Ctrl-C so that the command line stops them itself)."""

from __future__ import annotations

import os
import threading

from .._choose.pool import children_hold_sigint, quiet_tracker

__all__ = []


SCHEDULER_WAIT = 15  # seconds a --scheduler address may take to answer (the whole refusal within 20 s)


def _client(args):
    """A distributed client: the scheduler at --scheduler, or a LocalCluster sized to this
    machine (one single-threaded worker process per core)."""
    import logging

    from distributed import Client, LocalCluster

    for name in ("distributed", "distributed.client", "distributed.worker", "distributed.nanny",
                 "distributed.scheduler", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)  # their tracebacks are not the user's message
    if args.scheduler:

        # a port that accepts connections but is not a Dask scheduler leaves the handshake
        # waiting past Client's own timeout (88 s and more): a wall-clock limit of 20 s
        got = {}

        def connect():
            try:
                got["client"] = Client(args.scheduler, timeout="20s")
            except BaseException as exc:  # reported below, in the main thread
                got["error"] = exc

        t = threading.Thread(target=connect, daemon=True)
        t.start()
        t.join(SCHEDULER_WAIT)
        if "client" in got:
            return got["client"], None
        why = type(got["error"]).__name__ if "error" in got else f"no answer within {SCHEDULER_WAIT} s"
        raise ValueError(f"no Dask scheduler answers at {args.scheduler} ({why}); start one (dask scheduler), check "
                         f"the address and port, or leave out --scheduler for a local cluster.")
    _quiet_resource_tracker()
    import warnings

    # the scheduler's own HTTP routes (health, no dashboard) move to a free port when 8787 is
    # taken, as by a second run on this machine: not the user's concern
    warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
    # its workers never see the terminal's Ctrl-C: blocked alone, a worker still importing distributed
    # when it came printed its KeyboardInterrupt traceback (the clean-clone CI, under load); ignored
    # too, the workers inherit the ignored signal, and one that comes meanwhile is handled here after
    with children_hold_sigint(), _children_stderr_forwarded():
        cluster = LocalCluster(n_workers=max(1, os.cpu_count() or 1), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.CRITICAL)
    return Client(cluster), cluster


_FORWARD = {"real": None, "read": None, "window": False, "drop": False, "busy": False}
DRAIN = 0.05  # seconds the interrupt waits for what was written before it to be forwarded


class _children_stderr_forwarded:
    """The processes started within it (the local cluster's workers, whose start-up can take
    seconds) get as standard error a pipe that a thread of this process forwards to its own,
    and no longer forwards once ``quiet_children`` is called (Ctrl-C): a worker stopped
    while it was still reading its start data from this process printed multiprocessing's
    ``EOFError: Ran out of input`` traceback after the command line's one line (1 run in
    8-11 of the Ctrl-C test).  This process's own descriptor 2 is the pipe only within the
    block; ``quiet_children`` gives it back at once if the interrupt comes there."""

    def __enter__(self):
        r, w = os.pipe()
        real = os.dup(2)
        _FORWARD.update(real=real, read=r, drop=False, busy=False)

        def forward():
            import select

            while True:
                # busy is set before the read empties the pipe, and quiet_children asks the pipe
                # before busy: bytes read but not yet written are never taken for none (a line
                # written in the window was dropped in 1 run of 6)
                try:
                    select.select([r], [], [])
                except (OSError, ValueError):
                    return
                _FORWARD["busy"] = True
                try:
                    data = os.read(r, 65536)
                except OSError:
                    _FORWARD["busy"] = False
                    return
                if not data:  # every worker has ended
                    os.close(r)
                    os.close(real)
                    _FORWARD["busy"] = False
                    return
                if not _FORWARD["drop"]:
                    try:
                        os.write(real, data)
                    except OSError:
                        pass
                _FORWARD["busy"] = False

        threading.Thread(target=forward, name="sdccore-worker-stderr", daemon=True).start()
        os.dup2(w, 2)  # the workers inherit the pipe; the last write end closes with the last of them
        os.close(w)
        _FORWARD["window"] = True
        return self

    def __exit__(self, *exc):
        if _FORWARD["window"]:
            _FORWARD["window"] = False
            os.dup2(_FORWARD["real"], 2)  # (the forwarder holds its own copy until the workers end)
        return False


def quiet_children():
    """What the workers write to standard error from now on is dropped (the command line
    stops them: their tracebacks are not the user's message) once what was written before
    is forwarded (at most DRAIN seconds), and this process's own standard error is its own
    again if the interrupt came while they started."""
    import time

    deadline = time.monotonic() + DRAIN  # what was written before the interrupt still goes out
    while (_FORWARD["read"] is not None and time.monotonic() < deadline
           and (_pending(_FORWARD["read"]) or _FORWARD["busy"])):  # this order: see forward()
        time.sleep(0.002)
    _FORWARD["drop"] = True
    if _FORWARD["window"] and _FORWARD["real"] is not None:
        _FORWARD["window"] = False
        os.dup2(_FORWARD["real"], 2)


def _quiet_resource_tracker():
    """multiprocessing's resource tracker (Dask's workers register their semaphores with
    it) started, and started again if it dies, with its standard error on os.devnull: a
    tracker killed during a run was started again and printed a KeyError traceback for each
    semaphore the dead one had registered (12 on a 600,000-record run, the release complete)
    (``pool.quiet_tracker``)."""
    from multiprocessing import resource_tracker as rt

    quiet_tracker(rt._resource_tracker)


def _stop_children():
    """Ctrl-C's end of this process's descendants: every worker stopped, then killed, and the
    multiprocessing resource trackers returned (to be killed last, right before exiting).
    Returns the trackers."""
    trackers = []
    try:
        import psutil
        kids = psutil.Process().children(recursive=True)

        def is_tracker(p):
            try:
                return "resource_tracker" in " ".join(p.cmdline())
            except Exception:
                return False

        trackers = [k for k in kids if is_tracker(k)]
        # the workers stopped first, then killed; multiprocessing's resource tracker last, right
        # before exiting: a thread of this process that found it dead printed a warning and a
        # traceback after the one line (1 run in 2 under load).  Stopped until no new one appears:
        # a process that a Dask nanny started between the listing and the stop outlived its parent
        # and printed a traceback (its start data cut off) after the one line (a loaded CI run)
        workers = {k.pid: k for k in kids if k not in trackers}
        for _ in range(5):
            for child in workers.values():
                try:
                    child.suspend()
                except Exception:
                    pass
            try:
                more = [k for k in psutil.Process().children(recursive=True)
                        if k.pid not in workers and not is_tracker(k)]
            except Exception:
                more = []
            if not more:
                break
            workers.update((k.pid, k) for k in more)
        for child in workers.values():
            try:
                child.kill()
            except Exception:
                pass
    except Exception:
        pass
    return trackers


def _pending(fd):
    """Bytes waiting in the pipe ``fd`` (0 where it cannot be asked)."""
    try:
        import array
        import fcntl
        import termios

        n = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, n)
        return n[0]
    except Exception:  # closed (every worker ended), or a system without FIONREAD
        return 0
