"""Survey files' own columns (issue 40): a household id and a sampling weight are found by
their names and values and released unchanged (never perturbed as data), the categorical
columns and an age in years are suggested as key variables; a column named only 'weight' is
a measurement (a body weight), not a sampling weight."""
import numpy as np
import pandas as pd

import sdccore


def test_testdata_roles():
    s = sdccore.suggest_roles(sdccore.load_dataset("testdata"))
    assert s.household == "ori_hid" and s.weight == "sampling_weight"
    assert s.flags["ori_hid"] == "household" and s.flags["household_weights"] == "weight"
    assert {s.roles[c] for c in ("ori_hid", "sampling_weight", "household_weights")} == {"excluded"}
    assert s.keys == ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil")
    assert s.roles["age"] == "public"  # a key for the identity risk, still a measurement for protection
    assert "1000 households, 4.6 persons each" in s.reasons["ori_hid"]


def test_names_and_values_decide():
    g = np.random.default_rng(0)
    n = 300
    d = pd.DataFrame({"hh_id": np.repeat(np.arange(100), 3), "person_no": np.arange(n),
                      "final_weight": g.uniform(50, 400, n), "weight": g.normal(75, 12, n),
                      "region": g.choice(["north", "south"], n), "age": g.integers(18, 90, n),
                      "income": g.lognormal(10, 1, n)})
    s = sdccore.suggest_roles(d)
    assert s.household == "hh_id" and s.roles["hh_id"] == "excluded"  # not an identifier to drop
    assert s.weight == "final_weight" and s.roles["final_weight"] == "excluded"
    assert s.roles["weight"] == "public" and "weight" not in s.flags  # a body weight stays a measurement
    assert s.keys == ("region", "age")
    # a weight with a missing or non-positive value is no sampling weight; an id unique per record is no household
    bad = d.assign(final_weight=d.final_weight.where(d.index != 5, -1.0), hh_id=np.arange(n))
    s = sdccore.suggest_roles(bad)
    assert s.weight is None and s.household is None and s.roles["hh_id"] == "identifier"
