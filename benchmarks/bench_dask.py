"""The Dask engine at scale (issue 13): FA on a generated Parquet data set on a LocalCluster of
2 worker processes with a memory limit each, against the in-memory engine on 1M x 30.

    python benchmarks/bench_dask.py [--records 20000000] [--variables 30] [--files 200]
                                    [--memory 2GB] [--folder /tmp/sdccore_bench]
    python benchmarks/bench_dask.py --keys [--records 20000000]   # key_risk_dask (issue 42)

Prints the time, peak cluster memory (distributed's MemorySampler), throughput in records
per second against the in-memory engine's, and the largest gap between the release's and
the original's means (in original sds; bounds and rounding off, so it should be ~1e-12).
The generated files and the release stay in --folder (delete it afterwards).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def generate(folder, n, m, files, seed=0):
    """Correlated log-normal amounts, written file by file (never the whole file in memory)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    C = 0.5 * np.ones((m, m)) + 0.5 * np.eye(m)
    A = np.linalg.cholesky(C)
    for i, rows in enumerate(np.array_split(np.arange(n), files)):
        Z = rng.standard_normal((len(rows), m)) @ A.T
        pd.DataFrame(np.exp(8 + Z), columns=[f"x{j:02d}" for j in range(m)]).to_parquet(
            folder / f"part{i:04d}.parquet", index=False)


class WorkerPeaks:
    """Each worker's largest process memory while the block runs, as the scheduler last heard it
    (polled every 0.5 s): ``with WorkerPeaks(client) as peak: ...``, then ``max(peak.values())``."""

    def __init__(self, client):
        self.client, self.peak, self.stop = client, {}, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self.stop.is_set():
            for addr, w in self.client.scheduler_info().get("workers", {}).items():
                self.peak[addr] = max(self.peak.get(addr, 0), w["metrics"]["memory"])
            self.stop.wait(0.5)

    def __enter__(self):
        self.thread.start()
        return self.peak

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def generate_keys(folder, n, files, seed=0):
    """A survey-like file of key variables (region, sex, age, occupation; 1 % of regions and
    ages blank) and a sampling weight, written file by file."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i, rows in enumerate(np.array_split(np.arange(n), files)):
        k = len(rows)
        d = pd.DataFrame({"region": rng.choice([f"r{j:02d}" for j in range(20)], k), "sex": rng.choice(["f", "m"], k),
                          "age": rng.integers(0, 95, k).astype(float),
                          "job": rng.choice([f"j{j:03d}" for j in range(300)], k), "w": rng.uniform(10, 300, k)})
        d.loc[rng.random(k) < 0.01, "region"] = None
        d.loc[rng.random(k) < 0.01, "age"] = np.nan
        d.to_parquet(folder / f"part{i:04d}.parquet", index=False)


def workers_cpu(client):
    """The CPU seconds the cluster's worker processes have used so far, all threads, summed."""
    return sum(client.run(time.process_time).values())


def keys_line(args):
    """Issue 42: the key variables' identity risk (``key_risk_dask``) on a LocalCluster of 2
    workers: records/s, the largest worker's memory and the driver's CPU seconds; the same figures
    as ``key_risk`` in memory (checked on the first file)."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import sdccore

    data = Path(args.folder) / f"keys_{args.records}"
    if not data.exists():
        generate_keys(data, args.records, args.files)
    keys = ["region", "sex", "age", "job"]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=args.memory,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with WorkerPeaks(client) as worker_peak:
            t, c = time.perf_counter(), time.process_time()
            r = sdccore.key_risk_dask(dd.read_parquet(str(data / "*.parquet")), keys, weights="w")
            secs, cpu = time.perf_counter() - t, time.process_time() - c
    import dask

    first = pd.read_parquet(sorted(data.glob("*.parquet"))[0])
    with dask.config.set(scheduler="sync"):
        small = sdccore.key_risk_dask(dd.from_pandas(first, npartitions=3), keys, weights="w")
    mem = sdccore.key_risk(first, keys, weights="w")
    same = ((small.records.compute().fk.to_numpy() == mem.records.fk.to_numpy()).all()
            and abs(small.expected_reidentifications / mem.expected_reidentifications - 1) < 1e-12)
    print(f"dask  key risk {args.records:,} records, keys {', '.join(keys)} ({r.patterns} missing-value patterns): "
          f"{secs:.1f} s wall, {args.records / secs:,.0f} records/s, driver {cpu:.1f} CPU-s, largest worker "
          f"{max(worker_peak.values()) / 2**30:.2f} GB of {args.memory}; {r.sample_uniques:,} unique, {r.below_k:,} "
          f"below 3; first file as in memory: {same}", flush=True)
    # the blanks to 3-anonymity (local_suppression_dask), written back to Parquet
    out = Path(args.folder) / f"keys_{args.records}_suppressed"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=args.memory,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with WorkerPeaks(client) as worker_peak:
            t, c, wc = time.perf_counter(), time.process_time(), workers_cpu(client)
            s = sdccore.local_suppression_dask(dd.read_parquet(str(data / "*.parquet")), keys, k=3)
            s.data.to_parquet(str(out), overwrite=True)
            secs, cpu, wcpu = time.perf_counter() - t, time.process_time() - c, workers_cpu(client) - wc
    with dask.config.set(scheduler="sync"):
        small = sdccore.local_suppression_dask(dd.from_pandas(first, npartitions=3), keys, k=3).data.compute()
    same = all((small[c].isna().to_numpy() == sdccore.local_suppression(first, keys, k=3).data[c].isna().to_numpy()).all()
               for c in keys)
    print(f"dask  local suppression to 3-anonymity, {args.records:,} records: {secs:.1f} s wall (written), "
          f"{args.records / secs:,.0f} records/s, driver {cpu:.1f} CPU-s, workers {wcpu:.1f} CPU-s, largest worker "
          f"{max(worker_peak.values()) / 2**30:.2f} GB of {args.memory}; {s.cells:,} values blanked "
          f"({', '.join(f'{k} {v:,}' for k, v in s.per_key.items())}), decided on {s.kept:,} records in {s.rounds} "
          f"round(s); first file's blanks as in memory: {same}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000_000)
    ap.add_argument("--variables", type=int, default=30)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--memory", default="2GB")
    ap.add_argument("--folder", default="/tmp/sdccore_bench")
    ap.add_argument("--skip-memory", action="store_true", help="leave out the in-memory 1M x 30 run (8 minutes)")
    ap.add_argument("--method", default="fa", choices=("fa", "pca", "noise", "magg", "rankswap", "ipso", "shuffle",
                                                        "cfa"))
    ap.add_argument("--sensitive", default="", help="comma-separated sensitive variables (e.g. x00; ipso, shuffle and "
                                                    "cfa: x00 unless given)")
    ap.add_argument("--keys", action="store_true", help="the key variables' identity risk (key_risk_dask) instead")
    args = ap.parse_args()
    if args.method in ("ipso", "shuffle", "cfa") and not args.sensitive:
        args.sensitive = "x00"
    if args.keys:
        return keys_line(args)
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    import sdccore
    from sdccore._scale.engine import moments, protect_dask, read_dask

    root = Path(args.folder)
    data = root / f"data_{args.records}x{args.variables}"
    if not data.exists():
        t = time.perf_counter()
        generate(data, args.records, args.variables, args.files)
        print(f"generated {args.records:,} x {args.variables} in {args.files} Parquet files "
              f"({sum(f.stat().st_size for f in data.glob('*.parquet')) / 2**30:.2f} GB on disk, "
              f"{args.records * args.variables * 8 / 2**30:.2f} GB as float64) in {time.perf_counter() - t:.0f} s")
    out = root / "released"
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=args.memory,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        ms = MemorySampler()
        stages = []  # (seconds, what) of each pass protect_dask hands to progress

        def timed(job):
            t0 = time.perf_counter()
            client.compute(job).result()
            stages.append(time.perf_counter() - t0)

        t, c0, w0 = time.perf_counter(), time.process_time(), workers_cpu(client)
        with WorkerPeaks(client) as worker_peak, ms.sample("protect", interval=0.5):
            opts = {"method": args.method, "seed": 1, "bounds": "none", "rounding": "none"}
            if args.sensitive:
                opts["sensitive"] = args.sensitive.split(",")
            rel = protect_dask(read_dask(str(data / "*.parquet")), opts, str(out), progress=timed,
                               allow_unsafe=None if args.method in ("fa", "pca", "rankswap") else "benchmark")
        secs = time.perf_counter() - t
        cpu_driver, cpu_workers = time.process_time() - c0, workers_cpu(client) - w0
        peak = ms.to_pandas()["protect"].max() / 2**30
        cols = [c for c in rel.data.columns]
        n0, m0, cov0, *_ = moments(read_dask(str(data / "*.parquet")), cols)
        n1, m1, cov1, *_ = moments(rel.data, cols)
    gap = float(np.max(np.abs(m1 - m0) / np.sqrt(np.diag(cov0))))
    ols_gap = None
    if args.sensitive:  # the OLS of each sensitive variable on the rest, from the two covariance matrices
        sens = [cols.index(c) for c in args.sensitive.split(",")]
        pub = [j for j in range(len(cols)) if j not in sens]
        b0, b1 = (np.linalg.solve(C[np.ix_(pub, pub)], C[np.ix_(pub, sens)]) for C in (cov0, cov1))
        ols_gap = float(np.max(np.abs(b1 - b0)) / np.max(np.abs(b0)))
    print(f"load average at start {load:.2f}; 2 workers x {args.memory}")
    import resource

    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"dask  {args.method} {args.records:,} x {args.variables}"
          f"{' (sensitive ' + args.sensitive + ')' if args.sensitive else ''}: {secs:.1f} s, {args.records / secs:,.0f} records/s, "
          f"peak cluster memory {peak:.2f} GB (largest worker {max(worker_peak.values()) / 2**30:.2f} GB of "
          f"{args.memory}; driver process {driver:.2f} GB), risk floors {'met' if rel.risk.ok else 'broken'} "
          f"(closeness over all records, linking on {rel.sample:,} sampled)", flush=True)
    print(f"CPU: workers {cpu_workers:.0f} CPU-s (both together), driver {cpu_driver:.1f} CPU-s; wall {secs:.1f} s",
          flush=True)
    names = ["swap (scatter of all factors' scores)", "release written (gather, reconstruction, Parquet)"]
    if args.method in ("ipso", "shuffle", "cfa"):
        names = ["random blocks gathered and protected", "release written"]
    elif args.method != "fa" and args.method != "pca":
        names = ["release written"] * len(stages)
    print("stages: " + "; ".join(f"{w} {v:.1f} s" for w, v in zip(names, stages))
          + f"; the rest (moments pass, plan, risk floors: two passes over all records and the sample's links) "
          f"{secs - sum(stages):.1f} s")
    print(f"means: largest gap {gap:.2e} original sds (target: exact, ~1e-12)", flush=True)
    if ols_gap is not None:
        print(f"OLS of {args.sensitive} on the other variables: largest coefficient gap {ols_gap:.2e} of the largest "
              f"coefficient " + ("(IPSO keeps it exactly: target 1e-9)" if args.method == "ipso" else
                                 f"({args.method} does not keep it exactly)"), flush=True)
    shutil.rmtree(out, ignore_errors=True)
    if args.skip_memory:
        return
    # the in-memory engine on 1M x 30 (its risk profile's leave-one-out links dominate)
    rng = np.random.default_rng(0)
    C = 0.5 * np.ones((30, 30)) + 0.5 * np.eye(30)
    X = np.exp(8 + rng.standard_normal((1_000_000, 30)) @ np.linalg.cholesky(C).T)
    df = pd.DataFrame(X, columns=[f"x{j:02d}" for j in range(30)])
    t = time.perf_counter()
    sdccore.protect(df, "fa", rng=1, bounds="none", rounding="none", allow_unsafe="benchmark")
    mem_secs = time.perf_counter() - t
    print(f"memory FA 1,000,000 x 30: {mem_secs:.1f} s, {1e6 / mem_secs:,.0f} records/s "
          f"(dask / memory throughput {args.records / secs / (1e6 / mem_secs):.2f})")


if __name__ == "__main__":
    main()
