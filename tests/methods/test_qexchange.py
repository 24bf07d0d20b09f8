"""The quantile exchange (issue 39): every record between the same regression quantiles, the
quantile regressions kept where IPSO's exchange loses them, no record at its own place, the
total or the OLS kept, the band-mates intruder's attack on its bands, and the refusals."""

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._core.quantreg import rq
from sdccore._methods import conditional as qx


def _firms(n=1500, seed=3):
    """Skewed firm-like amounts whose spread grows with size (the case where the OLS and the
    median regression tell different stories)."""
    g = np.random.default_rng(seed)
    emp = np.exp(g.normal(3, 1, n))
    assets = emp * np.exp(g.normal(2, 0.5, n))
    sales = 5 * emp + 0.5 * assets + emp * g.standard_t(3, n) * 2 + 50
    return pd.DataFrame({"employees": emp.round(1), "assets": assets.round(1), "sales": np.maximum(sales, 1).round(1)})


def _design(d, cols):
    Z = d[cols].to_numpy(float)
    return np.column_stack([np.ones(len(d)), (Z - Z.mean(0)) / Z.std(0)])


def test_every_record_stays_between_the_same_regression_quantiles():
    d = _firms()
    r = sdccore.protect(d, method="qexchange", sensitive=["sales"], rng=7, allow_unsafe="a test of the construction",
                        rounding="none")
    X = _design(d, ["employees", "assets"])
    y, yr = d.sales.to_numpy(float), r.data.sales.to_numpy(float)
    F = np.sort(np.column_stack([X @ rq(y, X, t) for t in (0.1, 0.5, 0.9)]), axis=1)
    F = np.maximum(F, 0.0)  # the bounds keep sales non-negative: the planes raised to 0
    band_o = (y[:, None] > F).sum(1)
    # a value on a plane (a block-mate's place at the edge of its band: the programme's solution
    # passes through a few records) lies in either band
    up, down = (yr[:, None] > F - 1e-9 * np.abs(F)).sum(1), (yr[:, None] > F + 1e-9 * np.abs(F)).sum(1)
    band_r = np.where(up == band_o, up, down)
    # every record but those whose band has no room beyond the floors' tolerance of their own
    # value (two planes through it, as the programme's solution passes through a few records;
    # see the test below), which take a place in the nearest band instead
    moved = np.flatnonzero(band_o != band_r)
    assert len(moved) <= 10, len(moved)
    room = np.where(band_o == 0, F[np.arange(len(y)), 0] - y, np.where(band_o == 3, np.inf, np.maximum(
        F[np.arange(len(y)), np.minimum(band_o, 2)] - y, y - F[np.arange(len(y)), np.maximum(band_o - 1, 0)])))
    assert (room[moved] <= 1.05 * 0.05 * np.abs(y[moved]) + 1e-9).all()  # 5 records, room 3.6-5.2 %
    # and no record keeps its own value (the places are handed round a cycle)
    assert np.mean(np.abs(yr - y) <= 0.05 * np.abs(y)) < 0.2
    # the public variables are released as they are
    pd.testing.assert_frame_equal(r.data[["employees", "assets"]], d[["employees", "assets"]])


def test_the_median_regression_is_kept_where_ipsos_exchange_loses_it():
    """The hand-made case: IPSO keeps the OLS exactly and not the median regression; the
    quantile exchange keeps the median regression and not the OLS exactly."""
    d = _firms()
    kw = dict(sensitive=["sales"], rng=11, allow_unsafe="a test of the construction")
    q = sdccore.protect(d, method="qexchange", **kw).data
    i = sdccore.protect(d, method="ipso", **kw).data
    X = _design(d, ["employees", "assets"])
    b0 = rq(d.sales.to_numpy(float), X, 0.5)
    bq = rq(q.sales.to_numpy(float), X, 0.5)
    bi = rq(i.sales.to_numpy(float), X, 0.5)
    # the slopes of the median regression: within 5 % for the quantile exchange
    assert np.abs(bq[1:] / b0[1:] - 1).max() < 0.05
    assert np.abs(bi[1:] / b0[1:] - 1).max() > 2 * np.abs(bq[1:] / b0[1:] - 1).max()
    aq = sdccore.analyst_checks(d, q, sensitive=["sales"]).worst.set_index("analysis")["kept"]
    ai = sdccore.analyst_checks(d, i, sensitive=["sales"]).worst.set_index("analysis")["kept"]
    assert aq["median"] >= 0.7 and aq["median"] > ai["median"]
    assert aq["ks"] <= 0.05 and aq["ks"] < ai["ks"]
    assert ai["ols"] == pytest.approx(1.0, abs=1e-3)  # what IPSO keeps by construction (before rounding)


def test_the_total_is_kept_and_the_release_is_reproducible():
    d = _firms(800, seed=5)
    kw = dict(sensitive=["sales"], allow_unsafe="a test of the construction", rounding="none")
    a = sdccore.protect(d, method="qexchange", rng=3, **kw)
    b = sdccore.protect(d, method="qexchange", rng=3, **kw)
    c = sdccore.protect(d, method="qexchange", rng=4, **kw)
    assert a.data.sales.sum() == pytest.approx(d.sales.sum(), rel=1e-12)
    # Tarragona SALES: the seeds where scaling the top band's excess alone could not keep it (the
    # release 3.8 % and 6.9 % too large) keep it too, every record in its band
    t = sdccore.load_dataset("tarragona")
    for seed in (12346, 12349):
        r = sdccore.protect(t, method="qexchange", sensitive=["SALES"], rng=seed, allow_unsafe="a test",
                            rounding="none")
        assert r.data.SALES.sum() == pytest.approx(t.SALES.sum(), rel=1e-12)
    assert a.data.to_numpy().tobytes() == b.data.to_numpy().tobytes()
    assert not np.array_equal(a.data.sales.to_numpy(), c.data.sales.to_numpy())


def test_the_places_are_handed_round_within_blocks_by_hand():
    """Four records in one band between two flat planes (0 and 10): places .1 .. .4 handed
    round a cycle; every record gets another's place, the set of places is kept."""
    S = np.array([1.0, 2.0, 3.0, 4.0])
    F = np.tile([0.0, 10.0], (4, 1))
    out, left = qx.exchange(S, F, F, -np.inf, block=4, gen=np.random.default_rng(0))
    assert left == 0
    assert sorted(out.tolist()) == [1.0, 2.0, 3.0, 4.0]
    assert (out != S).all()
    # with the closeness repair: a record handed a place within 60 % of its own takes another's
    # (record 2 can only take 4's, records 3 and 4 only 1's: each value within 60 % of its own
    # is replaced, a value may then be held twice)
    for seed in range(5):
        out, left = qx.exchange(S, F, F, -np.inf, block=4, gen=np.random.default_rng(seed), tol=0.6 * S)
        assert left == 0 and (np.abs(out - S) > 0.6 * S).all()
        assert out[1] == 4.0 and out[2] == 1.0 and out[3] == 1.0
    # then the total: released [2, 4, 1, 1] (sum 8) against 10; each value moves by its own size
    # times one lambda (2 / 8), within 90 % of its room below the plane at 10
    kept, off = qx._moments_kept(S, np.array([2.0, 4.0, 1.0, 1.0]), np.ones((4, 1)), F, -np.inf)
    assert off == 0 and kept == pytest.approx([2.5, 5.0, 1.25, 1.25])
    # the room binds: released [8, 1, 0.5, 0.5] (sum 10) against 16: 8 may rise by 0.9 * 2 = 1.8
    # at most; the others share the rest (4.2) in proportion to their size (2: 2.1, 1.05, 1.05)
    S2 = np.array([4.0, 4.0, 4.0, 4.0])
    kept, off = qx._moments_kept(S2, np.array([8.0, 1.0, 0.5, 0.5]), np.ones((4, 1)), F, -np.inf)
    assert off == 0 and kept == pytest.approx([9.8, 3.1, 1.55, 1.55])
    # no value moves to within tol of its own: record 2 (own 4, released 1) stops at 4 - 1 = 3,
    # the others take the rest
    kept, off = qx._moments_kept(S2, np.array([8.0, 1.0, 0.5, 0.5]), np.ones((4, 1)), F, -np.inf,
                                 tol=np.full(4, 1.0))
    assert off == 0 and kept[1] == pytest.approx(3.0) and kept.sum() == pytest.approx(16.0)
    assert kept[0] == pytest.approx(9.8) and kept[2] == kept[3] == pytest.approx(1.6)


def test_a_record_on_its_planes_leaves_its_band_rather_than_keep_its_value():
    """Two planes through a record's own value (the linear programme's solution passes through
    a few records): its band has no width there, so any place of it is its own value; it takes
    a place in the nearest band where the value lands beyond the tolerance (Tarragona SALES,
    seed 12345: one firm was released with its own value before)."""
    S = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    F = np.array([[0.0, 0.5, 10.0]] * 4 + [[5.0, 5.0, 9.0]])
    tol = 0.05 * S
    for seed in range(5):
        out, left = qx.exchange(S, F, F, -np.inf, block=4, gen=np.random.default_rng(seed), tol=tol)
        assert left == 0 and (np.abs(out - S) > tol).all()
        assert 5.25 < out[4] < 9.0  # band 1 (5 to 5) has no width: band 2, between 5 and 9
    d = sdccore.load_dataset("tarragona")
    r = sdccore.protect(d, method="qexchange", sensitive=["SALES"], rng=12345, allow_unsafe="a test")
    assert not (r.data.SALES == d.SALES).any()
    assert not any("left there" in n for n in r.notes)


def test_refusals_name_the_option_and_the_fix():
    d = _firms(30)
    with pytest.raises(ValueError, match="block=20 needs at least 40 records"):
        sdccore.protect(d, method="qexchange", sensitive=["sales"], block=20, rng=1)
    with pytest.raises(ValueError, match="keeps the public variables and redraws the sensitive ones"):
        sdccore.protect(d, method="qexchange", rng=1)
    with pytest.raises(ValueError, match="quantiles"):
        sdccore.protect(d, method="qexchange", sensitive=["sales"], quantiles="0.3", rng=1)
    assert "Dask engine" in qx.scale_refusal("qexchange", {"sensitive": ["sales"]})


def test_tarragona_sales_keeps_the_distribution_and_its_bands_are_attacked():
    """On the bundled Tarragona file with SALES sensitive (seed 12345, the dashboard's): the
    median regression, KS, mean and the top-10 % share close to the battery's targets (mean over
    four runs), where IPSO misses the median regression and KS by far (issue 39); the band-mates intruder attacks the bands
    (an outside intruder who read them by hand put 13-17 % of several size bands and 2 of the
    9 largest firms of an earlier release within 5 % beyond the prior, where the battery then
    saw at most 8 %): it is the battery's best intruder here, 16 % beyond the prior overall,
    within the floors (15.6 % with margin='fixed', before format 9: the values it left at 1.0525
    times their own now stay where the exchange put them).  Since the floors hold the 9 firms of
    highest leverage (extreme public values) as a band, this seed's release is refused there: 3 of
    them come back within 5 % beyond the prior, where one record decides."""
    d = sdccore.load_dataset("tarragona")
    r = sdccore.protect(d, method="qexchange", sensitive=["SALES"], rng=12345, allow_unsafe="a test")
    assert len(r.risk.violations) == 1 and "in the records of highest leverage" in r.risk.violations[0]
    assert "(9 records: each is 11%, so one record decides)" in r.risk.violations[0]
    it = r.risk.intruders.set_index(["band", "intruder"])
    overall = it.loc["all"]
    assert overall.beyond_prior.idxmax() == "band_mates"
    assert overall.loc["band_mates", "beyond_prior"] == pytest.approx(0.1607, abs=1e-3)
    assert overall.loc["band_mates", "with_release"] > 2 * overall.loc["own", "prior"]
    assert "qexchange" in sdccore.methods(dashboard=True)
    # what analysts keep, mean over four runs (IPSO: median regression -.88, KS .23)
    kept = []
    for seed in range(12345, 12349):
        rel = r.data if seed == 12345 else sdccore.protect(d, method="qexchange", sensitive=["SALES"], rng=seed,
                                                           allow_unsafe="a test").data
        kept.append(sdccore.analyst_checks(d, rel, sensitive=["SALES"]).worst.set_index("analysis")["kept"])
    w = pd.concat(kept, axis=1).mean(axis=1)
    assert w["median"] >= 0.65 and w["ks"] <= 0.05 and w["mean"] <= 0.01 and w["top10_share"] <= 0.02


def test_keeping_the_ols_keeps_it_exactly_and_the_median_regression_closely():
    """keep='ols': the OLS of sales on [1, employees, assets] of the release equals the
    original's (two computations: the normal equations the step solves, and least squares on
    the released file); the median regression's slopes stay within 10 %; no value moves to
    within the floors' tolerance of its own by the step."""
    d = _firms()
    r = sdccore.protect(d, method="qexchange", sensitive=["sales"], rng=5, keep="ols", rounding="none",
                        allow_unsafe="a test of the construction")
    Z = np.column_stack([np.ones(len(d)), d[["employees", "assets"]].to_numpy(float)])
    b0 = np.linalg.lstsq(Z, d.sales.to_numpy(float), rcond=None)[0]
    b1 = np.linalg.lstsq(Z, r.data.sales.to_numpy(float), rcond=None)[0]
    assert b1 == pytest.approx(b0, rel=1e-8)
    t = sdccore.protect(d, method="qexchange", sensitive=["sales"], rng=5, rounding="none",
                        allow_unsafe="a test of the construction")
    bt = np.linalg.lstsq(Z, t.data.sales.to_numpy(float), rcond=None)[0]
    assert np.abs(bt[1:] / b0[1:] - 1).max() > 100 * np.abs(b1[1:] / b0[1:] - 1).max()  # 'total' does not keep it
    X = _design(d, ["employees", "assets"])
    m0, m1 = rq(d.sales.to_numpy(float), X, 0.5), rq(r.data.sales.to_numpy(float), X, 0.5)
    assert np.abs(m1[1:] / m0[1:] - 1).max() < 0.10
    assert any("OLS of each sensitive variable" in n for n in r.notes)


def test_no_numerical_warning_reaches_the_user():
    """The values of the outer bands (one plane and an infinite side) are computed without
    'invalid value' warnings (the branch not taken held inf - inf)."""
    import warnings

    d = sdccore.load_dataset("tarragona")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        sdccore.protect(d, method="qexchange", sensitive=["SALES", "NET.PROFIT"], rng=3, allow_unsafe="a test")


def test_keeping_both_scales_keeps_the_raw_and_the_log_regressions_exactly():
    """keep='scales' (a skewed positive variable): the OLS of sales on [1, employees, assets]
    as they are, the OLS of log sales on [1, the predictors, their logs] (so the log-log and the
    log-level regressions) and the sum of squares of sales equal the original's, each computed
    by least squares on the released file; 'ols' keeps only the first.  Nearly every record
    stays in its band between the regression quantiles, and the median regression's slopes
    within 10 %."""
    d = _firms()
    kw = dict(method="qexchange", sensitive=["sales"], rng=5, rounding="none", allow_unsafe="a test of the construction")
    r, o = sdccore.protect(d, keep="scales", **kw), sdccore.protect(d, keep="ols", **kw)
    y, yr, yo = (v.sales.to_numpy(float) for v in (d, r.data, o.data))
    P = d[["employees", "assets"]].to_numpy(float)
    Z = np.column_stack([np.ones(len(d)), P])
    L = np.column_stack([Z, np.log(P)])
    ls = lambda A, v: np.linalg.lstsq(A, v, rcond=None)[0]  # noqa: E731
    assert ls(Z, yr) == pytest.approx(ls(Z, y), rel=1e-8)
    assert ls(L, np.log(yr)) == pytest.approx(ls(L, np.log(y)), rel=1e-8, abs=1e-9)
    assert ls(np.log(P), np.log(yr)) == pytest.approx(ls(np.log(P), np.log(y)), rel=0.05)  # a sub-model: close
    assert yr @ yr == pytest.approx(y @ y, rel=1e-8)
    # 'ols' alone leaves the log scale off by far more
    assert np.abs(ls(L, np.log(yo)) - ls(L, np.log(y))).max() > 20 * np.abs(ls(L, np.log(yr)) - ls(L, np.log(y))).max()
    X = _design(d, ["employees", "assets"])
    F = np.maximum(np.sort(np.column_stack([X @ rq(y, X, t) for t in (0.1, 0.5, 0.9)]), axis=1), 0.0)
    assert np.mean((yr[:, None] > F).sum(1) != (y[:, None] > F).sum(1)) < 0.05
    m0, m1 = rq(y, X, 0.5), rq(yr, X, 0.5)
    assert np.abs(m1[1:] / m0[1:] - 1).max() < 0.10
    near = int(np.sum(np.abs(yr - y) <= 0.05 * y))  # the floors' tolerance: the last steps leave a few there
    assert (yr > 0).all() and near <= 0.01 * len(y)
    assert any("log-log and log-level" in n for n in r.notes)
    assert any(f"sales ({near})" in n and "tolerance" in n for n in r.notes)


def test_keeping_both_scales_of_a_variable_with_negative_values_keeps_its_ols():
    """A variable with negative values has no log scale: keep='scales' keeps its OLS as 'ols'
    does, and says so."""
    d = _firms()
    d["sales"] = d.sales - d.sales.median()
    kw = dict(method="qexchange", sensitive=["sales"], rng=2, rounding="none", allow_unsafe="a test", bounds="none")
    r = sdccore.protect(d, keep="scales", **kw)
    Z = np.column_stack([np.ones(len(d)), d[["employees", "assets"]].to_numpy(float)])
    ls = lambda v: np.linalg.lstsq(Z, v, rcond=None)[0]  # noqa: E731
    assert ls(r.data.sales.to_numpy(float)) == pytest.approx(ls(d.sales.to_numpy(float)), rel=1e-8)
    assert any("own scale only" in n and "sales" in n for n in r.notes)


def test_a_later_variable_keeps_both_scales_given_the_earlier_one_as_released():
    """Two skewed sensitive variables: the second is conditioned on the first as released, so
    the analyst's log-scale OLS of the second on [1, the public variables, the first, the logs
    of the skewed ones] on the release equals that OLS on the original (raw-scale
    coefficients, each design built here by hand with the logs of positive values and 0
    elsewhere), and its raw OLS on the same columns too."""
    d = _firms()
    g = np.random.default_rng(8)
    d["costs"] = (0.6 * d.sales * np.exp(g.normal(0, 0.4, len(d)))).round(1)
    r = sdccore.protect(d, method="qexchange", sensitive=["sales", "costs"], rng=4, keep="scales", rounding="none",
                        allow_unsafe="a test of the construction")
    assert not any("own scale only" in n for n in r.notes)

    def designs(f):
        Z = f[["employees", "assets", "sales"]].to_numpy(float)
        return np.column_stack([np.ones(len(f)), Z]), np.column_stack([np.ones(len(f)), Z, np.log(Z)])

    (Ao, Lo), (Ar, Lr) = designs(d), designs(r.data)
    yo, yr = d.costs.to_numpy(float), r.data.costs.to_numpy(float)
    ls = lambda A, v: np.linalg.lstsq(A, v, rcond=None)[0]  # noqa: E731
    assert ls(Lr, np.log(yr)) == pytest.approx(ls(Lo, np.log(yo)), rel=1e-7, abs=1e-9)
    # the raw OLS: the cross-products with the released columns are the original's with them
    assert Ar.T @ yr == pytest.approx(Ar.T @ yo, rel=1e-9)


def test_both_scales_same_seed_same_bytes():
    """keep='scales': the same seed gives the same release to the byte, another seed another."""
    d = _firms(n=600)
    kw = dict(method="qexchange", sensitive=["sales"], keep="scales", allow_unsafe="a test of the construction")
    a, b, c = (sdccore.protect(d, rng=s, **kw).data for s in (11, 11, 12))
    assert a.to_csv(index=False) == b.to_csv(index=False)
    assert not a.sales.equals(c.sales)


def _at_ratio(released, own, ratios, eps=1e-6):
    r = np.asarray(released, float) / np.asarray(own, float)
    return sum(int(np.sum(np.abs(r - c) < eps)) for c in ratios)


def test_no_value_is_left_at_one_ratio_to_its_own_and_older_recipes_rebuild_theirs():
    """The step that keeps the total stopped a value it would bring within the floors'
    tolerance of its own at exactly that tolerance: on Tarragona SALES (seed 12345, the
    dashboard's) 59 firms at 1.0525 times their own value to 1e-6, 6 of them among the
    largest 10 %, which a divisor of 1.0525 gives back exactly.  margin='stay' (the default
    since format 9) leaves such a value where the exchange put it and the others carry the
    total; a recipe of format 8, which has no margin, rebuilds 'fixed'."""
    from conftest import older_recipe

    d = sdccore.load_dataset("tarragona")
    kw = dict(sensitive=["SALES"], rng=12345, rounding="none", allow_unsafe="test")
    new = sdccore.protect(d, "qexchange", **kw)
    fixed = sdccore.protect(d, "qexchange", margin="fixed", **kw)
    tol = 1.05 * 0.05
    assert _at_ratio(new.data.SALES, d.SALES, (1 + tol, 1 - tol)) == 0
    assert _at_ratio(fixed.data.SALES, d.SALES, (1 + tol, 1 - tol)) == 59
    for r in (new, fixed):  # the total kept either way, and no value within the tolerance of its own
        assert r.data.SALES.sum() == pytest.approx(d.SALES.sum(), rel=1e-9)
        assert (np.abs(r.data.SALES / d.SALES - 1) > 0.05).mean() > 0.99
    assert new.options["margin"] == "stay"
    old = older_recipe(new, "margin", 8)
    assert old.options["margin"] == "fixed"
    assert sdccore.make_release(d, old, allow_unsafe="test").csv() == \
        sdccore.make_release(d, sdccore.Recipe.from_json(fixed.recipe_json()), allow_unsafe="test").csv()


def _persons(n=1500, seed=3):
    """Incomes (lognormal given age, sex, region) with rent, savings (35 % zero) and keys."""
    g = np.random.default_rng(seed)
    region, sex, age = g.choice(["N", "C", "S", "E"], n, p=[.3, .35, .2, .15]), g.choice(["F", "M"], n), g.integers(18, 90, n)
    li = 10 + 0.02 * (age - 18) - 0.0002 * (age - 50) ** 2 + 0.15 * (sex == "M") + g.normal(0, 0.6, n) + 0.1 * (region == "C")
    return pd.DataFrame({"region": region, "sex": sex, "age": age, "income": np.round(np.exp(li)),
                         "rent": np.round(np.exp(0.8 * li - 1.5 + g.normal(0, 0.3, n))),
                         "savings": np.where(g.random(n) < 0.35, 0, np.round(np.exp(li - 1 + g.normal(0, 1, n)))),
                         "hhsize": g.integers(1, 6, n)})


@pytest.mark.parametrize("method", ["qexchange", "ipso"])
def test_both_scales_leave_no_heap_at_the_push_ratio(method):
    """The two scales put a value they brought within 1.5 tolerances of its own at exactly 1.5
    tolerances (ratio 1 +- 0.079, moved a little by the last step): with 'fixed' the quantile
    exchange's release of these incomes holds 155 records in the ratio bin 1.0775-1.08 (about 10 in
    its neighbours); with 'stay' such a value goes back to where the exchange put it.  Measured
    as the largest bin of width 0.0025 between 1.05 and 1.12 against the median bin."""
    d = _persons()
    kw = dict(sensitive=["income"], rng=12345, rounding="none", keep="scales", allow_unsafe="test")
    if method == "ipso":
        kw["classes"] = 5
    heap = {}
    for m in ("stay", "fixed"):
        ratio = (sdccore.protect(d, method, margin=m, **kw).data.income / d.income).to_numpy()
        h = np.histogram(ratio, bins=np.arange(1.05, 1.12, 0.0025))[0]
        heap[m] = h.max() / max(np.median(h), 1)
    assert heap["stay"] < 6 and heap["fixed"] > 4 * heap["stay"], heap
