"""Local suppression on Dask (issue 42): ``local_suppression_dask`` blanks exactly the key values
``local_suppression`` blanks in memory, decided on a reduced file (every record at risk and the
first records of each key combination, more of a combination that gives look-alikes), on
sdcMicro's tutorial file and on random files with blanks, categorical keys, strata, an importance
order and combinations spread over many partitions."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._scale import suppression as dsup

KEYS = ["urbrur", "water", "sex", "age"]


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _same_blanks(out, mem, keys):
    o, m = out.reset_index(drop=True), mem.data.reset_index(drop=True)
    for c in keys:
        np.testing.assert_array_equal(o[c].isna().to_numpy(), m[c].isna().to_numpy(), err_msg=c)
        shown = m[c].notna().to_numpy()
        assert (o[c][shown].astype(str).to_numpy() == m[c][shown].astype(str).to_numpy()).all(), c


def test_the_tutorial_file_gets_the_in_memory_blanks():
    # sdccore.local_suppression on sdcMicro's testdata (tests/keys): 676 blanks, 673 of them ages
    d = sdccore.load_dataset("testdata")
    mem = sdccore.local_suppression(d, KEYS, k=3)
    for parts in (1, 5):
        s = sdccore.local_suppression_dask(dd.from_pandas(d, npartitions=parts), KEYS, k=3)
        assert (s.cells, s.per_key["age"], s.per_key["water"]) == (676, 673, 3)
        assert s.per_key == mem.per_key and s.order == mem.order and s.n == len(d)
        assert s.kept < len(d)  # decided on a reduced file: at most k of each common combination
        out = s.data.compute()
        _same_blanks(out, mem, KEYS)
        assert list(out.columns) == list(d.columns) and (out["income"].to_numpy() == d["income"].to_numpy()).all()
        assert str(out["age"].dtype) == str(mem.data["age"].dtype)
    assert "676 key value(s) blanked for 3-anonymity" in s.summary()


def _random_file(seed):
    g = np.random.default_rng(seed)
    n = int(g.integers(200, 2500))
    d = pd.DataFrame({"a": g.choice(list("xyz"), n, p=[.7, .2, .1]), "b": g.integers(0, int(g.integers(2, 12)), n),
                      "c": g.zipf(1.6, n).clip(max=30), "s": g.integers(0, 2, n), "v": g.normal(size=n)})
    d.loc[g.random(n) < 0.05, "b"] = np.nan
    if seed % 2:
        d["a"] = d["a"].astype("category")
    return d, g


@pytest.mark.parametrize("seed", [0, 3, 7, 13, 22, 29])
def test_random_files_get_the_in_memory_blanks(seed):
    """Among them files where a common combination gives look-alikes beyond its first k records,
    so that the reduced file is made again with more of it (``rounds`` > 1: seeds 13 and 29)."""
    d, g = _random_file(seed)
    k = int(g.integers(2, 6))
    strata = "s" if seed % 3 == 1 else None
    imp = ["a", "c", "b"] if seed % 2 else None
    mem = sdccore.local_suppression(d, ["a", "b", "c"], k=k, importance=imp, strata=strata)
    s = sdccore.local_suppression_dask(dd.from_pandas(d, npartitions=int(g.integers(2, 9))), ["a", "b", "c"], k=k,
                                       importance=imp, strata=strata)
    _same_blanks(s.data.compute(), mem, ["a", "b", "c"])
    assert s.per_key == mem.per_key


def test_a_combination_that_gives_look_alikes_is_kept_long_enough():
    """A rare person (x, 1) is covered by blanking b of the first two records of the common
    combination (x, 2): five records, of which the reduced file first keeps k = 3. Those two
    blanked, the reduced file would leave one (x, 2) showing its values where the whole file
    leaves three, and blank it too; so the combination is kept whole in a second round, and the
    blanks are the whole file's."""
    d = pd.DataFrame({"a": ["y"] * 6 + ["x"] * 5 + ["x"], "b": [3] * 6 + [2] * 5 + [1], "v": np.arange(12.0)})
    mem = sdccore.local_suppression(d, ["a", "b"], k=3)
    assert mem.suppressed["b"].tolist() == [False] * 6 + [True, True, False, False, False] + [True]
    s = sdccore.local_suppression_dask(dd.from_pandas(d, npartitions=3), ["a", "b"], k=3)
    assert s.rounds == 2 and s.kept == 3 + 5 + 1  # (y, 3) cut at k = 3, (x, 2) whole, the rare one
    _same_blanks(s.data.compute(), mem, ["a", "b"])


@pytest.mark.parametrize("name", ["total", "cap", "blanked"])
def test_a_key_may_bear_the_name_of_a_working_column(name):
    """An outside review's finding: keys named as the function's working columns crashed or,
    named 'cap', were silently blanked otherwise (the key's codes read as the room of each
    combination). Seven common combinations before the 12-record case, so that the one giving
    look-alikes has a large code."""
    a = ["b"] * 21 + ["y"] * 6 + ["x"] * 5 + ["x"]
    b = [v for v in range(10, 17) for _ in range(3)] + [3] * 6 + [20] * 5 + [1]
    d = pd.DataFrame({"a": a, name: b})
    mem = sdccore.local_suppression(d, ["a", name], k=3)
    s = sdccore.local_suppression_dask(dd.from_pandas(d, npartitions=3), ["a", name], k=3)
    _same_blanks(s.data.compute(), mem, ["a", name])
    assert s.rounds == 2
    with pytest.raises(ValueError, match="working columns; rename it"):
        sdccore.local_suppression_dask(dd.from_pandas(d.rename(columns={name: "__sdccore_row"}), npartitions=2),
                                       ["a", "__sdccore_row"])


def test_bad_input_is_refused_with_the_fix():
    d = sdccore.load_dataset("testdata")
    ddf = dd.from_pandas(d, npartitions=2)
    with pytest.raises(TypeError, match="for a pandas DataFrame use sdccore.local_suppression"):
        sdccore.local_suppression_dask(d, KEYS)
    with pytest.raises(ValueError, match="k=1 must be a whole number of at least 2"):
        sdccore.local_suppression_dask(ddf, KEYS, k=1)
    with pytest.raises(ValueError, match="nope"):
        sdccore.local_suppression_dask(ddf, ["nope"])
    with pytest.raises(ValueError, match="is more than the 6 records"):
        sdccore.local_suppression_dask(dd.from_pandas(d.head(6), npartitions=2), KEYS, k=7)
    monkey = dsup.MAX_KEPT
    try:
        dsup.MAX_KEPT = 100
        with pytest.raises(ValueError, match="Recode them first"):
            sdccore.local_suppression_dask(ddf, KEYS)
    finally:
        dsup.MAX_KEPT = monkey


def test_the_engine_names_the_function_that_blanks_at_scale():
    msg = sdccore.scale_refusal({"method": "fa", "keys": ["sex"]})
    assert "sdccore.local_suppression_dask" in msg


def test_a_categorical_stratum_with_an_unused_category():
    """An outside review's finding (in memory): a categorical stratum column whose categories
    include one no record has was refused as a group of 0 records; now the groups are the
    levels present, in memory and on Dask alike."""
    d = sdccore.load_dataset("testdata")[KEYS].copy()
    d["s"] = pd.Categorical(np.where(d["urbrur"] == 1, "N", "S"), categories=["N", "S", "E"])
    mem = sdccore.local_suppression(d, ["water", "sex", "age"], k=3, strata="s")
    s = sdccore.local_suppression_dask(dd.from_pandas(d, npartitions=3), ["water", "sex", "age"], k=3, strata="s")
    assert mem.cells > 0 and s.per_key == mem.per_key
    _same_blanks(s.data.compute(), mem, ["water", "sex", "age"])
