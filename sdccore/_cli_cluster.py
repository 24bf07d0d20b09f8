"""The command line's Dask cluster: a client for ``--engine dask`` (a running scheduler's
address, refused if it does not answer in SCHEDULER_WAIT seconds, or a local cluster whose
workers ignore Ctrl-C so that the command line stops them itself)."""

from __future__ import annotations

import os
import threading

from ._pool import children_block_sigint, children_ignore_sigint as _children_ignore_sigint  # noqa: F401

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
    with children_block_sigint():  # its workers never see the terminal's Ctrl-C; this process does
        cluster = LocalCluster(n_workers=max(1, os.cpu_count() or 1), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.CRITICAL)
    return Client(cluster), cluster
