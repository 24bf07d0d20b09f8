"""Issue 40 on survey files other than sdcMicro's own: a staff file (rank, field, sex, salary),
an election study (province, gender, education, a grossing-up weight) and a persons file
(region, sex, education, age, income), uploaded as a custodian would: the categorical columns
are suggested as keys (the weight as the weight), and every release the dashboard makes of them
is 3-anonymous on those keys."""
import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import sdccore
from sdccore._keys.frequencies import frequencies, key_codes


def _staff(g):
    n = 400
    rank = g.choice(["AsstProf", "AssocProf", "Prof"], n, p=[.17, .16, .67])
    field = g.choice(["A", "B"], n)
    sex = g.choice(["Male", "Female"], n, p=[.9, .1])
    years = g.integers(1, 45, n)
    salary = np.round(60000 + 1500 * years + 20000 * (rank == "Prof") + g.normal(0, 15000, n), -2)
    return pd.DataFrame({"rank": rank, "field": field, "yrs_service": years, "sex": sex, "salary": salary})


def _election(g):
    n = 1500
    prov = g.choice(["ON", "QC", "BC", "AB", "MB", "SK", "NS", "NB", "NL", "PE"], n,
                    p=[.38, .23, .13, .11, .04, .03, .03, .02, .02, .01])
    gender = g.choice(["Female", "Male"], n)
    edu = g.choice(["lessHS", "HS", "somePS", "college", "bachelors", "higher"], n)
    weight = np.round(g.lognormal(8.8, 0.5, n), 2)
    income = np.round(g.lognormal(10.8, 0.6, n), -1)
    donations = np.round(income * g.uniform(0, 0.05, n), 2)
    return pd.DataFrame({"id": np.arange(1, n + 1) * 7 + 1000, "province": prov, "gender": gender, "education": edu,
                         "weight": weight, "income": income, "donations": donations})


def _persons(g):
    n = 1200
    return pd.DataFrame({"region": g.choice(["north", "south", "east", "west", "centre"], n),
                         "sex": g.choice(["f", "m"], n), "education": g.choice(["primary", "secondary", "tertiary"], n),
                         "age": g.integers(16, 90, n), "income": np.round(g.lognormal(10, 0.7, n), 2),
                         "hours": g.integers(0, 60, n).astype(float)})


CASES = [("staff.csv", _staff, ["rank", "field", "sex"], None),
         ("election.csv", _election, ["province", "gender", "education"], "weight"),
         ("persons.csv", _persons, ["region", "sex", "education", "age"], None)]


def _script():
    import streamlit as st

    import sdccore

    from ui import loading, release, session

    loading.init()
    loading.handle_upload(st.session_state["raw"], st.session_state["name"])
    st.session_state["suggested_keys"] = session.key_choice()
    cfg = session.current_configs(["rankswap"])["Rank swap"]
    st.session_state["cfg_out"] = cfg
    method, sens, opts, seed, exclude, _ = release._release_args(cfg)
    res = sdccore.protect(session.work_frame(), method, sensitive=sens, rng=seed, exclude=exclude or None,
                          allow_unsafe="test: the keys, whatever the floors say", **opts)
    st.session_state["released"] = res.data


@pytest.mark.parametrize("name,make,keys,weight", CASES, ids=[c[0] for c in CASES])
def test_the_default_release_of_a_survey_file_is_3_anonymous(name, make, keys, weight):
    d = make(np.random.default_rng(40))
    sug = sdccore.suggest_roles(d)
    assert set(keys) <= set(sug.keys) and sug.weight == weight
    at = AppTest.from_function(_script, default_timeout=120)
    at.session_state["raw"] = d.to_csv(index=False).encode()
    at.session_state["name"] = name
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    choice = at.session_state["suggested_keys"]
    assert set(keys) <= set(choice["keys"]) and choice["k"] == 3
    cfg = at.session_state["cfg_out"]
    assert cfg["keys"] == choice["keys"] and cfg["k_anonymity"] == 3
    out = at.session_state["released"]
    C, _ = key_codes(out, choice["keys"])
    before = frequencies(key_codes(d, choice["keys"])[0], np.ones(len(d)), strict=True)[0]
    after = frequencies(C, np.ones(len(C)), strict=True)[0]
    assert (before < 3).any() and after.min() >= 3  # rare combinations there were, none is left
    # the keys were recoded by the default (a key local suppression would blank for a tenth of the records:
    # the persons' age, 74 single years among 1,200 persons) and blanked, never changed otherwise
    rules = {c: sdccore.Recoding.from_dict(r) for c, r in choice["recode"].items()}
    assert list(rules) == (["age"] if name == "persons.csv" else [])
    if rules:
        plain = sdccore.local_suppression(d, choice["keys"], 3).per_key["age"]
        assert plain >= 0.1 * len(d) and out["age"].isna().sum() < 0.1 * len(d)  # 10 % or more blank without it
    d = sdccore.recode(d, rules) if rules else d
    for c in choice["keys"]:
        kept = out[c].notna()
        a, b = out.loc[kept, c], d.loc[kept, c]
        same = a.astype(float) == b.astype(float) if pd.api.types.is_numeric_dtype(b) else a.astype(str) == b
        assert same.all(), c
    if weight:
        assert out[weight].equals(d[weight])  # the sampling weight released unchanged


def test_a_bare_weight_column_is_a_body_weight_beside_a_height():
    g = np.random.default_rng(1)
    d = pd.DataFrame({"height": g.normal(170, 10, 200), "weight": g.normal(75, 12, 200), "sex": g.choice([1, 2], 200)})
    assert sdccore.suggest_roles(d).weight is None and sdccore.suggest_roles(d).roles["weight"] == "public"
    # without a body measurement, a weight averaging 75 is still taken as a measurement (no body weight is
    # told apart from a small sampling weight by its values alone); normalised or grossing-up weights are weights
    assert sdccore.suggest_roles(d.drop(columns="height")).weight is None
    norm = d.drop(columns="height").assign(weight=lambda x: x.weight / x.weight.mean())
    assert sdccore.suggest_roles(norm).weight == "weight"
    gross = d.drop(columns="height").assign(weight=lambda x: x.weight * 100)
    assert sdccore.suggest_roles(gross).weight == "weight"


def _fa_script():
    import streamlit as st

    import sdccore

    from ui import loading, release, session

    loading.init()
    loading.handle_upload(st.session_state["raw"], st.session_state["name"])
    st.session_state["protected"] = session.protect_columns()
    cfg = session.current_configs(["fa"])["FA"]
    st.session_state["fa_cfg"] = cfg
    method, sens, opts, seed, exclude, _ = release._release_args(cfg)
    res = sdccore.protect(session.work_frame(), method, sensitive=sens, rng=seed, exclude=exclude or None,
                          allow_unsafe="test: FA's settings, whatever the floors say", **opts)
    st.session_state["released_columns"] = list(res.data.columns)


def test_a_numeric_key_is_not_counted_among_the_protected_variables():
    """Found in the closing walk (issue 41): age, a numeric key variable, was counted by the pages
    among the variables to protect while the library releases it by the keys' own step, so FA's
    default 'as many factors as variables' was one too many and FA was left out of every
    comparison ('n_factors=5 is more than the 4 variables')."""
    d = _persons(np.random.default_rng(41))
    at = AppTest.from_function(_fa_script, default_timeout=120)
    at.session_state["raw"] = d.to_csv(index=False).encode()
    at.session_state["name"] = "persons.csv"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["protected"] == ["income", "hours"]  # age is a key, not among them
    assert at.session_state["fa_cfg"].get("n_factors", 2) <= 2
