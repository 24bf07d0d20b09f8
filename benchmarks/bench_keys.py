"""Time sdccore.key_risk (the identity risk of key variables, issue 40) and local_suppression: on sdcMicro's
tutorial file (4,580 persons, 4 keys, households) and on synthetic survey files of 100,000
and 1,000,000 persons (region x sex x age x education x household size, 1 % of the keys
missing: each missing value matches every value, so the records are counted by pattern of
missing keys), CPU seconds beside wall time (the machine is shared):

    python benchmarks/bench_keys.py [--big]

Not a test: figures, no thresholds.  sdcMicro 5.8.1's measure_risk on the same tutorial file
(R 4.2, built here): see docs/survey.md.
"""
import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sdccore  # noqa: E402


def synthetic(n, seed=0):
    g = np.random.default_rng(seed)
    d = pd.DataFrame({"region": g.integers(1, 21, n), "sex": g.integers(1, 3, n), "age": g.integers(0, 95, n),
                      "education": g.integers(1, 8, n), "hhsize": g.integers(1, 9, n),
                      "weight": g.uniform(50, 500, n), "hh": np.arange(n) // 3}).astype({"age": float})
    for c in ("region", "age", "education"):
        d.loc[g.random(n) < 0.01, c] = np.nan
    return d


def timed(label, fn):
    c0, w0 = time.process_time(), time.perf_counter()
    r = fn()
    print(f"{label:48s} CPU {time.process_time() - c0:7.3f} s   wall {time.perf_counter() - w0:7.3f} s   {r!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true", help="also 1,000,000 persons")
    a = ap.parse_args()
    td = sdccore.load_dataset("testdata")
    timed("testdata (4,580; 4 keys; households)", lambda: sdccore.key_risk(
        td, ["urbrur", "water", "sex", "age"], weights="sampling_weight", household="ori_hid"))
    timed("testdata: local suppression to k = 3", lambda: sdccore.local_suppression(
        td, ["urbrur", "water", "sex", "age"], k=3))
    for n in (100_000,) + ((1_000_000,) if a.big else ()):
        d = synthetic(n)
        keys = ["region", "sex", "age", "education", "hhsize"]
        timed(f"synthetic {n:,} (5 keys, 1 % missing; households)", lambda: sdccore.key_risk(
            d, keys, weights="weight", household="hh"))
        timed(f"synthetic {n:,}: local suppression to k = 3", lambda: sdccore.local_suppression(d, keys, k=3))


if __name__ == "__main__":
    main()
