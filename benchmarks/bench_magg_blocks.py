"""The information-loss cost of M-AGG in k-d blocks (issue 13): MDAV on the whole file
against MDAV within the blocks the Dask engine forms (``sdccore._methods.magg.kd_tree`` on a sample
of 20,000 records, ``kd_assign``, MDAV per block), on a generated 100k x 13 file of
correlated log-normal amounts.

    python benchmarks/bench_magg_blocks.py [--records 100000] [--variables 13] [--k 3]
                                           [--blocks 50000,25000,10000]

Prints for each cap: the number of blocks, the largest block, the time, and the
information loss of the partition, SSE/SST = within-group sum of squares over the total
sum of squares of the standardised values (0 = no loss; the cost of blocking is the
ratio to whole-file MDAV's), and the mean over variables of each variable's correlation
with its aggregate.  Each cap twice: MDAV in each block with the whole file's variances as
weights (what the engine does) and with the block's own (``mdav_groups`` on the block).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdccore._methods.magg import kd_assign, kd_tree  # noqa: E402
from sdccore._methods.mdav import group_means, mdav_file_weighted, mdav_groups  # noqa: E402


def generate(n, m, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, m))
    C = A @ A.T
    d = np.sqrt(np.diag(C))
    C = C / np.outer(d, d)
    return np.exp(rng.multivariate_normal(np.zeros(m), C, size=n))


def loss(Z, Zbar):
    sse = float(((Z - Zbar) ** 2).sum())
    sst = float(((Z - Z.mean(axis=0)) ** 2).sum())
    cors = [np.corrcoef(Z[:, j], Zbar[:, j])[0, 1] for j in range(Z.shape[1])]
    return sse / sst, float(np.mean(cors))


def blocked(Z, k, cap, rng, file_weights=True):
    """What the Dask engine does (file_weights=True: ``mdav_file_weighted``), or MDAV on each
    block with the block's own variances as weights (``mdav_groups`` on the block)."""
    n = len(Z)
    sample = Z[rng.choice(n, size=min(n, 20_000), replace=False)]
    blocks = kd_assign(Z, kd_tree(sample, n, cap))
    Zbar = np.empty_like(Z)
    for b in np.unique(blocks):
        sel = np.flatnonzero(blocks == b)
        lab = mdav_file_weighted(Z[sel], k) if file_weights else mdav_groups(Z[sel], k)
        Zbar[sel] = group_means(Z[sel], lab)
    return Zbar, np.bincount(blocks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--variables", type=int, default=13)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--blocks", default="50000,25000,10000")
    a = ap.parse_args()
    X = generate(a.records, a.variables)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    mdav_groups(Z[:200], a.k)  # compile the kernel outside the timings
    t = time.perf_counter()
    whole = group_means(Z, mdav_groups(Z, a.k))
    tw = time.perf_counter() - t
    il0, c0 = loss(Z, whole)
    print(f"{a.records:,} x {a.variables}, k = {a.k}")
    print(f"{'partition':<26s} {'blocks':>6s} {'largest':>8s} {'time s':>7s} {'SSE/SST':>9s} {'x whole':>8s} "
          f"{'mean cor':>8s}")
    print(f"{'whole-file MDAV':<26s} {1:>6d} {a.records:>8,d} {tw:>7.2f} {il0:>9.5f} {1.0:>8.3f} {c0:>8.5f}")
    for cap in [int(c) for c in a.blocks.split(",")]:
        for fw in (True, False):
            t = time.perf_counter()
            Zbar, sizes = blocked(Z, a.k, cap, np.random.default_rng(1), fw)
            tb = time.perf_counter() - t
            il, c = loss(Z, Zbar)
            label = f"blocks <= {cap:,}" + (" (engine)" if fw else " block wts")
            print(f"{label:<26s} {len(sizes):>6d} {sizes.max():>8,d} {tb:>7.2f} {il:>9.5f} {il / il0:>8.3f} {c:>8.5f}")


if __name__ == "__main__":
    main()
