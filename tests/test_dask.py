"""The Dask engine (issue 13): FA and PCA on a LocalCluster (processes, 2 workers) over many
partitions, with the in-memory engine's guarantees; a recipe designed in memory applied with
--engine dask; bad input gets a one-line error."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import sdccore  # noqa: E402
from sdccore.__main__ import main as cli_main  # noqa: E402
from sdccore._dask import moments, protect_dask, read_dask, stand_in  # noqa: E402

NUM = [f"amount{j}" for j in range(6)] + ["total"]


def make(n, m=6, seed=0):
    """Skewed positive amounts (log-normal, correlated), an exact sum, text ids and a text
    column with a formula-like value."""
    rng = np.random.default_rng(seed)
    C = 0.5 * np.ones((m, m)) + 0.5 * np.eye(m)
    X = np.exp(8 + rng.multivariate_normal(np.zeros(m), C, size=n))
    df = pd.DataFrame(np.round(X, 2), columns=[f"amount{j}" for j in range(m)])
    df["total"] = df.amount0 + df.amount1
    df.insert(0, "id", [f"R{i:07d}" for i in range(n)])
    df["region"] = rng.choice(["north", "south", "=cmd()"], size=n)
    return df


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="1.5GB") as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """300,000 records in 12 Parquet files."""
    d = make(300_000)
    folder = tmp_path_factory.mktemp("big")
    for i, part in enumerate(np.array_split(np.arange(len(d)), 12)):
        d.iloc[part].to_parquet(folder / f"part{i:02d}.parquet", index=False)
    return d, folder


def test_moments_merge_is_exact_and_stable():
    rng = np.random.default_rng(1)
    X = 1e9 + rng.standard_normal((10_000, 3)) * [1.0, 1e3, 1e-3]  # a large offset: naive sums lose digits
    df = pd.DataFrame(X, columns=list("abc"))
    n, mean, cov, lo, hi, dec = moments(dd.from_pandas(df, npartitions=7), list("abc"))
    assert n == 10_000
    import math
    exact = np.array([math.fsum(X[:, j]) / len(X) for j in range(3)])  # correctly rounded sums
    np.testing.assert_allclose(mean, exact, rtol=1e-14)
    D = X - exact  # exact differences (Sterbenz): the two-pass reference
    ref = D.T @ D / len(X)
    scale = np.sqrt(np.outer(np.diag(ref), np.diag(ref)))
    assert np.all(np.abs(cov - ref) / scale < 1e-6)  # in correlation units
    naive = X.T @ X / len(X) - np.outer(X.mean(0), X.mean(0))  # sums of squares: what the merge avoids
    assert np.abs(naive - ref)[2, 2] > 100 * ref[2, 2]
    syn = stand_in(np.zeros(3), cov, list("abc"), 50)  # what the planner sees: the file's covariance
    assert np.abs(syn.to_numpy().mean(axis=0)).max() < 1e-12 * np.sqrt(np.diag(cov)).max()
    np.testing.assert_allclose(np.cov(syn.to_numpy().T, bias=True), cov, rtol=1e-8)


@pytest.mark.parametrize("method", ["fa", "pca"])
def test_guarantees_on_a_cluster(client, files, method, tmp_path):
    d, folder = files
    ddf = read_dask(str(folder / "*.parquet"))
    assert ddf.npartitions == 12
    rel = protect_dask(ddf, {"method": method, "seed": 4, "bounds": "none", "rounding": "none"}, str(tmp_path / "r"),
                       drop=["id"])
    assert sorted(p.name for p in (tmp_path / "r").iterdir())[:2] == ["part-00000.parquet", "part-00001.parquet"]
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]  # scratch and partial folders removed
    out = rel.data.compute()
    assert list(out.columns) == [c for c in d.columns if c != "id"] and len(out) == len(d)
    X, Y = d[NUM].to_numpy(float), out[NUM].to_numpy(float)
    # means exact; the exact sum rebuilt; every record changed
    assert np.all(np.abs(Y.mean(0) - X.mean(0)) <= 1e-9 * X.std(0))
    assert np.abs(out.total - out.amount0 - out.amount1).max() <= 1e-6 * d.total.std()
    assert (np.abs(Y[:, 0] - X[:, 0]) > 0).mean() > 0.99
    # a swap over all records, not within partitions: partition means move
    parts = np.array_split(np.arange(len(d)), 12)
    moved = [abs(Y[p, 0].mean() - X[p, 0].mean()) / X[:, 0].std() for p in parts]
    assert max(moved) > 1e-3  # about 1/sqrt(25,000) = 6e-3; a swap within partitions would leave 1e-12
    # text: formulas neutralised, passed through otherwise
    assert set(out.region) == {"north", "south", "'=cmd()"}
    assert rel.risk.ok and rel.sample == 20_000
    # the same as the in-memory engine's plan: the perturbed shares are the plan's
    mem = sdccore.protect(d.drop(columns="id"), method, rng=4, bounds="none", rounding="none")
    a, b = rel.risk.variables.perturbed_share, mem.risk.variables.perturbed_share
    np.testing.assert_allclose(a.drop("total"), b.drop("total"), atol=1e-6)
    # the rebuilt sum has no planned share: 1 - cor(x, x')^2 stands in, here on the sample
    assert abs(a["total"] - b["total"]) < 1e-3


def test_same_seed_same_partitioning_same_bytes(client, files, tmp_path):
    d, folder = files
    opts = {"method": "fa", "seed": 7}
    protect_dask(read_dask(str(folder / "*.parquet")), opts, str(tmp_path / "a"), drop=["id"])
    protect_dask(read_dask(str(folder / "*.parquet")), opts, str(tmp_path / "b"), drop=["id"])
    fa, fb = sorted((tmp_path / "a").glob("*.parquet")), sorted((tmp_path / "b").glob("*.parquet"))
    assert len(fa) == 12 and [f.read_bytes() for f in fa] == [f.read_bytes() for f in fb]
    c = protect_dask(read_dask(str(folder / "*.parquet")), {**opts, "seed": 8}, str(tmp_path / "c"),
                     drop=["id"]).data.compute()
    assert not c.amount0.equals(pd.read_parquet(tmp_path / "a").amount0)


def test_covariance_unbiased_over_seeds(tmp_path):
    """Relative Frobenius error of the mean covariance over 20 seeds < 0.01 (synchronous
    scheduler: the same graph, no cluster needed for the arithmetic)."""
    import dask

    d = make(40_000, seed=2)
    ddf = dd.from_pandas(d.drop(columns=["id", "region"]), npartitions=8)
    covs = []
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        for s in range(20):
            out = protect_dask(ddf, {"method": "pca", "seed": s, "bounds": "none", "rounding": "none"},
                               str(tmp_path / f"s{s}"), allow_unsafe="covariance test").data.compute()
            covs.append(np.cov(out[NUM].to_numpy().T))
    C0 = np.cov(d[NUM].to_numpy(float).T)
    err = np.linalg.norm(np.mean(covs, axis=0) - C0) / np.linalg.norm(C0)
    assert err < 0.01, err


def test_recipe_from_memory_applied_with_dask_cli(client, files, tmp_path):
    d, folder = files
    small = d.sample(20_000, random_state=1)
    res = sdccore.protect(small.drop(columns="id"), "pca", rng=11)
    recipe = sdccore.Recipe.from_result(res, shuffle=False)
    rec = tmp_path / "recipe.json"
    rec.write_text(recipe.to_json())
    err = io.StringIO()
    with redirect_stderr(err):
        code = cli_main(["protect", str(folder / "*.parquet"), "--recipe", str(rec), "--engine", "dask",
                         "--scheduler", client.scheduler.address, "--drop", "id", "--out", str(tmp_path / "out")])
    assert code == 0, err.getvalue()
    assert "risk floors met on a sample of 20,000 records" in err.getvalue()
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == len(d) and "id" not in out.columns
    # rounding to the file's decimals, integers kept integers, signs kept (bounds 'sign')
    assert (out[NUM] >= 0).all().all()
    assert np.allclose(out.amount3, out.amount3.round(2))
    # evaluate at scale, on samples, with intervals
    d.drop(columns="id").to_parquet(tmp_path / "orig.parquet", index=False)
    o = io.StringIO()
    with redirect_stdout(o), redirect_stderr(io.StringIO()):
        code = cli_main(["evaluate", str(tmp_path / "orig.parquet"), str(tmp_path / "out" / "*.parquet"),
                         "--engine", "dask", "--scheduler", client.scheduler.address, "--json", "--sample", "2000"])
    assert code == 0
    doc = json.loads(o.getvalue())
    assert doc["records"] == 300_000 and doc["sample"] == 2000
    assert doc["scores"]["dbrl"]["lo"] <= doc["scores"]["dbrl"]["estimate"] <= doc["scores"]["dbrl"]["hi"]


def _cli_err(args):
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = cli_main(args)
    return code, err.getvalue()


def test_bad_input_one_line_errors(client, files, tmp_path):
    d, folder = files
    addr = client.scheduler.address
    code, err = _cli_err(["protect", str(tmp_path / "nothing" / "*.parquet"), "--engine", "dask", "--scheduler", addr,
                          "--out", str(tmp_path / "o1")])
    assert code == 2 and "no file matches" in err and err.count("\n") == 1
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    d.iloc[:1000].to_parquet(mixed / "a.parquet", index=False)
    d.iloc[1000:2000].rename(columns={"amount2": "other"}).to_parquet(mixed / "b.parquet", index=False)
    code, err = _cli_err(["protect", str(mixed / "*.parquet"), "--engine", "dask", "--scheduler", addr,
                          "--out", str(tmp_path / "o2")])
    assert code == 2 and "same schema" in err and err.count("\n") == 1
    nan = tmp_path / "nan"
    nan.mkdir()
    d.iloc[:1000].to_parquet(nan / "a.parquet", index=False)
    d.iloc[1000:2000].assign(amount3=np.where(np.arange(1000) == 5, np.nan, d.amount3.iloc[1000:2000])).to_parquet(
        nan / "b.parquet", index=False)
    code, err = _cli_err(["protect", str(nan / "*.parquet"), "--engine", "dask", "--scheduler", addr, "--drop", "id",
                          "--out", str(tmp_path / "o3")])
    assert code == 2 and "missing or infinite values in amount3 (1)" in err and err.count("\n") == 1
    code, err = _cli_err(["protect", str(folder / "*.parquet"), "--engine", "dask", "--scheduler", addr,
                          "--method", "magg", "--out", str(tmp_path / "o4")])
    assert code == 2 and "only fa and pca run at scale" in err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("keep me")
    code, err = _cli_err(["protect", str(folder / "*.parquet"), "--engine", "dask", "--scheduler", addr,
                          "--out", str(tmp_path / "full")])
    assert code == 2 and "not empty" in err and (tmp_path / "full" / "x.txt").read_text() == "keep me"
    code, err = _cli_err(["protect", str(folder / "*.parquet"), "--engine", "dask", "--scheduler",
                          "tcp://127.0.0.1:1", "--out", str(tmp_path / "o5")])
    assert code == 2 and "no Dask scheduler answers" in err


def test_a_single_small_worker_finishes(tmp_path):
    """One worker process limited to 400 MB protects 400,000 records in 16 partitions (the
    data set larger than the cluster's memory, 20M x 30 against 2 x 2 GB, is
    benchmarks/bench_dask.py: too slow for CI)."""
    d = make(400_000, seed=5)
    folder = tmp_path / "big"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(d)), 16)):
        d.iloc[part].drop(columns=["id", "region"]).to_parquet(folder / f"p{i:02d}.parquet", index=False)
    raw_mb = d[NUM].to_numpy(float).nbytes / 2 ** 20
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="400MB") as cl, distributed.Client(cl):
        protect_dask(read_dask(str(folder / "*.parquet")), {"method": "pca", "seed": 1}, str(tmp_path / "out"))
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == len(d) and raw_mb > 0
    assert Path(tmp_path / "out").is_dir()
