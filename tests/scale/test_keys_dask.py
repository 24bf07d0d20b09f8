"""The key variables' identity risk on Dask (issue 42): ``key_risk_dask`` gives ``key_risk``'s
figures record by record (fk, Fk, the individual risk) and in sum, with keys missing in some
records (every pattern pair a group-by), text, categorical and numeric keys, sampling weights or
none, and records of one key combination spread over many partitions."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._scale import keys as dkeys

KEYS = ["urbrur", "water", "sex", "age"]


def _with_blanks(d, share, seed):
    rng = np.random.default_rng(seed)
    d = d.copy()
    for c in KEYS:
        d.loc[rng.random(len(d)) < share, c] = np.nan
    return d


def _same(r, m):
    rec = r.records.compute()
    assert (rec.index == m.records.index).all()
    np.testing.assert_array_equal(rec.fk.to_numpy(), m.records.fk.to_numpy())
    np.testing.assert_allclose(rec.Fk.to_numpy(), m.records.Fk.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(rec.risk.to_numpy(), m.records.risk.to_numpy(), rtol=1e-12)
    assert (r.sample_uniques, r.below_k, r.unweighted) == (m.sample_uniques, m.below_k, m.unweighted)
    assert r.expected_reidentifications == pytest.approx(m.expected_reidentifications, rel=1e-12)
    assert r.max_risk == pytest.approx(m.max_risk, rel=1e-12)


def test_sdcmicro_tutorial_file_as_sdcmicro_counts_it():
    # the figures of tests/keys/test_key_risk.py (sdcMicro 5.8.1: measure_risk(sdcObj) on testdata
    # with keyVars urbrur, water, sex, age and weightVar sampling_weight): 330 unique, 674 below 3,
    # 24.7838722150 expected re-identifications
    d = sdccore.load_dataset("testdata")
    with dask.config.set(scheduler="sync"):
        r = sdccore.key_risk_dask(dd.from_pandas(d, npartitions=7), KEYS, weights="sampling_weight")
        _same(r, sdccore.key_risk(d, KEYS, weights="sampling_weight"))
    assert (r.sample_uniques, r.below_k, r.patterns, r.n) == (330, 674, 1, 4580)
    assert r.expected_reidentifications == pytest.approx(24.7838722150, abs=1e-9)
    assert "330 are unique" in r.summary()


@pytest.mark.parametrize("weights", [None, "sampling_weight"])
def test_missing_keys_every_pattern_pair(weights):
    d = _with_blanks(sdccore.load_dataset("testdata"), 0.05, 1)
    with dask.config.set(scheduler="sync"):  # Dask's own scheduler, whatever client an earlier test left
        r = sdccore.key_risk_dask(dd.from_pandas(d, npartitions=5), KEYS, weights=weights)
        m = sdccore.key_risk(d, KEYS, weights=weights)
        assert r.patterns == 13  # 4 keys, blanks in 5 % of each: 13 of the 16 patterns occur
        _same(r, m)
    assert r.unweighted == (weights is None)


def test_text_categorical_and_numeric_keys_across_many_partitions_on_a_cluster():
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(3)
    n = 6000
    d = pd.DataFrame({"region": rng.choice(["north", "south", "=cmd()", "east"], n),
                      "job": pd.Categorical(rng.choice([f"j{i}" for i in range(30)], n)),
                      "age": rng.integers(15, 90, n).astype(float), "w": rng.uniform(5, 50, n)})
    d.loc[rng.random(n) < 0.03, "region"] = None
    d.loc[rng.random(n) < 0.03, "age"] = np.nan
    keys = ["region", "job", "age"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="1GB") as cluster, distributed.Client(cluster):
        r = sdccore.key_risk_dask(dd.from_pandas(d, npartitions=12), keys, weights="w", k=2)
        m = sdccore.key_risk(d, keys, weights="w", k=2)
        _same(r, m)
    assert r.sample_uniques > 100 and r.below_k == r.sample_uniques  # k=2: below k is unique


@pytest.fixture
def local_scheduler():
    with dask.config.set(scheduler="sync"):
        yield


def test_bad_input_is_refused_with_the_fix(monkeypatch, local_scheduler):
    d = sdccore.load_dataset("testdata")
    with pytest.raises(TypeError, match="for a pandas DataFrame use sdccore.key_risk"):
        sdccore.key_risk_dask(d, KEYS)
    ddf = dd.from_pandas(d, npartitions=2)
    with pytest.raises(ValueError, match="weights='nope' is not a column"):
        sdccore.key_risk_dask(ddf, KEYS, weights="nope")
    with pytest.raises(ValueError, match="weights='age' is also a key"):
        sdccore.key_risk_dask(ddf, KEYS, weights="age")
    bad = d.assign(sampling_weight=d.sampling_weight.where(d.index != 5, -1.0))
    with pytest.raises(ValueError, match="1 value.*not positive"):
        sdccore.key_risk_dask(dd.from_pandas(bad, npartitions=2), KEYS, weights="sampling_weight")
    with pytest.raises(ValueError, match="k=0"):
        sdccore.key_risk_dask(ddf, KEYS, k=0)
    monkeypatch.setattr(dkeys, "MAX_COMBINATIONS", 100)
    with pytest.raises(ValueError, match=r"combinations \(more than 100\).*Recode them first"):
        sdccore.key_risk_dask(ddf, KEYS)


def test_a_client_closed_earlier_does_not_break_it():
    """A distributed client closed earlier in the session (the dashboard's, a notebook's) may
    leave Dask's configuration naming the distributed scheduler: the work then runs on Dask's
    local threads instead of failing with 'no Client active'."""
    distributed = pytest.importorskip("distributed")
    d = sdccore.load_dataset("testdata")
    with dask.config.set(scheduler="dask.distributed"):  # what a closed client can leave behind
        with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cl, \
                distributed.Client(cl):
            pass
        r = sdccore.key_risk_dask(dd.from_pandas(d, npartitions=3), KEYS, weights="sampling_weight")
    assert (r.sample_uniques, r.below_k) == (330, 674)
