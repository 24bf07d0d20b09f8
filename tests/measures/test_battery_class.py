"""The gaps between domains (issue 39's battery, built for the class): a release that keeps every
domain mean within 10 % can still turn the gap between two domains round."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sdccore


def _two_regions(a, b):
    """Ten records in each region, values a +- 1 and b +- 1 (five of each)."""
    spread = np.tile([-1.0, 1.0], 5)
    y = np.r_[a + spread, b + spread]
    return pd.DataFrame({"region": np.repeat(["A", "B"], 10), "x": np.arange(20.0) % 7, "y": y})


def test_means_within_ten_percent_but_the_gap_is_lost():
    """Original 100 and 104, released 97 and 106: each mean within 3 %, the gap 4 -> 9 (reference:
    the larger level, A first of two equal ones, so the contrast is B - A).  By hand: residual
    sum of squares 20 on 18 degrees of freedom, the gap's standard error sqrt(20/18 * (1/10 +
    1/10)), its 95 % interval half-width h = t(.975, 18) * se; the intervals [4 - h, 4 + h] and
    [9 - h, 9 + h] are 5 - 2h apart: overlap (2h - 5) / (2h)."""
    o, r = _two_regions(100, 104), _two_regions(97, 106)
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    h = stats.t.ppf(0.975, 18) * np.sqrt(20 / 18 * 0.2)
    assert t.loc["domain_means", "ok"] is True and t.loc["domain_means", "kept"] == pytest.approx(3 / 100)
    assert t.loc["domain_gaps", "kept"] == pytest.approx((2 * h - 5) / (2 * h), abs=1e-12)
    assert t.loc["domain_gaps", "ok"] is False
    assert "B: 4 -> 9" in t.loc["domain_gaps", "note"] and "keep their order" in t.loc["domain_gaps", "note"]


def test_a_gap_turned_round_is_named():
    o, r = _two_regions(100, 104), _two_regions(103, 101)
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["domain_means", "ok"] is True
    assert t.loc["domain_gaps", "kept"] < -1 and t.loc["domain_gaps", "ok"] is False
    assert "1 of 1 pairs of means in the other order (e.g. A 100 vs B 104 -> 103 vs 101)" in t.loc["domain_gaps", "note"]


def test_a_release_that_keeps_every_gap():
    """Each record moved within its region so that the regions' means stay: overlap 1."""
    o = _two_regions(100, 104)
    r = o.assign(y=o.y.to_numpy()[np.r_[np.arange(10)[::-1], 10 + np.arange(10)[::-1]]])
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["domain_gaps", "kept"] == pytest.approx(1.0, abs=1e-12) and t.loc["domain_gaps", "ok"] is True


def test_three_levels_the_worst_contrast_against_the_largest():
    """Levels of 30, 20 and 10 records: the reference is the 30; only the small level's mean moves
    (by 3 of its 1-sd spread), so the worst contrast is that level's and the other is exact."""
    g = np.random.default_rng(4)
    lv = np.repeat(["big", "mid", "small"], [30, 20, 10])
    y = np.where(lv == "big", 10.0, np.where(lv == "mid", 12.0, 15.0)) + g.standard_normal(60)
    o = pd.DataFrame({"lv": lv, "y": y, "x": g.standard_normal(60)})
    r = o.assign(y=y + np.where(lv == "small", 3.0, 0.0))
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    note = t.loc["domain_gaps", "note"]
    assert note.startswith("lv: 2 gap(s) to lv = big; the largest change small:")
    # by statsmodels directly: the contrasts' intervals on the original and the release
    import statsmodels.api as sm
    X = np.column_stack([np.ones(60), lv == "mid", lv == "small"]).astype(float)
    co = sm.OLS(y, X).fit().conf_int()[1:]
    cr = sm.OLS(r.y.to_numpy(), X).fit().conf_int()[1:]
    lo, hi = np.maximum(co[:, 0], cr[:, 0]), np.minimum(co[:, 1], cr[:, 1])
    ov = 0.5 * ((hi - lo) / (co[:, 1] - co[:, 0]) + (hi - lo) / (cr[:, 1] - cr[:, 0]))
    assert t.loc["domain_gaps", "kept"] == pytest.approx(ov.min(), abs=1e-12)
    assert ov[0] > 0.95 and ov[1] < 0


def test_weighted_gaps_are_the_replicated_files():
    """Integer weights: the weighted gap's estimate is the replicated file's (the intervals
    differ: sandwich errors), so a release that keeps the weighted gap is seen to keep it."""
    o = _two_regions(100, 104).assign(w=np.r_[np.ones(10), 3 * np.ones(10)])
    r = o.assign(y=o.y + np.where(o.region == "A", 0.0, 5.0))
    t = sdccore.analyst_checks(o, r, sensitive=["y"], weights="w").table.set_index("analysis")
    assert "B: 4 -> 9" in t.loc["domain_gaps", "note"]
    assert t.loc["domain_gaps", "ok"] is False


def test_no_domain_no_gap():
    o = _two_regions(100, 104).drop(columns="region")
    t = sdccore.analyst_checks(o, o.assign(y=o.y + 1), sensitive=["y"]).table.set_index("analysis")
    assert np.isnan(t.loc["domain_gaps", "kept"]) and t.loc["domain_gaps", "ok"] is None


def test_the_suggestions_battery_sees_a_text_region():
    """release_battery (what the suggestion reads) takes a text column released unchanged with
    2-30 levels as a domain (it used to drop every text column), set-apart codes as before, and
    never a text id (one level per record)."""
    from sdccore._measures.validity import release_battery

    o = _two_regions(100, 104).assign(id=[f"p{i}" for i in range(20)], year=np.tile([1.0, 2.0], 10))
    r = o.assign(y=np.r_[o.y[:10] + 3, o.y[10:] - 3])  # 103 and 101: the gap turned round
    c = release_battery(o, r, ["y"], ["year"], {})
    assert c.domains == ("year", "region")
    t = c.table.set_index("analysis")
    assert t.loc["domain_gaps", "ok"] is False and t.loc["domain_gaps", "note"].startswith("region:")
    assert release_battery(o, o, ["y"], [], {}).domains == ("region",)


def test_the_suggestions_battery_sees_the_keys_as_published():
    """A key recoded into bands is a domain of the release's battery (a mean income by age band is
    what an office publishes), each record in its original band: a release whose 60+ incomes are
    20 % higher (the others lower, the mean kept) misses the domain means there.  Before, the
    recoded age was neither a domain nor a number, and an audit found band means moved by 10 %
    that the battery never saw.  A key with too many levels (age to the year) is no domain."""
    from sdccore._measures.validity import release_battery

    g = np.random.default_rng(3)
    n = 600
    age = np.repeat(np.arange(20, 80), 10)
    y = 1000 + 10 * age + g.normal(0, 50, n)
    o = pd.DataFrame({"age": age, "x": g.normal(0, 1, n), "y": y})
    old = age >= 60
    moved = np.where(old, y * 1.2, y - y[old].sum() * 0.2 / (~old).sum())
    bands = sdccore.Recoding.bands([0, 40, 60, float("inf")], right=False)
    r = o.assign(age=sdccore.recode(o[["age"]], {"age": bands}).age, y=moved)
    c = release_battery(o, r, ["y"], [], {"keys": ["age"], "recode": {"age": bands.to_dict()}})
    assert c.domains == ("age",)
    t = c.table.set_index("analysis")
    assert t.loc["domain_means", "kept"] == pytest.approx(0.2, abs=1e-9)
    assert t.loc["domain_means", "note"].startswith("age = 60+: mean")
    assert release_battery(o, o.assign(y=moved), ["y"], [], {"keys": ["age"]}).domains == ()


def test_a_noisy_predictor_is_attenuated_where_it_explains_another_variable():
    """Classical errors in a predictor: z = 2 y + e; the release adds noise of y's own variance
    to y, so the slope of z on y halves (var y / (var y + var noise) = 1/2) -- the OLS of y on z
    cannot show it.  The figure is statsmodels' intervals of y's slope in z ~ y on both files."""
    import statsmodels.api as sm

    g = np.random.default_rng(11)
    y = g.standard_normal(4000)
    z = 2 * y + 0.5 * g.standard_normal(4000)
    o = pd.DataFrame({"y": y, "z": z})
    r = o.assign(y=y + g.standard_normal(4000))
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    co = sm.OLS(z, sm.add_constant(y)).fit().conf_int()[1]
    cr = sm.OLS(z, sm.add_constant(r.y.to_numpy())).fit().conf_int()[1]
    lo, hi = max(co[0], cr[0]), min(co[1], cr[1])
    ov = 0.5 * ((hi - lo) / (co[1] - co[0]) + (hi - lo) / (cr[1] - cr[0]))
    assert t.loc["as_predictor", "kept"] == pytest.approx(ov, abs=1e-9) and ov < -10
    slopes = [float(v) for v in t.loc["as_predictor", "note"].split("slope ")[1].split(" (per")[0].split(" -> ")]
    assert slopes[0] == pytest.approx(2.0, abs=0.02) and slopes[1] == pytest.approx(1.0, abs=0.05)
    assert t.loc["as_predictor", "ok"] is False


def test_ipso_keeps_every_regression_its_variable_explains():
    """IPSO keeps the cross-products of the sensitive variable with the public ones and its sum
    of squares, so every OLS with it on the right-hand side is the original's (Tarragona SALES:
    each of the 12 other variables on SALES and the rest)."""
    df = sdccore.load_dataset("tarragona")
    rel = sdccore.protect(df, "ipso", sensitive=["SALES"], rng=3, allow_unsafe="test: the analyses only").data
    t = sdccore.analyst_checks(df, rel, sensitive=["SALES"]).table.set_index("analysis")
    assert t.loc["as_predictor", "kept"] > 0.999 and t.loc["as_predictor", "ok"] is True


def test_an_edit_rule_broken_and_a_ratio_moved():
    """100 firms: costs = 0.5 x sales except one firm (costs 1.2 x sales: 1 % break the order
    'costs at most sales', which 99 % obey).  The release multiplies the sales of the 20 firms
    of rows 0-19 by 0.4 (their costs now 1.25 x sales): 21 % break it, an increase of 20 points;
    the median costs / sales goes from 0.5 to 0.5 (80 records at 0.5, 20 at 1.25 sit above the
    middle: median still 0.5) -- so a second release halves every sales value below the median
    instead: the ratio's median moves to 0.5 / 0.5 = 1.0 for half the records."""
    sales = np.linspace(100.0, 1000.0, 100)
    costs = 0.5 * sales
    costs[50] = 1.2 * sales[50]
    o = pd.DataFrame({"sales": sales, "costs": costs})
    r = o.assign(sales=np.where(np.arange(100) < 20, 0.4 * sales, sales))
    t = sdccore.analyst_checks(o, r, sensitive=["sales"]).table.set_index("analysis")
    assert t.loc["edits", "kept"] == pytest.approx(0.20, abs=1e-12) and t.loc["edits", "ok"] is False
    assert t.loc["edits", "note"].startswith("costs above sales: 1.0% of records -> 21.0%")
    assert t.loc["ratios", "kept"] == pytest.approx(0.0, abs=1e-12) and t.loc["ratios", "ok"] is True
    # every record's ratio z / y: 0.5 for 99 records and 1.2 for one: median 0.5; halving the 60
    # smallest sales puts 60 ratios at 1.0 (one of them, row 50, at 2.4): median 1.0, a 100 % change
    r2 = o.assign(sales=np.where(np.arange(100) < 60, 0.5 * sales, sales))
    t2 = sdccore.analyst_checks(o, r2, sensitive=["sales"]).table.set_index("analysis")
    assert t2.loc["ratios", "kept"] == pytest.approx(1.0, abs=1e-12)
    assert t2.loc["ratios", "note"] == "median costs / sales: 0.5 -> 1"


def test_no_edit_rule_and_no_ratio_where_none_applies():
    """x and y of either sign (no order 99 % obey) and an age beside an income (a median ratio of
    about 1/250: not an amount of the income's kind)."""
    g = np.random.default_rng(2)
    o = pd.DataFrame({"x": g.standard_normal(200), "y": g.standard_normal(200)})
    t = sdccore.analyst_checks(o, o.assign(y=o.y + 1), sensitive=["y"]).table.set_index("analysis")
    assert t.loc["edits", "ok"] is None and t.loc["edits", "note"].startswith("does not apply")
    assert t.loc["ratios", "ok"] is None
    p = pd.DataFrame({"age": g.integers(20, 70, 200).astype(float), "income": g.lognormal(9.2, 0.3, 200)})
    t = sdccore.analyst_checks(p, p.assign(income=p.income * 2), sensitive=["income"]).table.set_index("analysis")
    assert t.loc["ratios", "ok"] is None
    assert t.loc["edits", "note"].startswith("age above income: 0.0% of records -> 0.0%")  # an order kept: ok
    assert t.loc["edits", "ok"] is True


def test_the_spread_within_a_domain():
    """Two regions of 20 records, values 100 +- 10 and 100 +- 20 (ten of each sign): sds 10 and
    20.  A release that gives both +- 15 keeps every mean and the pooled variance's sum but
    changes region A's sd by 50 % and B's by 25 %: 0.5, missed; one that keeps each sd: 0."""
    spread = np.tile([-1.0, 1.0], 10)
    o = pd.DataFrame({"region": np.repeat(["A", "B"], 20), "x": np.arange(40.0) % 3,
                      "y": np.r_[100 + 10 * spread, 100 + 20 * spread]})
    r = o.assign(y=np.r_[100 + 15 * spread, 100 + 15 * spread])
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["domain_means", "kept"] == pytest.approx(0.0, abs=1e-12)
    assert t.loc["domain_spread", "kept"] == pytest.approx(0.5, abs=1e-12) and t.loc["domain_spread", "ok"] is False
    assert t.loc["domain_spread", "note"] == "region = A: sd 10 -> 15"
    r2 = o.assign(y=o.y.to_numpy()[np.r_[np.arange(20)[::-1], 20 + np.arange(20)[::-1]]])
    t2 = sdccore.analyst_checks(o, r2, sensitive=["y"]).table.set_index("analysis")
    assert t2.loc["domain_spread", "kept"] == pytest.approx(0.0, abs=1e-12) and t2.loc["domain_spread", "ok"] is True


def test_an_ols_that_leans_on_its_largest_records_is_named():
    """``leans``: the original's OLS slopes with and without the max(5, 1 %) largest records,
    in standard errors, by hand (two least-squares fits, the standard errors from the
    residual variance and (X'X)^-1); the note and the suggestion's misses name it where the
    move reaches 2 standard errors, and say nothing where it does not."""
    import numpy as np
    import pandas as pd

    import sdccore
    from sdccore._choose.rounds import battery_count
    from sdccore._measures.battery import leans

    g = np.random.default_rng(4)
    n = 400
    x = g.normal(size=n)
    y = 10 + x + g.normal(size=n)
    y[np.argsort(x)[-5:]] += 40  # the 5 largest x carry a steep slope: they are also the 5 largest y
    X = np.column_stack([np.ones(n), x])
    b = np.linalg.lstsq(X, y, rcond=None)[0]
    e = y - X @ b
    se = np.sqrt(e @ e / (n - 2) * np.linalg.inv(X.T @ X)[1, 1])
    rest = np.argsort(y)[:-5]
    b2 = np.linalg.lstsq(X[rest], y[rest], rcond=None)[0]
    k, z = leans(y, X)
    assert k == 5 and z == pytest.approx(abs(b2[1] - b[1]) / se, rel=1e-9) and z > 2
    d = pd.DataFrame({"x": x, "y": y})
    top = np.argsort(y)[-5:]
    r = d.copy()
    r.loc[top, "y"] = y[top] * 0.6  # a release that moves the largest away: the OLS missed
    ac = sdccore.analyst_checks(d, r, sensitive=["y"])
    note = ac.worst.set_index("analysis").loc["ols", "note"]
    assert "leans on its 5 largest records" in note and f"{z:.1f} standard errors" in note
    missed = battery_count(ac)[2]
    assert "OLS regression (y leans on its 5 largest records)" in missed
    assert "MISSED (the original leans on its 5 largest records" in str(ac.summary())  # the CLI's and report's lines
    # without the steep few: nothing said
    y0 = 10 + x + g.normal(size=n)
    assert leans(y0, X)[1] < 2
    ac0 = sdccore.analyst_checks(d.assign(y=y0), d.assign(y=y0 + g.normal(0, 3, n)), sensitive=["y"])
    assert "leans on" not in ac0.worst.set_index("analysis").loc["ols", "note"]


def test_a_predictor_whose_zeros_the_release_loses():
    """A skewed predictor with a fifth of its values 0 enters the log scale with an indicator of
    its zeros; a general release that replaces them by small positive values has no such
    indicator (a singular design stopped the study): the log-log regression is still measured,
    on the predictor's logs, and the damage shows in its slope."""
    g = np.random.default_rng(8)
    n = 800
    s = np.where(g.random(n) < 0.2, 0.0, np.exp(g.normal(8, 1.2, n)))
    y = np.exp(2 + 0.3 * np.log1p(s) + g.normal(0, 0.4, n))
    o = pd.DataFrame({"savings": s, "y": y})
    r = o.assign(savings=np.where(s == 0, g.uniform(1, 50, n), s))
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert "log of y on the log of 1 skewed predictor(s)" in t.loc["loglog", "note"]
    assert np.isfinite(t.loc["loglog", "kept"]) and t.loc["loglog", "kept"] < 0.5
    same = sdccore.analyst_checks(o, o, sensitive=["y"]).table.set_index("analysis")
    assert same.loc["loglog", "kept"] == pytest.approx(1.0)
