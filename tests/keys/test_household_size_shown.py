"""A column released unchanged that shows the household size (testdata's household_weights =
sampling weight / household size) though the household ids are dropped: an outside intruder
read the size off it and re-identified 723 persons of a release that was 3-anonymous on the
nine keys alone.  protect says so in the release's notes, with the fix."""
import numpy as np
import pandas as pd

import sdccore
from sdccore._keys.frequencies import frequencies, key_codes

KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil"]


def test_the_columns_that_show_the_household_size():
    d = sdccore.load_dataset("testdata")
    size = d.ori_hid.map(d.ori_hid.value_counts())
    assert np.allclose(d.household_weights, d.sampling_weight / size)  # what the intruder found
    assert sdccore.household_size_columns(d, "ori_hid", skip=KEYS) == ["household_weights"]
    # a weight that is the same for everyone, amounts that differ within households: not the size
    assert "sampling_weight" not in sdccore.household_size_columns(d, "ori_hid")
    assert not {"income", "expend", "savings"} & set(sdccore.household_size_columns(d, "ori_hid"))
    # by hand: h is constant within households and one size a value; g is constant but one value
    # for households of 1 and 2 members
    t = pd.DataFrame({"hh": [1, 1, 2, 3, 3, 4], "h": [5, 5, 9, 5, 5, 9], "g": [7, 7, 7, 7, 7, 8],
                      "x": [1, 2, 3, 4, 5, 6]})
    assert sdccore.household_size_columns(t, "hh") == ["h"]
    assert sdccore.household_size_columns(t.assign(hh=[1, 2, 3, 4, 5, 6]), "hh") == []  # no household of two


def test_protect_says_when_a_released_column_shows_the_household_size():
    d = sdccore.load_dataset("testdata")
    exclude = KEYS + ["ori_hid", "sampling_weight", "household_weights"]
    rec = {"age": sdccore.Recoding.bands([0, 20, 40, 60, 80, np.inf], column="age", right=False).to_dict()}
    r = sdccore.protect(d, "rankswap", rng=1, keys=KEYS, household="ori_hid", weights="sampling_weight",
                        exclude=exclude, recode=rec, allow_unsafe="test: the keys")
    said = [n for n in r.notes if n.startswith("household_weights shows each person's household size")]
    assert said and "fix: drop it from the release" in said[0] and "household_ids='new'" in said[0]
    assert r.data.ori_hid.isna().all()  # the ids dropped
    # what the note warns of: with the size read off the weights, combinations below 3 remain
    C, _ = key_codes(r.data, KEYS + ["household_weights"])
    assert (frequencies(C, np.ones(len(C)))[0] < 3).any()
    # with new household ids the size is a key, and the release is 3-anonymous on it too
    n = sdccore.protect(d, "rankswap", rng=1, keys=KEYS, household="ori_hid", weights="sampling_weight",
                        household_ids="new", exclude=exclude, recode=rec, allow_unsafe="test: the keys")
    C, _ = key_codes(n.data, KEYS + ["household_weights"])
    assert frequencies(C, np.ones(len(C)))[0].min() >= 3
    # without the column, no note
    r2 = sdccore.protect(d.drop(columns="household_weights"), "rankswap", rng=1, keys=KEYS, household="ori_hid",
                         weights="sampling_weight", exclude=exclude[:-1], recode=rec, allow_unsafe="test: the keys")
    assert not any("household size" in n for n in r2.notes)
