"""Threads chosen by the work (issue 42): a BLAS call gets a second thread only where its product
is large enough to pay for it and the machine has a core free.

On the shared 2-core machine two OpenBLAS threads collapsed under load: scikit-learn's Hessian of
the propensity fit (8,184 x 66) took 30.8 ms wall and 4.1 ms CPU on one thread and 452 ms wall
and 53 ms CPU on two, at load 19 (the performance audit).  A thread that waits for a core, or
spins while the other finishes, costs CPU and wall time; on one thread a small product is
compute-bound and never waits."""

from __future__ import annotations

import contextlib
import os

SMALL_FLOP = 2e9  # a product below this many flop runs on one thread (about 0.1 s of one core)

_CONTROLLER = []


def busy() -> bool:
    """Whether the machine has no core free: the load average of the last minute is within half
    a core of the number of cores (where the load cannot be read: not busy)."""
    try:
        return os.getloadavg()[0] >= (os.cpu_count() or 1) - 0.5
    except OSError:
        return False


def blas_threads(flop: float):
    """A context in which BLAS runs on one thread when the work (``flop``, per call) is small or
    the machine busy; otherwise BLAS's own choice."""
    if flop >= SMALL_FLOP and not busy():
        return contextlib.nullcontext()
    return one_thread("blas")


def one_thread(user_api):
    """threadpoolctl's limit to one thread (``user_api``: 'blas', 'openmp', or None for both)
    through one controller, made once: scanning the loaded libraries costs 2.5 ms a call."""
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api=user_api)


SMALL_WORK = 50_000_000  # distance cells (records linked x records) below which a whole call runs on one thread


@contextlib.contextmanager
def by_work(cells: float):
    """A whole measurement (``evaluate``) on one BLAS thread, and on a small file (fewer than
    ``SMALL_WORK`` distance cells of one link) on one numba thread too.

    Its BLAS calls are small least-squares fits and products whose second thread waits and
    spins (evaluate EIA 4,092 x 10: 0.57-0.69 CPU-s with BLAS's two threads, 0.43-0.53 with
    one, the wall time no longer); the propensity fit keeps its own rule (``blas_threads``)
    inside.  On a small file the linking kernels' second numba thread saves a few
    milliseconds of wall time and costs more CPU than it saves; on a large file each link is
    long enough for it to pay.  numba's thread count is the calling thread's own, restored
    on the way out."""
    with one_thread("blas"):
        if cells >= SMALL_WORK:
            yield
            return
        import numba

        before = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            yield
        finally:
            numba.set_num_threads(before)
