"""Key variables in protect (issue 40): protect(..., keys=[...], k_anonymity=3) releases the amounts
protected by the method and the keys made k-anonymous by local suppression, in one release
and one recipe; the keys are never perturbed, the household id is kept."""
import json

import numpy as np
import pandas as pd
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
    assert int(blanks.to_numpy().sum()) == 677 and int(blanks["water"].sum()) == 0 and int(blanks["sex"].sum()) == 3
    half = r.data.groupby(testdata.ori_hid).water.apply(lambda x: x.isna().any() and x.notna().any())
    assert not half.any()
    assert r.data.ori_hid.isna().all() and r.options["household_ids"] == "drop"  # no household link by default
    C, _ = key_codes(r.data, KEYS)
    assert frequencies(C, np.ones(len(C)), strict=True)[0].min() >= 3  # each record's own values shown by >= 3
    assert sdccore.key_risk(r.data, KEYS).below_k == 0  # and by sdcMicro's count
    # the keys are blanked, never perturbed; the codes set apart kept as they were
    for c in KEYS:
        keep = ~blanks[c]
        assert (r.data.loc[keep, c].astype(float) == testdata.loc[keep, c].astype(float)).all(), c
    for c in [a for a in APART if a != "ori_hid"] + ["sampling_weight", "expend", "savings"]:
        assert r.data[c].equals(testdata[c]), c
    assert not np.allclose(r.data["income"], testdata["income"])
    assert r.options["keys"] == KEYS and r.options["k_anonymity"] == 3
    assert any("677 key value(s) blanked for 3-anonymity" in n for n in r.notes)
    # what the blanks cost the analysts, with the recoding that saves most of them (suggest_recodings:
    # 114 blanks with age in bands of 5), in the notes and, with where they fall, in the report's keys
    heavy = ("age is blank for 14.7% of records (674 of 4,580): every analysis with age runs on the other 85.3%; "
             "recoded as age in bands of 5: 0-4, 5-9, ..., 90+ (88 values -> 19), 114 key value(s) in all would be "
             "blank instead of 677")
    assert sum(n.startswith(heavy) for n in r.notes) == 1
    warned = sdccore.report.release_keys(testdata, r.data, r.options)["warnings"]
    assert len(warned) == 2 and warned[0].startswith(heavy)
    assert warned[1].startswith("Blanks fall unevenly: age blanked for 14.7% of records, 100.0% where water = 6 "
                                "(26 records); age blanked for 14.7% of records, 43.3% where urbrur = 1 (646 records)")


def test_the_codebook_says_what_was_done_to_the_keys(testdata, released):
    # a key variable is no "released unchanged" column: its role and the values blanked, counted
    # against the original (677 in all, as the notes say), and recoding / PRAM where applied
    import re

    cb = sdccore.codebook(released, testdata)
    total = 0
    for c in KEYS:
        assert cb.loc[c, "role"] == "key variable", c
        n = int(re.match(r"(\d+) value\(s\) blanked for 3-anonymity", cb.loc[c, "method"]).group(1))
        assert n == int((testdata[c].notna() & released.data[c].isna()).sum()), c
        total += n
    assert total == 677 and cb.loc["roof", "method"] == "released unchanged"
    bands = sdccore.Recoding.bands([0, 10, 20, 30, 40, 50, 60, 70, 80, float("inf")], right=False)
    r = sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, recode={"age": bands}, pram=["roof"],
                        household="ori_hid", weights="sampling_weight", exclude=APART, rng=12345)
    cb = sdccore.codebook(r, testdata)
    assert cb.loc["age", "method"].startswith("recoded") and "58 value(s) blanked" in cb.loc["age", "method"]
    assert cb.loc["roof", "role"] == "excluded" and cb.loc["roof", "method"].startswith("post-randomised (PRAM")


def test_the_recipe_rebuilds_the_release_byte_for_byte(testdata, released):
    recipe = sdccore.Recipe.from_json(released.recipe_json())
    a = sdccore.make_release(testdata, recipe).csv()
    assert a == sdccore.make_release(testdata, sdccore.Recipe.from_json(released.recipe_json())).csv()
    assert sdccore.make_release(testdata, recipe).data[KEYS].isna().to_numpy().sum() == 677


def test_keys_are_checked(testdata):
    with pytest.raises(ValueError, match="keys and sensitive share age"):
        sdccore.protect(testdata, "ipso", sensitive=["income", "age"], keys=KEYS, exclude=APART, rng=1)
    with pytest.raises(ValueError, match="option 'k_anonymity' does not apply here"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], k_anonymity=3, exclude=APART, rng=1)
    with pytest.raises(ValueError, match="strata and keys share urbrur"):
        sdccore.protect(testdata, "magg", keys=KEYS, strata=["urbrur"], exclude=APART, rng=1)
    with pytest.raises(ValueError, match="keys"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], keys=["nope"], exclude=APART, rng=1)


def test_the_dask_engine_refuses_keys_with_the_fix():
    # a recipe with keys run at scale would otherwise release the keys unsuppressed
    why = sdccore.scale_refusal({"method": "fa", "keys": ["region"], "k_anonymity": 3})
    assert why is not None and "keys (k-anonymity by local suppression) are not available inside --engine dask" in why
    assert "sdccore.local_suppression_dask" in why  # the fix: the same blanks at scale, before the protection
    assert sdccore.scale_refusal({"method": "fa"}) is None


def test_keys_within_strata(testdata):
    # each urbrur group made 3-anonymous on its own: the same blanks as urbrur as a key that is never blanked
    keys = ["water", "sex", "age"]
    r = sdccore.protect(testdata, "fa", keys=keys, strata=["urbrur"], weights="sampling_weight", exclude=APART,
                        rng=3, allow_unsafe="test: the keys only")
    alone = sdccore.local_suppression(testdata, keys, 3, strata="urbrur")
    assert r.data[keys].isna().equals(alone.suppressed) and alone.cells == 676
    for _, g in r.data.groupby("urbrur"):
        C, _ = key_codes(g, keys)
        assert frequencies(C, np.ones(len(C)), strict=True)[0].min() >= 3
    assert sum("key value(s) blanked" in n for n in r.notes) == 2
    assert r.options["keys"] == keys and r.options["strata"] == ["urbrur"]


def test_recoding_pram_and_suppression_in_one_release(testdata):
    # age in 10-year bands (published), roof post-randomised, then 3-anonymity: the bands leave far fewer
    # records to blank than the 674 of the exact ages
    bands = sdccore.Recoding.bands([0, 10, 20, 30, 40, 50, 60, 70, 80, float("inf")], right=False)
    r = sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, recode={"age": bands}, pram=["roof"],
                        household="ori_hid", weights="sampling_weight", exclude=APART, rng=12345)
    recoded = sdccore.recode(testdata, {"age": bands})
    alone = sdccore.local_suppression(recoded, KEYS, 3, household="ori_hid")
    assert r.data[KEYS].isna().equals(alone.suppressed) and alone.cells == 61 < 677
    C, _ = key_codes(r.data, KEYS)
    assert frequencies(C, np.ones(len(C)), strict=True)[0].min() >= 3
    assert set(r.data.age.dropna().astype(str)) == {"0-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69",
                                                    "70-79", "80+"}
    # PRAM: roof changed for some records, its category counts kept in expectation (here within 4 sd)
    changed = int((r.data.roof != testdata.roof).sum())
    assert 100 < changed < 400
    for cat, cnt in testdata.roof.value_counts().items():
        assert abs(int((r.data.roof == cat).sum()) - cnt) < 4 * np.sqrt(changed) + 5, cat
    # everything is in the recipe and rebuilt byte for byte (PRAM from the seed's own stream)
    assert r.options["recode"]["age"]["breaks"][-1] == "inf" and r.options["pram"] == ["roof"]
    recipe = sdccore.Recipe.from_json(r.recipe_json())
    assert sdccore.make_release(testdata, recipe).csv() == sdccore.make_release(testdata, recipe).csv()
    assert any(n.startswith("age recoded: age in bands of 10") for n in r.notes)
    # the intruder matches on the published bands (it knows the recoding): the key match is measured
    I = r.risk.intruders
    assert ((I.intruder == "key_match") & (I.band == "all")).sum() == 1


def test_recode_and_pram_are_checked(testdata):
    with pytest.raises(ValueError, match="recode names roof, which is not among the keys"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, recode={"roof": {"kind": "merge",
                        "mapping": [[1, 2]]}}, exclude=APART, rng=1)
    with pytest.raises(ValueError, match="pram and sensitive share income"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], pram=["income"], exclude=APART, rng=1)
    with pytest.raises(ValueError, match="option 'recode' does not apply here"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], recode={"age": {"kind": "top", "value": 80}},
                        exclude=APART, rng=1)
    with pytest.raises(TypeError, match="recode must be a dict"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, recode=["age"], exclude=APART, rng=1)


def test_released_household_ids_show_each_households_make_up(testdata):
    # outside audit of issue 40: with the ids released, 3,975 of 4,580 persons were singled out by their
    # household's make-up (size and the members' sexes and ages). Kept or new ids: the size counts as a key
    # and households no other household matches break a floor (named, with the fix); dropped: no link
    for ids in ("new", "kept"):
        with pytest.raises(sdccore.UnsafeReleaseError, match="ori_hid: 3,455 persons live in households whose "
                                                             "make-up .* fix: household_ids='drop'"):
            sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, household="ori_hid",
                            household_ids=ids, weights="sampling_weight", exclude=APART, rng=12345)
    r = sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, household="ori_hid",
                        household_ids="new", weights="sampling_weight", exclude=APART, rng=12345,
                        allow_unsafe="test: the renumbering")
    old, new = testdata.ori_hid, r.data.ori_hid
    pairs = pd.DataFrame({"old": old, "new": new}).drop_duplicates()
    h = old.nunique()
    assert len(pairs) == h == new.nunique() and sorted(new.unique()) == list(range(1, h + 1))  # one-to-one
    assert (pairs.old != pairs.new).mean() > 0.9  # the numbering links to nothing
    # the household size counted as a key that is never blanked: within each size, 3 records per combination
    sizes = old.map(old.value_counts())
    assert r.data[KEYS].isna().to_numpy().sum() == sdccore.local_suppression(
        testdata, KEYS, 3, household="ori_hid", household_size=True).cells == 2840
    for _, g in r.data.groupby(sizes.clip(upper=sizes[sizes.map(sizes.value_counts()) >= 3].max())):
        C, _ = key_codes(g, KEYS)
        assert frequencies(C, np.ones(len(C)), strict=True)[0].min() >= 3
    recipe = sdccore.Recipe.from_json(r.recipe_json())
    assert sdccore.make_release(testdata, recipe, allow_unsafe="test").data.ori_hid.equals(new)
    with pytest.raises(ValueError, match="household_ids"):
        sdccore.protect(testdata, "ipso", sensitive=["income"], keys=KEYS, household_ids="new", exclude=APART, rng=1)


def test_a_recipe_with_keys_of_an_older_format_is_not_rebuilt(testdata, released):
    old = json.loads(released.recipe_json())
    old["recipe_version"] = 6
    del old["household_ids"]
    with pytest.raises(ValueError, match=r"format 6\) suppresses key variables by a rule that left persons"):
        sdccore.Recipe.from_dict(old)


def test_public_amounts_released_unchanged_that_single_records_out_are_named():
    """The keys' k-anonymity assumes the intruder knows the keys alone; a public amount released
    unchanged is a key to the cent.  rent takes 10 values, each on 6 records but 100.5, 230.25
    and 999 (one record each): 3 records singled out; with 'size' (two levels) beside it, the
    pairs (rent, size) of the 6-record values split 3 + 3, so still 3."""
    from sdccore._protect.keystep import singled_out

    g = np.random.default_rng(3)
    rent = np.r_[np.repeat(np.arange(7) * 50.0 + 300, 6), 100.5, 230.25, 999.0]
    n = len(rent)
    size = np.r_[np.tile([1.0, 1.0, 1.0, 2.0, 2.0, 2.0], 7), 1.0, 2.0, 1.0]
    d = pd.DataFrame({"region": g.choice(["N", "S"], n), "sex": g.choice(["F", "M"], n), "rent": rent, "size": size,
                      "income": g.lognormal(10, 0.5, n)})
    note = singled_out(d, d.assign(income=d.income * 1.1), ["region", "sex"])
    assert note.startswith("rent, size are released unchanged and single out 3 of 45 records by themselves")
    assert "make them keys (recoded into bands), or protect them" in note
    assert singled_out(d, d.assign(rent=d.rent + 1, income=d.income * 1.1), ["region", "sex", "size"]) == ""  # none left
    r = sdccore.protect(d, "shuffle", sensitive=["income"], keys=["region", "sex"], k_anonymity=2, rng=1,
                        allow_unsafe="a test of the notes")
    assert any(x.startswith("rent, size are released unchanged and single out 3 of 45") for x in r.notes)
