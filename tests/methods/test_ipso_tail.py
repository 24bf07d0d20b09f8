"""IPSO's guard of the largest records (issue 38): the residual set IPSO hands round is the
original one, so an intruder who hands the released residuals out by the size of the fit
(the largest to the largest fit) gets some of the largest firms back within 5 %.  The guard
moves every released residual that would put a record of the top band within 1.5 tolerances
of its own value, whichever record it is handed to; the OLS stays exact.  And the largest
records' released values fall short of their own by ratios that crowd together (a record is
among the largest partly by its own residual, which goes elsewhere): the spread
(top_band='spread'; 'ranks', the default, also moves the residual each one's rank would hand
it) moves those ratios apart so that no single divisor takes more of them back than the
floors allow."""
import numpy as np
import pytest

import sdccore
from conftest import older_recipe
from sdccore._methods import conditional_kernel as ck
from sdccore._methods import ladder as ld
from sdccore._methods import residuals as rs


@pytest.fixture(scope="module")
def tarragona():
    return sdccore.load_dataset("tarragona")


def _design(d, s):
    return np.c_[np.ones(len(d)), d.drop(columns=[s]).to_numpy(float)]


def _by_size(A, y):
    """The intruder of the audit, in numpy: the release's own fit, and its residuals sorted
    and handed out in the order of the fit."""
    fit = A @ np.linalg.lstsq(A, y, rcond=None)[0]
    return fit, fit + np.sort(y - fit)[np.argsort(np.argsort(fit, kind="stable"), kind="stable")]


def test_without_the_guard_the_largest_firms_come_back(tarragona, monkeypatch):
    # the audit's finding, reproduced: 2 of the 9 largest firms' SALES within 5 % in every
    # run, the same firms, beyond every prior model
    monkeypatch.setattr(ck, "GUARD", False)
    x = tarragona["SALES"].to_numpy()
    top = np.argsort(x)[-9:]
    A = _design(tarragona, "SALES")
    found = []
    for seed in (1, 2, 3):
        r = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=seed, allow_unsafe="test")
        _, guess = _by_size(A, r.data["SALES"].to_numpy(float))
        found.append(set(top[np.abs(guess[top] - x[top]) <= 0.05 * x[top]]))
        t = r.risk.intruders.set_index(["band", "intruder"]).loc[("top 1 %", "residual_size")]
        assert t.beyond_prior >= 2 / 9 - 1e-9
        assert not r.risk.ok
    assert all(len(f) == 2 for f in found) and found[0] & found[1] & found[2]  # one firm in every run


def test_the_guard_leaves_no_released_residual_in_a_top_records_window(tarragona):
    x = tarragona["SALES"].to_numpy()
    n = len(x)
    top = np.argsort(x)[-9:]
    A = _design(tarragona, "SALES")
    b0 = np.linalg.lstsq(A, x, rcond=None)[0]
    e0 = x - A @ b0
    for seed in (1, 2, 3):
        r = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=seed, top_band="guard")
        y = r.data["SALES"].to_numpy(float)
        fit, guess = _by_size(A, y)
        # still IPSO: the OLS and the residual sum of squares exact (up to the rounding of the
        # release to the original's decimals)
        np.testing.assert_allclose(np.linalg.lstsq(A, y, rcond=None)[0], b0, rtol=1e-6, atol=1e-6 * np.abs(b0).max())
        assert ((y - fit) ** 2).sum() == pytest.approx((e0 ** 2).sum(), rel=1e-6)
        # the invariant: no released residual puts an uncrowded top firm within 5 % of its value
        res = y - fit
        for i in top:
            near = np.abs(fit[i] + res - x[i]) <= 0.05 * x[i]
            crowded = (np.abs(fit[i] + res - x[i]) < rs.GUARD_MARGIN * 0.05 * x[i]).sum() > rs.GUARD_CROWD * n
            assert crowded or not near.any(), (seed, i, int(near.sum()))
        assert (np.abs(guess[top] - x[top]) <= 0.05 * x[top]).sum() <= 1
        t = r.risk.intruders.set_index(["band", "intruder"]).loc[("top 1 %", "residual_size")]
        assert t.beyond_prior <= 1 / 9 + 1e-9
        assert r.risk.ok


@pytest.mark.parametrize("name,sensitive", [("tarragona", "SALES"), ("casc", "FEDTAX")])
def test_the_guard_keeps_what_analysts_keep(name, sensitive, monkeypatch):
    """The guard moves residuals (and, through the exact rescaling, every value a little);
    what analysts keep is no worse than without it: the OLS exact, the distribution (KS) as
    close or closer (Tarragona SALES .228 -> .204 and .211 -> .200; CASC FEDTAX .098 -> .093,
    .097 -> .072), the top-10 % share as close or closer (SALES 2.9 -> 0.2 and 0.8 points:
    the largest residuals are no longer all handed round whole)."""
    d = sdccore.load_dataset(name)
    for seed in (1, 2):
        figs = {}
        for guard in (False, True):
            monkeypatch.setattr(ck, "GUARD", guard)
            r = sdccore.protect(d, "ipso", sensitive=[sensitive], rng=seed, allow_unsafe="test", top_band="guard")
            t = sdccore.analyst_checks(d, r.data, sensitive=[sensitive]).table.set_index("analysis")
            figs[guard] = t["kept"]
        assert figs[True]["ols"] == pytest.approx(1.0, abs=1e-3)  # exact up to the rounding to whole units
        assert figs[True]["ks"] <= figs[False]["ks"] + 0.005
        assert figs[True]["top10_share"] <= figs[False]["top10_share"] + 0.001


def _most_in_one_window(rho, t=0.05):
    """The most ratios one divisor c takes back: ratios within [(1 - t) c, (1 + t) c]."""
    l = np.log(np.sort(rho))
    return max(int(((l >= v) & (l <= v + np.log((1 + t) / (1 - t)))).sum()) for v in l)


def test_the_spread_leaves_no_one_divisor_the_crowded_ratios_of_the_largest():
    # CASC FEDTAX: the public variables predict the 11 largest taxpayers closely, and the guard
    # alone releases them at .86-.96 of their own value: a divisor chosen with the truth takes
    # 10-11 of 11 back, the shrinkage intruder (who learns its divisor on the release) 7-9,
    # 2 beyond the prior.  Spread: 2 at most for any divisor (the floors allow m = 2 of 11 a
    # window; the gaps are 1.1-2.2 windows / m), the intruder at most 1 beyond the prior, the
    # by-size intruder at most 1 beyond the prior (which itself gets 8 of 11), the OLS exact
    d = sdccore.load_dataset("casc")
    x = d["FEDTAX"].to_numpy(float)
    top = np.argsort(x)[-11:]
    A = _design(d, "FEDTAX")
    b0 = np.linalg.lstsq(A, x, rcond=None)[0]
    for seed in (1, 2):
        got = {}
        for band in ("guard", "spread"):
            r = sdccore.protect(d, "ipso", sensitive=["FEDTAX"], rng=seed, top_band=band, allow_unsafe="test")
            y = r.data["FEDTAX"].to_numpy(float)
            t = r.risk.intruders.set_index(["band", "intruder"]).loc[("top 1 %", "shrinkage")]
            got[band] = (_most_in_one_window(y[top] / x[top]), t.with_release, t.beyond_prior, y)
        assert got["guard"][0] >= 10 and got["guard"][1] >= 7 / 11 - 1e-9 and got["guard"][2] >= 2 / 11 - 1e-9
        n_win, with_release, beyond, y = got["spread"]
        assert n_win <= 2 and with_release <= 3 / 11 + 1e-9 and beyond <= 1 / 11 + 1e-9
        # the OLS fit exact up to the rounding of the release to whole dollars (the design is
        # nearly collinear: the fitted values, not each coefficient, are what it determines)
        assert np.abs(A @ np.linalg.lstsq(A, y, rcond=None)[0] - A @ b0).max() < 1e-4 * x.std()  # 0.22 of sd 4,903
        # the by-size intruder: 3-5 of the 11 in numpy alone, no more than the prior gets
        # (8), and at most 1 beyond it
        _, guess = _by_size(A, y)
        assert (np.abs(guess[top] - x[top]) <= 0.05 * x[top]).sum() <= 8
        t = r.risk.intruders.set_index(["band", "intruder"]).loc[("top 1 %", "residual_size")]
        assert t.prior == pytest.approx(8 / 11) and t.beyond_prior <= 1 / 11 + 1e-9


def test_the_spread_on_tarragona_keeps_the_ols_and_the_by_size_intruder_out(tarragona):
    x = tarragona["SALES"].to_numpy()
    top = np.argsort(x)[-9:]
    A = _design(tarragona, "SALES")
    b0 = np.linalg.lstsq(A, x, rcond=None)[0]
    e0 = x - A @ b0
    for seed in (2, 3):  # the ordered spread ('ranks', the default before the random ladder)
        r = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=seed, top_band="ranks", allow_unsafe="t")
        y = r.data["SALES"].to_numpy(float)
        fit, guess = _by_size(A, y)
        np.testing.assert_allclose(np.linalg.lstsq(A, y, rcond=None)[0], b0, rtol=1e-6, atol=1e-6 * np.abs(b0).max())
        assert ((y - fit) ** 2).sum() == pytest.approx((e0 ** 2).sum(), rel=1e-6)
        assert (np.abs(guess[top] - x[top]) <= 0.05 * x[top]).sum() <= 2  # the prior alone gets 2
        # m = 1 of 9: the gaps (1.1-2.2 windows) hold in 8 of 11 seeds; the final rescaling narrows
        # one below a window in the other 3
        assert _most_in_one_window(y[top] / x[top]) <= 2
        I = r.risk.intruders.set_index(["band", "intruder"])
        assert I.loc[("top 1 %", "shrinkage"), "beyond_prior"] <= 1 / 9 + 1e-9
        assert I.loc[("top 1 %", "residual_size"), "beyond_prior"] <= 1 / 9 + 1e-9
        # the replay intruder (who makes the release again from itself) takes 2 of the 9 at
        # seed 3 (none at seed 2): the ordered spread breaks the top band's floor there
        assert r.risk.ok == (seed == 2)
        assert I.loc[("top 1 %", "replay"), "beyond_prior"] == pytest.approx({2: 0, 3: 2 / 9}[seed])


def test_spaced_moves_the_values_least_to_the_gaps():
    # by hand: 0, .05, .1 with gaps of .1 -> the isotonic regression of (0, -.05, -.1) is their
    # mean -.05 everywhere, plus (0, .1, .2): -.05, .05, .15 (the sum kept, the gaps exact);
    # in another order the same values land where their ranks say
    np.testing.assert_allclose(rs._spaced(np.array([0.0, 0.05, 0.1]), np.full(2, 0.1)), [-0.05, 0.05, 0.15])
    np.testing.assert_allclose(rs._spaced(np.array([0.1, 0.0, 0.05]), np.full(2, 0.1)), [0.15, -0.05, 0.05])
    a = np.array([0.0, 0.3, 0.6])  # gaps met: unchanged
    assert rs._spaced(a, np.full(2, 0.1)) is a


def test_the_triangular_match_leaves_the_earlier_columns_alone():
    rng = np.random.default_rng(4)
    n = 200
    P = rng.standard_normal((n, 2))
    Q = rs._basis(P)
    E = rng.standard_normal((n, 3))
    T = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, -0.4], [0.5, -0.4, 2.0]])
    out = rs._match_tri(E, Q, T)
    np.testing.assert_allclose(out.T @ out, T, atol=1e-9)  # E*'E* exact
    np.testing.assert_allclose(Q.T @ out, 0, atol=1e-9)    # orthogonal to [1, P]
    F = E.copy()
    F[:, 2] += rng.standard_normal(n)  # a move of the last column: the others as they were
    np.testing.assert_allclose(rs._match_tri(F, Q, T)[:, :2], out[:, :2], atol=1e-12)
    assert not np.allclose(rs._match(F, Q, T)[:, :2], rs._match(E, Q, T)[:, :2])  # the symmetric one mixes them


def test_a_recipe_before_the_option_rebuilds_the_guarded_release(tarragona):
    import json

    new = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)
    assert json.loads(new.recipe_json())["top_band"] == "random" and sdccore.RECIPE_VERSION == 9
    # a recipe made while 'ranks' was the default records it, and rebuilds its release
    ranks = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2, top_band="ranks", allow_unsafe="a test")
    rec = sdccore.Recipe.from_json(ranks.recipe_json())
    assert rec.options["top_band"] == "ranks"
    assert sdccore.make_release(tarragona, rec).data.reset_index(drop=True).equals(ranks.data.reset_index(drop=True))
    assert not ranks.data.equals(new.data)
    old = older_recipe(new, "top_band", 4)
    assert old.options["top_band"] == "guard"
    guarded = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2, top_band="guard")
    assert sdccore.make_release(tarragona, old).csv() == sdccore.make_release(
        tarragona, sdccore.Recipe.from_json(guarded.recipe_json())).csv()
    assert not guarded.data.equals(new.data)


def test_two_sensitive_variables_get_the_guard_and_the_spread_and_keep_their_ols():
    # EIA TOTREVENUE + RESREVENUE: the guard and the spread act per column, the residuals
    # matched by Cholesky factors (a move of the second column leaves the first as it is);
    # both regressions on the public columns exact, every floor met (10 of 10 seeds measured;
    # 9 of 10 with the guard left to one sensitive variable)
    d = sdccore.load_dataset("eia").select_dtypes("number")
    sens = ["TOTREVENUE", "RESREVENUE"]
    apart = ["UTILITYID", "YEAR", "MONTH"]
    r = sdccore.protect(d, "ipso", sensitive=sens, rng=1, exclude=apart)
    assert r.risk.ok
    pub = d.drop(columns=sens + apart)
    A = np.c_[np.ones(len(d)), pub.to_numpy(float)]
    for s in sens:
        x, y = d[s].to_numpy(float), r.data[s].to_numpy(float)
        b0, b1 = (np.linalg.lstsq(A, v, rcond=None)[0] for v in (x, y))
        assert np.abs(A @ (b1 - b0)).max() < 1e-4 * x.std()


def test_the_residuals_handed_out_by_size_miss_the_largest_records():
    # diabetes, sex set apart (IPSO conditioned on sex): the 5 largest targets lie within 8 % of
    # each other and their windows are crowded, so the guard leaves them alone, and the
    # residual-by-size intruder (the released residuals handed out in the order of the fit) takes
    # 3 of them at seeds 5 and 7 where the prior gets 1 (spread: 6 of seeds 1-10 met the floors,
    # 21 of seeds 100-129).  top_band='ranks' moves the residual each one's rank would hand it:
    # 9 of seeds 1-10 (seed 2: 2 beyond the prior, 3 with the spread), 29 of seeds 100-129; the
    # OLS with sex exact
    from sklearn.datasets import load_diabetes

    d = load_diabetes(as_frame=True, scaled=False).frame
    x = d["target"].to_numpy(float)
    A = _design(d, "target")
    b0 = np.linalg.lstsq(A, x, rcond=None)[0]
    for seed in (5, 7):
        got = {}
        for band in ("spread", "ranks"):
            r = sdccore.protect(d, "ipso", sensitive=["target"], exclude=["sex"], rng=seed, top_band=band,
                                allow_unsafe="the test compares the two")
            t = r.risk.intruders.set_index(["band", "intruder"]).loc[("top 1 %", "residual_size")]
            got[band] = (t.prior, t.beyond_prior, r.risk.ok, r.data["target"].to_numpy(float))
        assert got["spread"][0] == pytest.approx(1 / 5) and got["spread"][1] == pytest.approx(2 / 5)
        assert not got["spread"][2]
        assert got["ranks"][1] <= 1 / 5 + 1e-9 and got["ranks"][2]
        # the OLS exact up to the rounding of the release to whole numbers, as the target's
        y = got["ranks"][3]
        assert np.abs(A @ np.linalg.lstsq(A, y, rcond=None)[0] - A @ b0).max() < 0.01 * x.std()


def _reflected(A, y, x, top):
    """The records of ``top`` that the reflection of the released residual about the release's
    own fit, fit - (y - fit), puts within 5 % of their own value."""
    fit = A @ np.linalg.lstsq(A, y, rcond=None)[0]
    return int((np.abs(2 * fit[top] - y[top] - x[top]) <= 0.05 * x[top]).sum())


def test_the_random_ladder_leaves_no_mirror_and_keeps_the_ols(tarragona):
    # the weakness of the ordered spread (top_band='ranks', the default before): the rungs went
    # to the records in the order of released / own value, so a record with a large residual of
    # its own got a low rung and its released residual mirrored its own about the fit:
    # fit - (released - fit) took back 6, 4 and 5 of the 9 largest firms at seeds 2, 3 and 9
    # (correlation of released and own residual -0.90, -0.84, -0.92); the random order
    # takes back 1, 0 and 0 there (measured at seeds 1-10: at most 1, correlations -0.18 to 0.29)
    x = tarragona["SALES"].to_numpy(float)
    top = np.argsort(x, kind="stable")[-9:]
    A = _design(tarragona, "SALES")
    b0 = np.linalg.lstsq(A, x, rcond=None)[0]
    e0 = x - A @ b0
    g = rs.SPREAD_MARGIN * np.log(1.05 / 0.95)  # m = 1 of 9 records: one tolerance window and 10 % apart
    for seed, ranks_took in ((2, 6), (3, 4), (9, 5)):
        old = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=seed, top_band="ranks", allow_unsafe="t")
        assert _reflected(A, old.data["SALES"].to_numpy(float), x, top) == ranks_took
        y = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=seed, allow_unsafe="t").data["SALES"].to_numpy(float)
        assert _reflected(A, y, x, top) <= 1
        np.testing.assert_allclose(np.linalg.lstsq(A, y, rcond=None)[0], b0, rtol=1e-6, atol=1e-6 * np.abs(b0).max())
        fit = A @ b0
        assert ((y - fit) ** 2).sum() == pytest.approx((e0 ** 2).sum(), rel=1e-6)
        assert abs(np.corrcoef(y[top] - fit[top], e0[top])[0, 1]) <= ld.MIRROR_COR + 1e-9
        l = np.sort(np.log(y[top] / x[top]))
        assert np.diff(l).min() >= g * (1 - 1e-6)  # no divisor takes two of them back
        assert np.abs(y[top] / x[top] - 1).min() >= rs.GUARD_MARGIN * 0.05  # none near its own value


def test_the_ladder_helpers_by_hand():
    # the least-energy centre without the basis: a = s exp(L) = (1, 2), f = (2, 4): exp(c) = a'f / a'a = 10 / 5
    assert ld._least_energy_centre(np.zeros(2), np.array([1.0, 2.0]), np.array([2.0, 4.0])) == pytest.approx(np.log(2))
    # the own window emptied: t = 0.05, window (log 0.925, log 1.075); the rungs below 0 go down
    # together until the highest of them is at the lower edge, those above up together
    lo, hi = np.log(0.925), np.log(1.075)
    out = ld._off_own(np.array([-0.2, -0.05, 0.01, 0.3]), 0.05)
    np.testing.assert_allclose(out, [-0.2 + (lo - -0.05), lo, hi, 0.3 + (hi - 0.01)], rtol=1e-5)
    np.testing.assert_allclose(np.diff(out)[[0, 2]], [0.15, 0.29])  # the gaps on each side kept
    # beyond the edges by the given amounts
    np.testing.assert_allclose(ld._off_own(np.array([-0.05, 0.01]), 0.05, (0.02, 0.03)), [lo - 0.02, hi + 0.03], rtol=1e-5)


def test_the_ladder_is_placed_exactly_orthogonal_and_of_the_same_cross_products():
    # a skewed sensitive variable on two public ones: after the placement the residuals are
    # orthogonal to [1, P] and E'E equals the target to rounding, the band sits on its ladder
    # (its log-ratios g apart at least, none in the own window) and the other records' energy
    # came from their largest residuals: those shrink, the rest move by the shift that keeps
    # them orthogonal to the intercept and P
    rng = np.random.default_rng(3)
    n = 600
    P = rng.lognormal(0, 1, (n, 2))
    S = (50 * P[:, :1] + 40 * P[:, 1:] * rng.lognormal(0, 0.6, (n, 1)))
    Q = rs._basis(P)
    fit = Q @ (Q.T @ S)
    E = S - fit
    target = E.T @ E
    Es = rs._match(E[rng.permutation(n)], Q, target)
    k = 9
    out = ld._place_ladder(fit, Es, S, [fit], Q, target, np.full(1, -np.inf), np.array([0.05]), 0.2,
                           np.random.default_rng(0), k, {})
    assert out is not Es
    np.testing.assert_allclose(Q.T @ out, 0, atol=1e-8 * np.abs(out).max())
    np.testing.assert_allclose(out.T @ out, target, rtol=1e-9)
    top = np.argsort(S[:, 0], kind="stable")[-k:]
    l = np.sort(np.log((fit + out)[top, 0] / S[top, 0]))
    assert np.diff(l).min() >= rs.SPREAD_MARGIN * np.log(1.05 / 0.95) * (1 - 1e-6)
    assert (np.abs(np.exp(l) - 1) >= rs.GUARD_MARGIN * 0.05 * (1 - 1e-6)).all()
    rest = np.setdiff1d(np.arange(n), top)
    kept = np.abs(out[rest, 0]) / np.abs(Es[rest, 0])
    by_size = np.argsort(np.abs(Es[rest, 0]), kind="stable")
    big, small = by_size[-int(0.02 * len(rest)):], by_size[len(rest) // 4: 3 * len(rest) // 4]
    assert np.median(kept[big]) < 0.96 < np.median(kept[small]) < 1.04  # measured .939 and 1.019
