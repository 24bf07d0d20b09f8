"""Key variables in protect (issue 40): protect(..., keys=[...], k_anonymity=3) releases the amounts
protected by the method and the keys made k-anonymous by local suppression, in one release
and one recipe; the keys are never perturbed, the household id is kept."""
import numpy as np
import pytest

import sdccore
from sdccore._keys.frequencies import frequencies, key_codes

KEYS = ["urbrur", "water", "sex", "age"]
APART = ["roof", "walls", "electcon", "relat", "hhcivil", "ori_hid", "household_weights"]


@pytest.fixture(scope="module")
def testdata():
    return sdccore.load_dataset("testdata")


@pytest.fixture(scope="module")
def released(testdata):
    return sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, k_anonymity=3, household="ori_hid",
                           weights="sampling_weight", exclude=APART, rng=12345)


def test_testdata_keys_and_amounts_in_one_release(testdata, released):
    r = released
    assert r.risk.ok  # the amounts meet every risk floor (protect would have refused otherwise)
    blanks = r.data[KEYS].isna()
    # sdcMicro's kAnon count (674) and the household's other 5 members' water (a household variable: they
    # would show the blanked value)
    assert int(blanks.to_numpy().sum()) == 679 and int(blanks["water"].sum()) == 6
    half = r.data.groupby("ori_hid").water.apply(lambda x: x.isna().any() and x.notna().any())
    assert not half.any()
    C, _ = key_codes(r.data, KEYS)
    assert frequencies(C, np.ones(len(C)), strict=True)[0].min() >= 3  # each record's own values shown by >= 3
    assert sdccore.key_risk(r.data, KEYS).below_k == 0  # and by sdcMicro's count
    # the keys are blanked, never perturbed; the household id and the codes set apart kept as they were
    for c in KEYS:
        keep = ~blanks[c]
        assert (r.data.loc[keep, c].astype(float) == testdata.loc[keep, c].astype(float)).all(), c
    for c in [a for a in APART if a != "ori_hid"] + ["ori_hid", "sampling_weight", "expend", "savings"]:
        assert r.data[c].equals(testdata[c]), c
    assert not np.allclose(r.data["income"], testdata["income"])
    assert r.options["keys"] == KEYS and r.options["k_anonymity"] == 3
    assert any("679 key value(s) blanked for 3-anonymity" in n for n in r.notes)


def test_the_recipe_rebuilds_the_release_byte_for_byte(testdata, released):
    recipe = sdccore.Recipe.from_json(released.recipe_json())
    a = sdccore.make_release(testdata, recipe).csv()
    assert a == sdccore.make_release(testdata, sdccore.Recipe.from_json(released.recipe_json())).csv()
    assert sdccore.make_release(testdata, recipe).data[KEYS].isna().to_numpy().sum() == 679


def test_keys_are_checked(testdata):
    with pytest.raises(ValueError, match="keys and sensitive share age"):
        sdccore.protect(testdata, "ipso", sensitive=["income", "age"], keys=KEYS, exclude=APART, rng=1)
    with pytest.raises(ValueError, match="option 'k_anonymity' does not apply here"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], k_anonymity=3, exclude=APART, rng=1)
    with pytest.raises(ValueError, match="keys= with strata= is not built yet"):
        sdccore.protect(testdata, "magg", keys=KEYS, strata=["urbrur"], exclude=APART, rng=1)
    with pytest.raises(ValueError, match="keys"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], keys=["nope"], exclude=APART, rng=1)


def test_the_dask_engine_refuses_keys_with_the_fix():
    # a recipe with keys run at scale would otherwise release the keys unsuppressed
    why = sdccore.scale_refusal({"method": "fa", "keys": ["region"], "k_anonymity": 3})
    assert why is not None and "keys (k-anonymity by local suppression) are not available with --engine dask" in why
    assert sdccore.scale_refusal({"method": "fa"}) is None
