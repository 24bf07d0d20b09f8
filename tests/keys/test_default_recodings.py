"""The keys' default recodings (``default_recodings``): a key local suppression would blank for
a tenth of the records or more is recoded before any release, by the candidate that brings it
under a tenth with the least entropy lost (walks released files with 55-90 % of ages blank)."""
import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._keys.recoding import information_lost

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil"]


def _persons(n=1200, seed=40):
    g = np.random.default_rng(seed)
    return pd.DataFrame({"region": g.choice(["north", "south", "east", "west", "centre"], n),
                         "sex": g.choice(["f", "m"], n), "education": g.choice(["primary", "secondary", "tertiary"], n),
                         "age": g.integers(16, 90, n)})


def test_testdata_age_is_banded_and_the_blanks_are_those_local_suppression_makes():
    d = sdccore.load_dataset("testdata")
    r = sdccore.default_recodings(d, TESTDATA_KEYS, 3)
    assert [c for c, _ in r.rules] == ["age"]
    assert r.blanks_before == sdccore.local_suppression(d, TESTDATA_KEYS, 3).per_key
    assert r.blanks_before["age"] == 2534  # 55.3 % of 4,580 persons blank without it
    after = sdccore.local_suppression(sdccore.recode(d, dict(r.rules)), TESTDATA_KEYS, 3).per_key
    assert after == r.blanks_after and after["age"] < 0.1 * len(d)
    assert "55.3%" in r.reasons[0] and "age" in r.reasons[0]
    # the rule is one the Data page lists (so its multiselect shows it chosen)
    listed = {str(o.recoding.to_dict()) for o in sdccore.suggest_recodings(d, TESTDATA_KEYS, 3).for_variable("age")}
    assert str(r.to_dict()["age"]) in listed


def test_the_rule_is_the_least_entropy_lost_among_those_that_bring_the_key_under_a_tenth():
    d = _persons()
    keys = ["region", "sex", "education", "age"]
    r = sdccore.default_recodings(d, keys, 3)
    assert r.blanks_before["age"] >= 0.8 * len(d)  # nearly every age blank: 74 single years among 1,200
    (key, chosen), = r.rules
    # brute force over the candidates the suggestions list
    ok = []
    for o in sdccore.suggest_recodings(d, keys, 3).for_variable("age"):
        blanks = sdccore.local_suppression(sdccore.recode(d, {"age": o.recoding}), keys, 3).per_key["age"]
        if blanks < 0.1 * len(d):
            col = o.recoding.apply(d["age"])
            ok.append((information_lost(d["age"], col)["entropy_lost"], str(o.recoding.to_dict())))
    assert len(ok) >= 2  # a real choice
    assert str(chosen.to_dict()) == min(ok)[1]


def test_no_heavy_key_no_recoding_and_a_household_counts():
    d = _persons()
    r = sdccore.default_recodings(d, ["region", "sex", "education"], 3)
    assert len(r) == 0 and r.to_dict() == {} and r.blanks_after == r.blanks_before
    t = sdccore.load_dataset("testdata")
    h = sdccore.default_recodings(t, TESTDATA_KEYS, 3, household="ori_hid")
    assert h.blanks_before == sdccore.local_suppression(t, TESTDATA_KEYS, 3, household="ori_hid").per_key
    assert h.blanks_after["age"] < 0.1 * len(t) <= h.blanks_before["age"]


def test_a_key_no_recoding_helps_is_left_and_bad_keys_are_refused():
    g = np.random.default_rng(3)
    d = pd.DataFrame({"a": g.integers(0, 2, 300), "b": g.integers(0, 2, 300),
                      "c": [f"x{i}" for i in range(300)]})  # c unique for everyone and no rare level to merge
    r = sdccore.default_recodings(d, ["a", "b", "c"], 3)
    assert r.blanks_before["c"] >= 0.1 * len(d) and len(r) == 0
    with pytest.raises(ValueError, match="nope"):
        sdccore.default_recodings(d, ["a", "nope"], 3)
