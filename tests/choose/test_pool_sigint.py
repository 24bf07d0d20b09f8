"""A Ctrl-C that comes while a run is handed to the worker pool is kept, not lost: the submit
holds SIGINT blocked (pending) as well as ignored (the processes it starts inherit the ignored
signal).  Only ignored, a Ctrl-C in that window was dropped and `python -m sdccore compare` went
on to its end (the clean-clone CI, under load: 900 runs on after the Ctrl-C,
test_ctrl_c_of_compare_is_one_line timed out); only blocked, a worker in the middle of its
imports printed a KeyboardInterrupt traceback.

Run in a fresh interpreter, as the command line is: a signal sent to a process goes to any of its
threads that does not block it, and a pytest-xdist worker has threads of its own."""
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import os, signal
from sdccore._choose import pool

class Slow:
    ignored = []
    def submit(self, fn, *args, **kwargs):
        self.ignored.append(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)  # what a started process inherits
        os.kill(os.getpid(), signal.SIGINT)  # the terminal's Ctrl-C, in the middle of the submit
        return "future"

got, calls = [], []
signal.signal(signal.SIGINT, lambda s, f: got.append(len(calls)))
pool.pool = lambda workers, replace=None: Slow()
ex, fut = pool._submit(2, print, (), {})
calls.append("returned")
print(fut, Slow.ignored, got, signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set()))
'''


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="no signal masks on this platform")
def test_a_ctrl_c_during_a_submit_is_handled_right_after_it():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    assert line.startswith("future [True] ")  # the started processes would inherit the ignored signal
    assert line in ("future [True] [0] False", "future [True] [1] False"), line  # handled, not lost; unblocked


TRACKER = r'''
import os
from sdccore._choose import pool
from joblib.externals.loky.backend import resource_tracker as rt

ex = pool.pool(1)
print(ex.submit(sum, [1, 2]).result())
t = rt._resource_tracker
print(getattr(t._launch, "_sdccore_quiet", False), os.readlink(f"/proc/{t._pid}/fd/2"),
      os.readlink("/proc/self/fd/2") != os.devnull)
pool.shutdown_all()
'''


@pytest.mark.skipif(not Path("/proc/self/fd/2").exists(), reason="no /proc on this platform")
def test_the_pools_resource_tracker_writes_to_devnull_not_to_the_users_terminal():
    """loky's resource tracker, started with the pool, prints "There appear to be 1 leaked
    semlock objects to clean up at shutdown" when the command line's workers are killed at its
    end (seen after a comparison): it is started with its standard error on os.devnull, and this
    process's own standard error is given back."""
    out = subprocess.run([sys.executable, "-c", TRACKER], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "True", "/dev/null", "True"], out.stdout
