"""IPSO conditioned on the codes released unchanged (issue 39): set-apart columns with a few
large levels join the basis as indicators, so that the domain means of the sensitive
variable and its OLS with those codes as regressors are kept exactly; an id column, a level
of fewer than 10 records and codes that would leave fewer than 5 records per coefficient
are not used; recipes from before the option rebuild the release given the public
variables only."""
import json

import numpy as np
import pandas as pd
import pytest

import sdccore
from conftest import older_recipe
from sdccore._methods import conditional as codes


def _survey(n=300, seed=0):
    g = np.random.default_rng(seed)
    sex = g.integers(0, 2, n)
    region = g.choice(["north", "south", "east"], n)
    age = g.uniform(20, 65, n)
    hours = g.uniform(10, 50, n)
    income = 800 + 30 * age + 20 * hours + 600 * sex + 400 * (region == "south") + g.normal(0, 300, n)
    return pd.DataFrame({"pid": [f"p{i:04d}" for i in range(n)], "sex": sex, "region": region,
                         "age": age, "hours": hours, "income": income})


def _domain_means(d, col, y="income"):
    return d.groupby(col)[y].mean()


def _ols(d):
    A = np.column_stack([np.ones(len(d)), d.age, d.hours, d.sex, d.region == "south", d.region == "east"])
    return np.linalg.lstsq(A, d.income.to_numpy(float), rcond=None)[0]


@pytest.fixture(scope="module")
def survey():
    return _survey()


def test_domain_means_and_the_ols_with_the_codes_are_kept(survey):
    rel = sdccore.protect(survey, "ipso", sensitive=["income"], exclude=["pid", "sex"], rng=3,
                          allow_unsafe="the test measures the analyses").data
    for col in ("sex", "region"):
        np.testing.assert_allclose(_domain_means(rel, col), _domain_means(survey, col), rtol=1e-9)
    np.testing.assert_allclose(_ols(rel), _ols(survey), rtol=1e-7, atol=1e-7)
    assert (np.abs(rel.income - survey.income) > 1e-6 * survey.income.abs()).mean() > 0.99  # values did change


def test_given_the_public_variables_alone_the_domains_break(survey):
    rel = sdccore.protect(survey, "ipso", sensitive=["income"], exclude=["pid", "sex"], rng=3, condition="public",
                          allow_unsafe="the test measures the analyses").data
    gap0 = np.diff(_domain_means(survey, "sex").to_numpy())[0]
    gap = np.diff(_domain_means(rel, "sex").to_numpy())[0]
    assert abs(gap - gap0) > 0.5 * abs(gap0)  # about 600 -> near 0: sex is unrelated to the public variables
    assert abs(_ols(rel)[3] - _ols(survey)[3]) > 200


def test_the_analyst_battery_sees_the_difference(survey):
    kept = {}
    for cond in ("public", "released"):
        rel = sdccore.protect(survey, "ipso", sensitive=["income"], exclude=["pid", "sex"], rng=3, condition=cond,
                              allow_unsafe="the test measures the analyses").data
        w = sdccore.analyst_checks(survey, rel, sensitive=["income"], domains=["sex", "region"]).worst
        kept[cond] = w.set_index("analysis").loc["domain_means", "kept"]
    assert kept["released"] < 1e-9 and kept["public"] > 0.05


def test_which_columns_and_levels_become_indicators():
    n = 200
    d = pd.DataFrame({"x": np.arange(n, dtype=float), "y": np.arange(n, dtype=float) ** 1.5,
                      "id": [f"r{i}" for i in range(n)],                      # a level per record: no domain
                      "one": ["a"] * n,                                         # one level
                      "grp": ["big"] * 120 + ["mid"] * 70 + ["tiny"] * 6 + [None] * 4,
                      "wide": [f"w{i % 40}" for i in range(n)]})                # 40 levels of 5: none large
    X, used, left = codes.indicators(d, ["x", "y"], p=1)
    assert used == [("grp", 2, 4)] and left == [] and X.shape == (n, 1)
    np.testing.assert_array_equal(X[:, 0], (d.grp == "mid").to_numpy(float))  # 'big' is the reference
    assert codes.words(used) == "grp (2 of 4 levels)"
    # room: n // 5 - (1 + p) columns; a code with more large levels than that is left out
    d2 = pd.DataFrame({"x": np.arange(60.0), "g": np.repeat(np.arange(6), 10), "h": np.repeat([0, 1], 30)})
    X2, used2, left2 = codes.indicators(d2, ["x"], p=6)
    assert used2 == [("h", 2, 2)] and left2 == ["g"] and X2.shape == (60, 1)  # room 60 // 5 - 7 = 5: h takes 1, g needs 5


def test_an_id_alone_changes_nothing(survey):
    a = sdccore.protect(survey.drop(columns=["sex", "region"]), "ipso", sensitive=["income"], exclude=["pid"], rng=4)
    b = sdccore.protect(survey.drop(columns=["sex", "region"]), "ipso", sensitive=["income"], exclude=["pid"], rng=4,
                        condition="public")
    assert a.data.equals(b.data)


def test_a_recipe_before_the_option_rebuilds_the_release_given_the_public_variables(survey):
    new = sdccore.protect(survey, "ipso", sensitive=["income"], exclude=["pid", "sex"], rng=5,
                          allow_unsafe="the test rebuilds recipes")
    assert json.loads(new.recipe_json())["condition"] == "released" and sdccore.RECIPE_VERSION == 9
    old = older_recipe(new, "condition", 5)
    assert old.options["condition"] == "public"
    public = sdccore.protect(survey, "ipso", sensitive=["income"], exclude=["pid", "sex"], rng=5, condition="public",
                             allow_unsafe="the test rebuilds recipes")
    assert sdccore.make_release(survey, old).csv() == sdccore.make_release(
        survey, sdccore.Recipe.from_json(public.recipe_json())).csv()
    assert not public.data.equals(new.data)
