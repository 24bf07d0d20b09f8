"""Time protect on the bundled samples with the risk floors (the intruder battery of issue 26).

Prints the median of ``--repeat`` runs (after one warm-up) per case, and the time of the
risk profile alone, so that the battery's cost can be compared with an older checkout:

    python benchmarks/bench_risk.py            # this checkout
    PYTHONPATH=/other/checkout python benchmarks/bench_risk.py

Not a test: figures, no thresholds.
"""
import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or os.path.join(os.path.dirname(__file__), ".."))
import sdccore  # noqa: E402

CASES = [
    ("tarragona", None, "fa", {}),
    ("tarragona", None, "pca", {}),
    ("tarragona", ["SALES"], "rankswap", {}),
    ("tarragona", ["SALES", "NET.PROFIT"], "magg", {}),
    ("casc", ["FEDTAX"], "noise", {}),
    ("eia", ["TOTREVENUE", "RESREVENUE"], "rankswap", {}),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"sdccore from {os.path.dirname(sdccore.__file__)}; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, sens, method, opts in CASES:
        df = sdccore.load_dataset(name)
        roles = sdccore.dataset_roles(name)
        df = df.drop(columns=roles.get("identifier", []))
        kw = dict(sensitive=sens, exclude=roles.get("exclude", []), allow_unsafe="benchmark", **opts)
        sdccore.protect(df, method, rng=0, **kw)  # warm-up: compiled kernels, lazy imports
        times = []
        for r in range(args.repeat):
            t = time.perf_counter()
            sdccore.protect(df, method, rng=r + 1, **kw)
            times.append(time.perf_counter() - t)
        label = f"{name} {method} {'+'.join(sens) if sens else 'general'}"
        print(f"{label:42s} protect median {statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
