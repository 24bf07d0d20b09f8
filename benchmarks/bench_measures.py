"""Speed of sdccore.evaluate (issue 3 target: 50,000 x 13 under 10 s). Prints figures:

    python benchmarks/bench_measures.py
"""

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sdccore  # noqa: E402
from sdccore._risk import linkage as _linkage
from sdccore._measures import utility as _utility  # noqa: E402


def timed(label, f):
    t = time.perf_counter()
    out = f()
    dt = time.perf_counter() - t
    print(f"  {label:<34s} {dt:7.2f} s")
    return out, dt


def main():
    rng = np.random.default_rng(0)
    for n in (10_000, 50_000):
        C = rng.standard_normal((13, 13))
        X = pd.DataFrame(rng.standard_normal((n, 13)) @ C, columns=[f"x{j}" for j in range(13)])
        Y = sdccore.protect(X, method="pca", rng=1).data
        Xa, Ya = X.to_numpy(), Y.to_numpy()
        print(f"n = {n:,} x 13")
        timed("DBRL (compiled, 2 threads)", lambda: _linkage._dbrl_arrays(Xa, Ya, list(range(13))))
        timed("PIL (7 statistics)", lambda: _utility._pil_arrays(Xa, Ya))
        timed("PS (order 2, 104 features)", lambda: _utility._ps_arrays(Xa, Ya, 2))
        _, t = timed("evaluate (everything)", lambda: sdccore.evaluate(X, Y))
    n = 100_000
    X = rng.standard_normal((n, 13))
    Y = X + rng.standard_normal((n, 13))
    print(f"n = {n:,} x 13")
    timed("DBRL (compiled, 2 threads)", lambda: _linkage._dbrl_arrays(X, Y, list(range(13))))


if __name__ == "__main__":
    main()
