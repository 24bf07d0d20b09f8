"""What analysts keep (issue 39): the battery of analyses on hand-made releases where each must
see the damage, one where every analysis holds, and figures computed by hand or by a second
method."""

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

import sdccore


def _orthogonal_like(v, X, norm):
    """v made orthogonal to the columns of X and rescaled to ``norm`` (IPSO's step)."""
    Q, _ = np.linalg.qr(X)
    v = v - Q @ (Q.T @ v)
    return v * norm / np.linalg.norm(v)


def _ols_kept_median_not(n=2000, seed=3):
    """y = 1 + 2x + x e, e = 10 (B - 0.3) + N(0, 0.1^2), B ~ Bernoulli(0.3): the mean of e is 0
    and its median -3, so the conditional mean's slope is 2 and the median's 2 - 3 = -1.  The
    release keeps the OLS exactly (fit + residuals orthogonal to [1, x] with the same sum of
    squares) but its residuals are symmetric, so its median slope is about 2."""
    g = np.random.default_rng(seed)
    x = g.uniform(1, 3, n)
    y = 1 + 2 * x + x * (10 * (g.random(n) < 0.3) - 3 + g.normal(0, 0.1, n))
    X = np.column_stack([np.ones(n), x])
    b = np.linalg.lstsq(X, y, rcond=None)[0]
    e = y - X @ b
    e2 = _orthogonal_like(x * g.standard_normal(n), X, np.linalg.norm(e))
    return pd.DataFrame({"x": x, "y": y}), pd.DataFrame({"x": x, "y": X @ b + e2})


def test_a_release_that_keeps_ols_but_not_the_median_regression():
    o, r = _ols_kept_median_not()
    a = sdccore.analyst_checks(o, r, sensitive=["y"])
    t = a.table.set_index("analysis")
    assert t.loc["ols", "kept"] == pytest.approx(1.0, abs=1e-9)  # the same slope and standard error
    assert t.loc["ols", "original"] == pytest.approx(t.loc["ols", "released"], abs=1e-12)  # R squared
    assert t.loc["ols", "ok"] is True
    assert t.loc["median", "kept"] < 0  # intervals apart: -1 against about 2
    assert t.loc["median", "ok"] is False
    assert ("y", "median") in a.failing and not a.ok
    assert "median" in a.summary().head


def test_a_release_that_keeps_both_regressions():
    o, _ = _ols_kept_median_not()
    g = np.random.default_rng(1)
    r = o.assign(y=o.y + g.normal(0, 0.001 * o.y.std(), len(o)))
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["ols", "kept"] > 0.99 and t.loc["median", "kept"] > 0.95
    assert t.loc["ols", "ok"] and t.loc["median", "ok"]


def _tarragona_design():
    """SALES on the other twelve variables, standardised as R's scale() does (sd with n - 1)."""
    d = sdccore.load_dataset("tarragona").select_dtypes("number")
    y = d.SALES.to_numpy(float)
    P = d.drop(columns="SALES").to_numpy(float)
    return y, np.column_stack([np.ones(len(y)), (P - P.mean(0)) / P.std(0, ddof=1)])


# R 4, quantreg 5.94:
#   d <- read.csv("tarragona.csv"); y <- d$SALES; X <- scale(as.matrix(d[, setdiff(names(d), "SALES")]))
#   summary(rq(y ~ X, tau = 0.5), se = "nid")$coefficients[, 1:2]
R_NID = [(469393.5058, 17611.19096), (-228882.2365, 52763.26329), (186480.7247, 112888.8290),
         (5646.129153, 23971.41136), (359008.5185, 87876.04709), (41220.35882, 48328.89694),
         (302455.3352, 73502.53348), (37110.69671, 23077.75619), (89502.06346, 23401.15902),
         (64046.60824, 147370.8470), (-113034.1171, 54440.08717), (145842.3420, 285528.6465),
         (-122908.9628, 214523.3060)]
#   w <- 1 + (seq_len(nrow(d)) %% 3); summary(rq(y ~ X, tau = 0.5, weights = w), se = "nid")
R_NID_WEIGHTED = [(469077.3293, 20053.81213), (-216541.6901, 46306.07756), (176774.1803, 128145.2340),
                  (4829.981049, 20805.49833)]


@pytest.mark.parametrize("weighted", [False, True])
def test_median_regression_and_its_intervals_are_r_quantregs(weighted):
    """The median regression's coefficients and standard errors (the interval's half-width /
    1.96) are R quantreg's rq and summary.rq(se = "nid") on Tarragona, weighted as rq(weights=)."""
    from sdccore._core import quantreg

    y, X = _tarragona_design()
    w = (1 + np.arange(1, len(y) + 1) % 3).astype(float) if weighted else None
    b, lo, hi, _ = quantreg.fit(y, X, 0.5, 0.95, w)
    ref = np.array(R_NID_WEIGHTED if weighted else R_NID)
    k = len(ref)
    assert b[:k] == pytest.approx(ref[:, 0], rel=1e-8)
    assert ((hi - lo) / (2 * stats.norm.ppf(0.975)))[:k] == pytest.approx(ref[:, 1], rel=1e-6)
    assert b[:k] == pytest.approx((lo[:k] + hi[:k]) / 2, rel=1e-12)


def test_median_regression_is_the_least_absolute_deviations_optimum():
    """Two independent computations agree: the dual programme's coefficients reach the primal
    least-absolute-deviations minimum (min sum(u + v), X b + u - v = y, u, v >= 0, HiGHS), and
    the pseudo R squared is statsmodels' QuantReg's (Koenker and Machado's R1)."""
    import statsmodels.api as sm

    from sdccore._core import quantreg

    g = np.random.default_rng(4)
    x = g.uniform(1, 3, 400)
    y = 1 + 2 * x + x * g.standard_normal(400)
    X = np.column_stack([np.ones(len(x)), x])
    n, p = X.shape
    lp = optimize.linprog(np.r_[np.zeros(p), np.ones(2 * n)], A_eq=np.hstack([X, np.eye(n), -np.eye(n)]), b_eq=y,
                          bounds=[(None, None)] * p + [(0, None)] * (2 * n), method="highs")
    b, lo, hi, r1 = quantreg.fit(y, X)
    assert np.sum(np.abs(y - X @ b)) == pytest.approx(lp.fun, rel=1e-9)
    assert r1 == pytest.approx(sm.QuantReg(y, X).fit(q=0.5, max_iter=5000).prsquared, rel=1e-4)
    assert np.all(lo < b) and np.all(b < hi)


def test_median_regression_intervals_carry_the_spread_that_grows_with_size():
    """On Tarragona the one-spread intervals (statsmodels' QuantReg, as quantreg's se = "iid")
    are 3 to 7 times narrower than the pairs bootstrap's spread of the estimates; "nid"'s are
    0.5 to 1.3 times it.  So a release with 1 % multiplicative noise keeps the median
    regression (overlap about .85, the OLS's .975 beside it), where the narrow intervals made
    it .72 and 6 % noise .31 (now .78)."""
    import statsmodels.api as sm

    from sdccore._core import quantreg

    y, X = _tarragona_design()
    g = np.random.default_rng(0)
    boot = np.array([quantreg.rq(y[i], X[i]) for i in (g.integers(0, len(y), len(y)) for _ in range(60))])
    spread = boot.std(axis=0)
    b, lo, hi, _ = quantreg.fit(y, X)
    nid = (hi - lo) / (2 * stats.norm.ppf(0.975))
    iid = sm.QuantReg(y, X).fit(q=0.5, max_iter=5000).bse
    assert np.all(spread / iid > 2.5)
    assert np.all((nid / spread > 0.4) & (nid / spread < 2.0))
    df = sdccore.load_dataset("tarragona").select_dtypes("number")
    kept = []
    for seed in range(3):
        r = df.assign(SALES=df.SALES * np.exp(0.01 * np.random.default_rng(seed).standard_normal(len(df))))
        kept.append(sdccore.analyst_checks(df, r, sensitive=["SALES"]).table.set_index("analysis").loc["median", "kept"])
    assert min(kept) > 0.75


def test_domain_means_broken_while_the_overall_mean_holds():
    """Two domains of 50 records; the release moves domain 1 up by 15 and domain 2 down by 15:
    the overall mean is exact, domain 1's mean 100 -> 115 (15 %), domain 2's 200 -> 185 (7.5 %)."""
    g = np.random.default_rng(0)
    dom = np.repeat([1, 2], 50)
    y = np.where(dom == 1, 100.0, 200.0) + np.tile(np.linspace(-10, 10, 50), 2)
    x = g.normal(size=100)
    o = pd.DataFrame({"region": dom, "x": x, "y": y})
    r = o.assign(y=y + np.where(dom == 1, 15.0, -15.0))
    assert sdccore.analyst_checks(o, r, sensitive=["y"]).domains == ()  # selective: only domains given
    a = sdccore.analyst_checks(o, r, sensitive=["y"], domains=["region"])
    assert a.domains == ("region",)
    t = a.table.set_index("analysis")
    assert t.loc["domain_means", "kept"] == pytest.approx(0.15, abs=1e-12)
    assert "region = 1" in t.loc["domain_means", "note"]
    assert t.loc["domain_means", "ok"] is False
    assert t.loc["mean", "kept"] == pytest.approx(0.0, abs=1e-15) and t.loc["mean", "ok"] is True


def test_top_share_ks_and_mean_by_hand():
    """y = 1..100: the largest 10 % hold (91 + ... + 100) / 5050 = 955 / 5050; the release
    moves 100 to 200 (the total 5150, the top 10 % 1055): the share 1055 / 5150.  KS: the
    empirical distributions differ by one value at most: 1 / 100.  Mean: 100 / 5050."""
    y = np.arange(1, 101, dtype=float)
    o = pd.DataFrame({"x": np.sin(y), "y": y})
    r = o.assign(y=np.r_[y[:-1], 200.0])
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["top10_share", "original"] == pytest.approx(955 / 5050, abs=1e-15)
    assert t.loc["top10_share", "released"] == pytest.approx(1055 / 5150, abs=1e-15)
    assert t.loc["top10_share", "kept"] == pytest.approx(1055 / 5150 - 955 / 5050, abs=1e-15)
    assert t.loc["ks", "kept"] == pytest.approx(0.01, abs=1e-15)
    assert t.loc["mean", "kept"] == pytest.approx(100 / 5050, abs=1e-15)
    assert t.loc["mean", "ok"] is False  # 2 % > 1 %


def test_weights_weight_the_mean_and_the_share():
    """Weights 1 and 3: the weighted mean of (10, 20) is (10 + 60) / 4 = 17.5; released
    (10, 22): (10 + 66) / 4 = 19 -> 1.5 / 17.5."""
    o = pd.DataFrame({"w": [1.0, 3.0] * 10, "x": np.arange(20.0), "y": [10.0, 20.0] * 10})
    r = o.assign(y=[10.0, 22.0] * 10)
    t = sdccore.analyst_checks(o, r, sensitive=["y"], weights="w").table.set_index("analysis")
    assert t.loc["mean", "original"] == pytest.approx(17.5) and t.loc["mean", "released"] == pytest.approx(19.0)
    assert t.loc["mean", "kept"] == pytest.approx(1.5 / 17.5)


def test_values_released_at_zero_make_the_log_analysis_fail():
    """A positive skewed variable whose release sets 20 values to 0 (PCA's clipping): the
    analyst's log cannot take them, and the log-log target is not met whatever the overlap."""
    g = np.random.default_rng(2)
    x = np.exp(g.normal(0, 1, 300))
    y = np.exp(0.5 + 0.8 * np.log(x) + g.normal(0, 0.3, 300))
    o = pd.DataFrame({"x": x, "y": y})
    yr = y.copy()
    yr[np.argsort(y)[:20]] = 0.0
    t = sdccore.analyst_checks(o, o.assign(y=yr), sensitive=["y"]).table.set_index("analysis")
    assert t.loc["loglog", "ok"] is False
    assert "20 more value(s) <= 0" in t.loc["loglog", "note"]
    same = sdccore.analyst_checks(o, o, sensitive=["y"]).table.set_index("analysis")
    assert same.loc["loglog", "kept"] == pytest.approx(1.0) and same.loc["loglog", "ok"] is True


def test_general_protection_checks_the_changed_variables_with_its_own_targets():
    """Without ``sensitive`` the variables the release changed are checked, with the targets of
    general protection (OLS overlap >= .8, mean within 2 %)."""
    o, r = _ols_kept_median_not()
    o = o.assign(z=np.arange(len(o)) % 7)  # whole numbers, 7 levels, unchanged: a domain
    r = r.assign(z=o.z)
    a = sdccore.analyst_checks(o, r)
    assert a.checked == ("y",) and a.domains == ("z",) and not a.selective
    t = a.table.set_index("analysis")
    assert t.loc["ols", "target"] == ">= 0.8" and t.loc["mean", "target"] == "<= 0.02"


def test_ipso_on_tarragona_keeps_ols_and_misses_what_the_audit_found():
    """The audit of issue 39 on the suggested IPSO release of Tarragona SALES: OLS kept, the
    median regression's overlap negative, KS about .23, the top-10 % share .535 -> .564.  (With
    the largest firms spread, KS is .07-.15 over seeds 1-3 and the dashboard's 12345, the
    median regression still negative.)"""
    df = sdccore.load_dataset("tarragona")
    rel = sdccore.protect(df, "ipso", sensitive=["SALES"], rng=12345).data
    a = sdccore.analyst_checks(df, rel, sensitive=["SALES"])
    t = a.table.set_index("analysis")
    assert t.loc["ols", "kept"] == pytest.approx(1.0, abs=1e-6)
    assert t.loc["median", "kept"] < 0
    assert 0.03 < t.loc["ks", "kept"] < 0.35
    assert t.loc["top10_share", "original"] == pytest.approx(0.5348, abs=1e-3)
    assert ("SALES", "median") in set(a.failing)


@pytest.mark.parametrize("kwargs, match", [
    ({"sensitive": ["NOPE"]}, "sensitive: \\['NOPE'\\] are not numeric columns"),
    ({"weights": "NOPE"}, "weights='NOPE' is not a numeric column"),
])
def test_bad_arguments_name_the_fix(kwargs, match):
    o, r = _ols_kept_median_not(n=50)
    with pytest.raises(ValueError, match=match):
        sdccore.analyst_checks(o, r, **kwargs)


def test_mismatched_files_are_refused():
    o, r = _ols_kept_median_not(n=50)
    with pytest.raises(ValueError, match="same columns in the same order"):
        sdccore.analyst_checks(o, r[["y", "x"]])


def test_the_command_line_prints_and_writes_what_analysts_keep(tmp_path):
    """``sdccore evaluate ORIGINAL RELEASED --analyses``: the battery's verdict and one line per
    analysis in words; with --json every row of its table, the same figures as the library's
    (12 significant digits, as the command line writes them), a figure that does not apply as null."""
    import json

    from conftest import run_cli

    df = sdccore.load_dataset("tarragona")
    rel = sdccore.protect(df, "ipso", sensitive=["SALES"], rng=12345).data
    df.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "p.csv", index=False)
    code, out, err = run_cli(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "p.csv"), "--sensitive", "SALES",
                              "--analyses"])
    assert code in (0, None), err
    assert ("What analysts keep: 5 of 14 analyses within their targets; missed: OLS with robust errors (SALES); "
            "log-log regression (SALES); log-level regression (SALES); median regression (SALES); tail quantile "
            "regressions (SALES)" in out)
    assert "domain means" in out and "n/a: no domain column" in out
    code, out, err = run_cli(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "p.csv"), "--sensitive", "SALES",
                              "--analyses", "--json"])
    rows = {r["analysis"]: r for r in json.loads(out)["analyses"]}
    lib = sdccore.analyst_checks(pd.read_csv(tmp_path / "o.csv"), pd.read_csv(tmp_path / "p.csv"),
                                 sensitive=["SALES"]).table.set_index("analysis")
    assert rows["median"]["kept"] == float(f"{lib.loc['median', 'kept']:.12g}") and rows["median"]["ok"] is False
    assert rows["domain_means"]["kept"] is None


def test_one_slope_far_off_misses_the_target_whatever_the_others():
    """The outside review's case: y on x and 20 region indicators; the release moves the slope of
    x by 1.5 interval widths (about 6 standard errors) and leaves the region contrasts alone.  The
    mean overlap over the 20 slopes stays above .9; the smallest, the figure held to the target,
    is negative."""
    g = np.random.default_rng(5)
    n = 1000
    x = g.normal(size=n)
    reg = g.integers(1, 21, n)
    y = 10 + 2 * x + g.normal(size=n)
    o = pd.DataFrame({"region": reg, "x": x, "y": y})
    r = o.assign(y=y - 1.5 * 0.1293 * (x - x.mean()))
    t = sdccore.analyst_checks(o, r, sensitive=["y"], domains=["region"]).table.set_index("analysis")
    assert t.loc["ols", "kept"] < 0 and t.loc["ols", "ok"] is False
    mean = float(t.loc["ols", "note"].split("mean over the 20 slopes ")[1].split(";")[0])
    assert mean > 0.9


def test_a_variable_released_blank_misses_every_target():
    o, r = _ols_kept_median_not(n=200)
    a = sdccore.analyst_checks(o, r.assign(y=np.nan), sensitive=["y"])
    t = a.table.set_index("analysis")
    assert not a.ok
    for k in ("ols", "median", "ks", "top10_share", "mean"):
        assert t.loc[k, "ok"] is False, k


def test_text_domains_exact_identities_and_bad_weights():
    g = np.random.default_rng(7)
    n = 120
    st = np.array(["AL", "AK", "AZ"])[np.arange(n) % 3]
    a_, b_ = g.gamma(2.0, 10.0, n), g.gamma(2.0, 10.0, n)
    o = pd.DataFrame({"state": st, "a": a_, "b": b_, "total": a_ + b_})
    r = o.assign(total=np.where(st == "AK", 1.2, 1.0) * o.total)
    a = sdccore.analyst_checks(o, r, sensitive=["total"], domains=["state"])
    t = a.table.set_index("analysis")
    assert a.domains == ("state",)
    ak = o.total[st == "AK"].mean()
    assert t.loc["domain_means", "kept"] == pytest.approx(0.2) and "state = AK" in t.loc["domain_means", "note"]
    assert ak > 0
    # total = a + b exactly: the original's OLS has no uncertainty, its overlap does not apply
    assert np.isnan(t.loc["ols", "kept"]) and "exact identity" in t.loc["ols", "note"] and t.loc["ols", "ok"] is None
    with pytest.raises(ValueError, match="domains: \\['nope'\\] are not columns"):
        sdccore.analyst_checks(o, r, sensitive=["total"], domains=["nope"])
    w = o.assign(w=np.r_[-1.0, np.ones(n - 1)])
    with pytest.raises(ValueError, match="weights='w' holds missing, zero or negative values"):
        sdccore.analyst_checks(w, w, sensitive=["total"], weights="w")
    with pytest.raises(ValueError, match="weights='w' is also named sensitive"):
        sdccore.analyst_checks(w.assign(w=1.0), w.assign(w=1.0), sensitive=["w"], weights="w")


def test_weighted_top_share_counts_the_boundary_record_in_part():
    """Values 20, 19, ..., 1; weight 1 each but 100 for the value 1: total weight 119, the top
    10 % is 11.9 of it -- the 11 largest whole (20 + ... + 10 = 165) and 0.9 of the value 9:
    (165 + 8.1) / (209 + 100)."""
    v = np.arange(20, 0, -1, dtype=float)
    w = np.where(v == 1, 100.0, 1.0)
    o = pd.DataFrame({"w": w, "x": np.cos(v), "y": v})
    t = sdccore.analyst_checks(o, o, sensitive=["y"], weights="w").table.set_index("analysis")
    assert t.loc["top10_share", "original"] == pytest.approx(173.1 / 309, abs=1e-12)


def test_the_command_line_takes_the_domains(tmp_path):
    """``--domains region``: the domain means of the selective release by region (15 % off in
    region 1, as the library computes it); a column that is not in the file is one line."""
    from conftest import run_cli

    dom = np.repeat([1, 2], 50)
    y = np.where(dom == 1, 100.0, 200.0) + np.tile(np.linspace(-10, 10, 50), 2)
    o = pd.DataFrame({"region": dom, "x": np.sin(np.arange(100.0)), "y": y})
    o.to_csv(tmp_path / "o.csv", index=False)
    o.assign(y=y + np.where(dom == 1, 15.0, -15.0)).to_csv(tmp_path / "p.csv", index=False)
    args = ["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "p.csv"), "--sensitive", "y", "--analyses"]
    code, out, err = run_cli(args + ["--domains", "region"])
    assert code in (0, None), err
    assert "domain means" in out and "0.150 (target <= 0.1)  MISSED" in out
    code, out, err = run_cli(args + ["--domains", "nope"])
    assert code != 0 and "domains: ['nope'] are not columns" in err and "Traceback" not in err


def _spread_grows(n=3000, seed=5):
    """y = 10 + 2 x + x e (e standard normal, x uniform 1..3): the median's slope is 2 and the
    0.1 and 0.9 quantiles' slopes 2 -+ 1.2816 (the spread grows with x)."""
    g = np.random.default_rng(seed)
    x = g.uniform(1, 3, n)
    e = g.standard_normal(n)
    o = pd.DataFrame({"y": 10 + 2 * x + x * e, "x": x})
    # the release: the same median line, the spread of the middle x for every record
    r = o.assign(y=10 + 2 * x + 2 * e)
    return o, r


def test_tail_quantiles_see_a_spread_made_even_that_the_median_keeps():
    """A release that keeps each record's median (10 + 2 x) and replaces the spread x e by
    2 e: the median regression holds, the 0.1 and 0.9 quantile regressions' slopes go from
    2 -+ 1.28 to 2 (intervals apart)."""
    o, r = _spread_grows()
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["median", "ok"] and t.loc["median", "kept"] > 0.7
    assert t.loc["quantiles", "kept"] < 0 and t.loc["quantiles", "ok"] is False
    assert t.loc["quantiles", "note"].startswith("0.1: ") and "; 0.9: " in t.loc["quantiles", "note"]
    from sdccore._core import quantreg

    X = np.column_stack([np.ones(len(o)), o.x])
    assert quantreg.rq(o.y.to_numpy(), X, 0.1)[1] == pytest.approx(2 - 1.2816, abs=0.2)
    assert quantreg.rq(r.y.to_numpy(), X, 0.1)[1] == pytest.approx(2, abs=0.2)
    kept = sdccore.analyst_checks(o, o.assign(y=o.y * 1.0001), sensitive=["y"]).table.set_index("analysis")
    assert kept.loc["quantiles", "kept"] > 0.95


def test_tail_quantiles_need_records_beyond_each_tail():
    """50 records, 2 coefficients: 5 beyond the 0.1 quantile, 10 needed: does not apply."""
    o, r = _spread_grows(n=50)
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert np.isnan(t.loc["quantiles", "kept"]) and t.loc["quantiles", "ok"] is None
    assert "too few records for the tails (100 needed for 2 coefficients)" in t.loc["quantiles", "note"]


def test_quantile_regressions_of_a_large_file_use_the_same_sample_of_both():
    """More than 10,000 records: the quantile regressions on 10,000 of them, the same records
    in both files (a copy of the original keeps every slope exactly)."""
    o, _ = _spread_grows(n=12_000)
    t = sdccore.analyst_checks(o, o.copy(), sensitive=["y"]).table.set_index("analysis")
    assert t.loc["median", "kept"] == pytest.approx(1.0) and t.loc["quantiles", "kept"] == pytest.approx(1.0)
    assert "on a sample of 10,000 records (the same rows in both files)" in t.loc["median", "note"]
    # a release with blank cells: the sample is drawn on the rows (the seeded 10,000 of 12,000),
    # then the records with a value are kept, so the released fit is on the sampled rows it
    # has a value for (a second computation of that rule)
    from sdccore._core import quantreg
    from sdccore._measures import battery

    r = o.copy()
    r.loc[::7, "y"] = np.nan
    X = np.column_stack([np.ones(len(o)), o.x])
    rows = np.zeros(len(o), dtype=bool)
    rows[np.random.default_rng(0).choice(len(o), 10_000, replace=False)] = True
    rows &= r.y.notna().to_numpy()
    got = battery._fit("median", r.y.to_numpy(), X, None)
    want = quantreg.fit(r.y.to_numpy()[rows], X[rows], 0.5)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["median", "kept"] > 0.95 and t.loc["quantiles", "kept"] > 0.7


def test_log_level_regression_sees_what_the_raw_ols_keeps():
    """y = exp(1 + 0.5 x + 0.2 e), x uniform 0..6: a release that adds to y half a quadratic
    in x made orthogonal to [1, x] keeps y's OLS coefficients exactly (overlap .94: only the
    residual spread grows) and bends the log of y on x (overlap about -3: small values gain
    relatively more); a skew-free y is not analysed on the log scale."""
    g = np.random.default_rng(8)
    x = g.uniform(0, 6, 2000)
    o = pd.DataFrame({"y": np.exp(1 + 0.5 * x + 0.2 * g.standard_normal(2000)), "x": x})
    X = np.column_stack([np.ones(len(x)), x])
    q = (x - 3) ** 2
    q -= X @ np.linalg.lstsq(X, q, rcond=None)[0]
    r = o.assign(y=o.y + 0.5 * q)
    assert np.linalg.lstsq(X, r.y, rcond=None)[0] == pytest.approx(np.linalg.lstsq(X, o.y, rcond=None)[0])
    t = sdccore.analyst_checks(o, r, sensitive=["y"]).table.set_index("analysis")
    assert t.loc["ols", "ok"] and t.loc["ols", "kept"] > 0.9
    assert t.loc["loglevel", "kept"] < -2 and t.loc["loglevel", "ok"] is False
    assert t.loc["loglevel", "note"].startswith("log of y on the predictors as they are")
    flat = pd.DataFrame({"y": g.standard_normal(300), "x": g.standard_normal(300)})
    f = sdccore.analyst_checks(flat, flat.assign(y=flat.y + 0.01), sensitive=["y"]).table.set_index("analysis")
    assert np.isnan(f.loc["loglevel", "kept"]) and f.loc["loglevel", "note"].startswith("does not apply")


def test_pearson_change_and_the_wasserstein_distance_in_units():
    """y and x with correlation 1 in the original; the release reverses y's order against x:
    the Pearson correlation 1 -> -1 (change 2, reported without a target), and a shift of
    every value by 5 is a Wasserstein distance of 5 (in y's units, the KS note)."""
    o = pd.DataFrame({"y": np.arange(1.0, 101.0), "x": np.arange(1.0, 101.0)})
    t = sdccore.analyst_checks(o, o.assign(y=o.y[::-1].to_numpy()), sensitive=["y"]).table.set_index("analysis")
    assert t.loc["pearson", "kept"] == pytest.approx(2.0) and t.loc["pearson", "ok"] is None
    s = sdccore.analyst_checks(o, o.assign(y=o.y + 5), sensitive=["y"]).table.set_index("analysis")
    assert s.loc["ks", "note"] == "Wasserstein distance 5 (in y's units)"


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
def test_pseudo_r2s_intercept_only_loss_is_the_programmes(tau):
    """The intercept-only check loss behind the pseudo R squared, taken from the weighted
    quantile, equals the one the linear programme reaches (unweighted and weighted rows)."""
    from sdccore._core import quantreg

    y, X = _tarragona_design()
    w = np.random.default_rng(1).uniform(0.5, 3, len(y))
    for ys, x0 in ((y, X[:, 0]), (y * w, X[:, 0] * w)):
        b = quantreg.rq(ys, x0[:, None], tau)
        assert quantreg._null_loss(ys, x0, tau) == pytest.approx(quantreg.check_loss(ys - x0 * b[0], tau), rel=1e-12)


def test_low_share_and_gini_by_hand():
    """y = 1..10: the median 5.5, the line 60 % of it 3.3, three records below it (.3); Gini
    sum((2i - n - 1) y_(i)) / (n sum y) = 165 / 550 = .3.  Doubling every value keeps both (they
    do not depend on the scale).  Lifting the four smallest to 4 leaves none below the line
    (median 5.5) and the Gini 119 / 610; the mean absolute difference over twice the mean gives
    the original's Gini too (20 + ... : 330 / 100 / (2 * 5.5))."""
    y = np.arange(1, 11, dtype=float)
    o = pd.DataFrame({"x": np.sin(y), "y": y})
    t = sdccore.analyst_checks(o, o.assign(y=2 * y), sensitive=["y"]).table.set_index("analysis")
    assert t.loc["low_share", "original"] == pytest.approx(0.3, abs=1e-15)
    assert t.loc["gini", "original"] == pytest.approx(0.3, abs=1e-15)
    mad = np.abs(y[:, None] - y[None, :]).mean()
    assert t.loc["gini", "original"] == pytest.approx(mad / (2 * y.mean()), abs=1e-15)  # a second computation
    assert t.loc["low_share", "kept"] == pytest.approx(0.0, abs=1e-15) and t.loc["low_share", "ok"] is True
    assert t.loc["gini", "kept"] == pytest.approx(0.0, abs=1e-15) and t.loc["gini", "ok"] is True
    lifted = np.r_[4.0, 4.0, 4.0, 4.0, y[4:]]
    t = sdccore.analyst_checks(o, o.assign(y=lifted), sensitive=["y"]).table.set_index("analysis")
    assert t.loc["low_share", "released"] == 0.0 and t.loc["low_share", "kept"] == pytest.approx(0.3, abs=1e-15)
    assert t.loc["gini", "released"] == pytest.approx(119 / 610, abs=1e-15)
    assert t.loc["gini", "kept"] == pytest.approx(0.3 - 119 / 610, abs=1e-15)
    assert t.loc["low_share", "ok"] is False and t.loc["gini", "ok"] is False
    # an amount that can be negative (a profit): neither applies
    t = sdccore.analyst_checks(o.assign(y=y - 5), o.assign(y=y - 5), sensitive=["y"]).table.set_index("analysis")
    assert np.isnan(t.loc["gini", "kept"]) and t.loc["gini", "ok"] is None and "does not apply" in t.loc["gini", "note"]


def test_weighted_low_share_and_gini_equal_the_replicated_file():
    """Integer sampling weights are records counted that many times: the weighted Gini equals the
    unweighted one of the file with each record repeated (the Lorenz curve is the same), and the
    low-value share too (an odd count, so that the two medians' definitions agree)."""
    g = np.random.default_rng(4)
    y = np.round(np.exp(g.normal(8, 1, 31)))
    w = g.integers(1, 5, 31).astype(float)
    w[0] += 1 - w.sum() % 2  # an odd total weight
    o = pd.DataFrame({"w": w, "x": g.normal(size=31), "y": y})
    tw = sdccore.analyst_checks(o, o, sensitive=["y"], weights="w").table.set_index("analysis")
    rep = o.loc[np.repeat(np.arange(31), w.astype(int))].drop(columns="w").reset_index(drop=True)
    assert len(rep) % 2 == 1
    tu = sdccore.analyst_checks(rep, rep, sensitive=["y"]).table.set_index("analysis")
    assert tw.loc["gini", "original"] == pytest.approx(tu.loc["gini", "original"], abs=1e-12)
    assert tw.loc["low_share", "original"] == pytest.approx(tu.loc["low_share", "original"], abs=1e-12)


def test_a_code_in_words_is_a_domain_in_selective_protection_too():
    """A text column released unchanged (region) is a domain whose means an office publishes,
    in selective protection as in general: y is 10 in region A and 20 in B, x a public variable;
    the release hands y round across the regions (each region's mean 15): the worst domain
    mean is off by |15 - 10| / 10 = 0.5; a numeric public count is still no domain."""
    n = 10
    d = pd.DataFrame({"region": ["A"] * n + ["B"] * n, "count": np.tile([1.0, 2.0], n),
                      "x": np.arange(2 * n, dtype=float), "y": [10.0] * n + [20.0] * n})
    rel = d.copy()
    rel["y"] = np.tile([10.0, 20.0], n)
    a = sdccore.analyst_checks(d, rel, sensitive=["y"])
    assert a.domains == ("region",)
    w = a.worst.set_index("analysis")
    assert w.loc["domain_means", "kept"] == pytest.approx(0.5) and w.loc["domain_means", "ok"] is False
    assert "region = A: mean 10 -> 15" in w.loc["domain_means", "note"]
    # the column with a missing cell, or with one level, is not a domain
    d2, rel2 = d.copy(), rel.copy()
    d2.loc[0, "region"] = rel2.loc[0, "region"] = None
    assert sdccore.analyst_checks(d2, rel2, sensitive=["y"]).domains == ()
