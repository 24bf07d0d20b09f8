"""IPSO's keep='scales' (issue 39, after an analyst's audit of a persons file: IPSO kept the OLS
of income and lost its log-scale regressions, log-log overlap .25): each skewed positive
sensitive variable also keeps its OLS on the log design and its sum of squares, computed here
by least squares on the released file; with missing cells on the complete records (the ones an
analyst's regression uses); the OLS alone, said in the notes, where it does not apply; refused on
the Dask engine; 'ols' (the default) releases what it did."""

import numpy as np
import pandas as pd
import pytest

import sdccore


def _persons(n=1200, seed=11, missing=0.0):
    g = np.random.default_rng(seed)
    rent = np.round(np.exp(g.normal(6.5, 0.5, n)))
    savings = np.round(np.exp(g.normal(8.5, 1.3, n)))
    income = np.round(rent * np.exp(g.normal(2.4, 0.45, n)) + 0.02 * savings + g.gamma(2, 600, n))
    d = pd.DataFrame({"sex": g.choice(["f", "m"], n), "rent": rent, "savings": savings, "income": income})
    if missing:
        d.loc[g.random(n) < missing, "savings"] = np.nan
        d.loc[g.random(n) < missing, "income"] = np.nan
    return d


KW = dict(method="ipso", sensitive=["income"], rounding="none", allow_unsafe="a test of the construction")


def _fits(d, y, rows):
    """The raw OLS on [1, rent, savings, male], the OLS of log y on [1, the same, log rent,
    log savings] (the skewed public ones logged: log-log and log-level in one) and the sum of
    squares, on ``rows``."""
    P = d[["rent", "savings"]].to_numpy(float)[rows]
    male = (d.sex.to_numpy() == "m")[rows].astype(float)
    Z = np.column_stack([np.ones(rows.sum()), P, male])
    L = np.column_stack([Z, np.log(P)])
    ls = lambda A, v: np.linalg.lstsq(A, v, rcond=None)[0]  # noqa: E731
    y = y[rows]
    return ls(Z, y), ls(L, np.log(y)), y @ y


def test_both_scales_kept_exactly_and_the_default_unchanged():
    d = _persons()
    r, o = sdccore.protect(d, keep="scales", rng=3, **KW), sdccore.protect(d, rng=3, **KW)
    y, yr, yo = (v.income.to_numpy(float) for v in (d, r.data, o.data))
    rows = np.ones(len(d), bool)
    (b0, l0, s0), (b1, l1, s1), (b2, l2, _) = _fits(d, y, rows), _fits(d, yr, rows), _fits(d, yo, rows)
    assert b1 == pytest.approx(b0, rel=1e-8) and b2 == pytest.approx(b0, rel=1e-8)  # the raw OLS: both
    assert l1 == pytest.approx(l0, rel=1e-7, abs=1e-9) and s1 == pytest.approx(s0, rel=1e-8)
    assert np.abs(l2 - l0).max() > 100 * np.abs(l1 - l0).max()  # 'ols' alone: the log scale far off
    assert (yr > 0).all()
    assert any("income: also the OLS of the log" in n and "keep='scales'" in n for n in r.notes)
    assert not any("keep='scales'" in n for n in o.notes)
    assert o.options["keep"] == "ols" and r.options["keep"] == "scales"
    again = sdccore.protect(d, keep="scales", rng=3, **KW)
    assert again.data.income.to_numpy().tobytes() == yr.tobytes()


def test_with_missing_cells_both_scales_on_the_complete_records():
    d = _persons(missing=0.05)
    r = sdccore.protect(d, keep="scales", rng=4, **KW)
    y, yr = d.income.to_numpy(float), r.data.income.to_numpy(float)
    assert np.array_equal(np.isnan(yr), np.isnan(y))  # missing cells kept missing, in place
    rows = np.isfinite(y) & d.savings.notna().to_numpy()
    (b0, l0, s0), (b1, l1, s1) = _fits(d, y, rows), _fits(d, yr, rows)
    assert b1 == pytest.approx(b0, rel=1e-8) and l1 == pytest.approx(l0, rel=1e-7, abs=1e-9)
    assert s1 == pytest.approx(s0, rel=1e-8)  # the intercept too: the other observed incomes carry the
    assert np.nanmean(yr) == pytest.approx(np.nanmean(y), rel=1e-12)  # observed total's difference
    assert any("keep='scales', on the complete records" in n for n in r.notes)


def test_where_it_does_not_apply_the_ols_alone_and_said():
    d = _persons()
    d["income"] = d.income - d.income.median()  # negative values: no log scale
    r = sdccore.protect(d, keep="scales", rng=2, bounds="none", **KW)
    Z = np.column_stack([np.ones(len(d)), d[["rent", "savings"]].to_numpy(float), (d.sex == "m").to_numpy(float)])
    ls = lambda v: np.linalg.lstsq(Z, v, rcond=None)[0]  # noqa: E731
    assert ls(r.data.income.to_numpy(float)) == pytest.approx(ls(d.income.to_numpy(float)), rel=1e-8)
    assert any(n.startswith("income: the OLS alone (not skewed positive") for n in r.notes)


def test_refused_on_the_dask_engine():
    assert "keep='scales' is not built for the Dask engine" in sdccore.scale_refusal(
        {"method": "ipso", "sensitive": ["income"], "keep": "scales"})
    assert sdccore.scale_refusal({"method": "ipso", "sensitive": ["income"], "keep": "ols"}) is None


def test_the_draw_is_given_the_keys_as_published():
    """An analyst's audit: with age a key released in bands of 10, IPSO drew income given sex
    and region only (72 ages are too many levels to join as codes), and the age-band means
    moved by up to 10 %.  The conditional methods now condition on the keys as published: the
    bands join the codes, so each band's mean income (over the records whose age is not
    blanked, each band mean against the original's over the same records) is kept, with the
    released bands named in the note."""
    d = _persons(n=1500, seed=5)
    g = np.random.default_rng(5)
    d["age"] = g.integers(18, 90, len(d))
    d["region"] = g.choice(list("ABCD"), len(d))
    d["income"] = np.round(d.income * (1 + (d.age - 50) / 200))
    bands = sdccore.Recoding.bands([0, 30, 40, 50, 60, 70, float("inf")], right=False)
    r = sdccore.protect(d, sensitive=["income"], keys=["region", "sex", "age"], recode={"age": bands}, rng=8, **{
        k: v for k, v in KW.items() if k != "sensitive"})
    assert any("age (6 levels)" in n and "kept exactly" in n for n in r.notes)
    shown = r.data.age.notna()
    band = r.data.age[shown]
    o = d.income[shown].groupby(band, observed=True).mean()
    got = r.data.income[shown].groupby(band, observed=True).mean()
    assert len(o) == 6 and np.abs(got / o - 1).max() < 0.002  # all records but a few blanked ages: nearly exact
    everyone = sdccore.recode(d[["age"]], {"age": bands}).age
    gap = d.income.groupby(everyone, observed=True).mean() - r.data.income.groupby(everyone, observed=True).mean()
    assert gap.abs().max() < 1e-6  # by the bands of every record (the draw's own domains): exact


def test_a_predictor_with_zeros_enters_the_log_scale_with_an_indicator():
    """An analyst's audit: log(income) on log(savings), a fifth of the persons with no savings,
    lost its savings effect.  A skewed predictor with up to half its values 0 is logged (0 where
    it is 0) beside an indicator of its zeros, the analyst's 'no savings' dummy: the release keeps
    that regression exactly too."""
    d = _persons(seed=13)
    g = np.random.default_rng(13)
    none = g.random(len(d)) < 0.2
    d.loc[none, "savings"] = 0.0
    d["income"] = np.round(d.income * np.where(none, 0.85, 1.0))
    r = sdccore.protect(d, keep="scales", rng=6, **KW)
    y, yr = d.income.to_numpy(float), r.data.income.to_numpy(float)
    s = d.savings.to_numpy(float)
    P = np.column_stack([np.ones(len(d)), d.rent, s, (d.sex == "m").astype(float), np.log(d.rent),
                         np.where(s > 0, np.log(np.where(s > 0, s, 1.0)), 0.0), (s == 0).astype(float)])
    ls = lambda v: np.linalg.lstsq(P, np.log(v), rcond=None)[0]  # noqa: E731
    assert ls(yr) == pytest.approx(ls(y), rel=1e-7, abs=1e-9)
    yo = sdccore.protect(d, rng=6, **KW).data.income.to_numpy(float)  # 'ols': that regression far off
    assert np.abs(ls(yo) - ls(y)).max() > 100 * np.abs(ls(yr) - ls(y)).max()
