"""Speed of the protection engine (issue 2 targets). Prints figures; run:

    python benchmarks/bench_engine.py [--quick]

* protect(method="fa"/"pca") on n x 30 synthetic correlated data, n = 100k, 300k, 1M
  (target: 1M under 1 s, time linear in n);
* MDAV k=3 on 100,000 x 13 (target: under 7 s), on correlated Gaussian data (the hard case
  for the k-d tree pruning) and on a Tarragona-like resample, with the BLAS thread count.
"""

import sys
import time

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_info

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
import sdccore  # noqa: E402


def best_of(f, reps=3):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main(quick=False):
    blas = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
    print(f"BLAS/OpenMP pools: {blas}")
    rng = np.random.default_rng(0)
    m = 30
    A = rng.standard_normal((m, m)) / np.sqrt(m)
    sizes = (100_000, 300_000) if quick else (100_000, 300_000, 1_000_000)
    base = rng.standard_normal((max(sizes), m)) @ A
    sdccore.protect(pd.DataFrame(base[:1000]), method="fa", rng=0)  # warm up (compile, imports)
    for method in ("fa", "pca"):
        prev = prev_n = None
        for n in sizes:
            df = pd.DataFrame(base[:n], columns=[f"x{j}" for j in range(m)])
            t = best_of(lambda: sdccore.protect(df, method=method, rng=1))
            per = t / n * 1e6
            print(f"protect method={method:3s} n={n:>9,} x {m}: {t:6.3f} s  ({per:.2f} us/record)"
                  + (f"  ratio to previous {t / prev:.2f} for x{n // prev_n}" if prev else ""))
            prev, prev_n = t, n
    n = 20_000 if quick else 100_000
    C = rng.standard_normal((13, 13))
    X = rng.standard_normal((n, 13)) @ C
    sdccore.mdav_groups(X[:500], 3)
    t = best_of(lambda: sdccore.mdav_groups(X, 3), reps=1 if not quick else 2)
    print(f"MDAV k=3 on {n:,} x 13 correlated Gaussian: {t:.2f} s")
    T = sdccore.load_dataset("tarragona").to_numpy(float)
    Xt = T[rng.integers(0, len(T), n)] * np.exp(rng.normal(0, 0.05, (n, 13)))
    t = best_of(lambda: sdccore.mdav_groups(Xt, 3), reps=1 if not quick else 2)
    print(f"MDAV k=3 on {n:,} x 13 Tarragona resample (5% jitter): {t:.2f} s")


if __name__ == "__main__":
    main("--quick" in sys.argv)
