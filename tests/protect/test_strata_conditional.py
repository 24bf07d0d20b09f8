"""The conditional methods within strata: each group a file of its own, so that IPSO keeps the
regression of the sensitive variable within each group (the subgroup regressions and the
interactions with the strata columns that the battery's ``domain_ols`` checks), not only the
pooled one."""

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._core.streams import child_seeds


@pytest.fixture(scope="module")
def two_slopes():
    rng = np.random.default_rng(3)
    n = 600
    sex = np.where(rng.random(n) < 0.5, "F", "M")
    x = rng.lognormal(3, 0.5, n)
    z = rng.normal(50, 10, n)
    y = np.where(sex == "F", 100 + 8 * x + z, 300 + 1 * x + 3 * z) + rng.normal(0, 30, n)
    return pd.DataFrame({"sex": sex, "x": x, "z": z, "y": y})


def test_ipso_within_strata_keeps_each_groups_regression(two_slopes):
    """Pooled IPSO keeps the pooled OLS and makes the slopes within each sex up from it (the
    regression within domains far off); IPSO within the sexes keeps both exactly, and is each
    group protected alone with its child seed."""
    d = two_slopes
    pooled = sdccore.protect(d, "ipso", sensitive=["y"], rng=5, allow_unsafe="test")
    within = sdccore.protect(d, "ipso", sensitive=["y"], strata=["sex"], rng=5, allow_unsafe="test")
    tp = sdccore.analyst_checks(d, pooled.data, sensitive=["y"]).table.set_index("analysis")
    tw = sdccore.analyst_checks(d, within.data, sensitive=["y"]).table.set_index("analysis")
    assert tp.loc["ols", "kept"] == pytest.approx(1.0, abs=1e-6) and tp.loc["domain_ols", "kept"] < 0.5
    assert tw.loc["ols", "kept"] == pytest.approx(1.0, abs=1e-6)
    assert tw.loc["domain_ols", "kept"] == pytest.approx(1.0, abs=1e-6) and tw.loc["domain_ols", "ok"]
    # within each sex: the OLS of y on x and z, by hand, the same on both files
    for lv in ("F", "M"):
        m = (d.sex == lv).to_numpy()
        X = np.c_[np.ones(m.sum()), d.x[m], d.z[m]]
        bo = np.linalg.lstsq(X, d.y[m], rcond=None)[0]
        br = np.linalg.lstsq(X, within.data.y[m], rcond=None)[0]
        assert np.allclose(br, bo, rtol=1e-7, atol=1e-7 * np.abs(bo).max())
    seeds = child_seeds(5, "strata", 2)
    for i, lv in enumerate(["F", "M"]):
        part = d[d.sex == lv]
        alone = sdccore.protect(part, "ipso", sensitive=["y"], rng=int(seeds[i]), exclude=["sex"],
                                allow_unsafe="test").data
        pd.testing.assert_frame_equal(within.data[d.sex == lv], alone)
    assert within.options["strata"] == ["sex"] and "protected within 2 group(s) of sex" in within.notes[0]


def test_the_recipe_rebuilds_a_release_within_strata(two_slopes):
    """The recipe written as JSON and read back makes the same file, byte for byte, without the
    result it came from (the strata, the seed and every option of each group in it)."""
    res = sdccore.protect(two_slopes, "ipso", sensitive=["y"], strata="sex", rng=7, keep="scales", classes=5,
                          allow_unsafe="test")
    recipe = sdccore.Recipe.from_result(res)
    assert recipe.to_json().count('"strata"') == 1 and '"sex"' in recipe.to_json()
    first = sdccore.make_release(two_slopes, recipe, allow_unsafe="test", result=res).csv()
    again = sdccore.make_release(two_slopes, sdccore.Recipe.from_json(recipe.to_json()), allow_unsafe="test").csv()
    assert again == first


@pytest.mark.parametrize("method", ["ipso", "shuffle", "cfa", "qexchange"])
def test_a_group_too_small_for_its_own_regression_is_refused(two_slopes, method):
    """A group is a file of its own: 5 records a numeric column (x, z and y: 20), at least 20."""
    d = two_slopes.copy()
    d.loc[d.index[:12], "sex"] = "X"
    with pytest.raises(ValueError, match=r"1 group\(s\) are too small for .* at least 20 records a group: sex=X: "
                                         r"12 record\(s\)"):
        sdccore.protect(d, method, sensitive=["y"], strata=["sex"], rng=1)
