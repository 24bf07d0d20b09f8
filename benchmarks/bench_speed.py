"""Issue 12's targets beside the measured figures and the ratio to the figure the issue
started from ("today" = the issue's own measurement on this machine).  Prints a table:

    python benchmarks/bench_speed.py [--quick]      # --quick skips 50k compare and 100k kernels

The machine's load average is printed with the table: the machine is shared, so treat
absolute times as rough.  Library timings only; the click-to-settled browser figures of the
Run, Configure and Explore pages are in benchmarks/bench_dashboard.py --browser.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import sdccore  # noqa: E402

CONFIGS = {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"}}
ROWS = []


def record(what, target, measured, today, note=""):
    ROWS.append((what, target, measured, today, note))
    ratio = f"{today / measured:6.1f}x" if today and measured else "     -"
    print(f"{what:48s} target {target:>7.2f} s  measured {measured:8.2f} s  today {today or float('nan'):7.2f} s  "
          f"{ratio} faster  {'MET' if measured <= target else 'not met'}  {note}", flush=True)


def best(f, reps=3):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def sample(name):
    d = sdccore.load_dataset(name)
    roles = sdccore.dataset_roles(name)
    drop = set(roles.get("identifier", [])) | set(roles.get("exclude", []))
    return d[[c for c in d.columns if c not in drop]]


def synthetic(n, m=13, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((m, m))
    return pd.DataFrame(rng.standard_normal((n, m)) @ C, columns=[f"x{j}" for j in range(m)])


def main(quick=False):
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"{os.cpu_count()} cores", flush=True)
    # CLI cold start: a fresh interpreter, best of 3
    cmd = [sys.executable, "-m", "sdccore", "datasets"]
    t, _ = best(lambda: subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True))
    record("CLI cold start (python -m sdccore datasets)", 1.0, t, 2.6)

    eia = sample("eia")
    sens = ["TOTREVENUE", "RESREVENUE"]
    res = sdccore.protect(eia, "fa", sensitive=sens, rng=1, allow_unsafe="benchmark")
    t, ev = best(lambda: sdccore.evaluate(eia, res.data, sensitive=sens))
    # the fit's own warnings are caught inside evaluate; a fallback to lbfgs (line search
    # failed, quasi-separation) always comes with a ConvergenceWarning, so ps_converged
    # is False exactly when the slow path ran
    record("evaluate EIA 4092 x 10, two sensitive (FA)", 0.3, t, 7.0,
           f"PS converged={ev.details['ps_converged']} (False: newton-cholesky fell back to lbfgs)")

    big = synthetic(50_000)
    prot = sdccore.protect(big, "pca", rng=1).data
    t, _ = best(lambda: sdccore.evaluate(big, prot), reps=1)
    record("evaluate 50,000 x 13", 2.0, t, 16.0)

    tarr = sample("tarragona")
    sdccore.compare(tarr, {"PCA": {"method": "pca"}}, reps=4, rng=0)  # start the worker processes
    t, _ = best(lambda: sdccore.compare(tarr, CONFIGS, reps=10, rng=1), reps=1)
    record("compare 3 methods x 10 runs, Tarragona", 5.0, t, 46.0, "library, warm workers")
    t, _ = best(lambda: sdccore.compare(eia, CONFIGS, reps=10, rng=1), reps=1)
    record("compare 3 methods x 10 runs, EIA", 10.0, t, 157.0, "library, warm workers")
    t, _ = best(lambda: sdccore.search(tarr, "pca", reps=10, budget=120, rng=1), reps=1)
    record("search budget 120, Tarragona", 20.0, t, 84.0, "library, warm workers")
    if not quick:
        t, _ = best(lambda: sdccore.compare(big, CONFIGS, reps=10, rng=1), reps=1)
        record("compare 3 methods x 10 runs, 50,000 x 13", 60.0, t, None, "library, warm workers")
        x100 = synthetic(100_000)
        from sdccore._perturb import _rankswap_order, _rankswap_order_scan

        u = np.random.default_rng(0).random(100_000)
        _rankswap_order(10, 3, u[:10])
        t, _ = best(lambda: [_rankswap_order(100_000, 15_000, u) for _ in range(13)])
        t_scan, _ = best(lambda: [_rankswap_order_scan(100_000, 15_000, u) for _ in range(3)], reps=1)
        record("rank swapping 100,000 x 13, p = 15 (the swaps)", 2.0, t, 31.0,
               f"window scan (the old algorithm) {t_scan * 13 / 3:.1f} s")
        t, _ = best(lambda: sdccore.protect(x100, "rankswap", rng=1, allow_unsafe="benchmark"), reps=1)
        record("protect rankswap 100,000 x 13, p = 40 (with risk floors)", 2.0, t, None,
               "most of it the risk profile's 13 leave-one-out links")
        X = (x100 - x100.mean()) / x100.std()
        t, _ = best(lambda: sdccore.mdav_groups(X.to_numpy(), 3), reps=1)
        record("moonshot: MDAV k=3 100,000 x 13", 3.0, t, 6.7)
        # FA on 1M x 30 with the risk floors takes minutes: the risk profile links 5000 records
        # against all n on 29 of 30 variables, once per variable (n x 30 x 5000 x 29); 200k shows it
        big30 = synthetic(200_000, 30)
        t, _ = best(lambda: sdccore.protect(big30, "fa", rng=1, allow_unsafe="benchmark"), reps=1)
        record("moonshot: FA protect 200,000 x 30 (1M target 0.5 s)", 0.5, t, None,
               "over 95 % in the risk profile's leave-one-out links")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
