"""Local suppression to k-anonymity (issue 40): every record at risk gets a blank of its own
(another record's blank is no look-alike of a rare record's own values), the least important
key that lifts it to k, and no other value changes; on sdcMicro's tutorial file as many blanks
as sdcMicro's kAnon, the least possible."""
import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._keys.frequencies import compatible_counts, frequencies, key_codes

KEYS = ["urbrur", "water", "sex", "age"]


def _strict_fk(d, keys):
    C, _ = key_codes(d, keys)
    return frequencies(C, np.ones(len(C)), strict=True)[0]


def test_testdata_to_3_anonymity_with_sdcmicros_count():
    # R 4.2, sdcMicro 5.8.1 (built here):
    #   sdc <- createSdcObj(testdata, keyVars = c("urbrur", "water", "sex", "age"), ...); sdc <- kAnon(sdc, k = 3)
    #   sdc@localSuppression$supps   # urbrur 0, water 7, sex 0, age 667: 674 cells (0.54 CPU-s)
    d = sdccore.load_dataset("testdata")
    before = _strict_fk(d, KEYS)
    s = sdccore.local_suppression(d, KEYS, k=3)
    # one blank per record at risk (674: the fewest possible), and 2 water codes more: the one person whose
    # water was blanked alone would be the only candidate for her true keys (test_testdata_from_the_targets_side_too)
    assert int((before < 3).sum()) == 674 and s.cells == 676
    assert s.per_key == {"urbrur": 0, "water": 3, "sex": 0, "age": 673} and s.order[0] == "age"
    assert _strict_fk(s.data, KEYS).min() >= 3
    assert sdccore.key_risk(s.data, KEYS).below_k == 0  # sdcMicro's count agrees
    # every record at risk got a blank of its own; nothing else changed
    mask = s.suppressed.to_numpy()
    assert (mask.any(axis=1) == (before < 3)).all()  # the 2 more water codes are on records at risk
    for c in d.columns:
        keep = ~s.suppressed[c] if c in KEYS else pd.Series(True, index=d.index)
        assert (d.loc[keep, c].astype(float) == s.data.loc[keep, c].astype(float)).all(), c
    assert s.data.loc[s.suppressed["age"], "age"].isna().all()


def test_another_records_blank_is_no_look_alike():
    # a and b are the only (x, 1) records, c-f fill (x, 2); k = 3: blanking a's second key
    # would, counted as sdcMicro counts, make b 3-anonymous through a's blank; here b gets its own,
    # and c one too: an intruder who knows a's (x, 1) would otherwise find only a and b
    d = pd.DataFrame({"k1": ["x"] * 6, "k2": [1, 1, 2, 2, 2, 2]})
    s = sdccore.local_suppression(d, ["k1", "k2"], k=3)
    assert s.suppressed["k2"].tolist() == [True, True, True, False, False, False] and s.cells == 3
    assert s.data.k2.isna().tolist() == [True, True, True, False, False, False]


def test_importance_decides_which_key_is_blanked():
    g = np.random.default_rng(1)
    n = 400
    d = pd.DataFrame({"region": g.choice(list("abcdefgh"), n), "sex": g.choice([1, 2], n),
                      "age": g.integers(18, 90, n)})
    default = sdccore.local_suppression(d, ["region", "sex", "age"], k=3)
    assert default.order == ("age", "region", "sex") and default.per_key["age"] == max(default.per_key.values())
    keep_age = sdccore.local_suppression(d, ["region", "sex", "age"], k=3, importance=["age", "sex", "region"])
    assert keep_age.order == ("region", "sex", "age")
    assert keep_age.per_key["age"] < default.per_key["age"]
    for s in (default, keep_age):
        assert _strict_fk(s.data, ["region", "sex", "age"]).min() >= 3


def test_strict_counts_by_brute_force():
    g = np.random.default_rng(2)
    C = g.integers(0, 3, (120, 3))
    C[g.random(C.shape) < 0.1] = -1
    fk, _ = frequencies(C, np.ones(len(C)), strict=True)
    want = [sum(all(C[j, a] == C[i, a] for a in range(3) if C[i, a] >= 0) for j in range(len(C))) for i in range(len(C))]
    assert fk.tolist() == want


def test_bad_arguments_are_named():
    d = pd.DataFrame({"k": ["a", "b", "b"]})
    with pytest.raises(ValueError, match="k=1"):
        sdccore.local_suppression(d, ["k"], k=1)
    with pytest.raises(ValueError, match="k=5 is more than the 3 records"):
        sdccore.local_suppression(d, ["k"], k=5)
    with pytest.raises(ValueError, match="importance must order every key"):
        sdccore.local_suppression(d.assign(j=1), ["k", "j"], importance=["k"])
    with pytest.raises(ValueError, match="keys"):
        sdccore.local_suppression(d, ["nope"])


def test_a_household_variable_is_blanked_for_every_member_or_not_at_all():
    # testdata: water is one value per household; a water code blanked for one member would be read off
    # the others. sdcMicro's kAnon (R 4.2, sdcMicro 5.8.1: kAnon(createSdcObj(testdata, keyVars = c("urbrur",
    # "water", "sex", "age"), w = "sampling_weight", hhId = "ori_hid"), k = 3); extractManipData) blanks 7
    # water codes in households 332 (3 of 6), 477 (1 of 7), 481 (2 of 7) and 490 (1 of 3): every one of them
    # shown by another member. Here the household variables are blanked last: the record whose water would
    # have gone gets its sex and age blanked instead (677 cells with the 2 sexes that give her true keys 3
    # candidates; no household half-blanked)
    d = sdccore.load_dataset("testdata")
    s = sdccore.local_suppression(d, KEYS, k=3, household="ori_hid")
    assert s.per_key == {"urbrur": 0, "water": 0, "sex": 3, "age": 674} and s.cells == 677
    assert _strict_fk(s.data, KEYS).min() >= 3
    # where only a household variable lifts a record, it is blanked for the whole household: household 3 is
    # the only one in region b (2 persons)
    h = pd.DataFrame({"hh": [1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4], "region": list("aaaaaabbccc"),
                      "sex": list("mfmfmfmfmff")})
    t = sdccore.local_suppression(h, ["region", "sex"], k=3, household="hh")
    assert t.suppressed.region[h.hh == 3].all()  # household 3's region, for both members
    half = t.data.groupby("hh").region.apply(lambda x: x.isna().any() and x.notna().any())
    assert not half.any() and _strict_fk(t.data, ["region", "sex"]).min() >= 3
    C, _ = key_codes(h, ["region", "sex"])
    assert compatible_counts(C, np.where(t.suppressed.to_numpy(), -1, C)).min() >= 3


def test_within_strata_counts_look_alikes_in_the_group():
    # sdcMicro's localSuppression(..., strataVars): a stratum is a key that is never blanked
    d = sdccore.load_dataset("testdata")
    keys = ["water", "sex", "age"]
    within = sdccore.local_suppression(d, keys, k=3, strata="urbrur")
    as_key = sdccore.local_suppression(d, keys + ["urbrur"], k=3, importance=["urbrur", "sex", "water", "age"])
    assert within.cells == as_key.cells == 676 and as_key.per_key["urbrur"] == 0
    for _, g in within.data.groupby("urbrur"):
        assert _strict_fk(g, keys).min() >= 3
    assert within.data.drop(columns=keys).equals(d.drop(columns=keys))
    # a hand-made case: two groups of 3 identical records each, pooled they share keys; apart each is fine,
    # a group of 2 is refused with the fix
    h = pd.DataFrame({"g": list("aaabbb"), "x": [1] * 6})
    assert sdccore.local_suppression(h, ["x"], 3, strata="g").cells == 0
    with pytest.raises(ValueError, match="fewer than k=3 records"):
        sdccore.local_suppression(h.iloc[:5], ["x"], 3, strata="g")
    with pytest.raises(ValueError, match="strata and keys share x"):
        sdccore.local_suppression(h, ["x"], 3, strata="x")


def test_age_kept_as_the_most_important_key_on_testdata():
    # R 4.2, sdcMicro 5.8.1:
    #   sdc <- createSdcObj(testdata, keyVars = c("urbrur", "water", "sex", "age"), w = "sampling_weight",
    #                       hhId = "ori_hid"); s <- kAnon(sdc, k = 3, importance = c(3, 2, 4, 1))
    #   s@localSuppression$supps   # urbrur 146, water 140, sex 403, age 10: 699 cells
    #   but in extractManipData(s) 177 records' own key values are shown by fewer than 3 records (its blanks
    #   count as look-alikes of every value), and 303 persons' true keys are met by fewer than 3 released
    #   records
    d = sdccore.load_dataset("testdata")
    s = sdccore.local_suppression(d, KEYS, k=3, importance=["age", "water", "urbrur", "sex"])
    assert s.per_key["age"] == 10  # as few ages as sdcMicro blanks
    assert s.cells == 851 and _strict_fk(s.data, KEYS).min() >= 3  # every record's own values shown by 3
    # a record is lifted by the set that spares the more important keys: no record loses its age where
    # blanking less important keys (up to three of them) would lift it
    assert int((s.suppressed["age"] & s.suppressed[["urbrur", "water", "sex"]].any(axis=1)).sum()) <= 10


def test_a_blanked_rare_record_needs_look_alikes_for_its_true_values():
    # an intruder who knows the person is 55 keeps the records that show 55 or a blank age: the 55-year-old
    # blanked alone is the only one (outside audit of issue 40: sdcMicro's testdata kAnon leaves 1 such
    # person, record 1546, the only record with a blank sex). Two of the 30-year-olds get their age blanked
    # too, then the third (who would show 30 alone): 4 blanks, every true (g, age) met by 3 released records
    h = pd.DataFrame({"g": ["a"] * 7, "age": [30, 30, 30, 40, 40, 40, 55]})
    s = sdccore.local_suppression(h, ["g", "age"], 3)
    assert s.suppressed.age.tolist() == [True, True, True, False, False, False, True]
    C, _ = key_codes(h, ["g", "age"])
    assert compatible_counts(C, np.where(s.suppressed.to_numpy(), -1, C)).min() >= 3
    assert _strict_fk(s.data, ["g", "age"]).min() >= 3


def test_testdata_from_the_targets_side_too():
    # R 4.2, sdcMicro 5.8.1: kAnon(createSdcObj(testdata, keyVars = c("urbrur", "water", "sex", "age"), ...),
    # k = 3); extractManipData(): 674 blanks, but 1 person's true keys are met by fewer than 3 released
    # records; with importance = c(3, 2, 4, 1): 303 persons; nine categorical keys: 356
    d = sdccore.load_dataset("testdata")
    for keys, kw, cells in ((KEYS, {}, 676), (KEYS, {"household": "ori_hid"}, 677),
                            (KEYS, {"importance": ["age", "water", "urbrur", "sex"]}, 851)):
        s = sdccore.local_suppression(d, keys, 3, **kw)
        C, _ = key_codes(d, keys)
        W = np.where(s.suppressed.to_numpy(), -1, C)
        assert compatible_counts(C, W).min() >= 3 and _strict_fk(s.data, keys).min() >= 3
        assert s.cells == cells, (kw, s.cells)


def test_compatible_counts_by_hand():
    # true keys vs released (blank -1): r0 (1, 5), r1 (1, blank), r2 (2, 5), r3 (blank, blank)
    R = np.array([[1, 5], [1, -1], [2, 5], [-1, -1]])
    T = np.array([[1, 5], [1, 7], [2, 5], [3, -1]])  # the last record's second key unknown in the original
    assert compatible_counts(T, R).tolist() == [3, 2, 2, 1]


def test_blanks_that_fall_unevenly_are_named():
    """Region A: 40 records, each of a different age (all unique: every age blanked); region B:
    160 records in 8 ages of 20 (none blanked).  Age is blanked for 40 of 200 records (20 %),
    for all 40 in region A (100 %): named; region B's 0 % is not."""
    import pandas as pd

    import sdccore

    d = pd.DataFrame({"region": ["A"] * 40 + ["B"] * 160,
                      "age": list(range(20, 60)) + [20 + 5 * (i % 8) for i in range(160)]})
    s = sdccore.local_suppression(d, ["region", "age"], 3)
    assert s.per_key == {"region": 0, "age": 40}
    assert s.uneven() == ["age blanked for 20.0% of records, 100.0% where region = A (40 records)"]
    assert "Unevenly: age blanked for 20.0% of records, 100.0% where region = A" in s.summary()
    assert s.uneven(min_records=41) == []  # region A too small to be named


def _suppression(region, blanked):
    """A Suppression built by hand: ``region`` the levels, ``blanked`` the records whose age is blank."""
    import pandas as pd

    from sdccore._keys.suppression import Suppression

    n = len(region)
    mask = pd.DataFrame({"region": [False] * n, "age": blanked})
    data = pd.DataFrame({"region": region, "age": [None if b else 40.0 for b in blanked]})
    return Suppression(data=data, suppressed=mask, keys=("region", "age"), k=3, order=("age", "region"))


def test_uneven_blanks_by_points_and_standard_errors():
    """The rule by hand.  Three regions of 100, age blanked for 69 (C), 25 (N) and 19 (S): 113 of
    300 (37.7 %) over the file, C 31.3 points above it, more than 3 standard errors
    (3 sqrt(.377 .623 / 100) = .145): named (twice the file's share, 75 %, would have missed it)."""
    s = _suppression(["C"] * 100 + ["N"] * 100 + ["S"] * 100,
                     [i < 69 for i in range(100)] + [i < 25 for i in range(100)] + [i < 19 for i in range(100)])
    assert s.uneven() == ["age blanked for 37.7% of records, 69.0% where region = C (100 records)"]
    # 12 blanks in 1,500 (0.8 %), 9 of them among C's 148 (6.1 %): 5.3 points, not named
    s = _suppression(["C"] * 148 + ["N"] * 1352, [i < 9 for i in range(148)] + [i < 3 for i in range(1352)])
    assert s.uneven() == []
    # 20 records at 45 % against 30 % over the file: 15 points but under 3 standard errors (3 x .102)
    s = _suppression(["C"] * 20 + ["N"] * 180, [i < 9 for i in range(20)] + [i < 51 for i in range(180)])
    assert round(s.suppressed["age"].mean(), 3) == 0.3
    assert s.uneven() == []
    # the same shares with ten times the records: 3 standard errors are .032, so C is named
    s = _suppression(["C"] * 200 + ["N"] * 1800, [i < 90 for i in range(200)] + [i < 510 for i in range(1800)])
    assert s.uneven() == ["age blanked for 30.0% of records, 45.0% where region = C (200 records)"]


def test_blank_warnings_name_a_heavily_blanked_key_with_the_recoding_that_saves_it():
    """Ages 20-79, one record each in region A (60 records: every age unique, all blanked) and
    three each in region B (180: none blanked): age is blank for 60 of 240 (25 %, over the 10 %
    line), all of them in region A (100 % against 25 %: uneven).  In bands of 5 (20-24, ...)
    region A has 5 records a band: no blank at all, which the warning names (bands of 2 leave
    pairs in A, below k = 3: no saving, not named)."""
    import pandas as pd

    import sdccore

    d = pd.DataFrame({"region": ["A"] * 60 + ["B"] * 180,
                      "age": list(range(20, 80)) + [20 + i % 60 for i in range(180)]})
    sup = sdccore.local_suppression(d, ["region", "age"], 3)
    assert sup.per_key == {"region": 0, "age": 60}
    w = sdccore.blank_warnings(d, sup)
    assert len(w) == 2
    assert w[0].startswith("age is blank for 25.0% of records (60 of 240): every analysis with age runs on the "
                           "other 75.0%; recoded as age in bands of 5: 20-24, 25-29, ..., 75+ (60 values -> 12), 0 key value(s) in "
                           "all would be blank instead of 60")
    assert w[1].startswith("Blanks fall unevenly: age blanked for 25.0% of records, 100.0% where region = A (60 records)")
    assert sdccore.blank_warnings(d, sup, uneven=False) == w[:1]
    # under the line: with k = 2 region B's ages are shared and A's 60 unique ages still blank (25 %);
    # with A's ages in pairs (30 ages), 0 blanks: nothing to say
    d2 = d.assign(age=[20 + i // 2 for i in range(60)] + list(d.age[60:]))
    sup2 = sdccore.local_suppression(d2, ["region", "age"], 2)
    assert sup2.cells == 0 and sdccore.blank_warnings(d2, sup2) == []
