"""Identity risk of the key variables (issue 40): sample frequencies with a missing value
matching every value, individual risk, k-anonymity and household risk, equal to sdcMicro's."""
import math

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._keys.frequencies import frequencies, key_codes
from sdccore._keys.risk import individual_risk

KEYS = ["urbrur", "water", "sex", "age"]


@pytest.fixture(scope="module")
def testdata():
    return sdccore.load_dataset("testdata")


def test_testdata_equals_sdcmicro(testdata):
    # R 4.2, sdcMicro 5.8.1 (built here with ../shared/tools/build-sdcmicro.sh; testdata.csv, urbrur, water, sex
    # as factors):
    #   sdc <- createSdcObj(testdata, keyVars = c("urbrur", "water", "sex", "age"),
    #                       numVars = c("expend", "income", "savings"), w = "sampling_weight", hhId = "ori_hid")
    #   sum(sdc@risk$individual[, "fk"] == 1)   # 330
    #   sum(sdc@risk$individual[, "fk"] < 3)    # 674
    #   sum(sdc@risk$individual[, "risk"])       # 24.7838722150;  max: 0.0465168706
    #   sdc@risk$global$risk                     # 0.0054113258
    #   sdc@risk$global$hier_risk_ER             # 117.2022050762; hier_risk: 0.0255900011
    r = sdccore.key_risk(testdata, KEYS, weights="sampling_weight", household="ori_hid")
    assert r.sample_uniques == 330 and r.below_k == 674
    assert r.expected_reidentifications == pytest.approx(24.7838722150, abs=1e-6)
    assert r.max_risk == pytest.approx(0.0465168706, abs=1e-9)
    assert r.global_risk == pytest.approx(0.0054113258, abs=1e-9)
    assert r.household_expected == pytest.approx(117.2022050762, abs=1e-6)
    assert r.household_global == pytest.approx(0.0255900011, abs=1e-9)
    assert not r.unweighted
    # every record's fk by a plain group-by (no missing key here), Fk = 100 fk (constant weight 100)
    fk = testdata.groupby(KEYS)["sex"].transform("size").to_numpy()
    np.testing.assert_array_equal(r.records.fk.to_numpy(), fk)
    np.testing.assert_allclose(r.records.Fk.to_numpy(), 100.0 * fk)


def _pairwise(C, w):
    """sdcMicro's f2 routine, in plain Python: two records match when every key agrees or is
    missing (-1) in either; fk counts the record itself, Fk adds the weights."""
    n = len(C)
    fk, Fk = np.ones(n, int), w.astype(float).copy()
    for i in range(n):
        for j in range(i + 1, n):
            if all(a == b or a < 0 or b < 0 for a, b in zip(C[i], C[j])):
                fk[i] += 1
                fk[j] += 1
                Fk[i] += w[j]
                Fk[j] += w[i]
    return fk, Fk


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_missing_values_match_every_value_as_sdcmicro_pairs_them(seed):
    g = np.random.default_rng(seed)
    n = 160
    d = pd.DataFrame({"region": g.choice(["n", "s", "e", "w"], n), "sex": g.choice([1, 2], n),
                      "age": g.integers(20, 30, n).astype(float), "w": g.uniform(1, 50, n)})
    for c in ("region", "sex", "age"):
        d.loc[g.random(n) < 0.08, c] = None
    C, _ = key_codes(d, ["region", "sex", "age"])
    fk, Fk = frequencies(C, d.w.to_numpy())
    fk0, Fk0 = _pairwise(C, d.w.to_numpy())
    np.testing.assert_array_equal(fk, fk0)
    np.testing.assert_allclose(Fk, Fk0, rtol=1e-12)


def test_a_hand_made_file_with_a_suppressed_cell():
    # records 0-2 share (a, 1); record 3 is (a, missing): it matches 0-2 and 4 (a, 2); 4 is then
    # not unique; 5 (b, 1) is alone
    d = pd.DataFrame({"k1": ["a", "a", "a", "a", "a", "b"], "k2": [1, 1, 1, None, 2, 1],
                      "w": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]})
    r = sdccore.key_risk(d, ["k1", "k2"], weights="w", k=3)
    assert r.records.fk.tolist() == [4, 4, 4, 5, 2, 1]
    assert r.records.Fk.tolist() == [100.0, 100.0, 100.0, 150.0, 90.0, 60.0]
    assert r.sample_uniques == 1 and r.below_k == 2


def test_the_risk_formulas_by_hand():
    # fk = 1, Fk = 20: p = .05, p/(1-p) log(1/p)
    p = 0.05
    r1 = p / (1 - p) * math.log(1 / p)
    # fk = 2, Fk = 8: p = .25
    q = 0.25 / 0.75
    r2 = q - q * q * math.log(4.0)
    # fk = 4, Fk = 40: p = .1, p / (fk - (1 - p))
    r4 = 0.1 / (4 - 0.9)
    got, flat = individual_risk([1, 2, 4], [20.0, 8.0, 40.0])
    np.testing.assert_allclose(got, [r1, r2, r4], rtol=1e-12)
    assert not flat
    # no weights (Fk = fk): 1 / fk, said
    got, flat = individual_risk([1, 2, 5], [1.0, 2.0, 5.0])
    np.testing.assert_allclose(got, [1.0, 0.5, 0.2])
    assert flat


def test_households_fall_with_any_member():
    d = pd.DataFrame({"k": ["a", "b", "b", "c", "c", "c"], "hh": [1, 1, 2, 2, 3, None], "w": [10.0] * 6})
    r = sdccore.key_risk(d, ["k"], weights="w", household="hh")
    risk = r.records.risk.to_numpy()
    h = r.records.household_risk.to_numpy()
    assert h[0] == h[1] == pytest.approx(1 - (1 - risk[0]) * (1 - risk[1]))
    assert h[2] == h[3] == pytest.approx(1 - (1 - risk[2]) * (1 - risk[3]))
    assert h[4] == pytest.approx(risk[4]) and h[5] == pytest.approx(risk[5])  # alone; a missing id alone too
    assert "Households (hh)" in r.summary()


def test_unweighted_risk_is_one_over_fk(testdata):
    r = sdccore.key_risk(testdata, KEYS)
    assert r.unweighted
    np.testing.assert_allclose(r.records.risk, 1.0 / r.records.fk)
    assert "no sampling weights" in r.summary()


def test_bad_arguments_are_named():
    d = pd.DataFrame({"k": ["a", "b"], "w": [1.0, -2.0]})
    with pytest.raises(ValueError, match="keys"):
        sdccore.key_risk(d, ["nope"])
    with pytest.raises(ValueError, match="keys"):
        sdccore.key_risk(d, [])
    with pytest.raises(ValueError, match="weights='w' has 1 value"):
        sdccore.key_risk(d, ["k"], weights="w")
    with pytest.raises(ValueError, match="k=0"):
        sdccore.key_risk(d, ["k"], k=0)
    with pytest.raises(ValueError, match="also a key"):
        sdccore.key_risk(d.assign(w=1.0), ["k", "w"], weights="w")


def test_combinations_rarest_first(testdata):
    r = sdccore.key_risk(testdata, KEYS, weights="sampling_weight")
    t = r.combinations()
    assert (t.fk.diff().dropna() >= 0).all() and (t.fk == 1).sum() == 330
    assert t.fk.sum() == len(testdata)  # no missing key: each record in one combination


FRANC_KEYS = ["Key1", "Key2", "Key3", "Key4"]


def test_francdat_equals_sdcmicro():
    # R 4.2, sdcMicro 5.8.1 (built here with ../shared/tools/build-sdcmicro.sh):
    #   f <- freqCalc(francdat, keyVars = c(2, 4, 5, 6), w = 8); f$fk; f$Fk; indivRisk(f)$rk
    r = sdccore.key_risk(sdccore.load_dataset("francdat"), FRANC_KEYS, weights="w")
    assert r.records.fk.tolist() == [2, 2, 2, 1, 1, 1, 1, 2]
    assert r.records.Fk.tolist() == [110, 84.5, 84.5, 17, 541, 8, 5, 110]
    np.testing.assert_allclose(r.records.risk, [0.0171442616, 0.0220423262, 0.0220423262, 0.1770758340, 0.0116544801,
                                                0.2970630774, 0.4023594781, 0.0171442616], atol=1e-10)


def test_francdat_with_missing_keys_equals_sdcmicro():
    # fr2 <- francdat; fr2[1, 5] <- NA; fr2[6, 6] <- NA   (Key3 of the first record, Key4 of the sixth)
    # f2 <- freqCalc(fr2, keyVars = c(2, 4, 5, 6), w = 8); f2$fk; f2$Fk; indivRisk(f2)$rk
    d = sdccore.load_dataset("francdat")
    d.loc[0, "Key3"] = None
    d.loc[5, "Key4"] = None
    r = sdccore.key_risk(d, FRANC_KEYS, weights="w")
    assert r.records.fk.tolist() == [4, 3, 3, 1, 2, 2, 1, 2]
    assert r.records.Fk.tolist() == [194.5, 102.5, 102.5, 17, 549, 549, 5, 110]
    np.testing.assert_allclose(r.records.risk, [0.0068085106, 0.0144230769, 0.0144230769, 0.1770758340, 0.0035812432,
                                                0.0035812432, 0.4023594781, 0.0171442616], atol=1e-10)


def test_free1_equals_sdcmicro():
    # mu-Argus's demo file as sdcMicro ships it (tests/keys/free1.csv.gz):
    #   f <- freqCalc(free1, keyVars = 1:3, w = 30); f$n1; f$n2; sum(indivRisk(f)$rk); max(indivRisk(f)$rk)
    #   2664 788 68.7528941827 0.0422983834
    from pathlib import Path

    d = pd.read_csv(Path(__file__).with_name("free1.csv.gz"))
    r = sdccore.key_risk(d, ["REGION", "SEX", "AGE"], weights="WEIGHT")
    assert r.sample_uniques == 2664 and int((r.records.fk == 2).sum()) == 788
    assert r.expected_reidentifications == pytest.approx(68.7528941827, abs=1e-6)
    assert r.max_risk == pytest.approx(0.0422983834, abs=1e-9)


def test_many_wide_keys_take_the_row_sort_and_agree_with_the_pairing():
    # 8 keys of up to 999 levels: the mixed-radix number would need 80 bits, so the rows are
    # grouped by numpy.unique(axis=0); duplicated rows and missing values as before
    g = np.random.default_rng(5)
    base = g.integers(0, 999, (40, 8))
    C = base[g.integers(0, 40, 150)]
    C[g.random(C.shape) < 0.05] = -1
    C[:, 0] = np.maximum(C[:, 0], 998 * (np.arange(150) == 0))  # the radix of the first key is 1000
    w = g.uniform(1, 9, 150)
    fk, Fk = frequencies(C, w)
    fk0, Fk0 = _pairwise(C, w)
    np.testing.assert_array_equal(fk, fk0)
    np.testing.assert_allclose(Fk, Fk0, rtol=1e-12)
