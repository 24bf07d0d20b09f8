"""The battery's robust-error OLS and its regressions within domains (sdccore/_measures/subgroups.py):
hand-made releases that keep the pooled OLS exactly, where these two must see the damage, and
releases that keep them too."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import sdccore
from sdccore._measures.regression import _overlap
from sdccore._measures.subgroups import ols_intervals


def _refit(X, y, e):
    """y's fit on X plus e made orthogonal to X and scaled to y's residual sum of squares: the
    OLS coefficients and their classical errors are y's exactly (IPSO's construction)."""
    b = np.linalg.lstsq(X, y, rcond=None)[0]
    r = y - X @ b
    e = e - X @ np.linalg.lstsq(X, e, rcond=None)[0]
    return X @ b + e * np.sqrt((r @ r) / (e @ e))


def _checks(o, r, **kw):
    t = sdccore.analyst_checks(o, r, sensitive=["y"], **kw).table.set_index("analysis")
    return t


def test_hc1_intervals_are_statsmodels():
    """HC1 intervals with t quantiles on n - p degrees of freedom: statsmodels' OLS with
    cov_type='HC1', use_t=True (R: lmtest::coefci(lm(y ~ x), vcov = sandwich::vcovHC(fit, type = "HC1"))),
    to 1e-12; the classical ones are statsmodels' plain OLS."""
    rng = np.random.default_rng(4)
    X = np.c_[np.ones(150), rng.standard_normal((150, 3))]
    y = X @ [1.0, 2.0, 0.0, -1.0] + rng.standard_normal(150) * (0.2 + np.abs(X[:, 1]) ** 2)
    for robust, fit in ((True, sm.OLS(y, X).fit(cov_type="HC1", use_t=True)), (False, sm.OLS(y, X).fit())):
        b, lo, hi, r2 = ols_intervals(y, X, robust=robust)
        ci = fit.conf_int(0.05)
        assert np.allclose(b, fit.params, atol=1e-12) and np.allclose(lo, ci[:, 0], atol=1e-12)
        assert np.allclose(hi, ci[:, 1], atol=1e-12) and r2 == pytest.approx(fit.rsquared, abs=1e-12)


def test_robust_errors_see_a_release_that_keeps_the_classical_ols():
    """Residuals of an even spread, released with their largest sizes at the extreme x (random
    signs, made orthogonal to x, their sum of squares kept): the coefficients and the classical
    intervals are the original's exactly, the robust ones 1.4 times as wide.  The battery's
    figure is an independent computation's (statsmodels HC1, Karr's overlap), and a copy keeps
    both."""
    rng = np.random.default_rng(0)
    n = 400
    x = rng.uniform(0, 4, n)
    y = 10 + 3 * x + rng.standard_normal(n)
    X = np.c_[np.ones(n), x]
    r = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    e = np.empty(n)
    e[np.argsort(np.abs(x - x.mean()))] = np.sort(np.abs(r))
    yr = _refit(X, y, e * rng.choice([-1.0, 1.0], n))
    o, rel = pd.DataFrame({"x": x, "y": y}), pd.DataFrame({"x": x, "y": yr})
    t = _checks(o, rel)
    assert t.loc["ols", "kept"] == pytest.approx(1.0, abs=1e-9) and t.loc["ols", "ok"]
    fo = sm.OLS(y, X).fit(cov_type="HC1", use_t=True).conf_int(0.05)
    fr = sm.OLS(yr, X).fit(cov_type="HC1", use_t=True).conf_int(0.05)
    want = float(_overlap(fo[1:, 0], fo[1:, 1], fr[1:, 0], fr[1:, 1]).min())
    assert t.loc["ols_robust", "kept"] == pytest.approx(want, abs=1e-9)
    assert 0.8 < want < 0.9 and t.loc["ols_robust", "ok"] == False  # noqa: E712  (numpy's bool)
    assert "HC1" in t.loc["ols_robust", "note"]
    same = _checks(o, o.copy())
    assert same.loc["ols_robust", "kept"] == pytest.approx(1.0) and same.loc["ols_robust", "ok"]
    # with sampling weights the OLS has robust errors already: not a second figure
    ow = o.assign(w=rng.uniform(1, 3, n))
    tw = _checks(ow, rel.assign(w=ow.w), weights="w")
    assert np.isnan(tw.loc["ols_robust", "kept"]) and tw.loc["ols_robust", "ok"] is None


def _two_slopes(n=600, seed=1):
    rng = np.random.default_rng(seed)
    sex = np.where(np.arange(n) % 2 == 0, "F", "M")
    x = rng.uniform(0, 10, n)
    y = np.where(sex == "F", 5 + 2.0 * x, 20 - 0.5 * x) + rng.standard_normal(n)
    return pd.DataFrame({"sex": sex, "x": x, "y": y})


def test_regressions_within_domains_see_slopes_made_up_from_the_pooled_one():
    """Women's slope 2, men's -0.5.  A release of the pooled fit (x and the sex indicator) plus
    the residuals in a random order keeps the pooled OLS and the domain means exactly; within
    each sex the slope is now the pooled 0.75, which the regression within domains must see
    (the worst level named), and a release made within each sex keeps it."""
    o = _two_slopes()
    rng = np.random.default_rng(2)
    X = np.c_[np.ones(len(o)), o.x, (o.sex == "M").astype(float)]
    pooled = o.assign(y=_refit(X, o.y.to_numpy(), rng.standard_normal(len(o))))
    t = _checks(o, pooled)
    assert t.loc["ols", "kept"] == pytest.approx(1.0, abs=1e-9) and t.loc["domain_means", "ok"]
    assert t.loc["domain_ols", "kept"] < -1 and t.loc["domain_ols", "ok"] == False  # noqa: E712
    assert "worst of 2 domain level(s): sex = " in t.loc["domain_ols", "note"]
    within = o.copy()
    for lv in ("F", "M"):
        m = (o.sex == lv).to_numpy()
        Xm = np.c_[np.ones(m.sum()), o.x[m]]
        within.loc[m, "y"] = _refit(Xm, o.y.to_numpy()[m], rng.standard_normal(m.sum()))
    t = _checks(o, within)
    assert t.loc["domain_ols", "kept"] == pytest.approx(1.0, abs=1e-9) and t.loc["domain_ols", "ok"]
    # a level with fewer than 10 records per coefficient (and 30) is not fitted on its own
    small = pd.concat([o, o.iloc[:12].assign(sex="X")], ignore_index=True)
    t = _checks(small, pd.concat([within, within.iloc[:12].assign(sex="X")], ignore_index=True))
    assert "worst of 2 domain level(s)" in t.loc["domain_ols", "note"]
    nodom = _checks(o.drop(columns="sex"), within.drop(columns="sex"))
    assert np.isnan(nodom.loc["domain_ols", "kept"]) and nodom.loc["domain_ols", "note"] == "no domain column"
