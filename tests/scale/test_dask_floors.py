"""The risk floors' per-record figures at scale (sdccore._scale.floors): |cor| and the own-record
closeness overall, in every size band and among the largest 1 %, counted over every record
of a partitioned file, equal the in-memory risk_profile's on the whole file (computed two
ways), ties included; protect_dask's profile carries them instead of its sample's."""

import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402

from sdccore import protect_dask  # noqa: E402
from sdccore._scale.floors import band_starts, whole_file_figures  # noqa: E402
from sdccore._risk.floors import RiskFloors, risk_profile  # noqa: E402

NAMES = ["amount", "count", "rounded", "signed"]


def release_pair(n, seed=0):
    """An original with a skewed amount, a heavily tied count (Poisson 3: a few distinct
    values, so band cuts fall inside runs of ties), a rounded amount and a signed column;
    and a 'release' whose relative error shrinks with size, so that the largest records stay
    closest to the truth (the case the top band is for)."""
    rng = np.random.default_rng(seed)
    amount = np.exp(rng.normal(8, 1.2, n))
    X = np.column_stack([amount, rng.poisson(3, n).astype(float), np.round(amount * rng.uniform(0.5, 2, n), 0),
                         rng.normal(0, 10, n)])
    scale = 0.3 / (1 + np.argsort(np.argsort(X, axis=0), axis=0) / n * 6)  # smaller for larger values
    Y = X * (1 + scale * rng.standard_normal(X.shape))
    Y[:, 1] = np.where(rng.random(n) < 0.3, X[:, 1], X[:, 1] + rng.integers(-1, 2, n))  # ties in the release too
    return X, Y


def dask_figures(X, Y, lengths, check, floors, sample_rows):
    Xd = da.from_array(X, chunks=(tuple(lengths), X.shape[1]))
    Yd = da.from_array(Y, chunks=(tuple(lengths), Y.shape[1]))
    with dask.config.set(scheduler="synchronous"):
        return whole_file_figures(Xd, Yd, check, X.shape[0], X.mean(axis=0), X.min(axis=0), X.max(axis=0),
                                  X[sample_rows], floors)


def in_memory(X, Y, check, floors, names=NAMES):
    """risk_profile's |cor| and bands (record counts and value ranges over every record), with
    the own record's share WITH the release counted directly over every record in each band
    (risk_profile's close_own is the share beyond the prior, on its linked sample: issue 26)."""
    rp = risk_profile(X, Y, names, check, floors=floors)
    var, bands = rp.variables.copy(), rp.bands.copy()
    n = len(X)
    for j in check:
        x, y = X[:, j], Y[:, j]
        own = np.abs(y - x) <= floors.tolerance * np.abs(x)
        order = np.argsort(x, kind="stable")
        members = list(np.array_split(order, floors.bands))
        top = max(floors.top_records, int(np.ceil(0.01 * n)))
        members.append(order[n - top:])
        var.loc[names[j], "close_own"] = own.mean()
        sel = bands.variable == names[j]
        assert list(bands.loc[sel, "records"]) == [len(m) for m in members]
        bands.loc[sel, "close_own"] = [own[m].mean() for m in members]
    return var, bands


@pytest.mark.parametrize("floors", [RiskFloors(), RiskFloors(bands=7, top_records=100, tolerance=0.1)])
def test_whole_file_figures_equal_the_in_memory_profile(floors):
    """Uneven partitions with an empty one, 20,011 records: every band's closeness, record
    count and value range, the overall closeness and |cor| equal risk_profile's on the whole
    file (to rounding of the correlation), for every checked column."""
    X, Y = release_pair(20_011)
    lengths = [0, 7000, 3, 2997, 10011]
    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(len(X), 2000, replace=False))
    check = [0, 1, 2, 3]
    got = dask_figures(X, Y, lengths, check, floors, rows)
    var, bands = in_memory(X, Y, check, floors)
    for j in check:
        name = NAMES[j]
        assert got[j]["all"] == var.loc[name, "close_own"], name
        assert abs(got[j]["cor"] - var.loc[name, "abs_cor"]) < 1e-12, name
        want = bands[bands.variable == name].set_index("band")
        assert list(got[j]["bands"]) == list(want.index), name
        for lab, (share, count, lo, hi) in got[j]["bands"].items():
            assert (share, count, lo, hi) == (want.loc[lab, "close_own"], want.loc[lab, "records"],
                                              want.loc[lab, "lo"], want.loc[lab, "hi"]), (name, lab)
    # the construction makes the largest records the closest: the top band is the worst
    top = got[0]["bands"]["top 1 %"][0]
    assert top > max(v[0] for lab, v in got[0]["bands"].items() if lab != "top 1 %")


def test_a_misleading_sample_is_widened_not_trusted(monkeypatch):
    """A 'sample' drawn only from the smallest records brackets every cut in the wrong place;
    the counting pass sees it and widens to the whole range (a second counting pass): still
    the exact figures."""
    import sdccore._scale.floors as fl

    calls = []
    counts = fl._pass_counts
    monkeypatch.setattr(fl, "_pass_counts", lambda *a: calls.append(1) or counts(*a))
    X, Y = release_pair(6_000, seed=2)
    floors = RiskFloors()
    low = np.argsort(X[:, 0])[:500]
    got = dask_figures(X, Y, [1500, 1500, 3000], [0], floors, np.sort(low))
    assert len(calls) == 2 * 3  # both attempts, over the 3 partitions
    var, bands = in_memory(X, Y, [0], floors)
    want = bands.set_index("band")
    assert got[0]["all"] == var.loc["amount", "close_own"]
    assert {lab: v[0] for lab, v in got[0]["bands"].items()} == want["close_own"].to_dict()


def test_band_starts_cut_as_array_split():
    for n, b in [(10, 3), (20_011, 10), (7, 10), (100, 1)]:
        starts = band_starts(n, b)
        sizes = [len(p) for p in np.array_split(np.arange(n), b)]
        assert np.diff(starts).tolist() == sizes and starts[-1] == n


def test_protect_dask_checks_the_floors_on_every_record(tmp_path):
    """protect_dask's risk profile reports the whole file's own-record closeness and band
    counts (the in-memory profile of the whole original and release), not its sample's."""
    rng = np.random.default_rng(4)
    C = 0.5 * np.ones((5, 5)) + 0.5 * np.eye(5)
    d = pd.DataFrame(np.round(np.exp(8 + rng.multivariate_normal(np.zeros(5), C, size=30_000)), 2),
                     columns=[f"v{j}" for j in range(5)])
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        rel = protect_dask(dd.from_pandas(d, npartitions=5), {"method": "pca", "seed": 3}, str(tmp_path / "o"),
                           sample=1000, allow_unsafe="test")
        Y = rel.data.compute()
    cols = list(d.columns)
    # the own record's share WITH the release over every record (an upper bound of its share
    # beyond the prior, which the sample-based profile gives in memory)
    fv, fb = in_memory(d[cols].to_numpy(float), Y[cols].to_numpy(float), list(range(5)), RiskFloors(), cols)
    full = type("Full", (), {"variables": fv, "bands": fb})
    got = rel.risk.bands.set_index(["variable", "band"])
    want = full.bands.set_index(["variable", "band"])
    assert got["records"].equals(want["records"]) and got["records"].loc[("v0", "top 1 %")] == 300
    assert np.array_equal(got["close_own"].to_numpy(), want["close_own"].to_numpy())
    for c in cols:
        assert rel.risk.variables.loc[c, "close_own"] == full.variables.loc[c, "close_own"]
        assert abs(rel.risk.variables.loc[c, "abs_cor"] - full.variables.loc[c, "abs_cor"]) < 1e-12
    assert any("counted over all 30,000 records" in t for t in rel.notes)


def test_a_violation_at_scale_names_the_methods_own_fix(tmp_path):
    """The engine tells the risk check which method made the release (it did not: at scale a
    violation named the generic fix, and an intruder restricted to some methods ran on all)."""
    rng = np.random.default_rng(4)
    C = 0.5 * np.ones((4, 4)) + 0.5 * np.eye(4)
    d = pd.DataFrame(np.round(np.exp(8 + rng.multivariate_normal(np.zeros(4), C, size=3_000)), 2),
                     columns=[f"v{j}" for j in range(4)])
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        rel = protect_dask(dd.from_pandas(d, npartitions=3), {"method": "rankswap", "p": 1, "seed": 3},
                           str(tmp_path / "o"), allow_unsafe="test")
    assert not rel.risk.ok
    assert any("fix: a larger rank-swap window p (e.g. p=60 or p=80)" in v for v in rel.risk.violations), \
        rel.risk.violations[:2]
