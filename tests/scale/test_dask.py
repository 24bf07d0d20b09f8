"""The Dask engine (issue 13): FA and PCA on a LocalCluster (processes, 2 workers) over many
partitions, with the in-memory engine's guarantees; a recipe designed in memory applied with
--engine dask; bad input gets a one-line error."""

import io
import os
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import sdccore  # noqa: E402
from conftest import same_frame  # noqa: E402
from sdccore.__main__ import main as cli_main  # noqa: E402
from sdccore import protect_dask  # noqa: E402
from sdccore._scale.engine import moments, read_dask, stand_in  # noqa: E402
from sdccore import neutralize_formulas  # noqa: E402

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
    """36,000 records in 12 Parquet files of 3,000 (300,000, then 120,000 before: the tests'
    time; what they check rests on the 12 partitions, records moving across them and the
    default sample of 20,000 being a part of the file, as it still is; the tolerances that
    rest on the file's size are derived for 36,000 where they are stated)."""
    d = make(36_000)
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
    assert max(moved) > 1e-3  # about 1/sqrt(3,000) = 2e-2; a swap within partitions would leave 1e-12
    # text: formulas neutralised, passed through otherwise
    assert set(out.region) == {"north", "south", "'=cmd()"}
    assert rel.risk.ok and rel.sample == 20_000
    # the same as the in-memory engine's plan: the perturbed shares are the plan's
    mem = sdccore.protect(d.drop(columns="id"), method, rng=4, bounds="none", rounding="none")
    a, b = rel.risk.variables.perturbed_share, mem.risk.variables.perturbed_share
    np.testing.assert_allclose(a.drop("total"), b.drop("total"), atol=1e-6)
    # the rebuilt sum has no planned share: 1 - cor(x, x')^2 stands in, over all records (the
    # whole file's |cor|); two different permutations leave cor of order 1/sqrt(n): 1 - cor^2
    # within 1e-4 of 1 at 36,000 records (8 seeds of each method in memory: at most 6e-5 away)
    assert abs(a["total"] - b["total"]) < 1e-3


def test_rank_swapping_at_scale_is_the_in_memory_release(client, files, tmp_path):
    """Rank swapping of one sensitive variable on the 2-worker cluster over 12 partitions:
    every column of the release (text, the exact sum rebuilt, rounding) is the in-memory
    engine's for the same seed on the whole file, byte for byte; the swapped column is a
    permutation of the original's (means exact), partners came from across partitions; the
    floors are met and say so."""
    d, folder = files
    opts = {"method": "rankswap", "sensitive": ["amount2"], "p": 15, "seed": 5}
    rel = protect_dask(read_dask(str(folder / "*.parquet")), opts, str(tmp_path / "r"), drop=["id"])
    out = rel.data.compute().reset_index(drop=True)
    mem = sdccore.protect(d.drop(columns="id"), "rankswap", sensitive=["amount2"], p=15, rng=5).data
    same_frame(out, neutralize_formulas(mem).reset_index(drop=True))  # a release step, as make_release does
    assert np.array_equal(np.sort(out.amount2.to_numpy()), np.sort(d.amount2.to_numpy()))
    assert out.amount1.equals(d.amount1)  # public variables unchanged
    # a partner up to 15 % of the ranks away, across partitions: partition sums move
    parts = np.array_split(np.arange(len(d)), 12)
    assert max(abs(out.amount2[p].sum() - d.amount2.iloc[p].sum()) for p in parts) > 1.0
    assert rel.risk.ok and any("rank swapping (shifted) of 1 variable(s) within 15 % of the ranks over all 36,000" in t
                               for t in rel.notes)


def test_general_rank_swapping_at_scale_equals_memory_synchronous(tmp_path):
    """Every variable swapped (general protection), uneven partitions: the same frame as in
    memory, each column a permutation of the original's."""
    import dask

    d = make(9_000, seed=8).drop(columns=["id"])
    ddf = dd.from_pandas(d, npartitions=4)
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        rel = protect_dask(ddf, {"method": "rankswap", "seed": 2}, str(tmp_path / "g"), allow_unsafe="test")
        out = rel.data.compute().reset_index(drop=True)
    mem = sdccore.protect(d, "rankswap", rng=2, allow_unsafe="test").data.reset_index(drop=True)
    same_frame(out, neutralize_formulas(mem))
    for c in NUM[:6]:
        assert np.array_equal(np.sort(out[c].to_numpy()), np.sort(d[c].to_numpy()))
        assert not out[c].equals(d[c])
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]


def test_correlated_noise_at_scale(client, files, tmp_path):
    """method='noise' on 12 partitions: the added noise has covariance noise_cov % of the
    file's (within sampling error at 36,000 records), mean about 0, different draws in every
    partition; the text and the exact sum are handled as for fa; the same seed gives the same
    bytes, on the cluster and on the synchronous scheduler (each partition's draws rest on the
    seed and the partition, not on the worker that ran it; a second cluster run before, which
    cost about four times as much)."""
    import dask

    d, folder = files
    opts = {"method": "noise", "noise_cov": 50, "seed": 3, "bounds": "none", "rounding": "none"}
    # the floors' intruders on 2,000 sampled records, not 20,000: the sample is read only by the
    # risk check, never by the release, and this test is about the release
    rel = protect_dask(read_dask(str(folder / "*.parquet")), opts, str(tmp_path / "n"), drop=["id"], sample=2_000,
                       allow_unsafe="checking the noise's covariance")
    out = rel.data.compute()
    m = 6
    X, Y = d[NUM[:m]].to_numpy(float), out[NUM[:m]].to_numpy(float)
    E = Y - X
    C = np.cov(X.T, bias=True)
    err = np.linalg.norm(np.cov(E.T, bias=True) - 0.5 * C) / np.linalg.norm(0.5 * C)
    # sampling error of a covariance at n = 36,000: about 1.1 % rms (sqrt(((tr C)^2 + |C|^2) / n)
    # / |C| for Gaussian noise; 1.1 % mean and 2.8 % the largest of 300 simulated draws).  The
    # bound is 0.02 at 120,000 records scaled by sqrt(120,000 / 36,000): the same 3.3 rms
    assert err < 0.037, err
    se = np.sqrt(0.5 * np.diag(C) / len(E))
    assert np.all(np.abs(E.mean(axis=0)) < 5 * se)
    parts = np.array_split(np.arange(len(d)), 12)
    z = E[:, 0] / np.sqrt(0.5 * C[0, 0])
    assert abs(np.corrcoef(z[parts[0]], z[parts[1]])[0, 1]) < 0.09  # not one stream reused (5 se at 3,000 records)
    # the exact sum is rebuilt from the noisy parts, not noised on its own
    assert np.abs(out.total - out.amount0 - out.amount1).max() <= 1e-6 * d.total.std()
    assert any("correlated noise" in n_ for n_ in rel.notes)
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        again = protect_dask(read_dask(str(folder / "*.parquet")), opts, str(tmp_path / "n2"), drop=["id"],
                             sample=2_000, allow_unsafe="same bytes")
    fa, fb = sorted((tmp_path / "n").glob("*.parquet")), sorted((tmp_path / "n2").glob("*.parquet"))
    assert [f.read_bytes() for f in fa] == [f.read_bytes() for f in fb]
    assert again.n == len(d)


def test_same_seed_same_partitioning_same_bytes(client, files, tmp_path):
    """The same seed and partitioning: the same bytes on the 2-worker cluster as on the
    synchronous scheduler (one process, the partitions in order), so they rest on neither
    the worker a partition ran on nor the order (two cluster runs before: a synchronous run
    costs about a quarter of one); another seed, other values."""
    import dask

    d, folder = files
    opts = {"method": "fa", "seed": 7, "bounds": "none"}  # (the default bounds set 16 % of an amount to 0: refused)
    sync = {"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}
    # the floors' intruders on 2,000 sampled records, not 20,000: the sample is read only by the
    # risk check, never by the release, and this test is about the release
    protect_dask(read_dask(str(folder / "*.parquet")), opts, str(tmp_path / "a"), drop=["id"], sample=2_000)
    with dask.config.set(sync):
        protect_dask(read_dask(str(folder / "*.parquet")), opts, str(tmp_path / "b"), drop=["id"], sample=2_000)
    fa, fb = sorted((tmp_path / "a").glob("*.parquet")), sorted((tmp_path / "b").glob("*.parquet"))
    assert len(fa) == 12 and [f.read_bytes() for f in fa] == [f.read_bytes() for f in fb]
    with dask.config.set(sync):
        c = protect_dask(read_dask(str(folder / "*.parquet")), {**opts, "seed": 8}, str(tmp_path / "c"),
                         drop=["id"], sample=2_000).data.compute()
    assert not c.amount0.equals(pd.read_parquet(tmp_path / "a").amount0)


def test_covariance_unbiased_over_seeds(tmp_path):
    """Relative Frobenius error of the mean covariance over 5 seeds < 0.01 (synchronous
    scheduler: the same graph, no cluster needed for the arithmetic).  The floors' intruders
    run on 1,000 sampled records instead of 20,000 (half of each run's time): the sample is
    read only by the risk check, never by the release, and the releases are what is tested.

    5 seeds of 160,000 records (20 seeds of 40,000 before: a run's time is mostly fixed, not
    per record): the error of one seed's covariance falls as 1/sqrt(n), that of the mean of S
    seeds as 1/sqrt(S), so the same 800,000 records give about the same standard error of the
    mean (rms 0.0018 here, 0.0014 before; the errors 0.0017 and 0.0011), the bound 0.01 kept."""
    import dask

    d = make(160_000, seed=2)
    ddf = dd.from_pandas(d.drop(columns=["id", "region"]), npartitions=8)
    covs = []
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        for s in range(5):
            out = protect_dask(ddf, {"method": "pca", "seed": s, "bounds": "none", "rounding": "none"},
                               str(tmp_path / f"s{s}"), sample=1_000, allow_unsafe="covariance test").data.compute()
            covs.append(np.cov(out[NUM].to_numpy().T))
    C0 = np.cov(d[NUM].to_numpy(float).T)
    err = np.linalg.norm(np.mean(covs, axis=0) - C0) / np.linalg.norm(C0)
    assert err < 0.01, err


def test_recipe_from_memory_applied_with_dask_cli(client, files, tmp_path):
    d, folder = files
    small = d.sample(20_000, random_state=1)
    # bounds='none': with the default 'plausible' PCA sets 15 % of each amount to 0, which breaks a
    # floor in memory and at scale alike (issue 39: a heap at a bound is no release)
    res = sdccore.protect(small.drop(columns="id"), "pca", rng=11, bounds="none")
    recipe = sdccore.Recipe.from_result(res, shuffle=False)
    rec = tmp_path / "recipe.json"
    rec.write_text(recipe.to_json())
    err = io.StringIO()
    with redirect_stderr(err):
        code = cli_main(["protect", str(folder / "*.parquet"), "--recipe", str(rec), "--engine", "dask",
                         "--scheduler", client.scheduler.address, "--drop", "id", "--keep", "region",
                         "--out", str(tmp_path / "out")])
    assert code == 0, err.getvalue()
    assert ("risk floors met (own-record closeness over all 36,000 records, the prior and the other intruders on a "
            "sample of 20,000)") in err.getvalue()
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == len(d) and "id" not in out.columns
    # rounding to the file's decimals, integers kept integers; no bounds, as the recipe says
    assert (out[NUM] < 0).any().any()
    assert np.allclose(out.amount3, out.amount3.round(2))
    # evaluate at scale, on samples, with intervals
    d.drop(columns="id").to_parquet(tmp_path / "orig.parquet", index=False)
    o = io.StringIO()
    with redirect_stdout(o), redirect_stderr(io.StringIO()):
        code = cli_main(["evaluate", str(tmp_path / "orig.parquet"), str(tmp_path / "out" / "*.parquet"),
                         "--engine", "dask", "--scheduler", client.scheduler.address, "--json", "--sample", "2000"])
    assert code == 0
    doc = json.loads(o.getvalue())
    assert doc["records"] == 36_000 and doc["sample"] == 2000
    assert doc["scores"]["dbrl"]["lo"] <= doc["scores"]["dbrl"]["estimate"] <= doc["scores"]["dbrl"]["hi"]


def test_magg_in_blocks_on_a_cluster(client, files, tmp_path, monkeypatch):
    """M-AGG at scale without noise on 36,000 records (blocks of at most 4,800 here: the file's
    7.5 blocks' worth of records, as 120,000 in blocks of 16,000 were): every released record
    is its group's mean, groups have k to 2k - 1 records, and no group crosses a k-d block
    (the groups of one block are what MDAV makes of that block)."""
    import sdccore._methods.magg as eng

    monkeypatch.setattr(eng, "BLOCK_MAX", 4_800)
    d, folder = files
    # the floors' intruders on 2,000 sampled records, not 20,000: the sample is read only by the
    # risk check, never by the release, and this test is about the release
    rel = protect_dask(read_dask(str(folder / "*.parquet")), {"method": "magg", "k": 3, "noise_model": "none",
                                                              "seed": 2, "bounds": "none", "rounding": "none"},
                       str(tmp_path / "m"), drop=["id"], sample=2_000, allow_unsafe="checking the groups")
    out = rel.data.compute()
    cols = NUM[:6]
    Y = out[cols].to_numpy()
    _, lab, size = np.unique(Y, axis=0, return_inverse=True, return_counts=True)
    lab = lab.ravel()
    assert size.min() >= 3 and size.max() <= 5
    X = d[cols].to_numpy(float)
    means = np.vstack([np.bincount(lab, weights=X[:, j]) / np.bincount(lab) for j in range(6)]).T
    np.testing.assert_allclose(Y, means[lab], rtol=1e-9)
    assert np.abs(Y.mean(0) - X.mean(0)).max() <= 1e-9 * X.std(0).max()  # group means keep the mean
    blocks = int(rel.notes[0].split(" within ")[1].split()[0])
    assert 36_000 / 4_800 < blocks <= 32
    assert np.abs(out.total - out.amount0 - out.amount1).max() <= 1e-6 * d.total.std()


def test_magg_noise_at_scale_keeps_the_covariance_in_expectation(tmp_path, monkeypatch):
    """Published noise from the pooled within-group scatter: Zbar'Zbar/n + D = R, so the
    covariance is kept in expectation (here within 1 % on 30,000 records); the same seed
    gives the same bytes, another seed other values."""
    import dask

    import sdccore._methods.magg as eng

    monkeypatch.setattr(eng, "BLOCK_MAX", 5_000)
    d = make(30_000, m=4, seed=6).drop(columns=["id", "region", "total"])
    ddf = dd.from_pandas(d, npartitions=6)
    opts = {"method": "magg", "k": 3, "seed": 1, "bounds": "none", "rounding": "none"}
    # the floors' intruders on 2,000 sampled records, not 20,000: the sample is read only by the
    # risk check, never by the release, and this test is about the release
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        a = protect_dask(ddf, opts, str(tmp_path / "a"), sample=2_000, allow_unsafe="covariance").data.compute()
        protect_dask(ddf, opts, str(tmp_path / "b"), sample=2_000, allow_unsafe="bytes")
        c = protect_dask(ddf, {**opts, "seed": 2}, str(tmp_path / "c"), sample=2_000,
                         allow_unsafe="seed").data.compute()
    X, Y = d.to_numpy(float), a.to_numpy(float)
    C0 = np.cov(X.T)
    assert np.linalg.norm(np.cov(Y.T) - C0) / np.linalg.norm(C0) < 0.01
    assert np.all(np.abs(Y.mean(0) - X.mean(0)) < 5 * X.std(0) / np.sqrt(len(X)))
    fa, fb = sorted((tmp_path / "a").glob("*.parquet")), sorted((tmp_path / "b").glob("*.parquet"))
    assert [f.read_bytes() for f in fa] == [f.read_bytes() for f in fb]
    assert not np.allclose(Y, c.to_numpy(float))


def test_kd_blocks_hold_at_most_block_max_records():
    """The k-d split built on a sample keeps every block of the whole file below the cap."""
    from sdccore._methods.magg import kd_assign, kd_tree

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((400_000, 5)) * [1, 2, 3, 0.1, 1]
    Z[:, 0] = np.exp(Z[:, 0])
    sample = Z[rng.choice(len(Z), 20_000, replace=False)]
    tree = kd_tree(sample, len(Z), 50_000)
    sizes = np.bincount(kd_assign(Z, tree))
    assert len(sizes) >= 8 and sizes.max() <= 50_000 and sizes.min() > 10_000


def test_one_rule_says_which_recipes_run_at_scale():
    """scale_refusal is what protect_dask enforces (and what the Download page shows)."""
    assert sdccore.scale_refusal({"method": "fa", "transform": []}) is None
    assert sdccore.scale_refusal({"method": "noise", "noise_cov": 20}) is None
    assert sdccore.scale_refusal({"method": "magg", "k": 3}) is None
    assert sdccore.scale_refusal({"method": "rankswap", "p": 15}) is None
    assert "pca_remove" in sdccore.scale_refusal({"method": "pca_remove"})
    assert "selective M-AGG" in sdccore.scale_refusal({"method": "magg", "sensitive": ["amount0"]})
    assert "log scale" in sdccore.scale_refusal({"method": "pca", "transform": ["amount0"]})
    assert "strata" in sdccore.scale_refusal({"method": "pca", "strata": ["region"]})
    assert "perturbation='swap'" in sdccore.scale_refusal({"method": "fa", "perturbation": "noise"})


def _measured_pair(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    C = 0.5 * np.ones((5, 5)) + 0.5 * np.eye(5)
    d = pd.DataFrame(np.exp(rng.multivariate_normal(np.zeros(5), C, size=n)), columns=list("abcde"))
    # light noise: some records are still linked to their own (DBRL > 0)
    rel = sdccore.protect(d, "noise", noise_cov=2, rng=1, bounds="none", rounding="none",
                          allow_unsafe="measures test").data
    return d, rel


@pytest.mark.parametrize("sensitive", [None, ["a", "b"]])
def test_measures_at_scale_equal_the_in_memory_ones_on_every_record(sensitive):
    """With every record sampled, DBRL and ID at scale (linkage and ranks over partitions,
    6 of the original and 5 of the protected file) equal ``evaluate``'s; PIL's moment terms
    equal it to 1e-9 (map-reduce against whole-array sums), the quantiles are the same bits
    (the quantile term's density comes from the same records when every one is sampled)."""
    import dask

    from sdccore._scale.measures import evaluate_dask
    from sdccore._measures.utility import _pil_arrays

    d, rel = _measured_pair()
    with dask.config.set(scheduler="synchronous"):
        ev = evaluate_dask(dd.from_pandas(d, npartitions=6), dd.from_pandas(rel, npartitions=5),
                           sensitive=sensitive, sample=len(d))
    mem = sdccore.evaluate(d, rel, sensitive=sensitive)
    t = ev.table
    assert 0.01 < mem.scores["dbrl"] < 0.95  # a case where linkage matters
    assert t.loc["dbrl", "estimate"] == pytest.approx(mem.scores["dbrl"], abs=1e-12)
    assert t.loc["id", "estimate"] == pytest.approx(mem.scores["id"], abs=1e-12)
    assert np.isnan(t.loc["dbrl", "lo"])  # every record: exact, no sampling interval
    per, _ = _pil_arrays(d.to_numpy(), rel.to_numpy())
    for k in ("var", "cov", "corr", "skew", "kurt"):
        assert ev.pil[k] == pytest.approx(per[k], rel=1e-9), k
    assert ev.pil["mean"] == pytest.approx(per["mean"], abs=1e-9)
    assert ev.pil["quantiles"] == pytest.approx(per["quantiles"], rel=1e-9)
    assert t.loc["ps", "lo"] <= t.loc["ps", "estimate"] <= t.loc["ps", "hi"]


@pytest.mark.parametrize("n", [7, 100, 6000, 50_001])
def test_exact_quantiles_are_numpys_bits(n):
    """Bracketed from a sample, counted and collected over partitions: np.quantile's
    linear interpolation bit for bit, with ties, rounded values and tiny files."""
    import dask

    from sdccore._scale.measures import exact_quantiles
    from sdccore._measures.utility import QUANTILE_LEVELS

    rng = np.random.default_rng(n)
    X = np.exp(rng.standard_normal((n, 3)) * 2)
    X[: n // 3, 1] = 5.0  # many ties
    X[:, 2] = np.round(X[:, 2])
    ddf = dd.from_pandas(pd.DataFrame(X, columns=list("abc")), npartitions=min(n, 7))
    sample = X[rng.choice(n, size=min(n, 500), replace=False)]
    with dask.config.set(scheduler="synchronous"):
        q = exact_quantiles(ddf, list("abc"), QUANTILE_LEVELS, X.min(0), X.max(0), sample, n)
        # a sample that lies (its quantiles far off): the brackets miss and are widened
        off = exact_quantiles(ddf, list("abc"), QUANTILE_LEVELS, X.min(0), X.max(0), sample * 0 + X.max(0), n)
    ref = np.quantile(X, QUANTILE_LEVELS, axis=0)
    assert np.array_equal(q, ref) and np.array_equal(off, ref)


def test_sampled_measures_cover_the_whole_file():
    """A sample of 1,500 of 6,000 records: each DBRL and ID interval holds the value over all
    records, and the sampled records' own values are the exact ones for those records."""
    import dask

    from sdccore._scale.measures import evaluate_dask

    d, rel = _measured_pair(seed=3)
    with dask.config.set(scheduler="synchronous"):
        ev = evaluate_dask(dd.from_pandas(d, npartitions=4), dd.from_pandas(rel, npartitions=7), sample=1500, seed=2)
        full = evaluate_dask(dd.from_pandas(d, npartitions=3), dd.from_pandas(rel, npartitions=3), sample=len(d))
    for k in ("dbrl", "id"):
        lo, hi = ev.table.loc[k, ["lo", "hi"]]
        assert lo <= full.table.loc[k, "estimate"] <= hi, k
        assert 0 < hi - lo < 0.2
    rows = ev.records.index.to_numpy()
    assert len(rows) == 1500 and np.all(np.diff(rows) > 0)
    np.testing.assert_allclose(ev.records["dbrl"].to_numpy(), full.records["dbrl"].to_numpy()[rows], atol=1e-12)
    np.testing.assert_allclose(ev.records["id"].to_numpy(), full.records["id"].to_numpy()[rows], atol=1e-12)


def _cli_err(args):
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = cli_main(args)
    return code, err.getvalue()


def test_bad_input_one_line_errors(client, files, tmp_path, monkeypatch):
    import sdccore._cli.cluster as cluster

    # a port nobody listens on is waited for SCHEDULER_WAIT seconds (15, the whole refusal within
    # 20 s: tests/package/test_security_three.py); 2 here, this test is about the message
    monkeypatch.setattr(cluster, "SCHEDULER_WAIT", 2)
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
                          "--keep", "region", "--out", str(tmp_path / "o3")])
    assert code == 2 and "missing or infinite values in amount3 (1)" in err and err.count("\n") == 1
    code, err = _cli_err(["protect", str(folder / "*.parquet"), "--engine", "dask", "--scheduler", addr,
                          "--method", "pca_remove", "--out", str(tmp_path / "o4")])
    assert code == 2 and "fa, pca, magg, rankswap, noise, ipso, shuffle and cfa run at scale" in err and err.count("\n") == 1
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("keep me")
    code, err = _cli_err(["protect", str(folder / "*.parquet"), "--engine", "dask", "--scheduler", addr,
                          "--out", str(tmp_path / "full")])
    assert code == 2 and "not empty" in err and (tmp_path / "full" / "x.txt").read_text() == "keep me"
    code, err = _cli_err(["protect", str(folder / "*.parquet"), "--engine", "dask", "--scheduler",
                          "tcp://127.0.0.1:1", "--drop", "id", "--keep", "region", "--out", str(tmp_path / "o5")])
    assert code == 2 and "no Dask scheduler answers" in err


def test_data_larger_than_the_worker_memory_limit(tmp_path):
    """One worker process limited to 480 MiB protects 2,700,000 x 24 records (494 MiB as
    float64 in 45 Parquet files: more than the worker's whole limit): the run
    finishes without the worker being restarted or paused, its memory stays under the
    limit, every record is released once and the means are exact.  (20M x 30 against
    2 x 2 GB is benchmarks/bench_dask.py.)

    Sized for the test's time: it was 3,600,000 records against 640 MiB (164 s on an idle
    machine).  The partitions are as large as they were (60,000 records), and the file is
    still larger than the whole limit, so an engine that gathered it on one worker would
    pass the limit (494 MiB of values alone; the worker itself holds 130 MiB after its
    start) and the worker would be paused at 80 % and killed at 95 %.  The engine's own
    peak is mostly fixed (its libraries): 333 MiB at 640 MiB, 320 MiB at 480 MiB measured
    here, under the 384 MiB at which the worker pauses.

    The files are written without compression or dictionary encoding (random values do not
    compress): the worker reads the same values, each of its passes over them faster, and
    they are written in a quarter of the time."""
    import threading

    n, m, files = 2_700_000, 24, 45
    rng = np.random.default_rng(5)
    folder = tmp_path / "big"
    folder.mkdir()
    C = 0.5 * np.ones((m, m)) + 0.5 * np.eye(m)
    A = np.linalg.cholesky(C)
    total, squares = np.zeros(m), np.zeros(m)
    for i in range(files):
        Z = rng.standard_normal((n // files, m)) @ A.T
        part = pd.DataFrame(np.exp(8 + Z), columns=[f"x{j:02d}" for j in range(m)])
        total += part.sum().to_numpy()
        squares += (part ** 2).sum().to_numpy()
        part.to_parquet(folder / f"p{i:02d}.parquet", index=False, compression=None, use_dictionary=False)
    data_mb = n * m * 8 / 2 ** 20
    limit = 480 * 2 ** 20
    assert data_mb * 2 ** 20 > limit
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=limit) as cl, distributed.Client(cl) as client:
        before = set(client.scheduler_info()["workers"])
        peak, status, stop = [0], set(), threading.Event()

        def poll():
            while not stop.is_set():
                for w in client.scheduler_info()["workers"].values():
                    peak[0] = max(peak[0], w["metrics"]["memory"])
                    status.add(w["status"])
                stop.wait(0.25)

        t = threading.Thread(target=poll, daemon=True)
        t.start()
        try:
            # the floors' intruders on 2,000 sampled records instead of 20,000: they run on the
            # driver, after the worker's passes, and this test is about the worker's memory
            rel = protect_dask(read_dask(str(folder / "*.parquet")),
                               {"method": "fa", "seed": 1, "bounds": "none", "rounding": "none"},
                               str(tmp_path / "out"), sample=2_000, allow_unsafe="test: memory only")
        finally:
            stop.set()
            t.join()
        after = set(client.scheduler_info()["workers"])
    assert before == after and len(after) == 1  # the same worker: never killed and restarted
    assert status == {"running"} and 0 < peak[0] < limit, (peak[0] / 2 ** 20, status)  # never paused
    # read here, file by file (computing the frame on the worker would gather it all there),
    # each file's sums added up (not one frame of them all)
    written = sorted((tmp_path / "out").iterdir())
    assert rel.n == n and len(written) == files
    rows, out_total = 0, np.zeros(m)
    for f in written:
        part = pd.read_parquet(f)
        assert list(part.columns) == [f"x{j:02d}" for j in range(m)]
        rows += len(part)
        out_total += part.sum().to_numpy()
    assert rows == n
    mean0 = total / n
    # the original's sd from the sums of squares made with the files (no second pass over
    # them; the values are log-normal with sd/mean about 1.3: nothing cancels)
    sd0 = np.sqrt(squares / n - mean0 ** 2)
    assert np.max(np.abs(out_total / n - mean0) / sd0) < 1e-9


def test_workers_paused_at_their_memory_limit_stop_the_run(files, tmp_path, monkeypatch):
    """A worker too small for the process and one partition's work pauses at 80 % of its
    limit and, with nothing running to free memory, stays paused for ever (2.2M x 24 on a
    400 MiB worker did, here).  The run is stopped with a one-line error naming the fix,
    and nothing is written.  The worker is paused by hand (no memory limit, so no monitor
    resumes it)."""
    import threading
    import time

    from distributed.core import Status

    import sdccore._scale.engine as eng

    monkeypatch.setattr(eng, "PAUSE_LIMIT", 3)
    d, folder = files
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0) as cl, distributed.Client(cl) as client:
        # paused once the run has started (a worker paused before it never counts as ready)
        timer = threading.Timer(2.0, client.run, [lambda dask_worker: setattr(dask_worker, "status", Status.paused)])
        timer.start()
        t = time.monotonic()
        with pytest.raises(ValueError, match="paused at its memory limit for 3 s") as err:
            protect_dask(read_dask(str(folder / "*.parquet")), {"method": "pca", "seed": 1}, str(tmp_path / "o"),
                         drop=["id"])
        assert time.monotonic() - t < 45
        timer.join()
    assert "at least 1 GB" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "o").exists() and not [p for p in tmp_path.iterdir() if "partial" in p.name]


def test_a_worker_killed_again_and_again_is_one_line(client):
    """Dask's KilledWorker (a worker over its memory limit, restarted on every try) becomes a
    ValueError naming the fix, which the CLI prints as one line; other errors pass."""
    import sdccore._scale.engine as eng
    from distributed.scheduler import KilledWorker

    with pytest.raises(ValueError, match="killed again and again.*at least 1 GB"):
        with eng._paused_watch():
            raise KilledWorker("task", "tcp://127.0.0.1:1", 3)
    with pytest.raises(ZeroDivisionError):
        with eng._paused_watch():
            1 / 0


def test_a_cluster_without_workers_is_refused_not_waited_for(files, tmp_path, monkeypatch):
    """A cluster whose workers never start (the CI hang of stop 21: a worker paused by its
    memory limit at start-up) gets a one-line error instead of an endless wait."""
    import sdccore._io.partitions as base  # where the engine waits for its workers

    monkeypatch.setattr(base, "WORKER_WAIT", 2)
    d, folder = files
    with distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl):
        with pytest.raises(ValueError, match="no running worker after 2 s"):
            protect_dask(read_dask(str(folder / "*.parquet")), {"method": "pca", "seed": 1}, str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_partial_folders_of_a_stopped_run_are_removed(tmp_path):
    """A run killed mid-way leaves its hidden scratch and partial folders beside the release
    (gigabytes at scale); the next run for the same folder removes those of processes that
    no longer run on this machine, says so, and leaves a running process's and another
    machine's alone."""
    import subprocess
    import sys

    import dask

    import sdccore._scale.engine as eng

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    host = eng._host()
    stale = tmp_path / f".rel.sdccore-partial-s-{host}-{gone}"
    (stale / "scores").mkdir(parents=True)
    (stale / "scores" / "x.npy").write_bytes(b"\0" * 4096)
    running = tmp_path / f".rel.sdccore-partial-a-{host}-{os.getppid()}"
    other = tmp_path / f".rel.sdccore-partial-a-elsewhere-{gone}"
    near = tmp_path / f".release.sdccore-partial-s-{host}-{gone}"  # another release's
    for p in (running, other, near):
        p.mkdir()
    d = make(3_000, seed=3).drop(columns=["id", "region"])
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        rel = protect_dask(dd.from_pandas(d, npartitions=3), {"method": "pca", "seed": 1, "bounds": "none"},
                           str(tmp_path / "rel"),
                           sample=1000)
    assert not stale.exists() and running.exists() and other.exists() and near.exists()
    assert rel.notes[0].startswith("removed 1 partial folder(s) (0.00 GB) that a stopped earlier run")
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == sorted(
        p.name for p in (running, other, near))


def test_bounds_and_rounding_are_counted_exactly(tmp_path):
    """What bounds and rounding do at scale is said exactly, as in memory: the same seed with
    bounds='none' gives the values before clipping, so the clipped count is its count of
    negative values, and the mean shift is the release's mean minus the original's."""
    import dask

    d = make(40_000, seed=6).drop(columns=["id", "region"])
    ddf = dd.from_pandas(d, npartitions=6)
    # the floors' intruders on 2,000 sampled records, not 20,000: the sample is read only by the
    # risk check, never by the release, and this test is about the release and its notes
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        raw = protect_dask(ddf, {"method": "fa", "seed": 2, "bounds": "none", "rounding": "none"},
                           str(tmp_path / "raw"), sample=2_000, allow_unsafe="test")
        rel = protect_dask(ddf, {"method": "fa", "seed": 2, "bounds": "sign", "rounding": "original"},
                           str(tmp_path / "rel"), sample=2_000, allow_unsafe="test")
    R, Y = raw.data.compute(), rel.data.compute()
    neg = {c: int((R[c] < 0).sum()) for c in NUM}
    assert sum(neg.values()) > 0 and rel.clipped == neg
    assert raw.clipped == {c: 0 for c in NUM}
    n, mean, cov, *_ = moments(dd.from_pandas(d, npartitions=3), NUM)
    for j, c in enumerate(NUM):
        want = (Y[c].mean() - mean[j]) / np.sqrt(cov[j, j])
        assert abs(rel.mean_change_sd[c] - want) < 1e-9, c
        assert abs(raw.mean_change_sd[c]) < 1e-12
    worst = max(NUM, key=lambda c: abs(rel.mean_change_sd[c]))
    assert any(f"moved the means by up to {rel.mean_change_sd[worst]:+.2g} original sd ({worst})" in t
               for t in rel.notes)
    assert f"{NUM[0]}: {neg[NUM[0]]:,} value(s) outside the original's sign were clipped" in rel.notes or not neg[NUM[0]]
    assert not any("moved the means" in t for t in raw.notes)
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]


def test_public_protect_dask_takes_a_recipe_and_a_file_pattern(tmp_path):
    """The scale engine without a private name (issue 30, point 5): a recipe designed in
    memory, given to ``sdccore.protect_dask`` with a file pattern, writes the release that
    ``make_release`` builds from the same recipe in memory (rank swapping of one sensitive
    variable: byte for byte), with the recipe's drop applied."""
    import dask

    d = make(6_000, seed=11)
    folder = tmp_path / "in"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(d)), 3)):
        d.iloc[part].to_parquet(folder / f"p{i}.parquet", index=False)
    res = sdccore.protect(d.drop(columns="id"), "rankswap", sensitive=["amount3"], p=20, rng=9)
    recipe = sdccore.Recipe.from_result(res, drop=["id"], shuffle=False)
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        rel = sdccore.protect_dask(str(folder / "*.parquet"), recipe, str(tmp_path / "out"))
        out = rel.data.compute().reset_index(drop=True)
    assert isinstance(rel, sdccore.DaskRelease) and rel.risk.ok and "id" not in out.columns
    mem = sdccore.make_release(d, recipe).data.reset_index(drop=True)
    same_frame(out, mem)
    assert not out.amount3.equals(d.amount3) and out.amount1.equals(d.amount1)
    with pytest.raises(TypeError, match="options must be a Recipe or a dict"):
        sdccore.protect_dask(str(folder / "*.parquet"), "rankswap", str(tmp_path / "o2"))
