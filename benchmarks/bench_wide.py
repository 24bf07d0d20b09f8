"""Wide data (issue 15, item 11): FA on 1600 records x m variables.

Prints seconds for decompose (the Configure page's live plots), protect (with its risk
profile) and evaluate, for m = 100, 200, 400.  Before the exact-gradient fit, decompose at
m = 400 took 785 s (factor_analyzer's finite differences: m objective evaluations per
gradient, each an m x m eigendecomposition).

    python benchmarks/bench_wide.py
"""

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sdccore  # noqa: E402


def frame(n, m, seed=0):
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((m, 5))
    X = rng.standard_normal((n, 5)) @ L.T + rng.standard_normal((n, m))
    return pd.DataFrame(X, columns=[f"v{i}" for i in range(m)])


def main():
    sdccore.protect(frame(200, 40), method="fa", rng=0, allow_unsafe="warm-up")  # numba compile, once
    print(f"{'m':>5} {'decompose':>10} {'protect':>9} {'evaluate':>9}   (seconds, n = 1600)")
    for m in (100, 200, 400):
        df = frame(1600, m)
        t = time.perf_counter()
        sdccore.decompose(df, method="fa")
        t1 = time.perf_counter() - t
        t = time.perf_counter()
        r = sdccore.protect(df, method="fa", rng=1, allow_unsafe="benchmark")
        t2 = time.perf_counter() - t
        t = time.perf_counter()
        sdccore.evaluate(df, r.data)
        t3 = time.perf_counter() - t
        print(f"{m:>5} {t1:>10.2f} {t2:>9.2f} {t3:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
