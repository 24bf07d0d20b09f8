"""The intruders who know how the release was made (issue 38): residual assignment, models
fitted on the release and own + correction, each on a hand-made case where its guess is
computed here by hand, one where it must win and one where it must not."""
import itertools

import numpy as np
import pandas as pd
import pytest

from sdccore._risk import construction
from sdccore._risk.floors import risk_profile
from sdccore._risk.registry import IntruderContext


_KEYS = itertools.count()  # the priors' cache key of each hand-made context: id(X) was reused once X was freed


def _ctx(X, Y, known, target, *, selective=True, rows=None, linked=None):
    rows = np.arange(len(X)) if rows is None else rows
    return IntruderContext(variable="x", target=target, names=tuple(f"c{j}" for j in range(X.shape[1])),
                           original=X[rows], released=Y, rows=rows, linked=rows if linked is None else linked,
                           known=tuple(known), selective=selective, whole_original=X, key=("test", next(_KEYS)))


def test_residual_hands_out_the_released_residuals_in_the_rankers_order(monkeypatch):
    # public p = 0..5 released unchanged; released s* = 10 + 2 p + a permutation of the
    # residuals (-3, -1, 0, 1, 2, 1): the release's own fit is 10 + 2 p exactly (the residuals
    # sum to 0 and are uncorrelated with p by construction below)
    p = np.arange(6.0)
    res = np.array([1.0, -3.0, 2.0, 0.0, 1.0, -1.0])
    res = res - res.mean() - np.polyfit(p, res, 1)[0] * (p - p.mean())  # orthogonal to [1, p]
    y = 10 + 2 * p + res
    x = 10 + 2 * p + res[::-1]           # the truth: the residuals in the reverse order
    X, Y = np.c_[p, x], np.c_[p, y]
    ranker = 10 + 2 * p + np.arange(6.0)[::-1] * 1e-3   # a prior whose predicted residual orders them as x does
    # only the ranking matters: the record with the largest predicted residual gets the largest released residual
    from sdccore._risk import attacks

    monkeypatch.setattr(attacks, "best_prior", lambda ctx: ranker)
    handed, snapped = construction.residual(_ctx(X, Y, [0], 1))[:2]
    order = np.argsort(np.argsort(ranker - (10 + 2 * p), kind="stable"), kind="stable")
    assert np.allclose(handed, 10 + 2 * p + np.sort(res)[order])
    # snapped: the released residual nearest to the predicted one (0.005 ... 0: the residual nearest 0)
    nearest = np.sort(res)[np.argmin(np.abs(np.sort(res)[:, None] - (ranker - 10 - 2 * p)[None, :]), axis=0)]
    assert np.allclose(snapped, 10 + 2 * p + nearest)


def _ipso_like(seed=0, n=400):
    """A public variable p, a skewed sensitive s = exp(...) whose residual around the linear fit
    is predicted in ORDER (not in value) by what is known, but not by the size of the fit
    (it grows with |q|, which a linear fit cannot see); the release keeps the fit and hands
    the original residuals round a random permutation (what the audit read IPSO as doing)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(1, 10, n)
    q = rng.standard_normal(n)                   # known too: orders the residual
    s = 100 * p + 80 * np.exp(1.5 * np.abs(q)) * p   # residual around the fit on (p, q) grows with |q|
    A = np.c_[np.ones(n), p, q]
    fit = A @ np.linalg.lstsq(A, s, rcond=None)[0]
    r = s - fit
    y = fit + r[rng.permutation(n)]
    return np.c_[p, q, s], np.c_[p, q, y]


def test_residual_assignment_takes_back_the_largest_records_of_a_residual_permutation():
    X, Y = _ipso_like()
    prof = risk_profile(X, Y, ["p", "q", "s"], [2], link_on=[0, 1], method="ipso")
    I = prof.intruders.set_index(["band", "intruder"])
    # the best prior model gets 1 of the 5 largest (the fit with its spread: ols-by-size);
    # the release hands their exact residuals back: by the prior's order 1 more of the 5,
    # by the size of the fit 2 more, and more than the prior overall
    assert I.loc[("top 1 %", "residual"), "prior"] == pytest.approx(0.2)
    assert I.loc[("top 1 %", "residual"), "beyond_prior"] == pytest.approx(0.2)
    assert I.loc[("top 1 %", "residual_size"), "beyond_prior"] >= 0.4
    assert I.loc[("all", "residual"), "beyond_prior"] > I.loc[("all", "own"), "beyond_prior"] + 0.05
    assert not prof.ok and "s" in prof.failing
    # the own-record intruder sees a permuted residual: it gets the records only by chance
    assert I.loc[("top 1 %", "own"), "beyond_prior"] <= 0.2


def test_residual_assignment_gets_nothing_from_fresh_residuals():
    X, Y = _ipso_like()
    rng = np.random.default_rng(1)
    A = np.c_[np.ones(len(X)), X[:, 0], X[:, 1]]
    fit = A @ np.linalg.lstsq(A, X[:, 2], rcond=None)[0]
    r = X[:, 2] - fit
    Y[:, 2] = fit + rng.normal(0, r.std(), len(r))  # new residuals: nothing of the original's
    prof = risk_profile(X, Y, ["p", "q", "s"], [2], link_on=[0, 1], method="ipso")
    I = prof.intruders.set_index(["band", "intruder"])
    # with the fit (leverage) and the spread the release shows, its four guesses put 6 % of
    # the records within 5 % beyond every prior model (the permuted residuals: 10 %), and at
    # most one of the 5 largest (2 more of them from the permutation)
    assert I.loc[("all", "residual"), "beyond_prior"] < 0.08
    assert I.loc[("top 1 %", "residual"), "beyond_prior"] <= 0.2
    assert I.loc[("top 1 %", "residual_size"), "beyond_prior"] <= 0.2
    assert prof.ok


def test_residual_by_size_hands_the_largest_residual_to_the_largest_fit(monkeypatch):
    # the release's fit is 10 + 2 p (residuals orthogonal to [1, p]); the guesses by size,
    # computed by hand: the residuals sorted and given in the order of the fit, and their
    # magnitudes in that order with the sign of the prior's predicted residual
    p = np.array([3.0, 0.0, 5.0, 1.0, 4.0, 2.0])
    res = np.array([2.0, -3.0, 1.0, 0.5, -1.0, 0.0])
    A = np.c_[np.ones(6), p]
    res = res - A @ np.linalg.lstsq(A, res, rcond=None)[0]
    y = 10 + 2 * p + res
    X, Y = np.c_[p, y * 1.5], np.c_[p, y]
    ranker = 10 + 2 * p + np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    from sdccore._risk import attacks

    monkeypatch.setattr(attacks, "best_prior", lambda ctx: ranker)
    guesses = construction.residual_by_size(_ctx(X, Y, [0], 1))
    assert len(guesses) == 2
    fit = 10 + 2 * p
    rank = np.argsort(np.argsort(p))
    assert np.allclose(guesses[0], fit + np.sort(res)[rank])
    mags = np.sort(np.abs(res))[rank]
    assert np.allclose(guesses[1], fit + np.where(ranker < fit, -mags, mags))
    assert guesses[0][2] == pytest.approx(fit[2] + res.max())  # the largest fit, the largest residual


def test_residual_by_size_is_charged_only_beyond_the_law_with_its_spread(monkeypatch):
    """CASC's FEDTAX given the other 12 variables: the largest residuals belong to the largest
    fits, so IPSO's residual set handed out by the size of the fit puts 6-8 of the 11 largest
    within 5 % (computed here with numpy alone).  But the conditional law with its spread
    does nearly as well without the release: the prior ols-by-size (cross-fitted, the other
    folds' residuals by the size of the fit) gets 8 of the 11, so the release adds at most 2
    of them and meets the floors.  (Tarragona's SALES, where it adds 2 of the 9 largest
    firms, is in tests/methods/test_ipso_tail.py; IPSO's guard of the largest records is off
    here, as it was when the audit ran.)"""
    import sdccore
    from sdccore._methods import conditional_kernel

    monkeypatch.setattr(conditional_kernel, "GUARD", False)

    d = sdccore.load_dataset("casc")
    x = d["FEDTAX"].to_numpy()
    top = np.argsort(x)[-11:]
    A = np.c_[np.ones(len(d)), d.drop(columns=["FEDTAX"]).to_numpy(float)]
    for seed in (1, 2):
        r = sdccore.protect(d, "ipso", sensitive=["FEDTAX"], rng=seed, allow_unsafe="test")
        y = r.data["FEDTAX"].to_numpy(float)
        fit = A @ np.linalg.lstsq(A, y, rcond=None)[0]
        guess = fit + np.sort(y - fit)[np.argsort(np.argsort(fit, kind="stable"), kind="stable")]
        hits = int((np.abs(guess[top] - x[top]) <= 0.05 * np.abs(x[top])).sum())
        I = r.risk.intruders.set_index(["band", "intruder"])
        t = I.loc[("top 1 %", "residual_size")]
        assert hits >= 6
        assert t.prior == pytest.approx(8 / 11) and t.beyond_prior <= 0.2
        # (unguarded, the 11 largest are released at .86-.96 of their own value, crowded
        # ratios that the spread takes apart: tests/methods/test_ipso_tail.py)


def test_release_fit_applies_the_releases_own_regression_and_neighbours(monkeypatch):
    # released s* = 3 + 4 p exactly: least squares on the release predicts the released values
    # exactly, so the intruder picks it (without the truth) and applies 3 + 4 p at any known p
    p = np.arange(1.0, 21.0)
    y = 3 + 4 * p
    X = np.c_[p + 0.25, np.zeros(20)]                # the truth is not used by the guess
    Y = np.c_[p, y]
    ctx = _ctx(X, Y, [0], 1)
    assert construction._validated(ctx, (0, 1, "knn")) == 0
    ols, both = construction.release_fit(ctx)
    assert np.allclose(ols, 3 + 4 * (p + 0.25))
    # the second guess: halfway (on the signed-log scale) between it and the best prior model's
    from sdccore._risk import attacks

    prior = attacks.best_prior(ctx)
    assert np.allclose(both, np.expm1((np.log1p(ols) + np.log1p(prior)) / 2))
    # not in general protection: there both guesses lie near the mean of unrelated variables, and
    # halfway between them is one more constant (6 independent lognormal columns, PCA: 20.5 % of
    # a middle band counted by chance)
    general = construction.release_fit(_ctx(X, Y, [0], 1, selective=False))
    assert len(general) == 1 and np.allclose(general[0], ols)
    # had the nearest neighbours predicted the release best: the mean of the 5 released records
    # nearest to p + 0.25 on p (p-2 .. p+2, clipped at the ends)
    monkeypatch.setattr(construction, "_validated", lambda ctx, c: 2)
    knn = construction.release_fit(ctx)[0]
    want = [y[np.argsort(np.abs(p - v), kind="stable")[:5]].mean() for v in p + 0.25]
    assert np.allclose(knn, want)
    monkeypatch.setattr(construction, "_validated", lambda ctx, c: 1)
    logols = construction.release_fit(ctx)[0]
    b = np.polyfit(np.log1p(p), np.log1p(y), 1)
    assert np.allclose(logols, np.expm1(np.polyval(b, np.log1p(p + 0.25))))


def test_release_fit_recovers_a_conditional_law_the_prior_cannot_see():
    # the original s depends on p through a narrow bump no global model of the original finds
    # from 5 neighbours... but the release publishes the law itself: s* = E[s | p] exactly
    rng = np.random.default_rng(2)
    n = 600
    p = rng.uniform(0, 1, n)
    s = 1000 + 10 * p + rng.normal(0, 1, n)       # within 5 % from the law for every record
    X = np.c_[p, s]
    Y = np.c_[p, 1000 + 10 * p]                   # the release: the conditional mean
    fit = construction.release_fit(_ctx(X, Y, [0], 1))[0]
    assert np.mean(np.abs(fit - s) <= 0.05 * np.abs(s)) == 1.0


def test_release_fit_gets_nothing_from_an_unrelated_release():
    rng = np.random.default_rng(3)
    n = 500
    p = rng.uniform(1, 2, n)
    s = np.exp(rng.normal(5, 1, n))
    X = np.c_[p, s]
    Y = np.c_[p, rng.permutation(s)]              # no relation left between p and s
    prof = risk_profile(X, Y, ["p", "s"], [1], link_on=[0])
    I = prof.intruders.set_index(["band", "intruder"])
    assert I.loc[("all", "release_fit"), "beyond_prior"] < 0.05


def test_correction_undoes_a_change_the_release_regression_sees():
    # general protection: three variables with x2 = 1 + 2 x0 + 3 x1 held exactly in the release
    # too; each record's change moves x0 and x1, and x2 with them
    rng = np.random.default_rng(4)
    n = 300
    x0, x1 = rng.uniform(10, 20, n), rng.uniform(10, 20, n)
    X = np.c_[x0, x1, 1 + 2 * x0 + 3 * x1]
    d0, d1 = rng.normal(0, 2, n), rng.normal(0, 2, n)
    Y = np.c_[x0 + d0, x1 + d1, 1 + 2 * (x0 + d0) + 3 * (x1 + d1)]
    own, linked = construction.correction(_ctx(X, Y, [0, 1], 2, selective=False))
    # by hand: y2 + 2 (x0 - y0) + 3 (x1 - y1) = x2 for every record
    assert np.allclose(own, X[:, 2])
    assert np.allclose(linked, X[:, 2])  # linked = own rows here


def test_correction_gets_nothing_from_independent_changes():
    rng = np.random.default_rng(5)
    n = 500
    X = rng.lognormal(3, 0.3, (n, 3))
    Y = X * rng.lognormal(0, 0.6, (n, 3))           # every cell changed on its own
    prof = risk_profile(X, Y, ["a", "b", "c"], [0, 1, 2])
    I = prof.intruders.set_index(["variable", "band", "intruder"])
    for v in "abc":
        # the release's regression between independent changes is about 0: the guess is the
        # own released value, which gets a record within 5 % only by chance (about 6 %)
        assert I.loc[(v, "all", "correction"), "beyond_prior"] <= I.loc[(v, "all", "own"), "beyond_prior"] + 0.02
        assert I.loc[(v, "all", "correction"), "beyond_prior"] < 0.1


def test_every_new_intruder_is_held_in_general_protection_by_default():
    from sdccore import RiskFloors

    rng = np.random.default_rng(6)
    X = rng.lognormal(3, 0.5, (300, 3))
    prof = risk_profile(X, X * 1.001, ["a", "b", "c"], [0, 1, 2])
    held = prof.intruders.query("band == 'all'").groupby("intruder").held.all()
    assert held[["residual", "release_fit", "correction", "assignment", "regression"]].all()
    lowered = risk_profile(X, X * 1.001, ["a", "b", "c"], [0, 1, 2], floors=RiskFloors(hold_all_intruders=0))
    held = lowered.intruders.query("band == 'all'").groupby("intruder").held.all()
    assert not held[["residual", "release_fit", "correction", "assignment", "regression"]].any()
    assert held[["own", "linked"]].all()
    assert "hold_all_intruders 0" in RiskFloors(hold_all_intruders=0).lowered_text()


@pytest.mark.parametrize("what", ["assignment", "residual"])
def test_a_value_set_violation_never_sends_the_custodian_back_to_the_method_that_failed(what):
    from sdccore._risk.fixes import intruder_fix

    for method in ("ipso", "magg", "cfa", "shuffle", "rankswap"):
        words = intruder_fix(what, selective=True, method=method)
        named = {"ipso": "IPSO", "magg": "M-AGG", "cfa": "FA-cond"}.get(method)
        if named:
            assert named not in words, (method, words)
    assert "IPSO" not in intruder_fix("residual", selective=True, method="shuffle")


def test_the_prior_knows_the_middle_of_the_distribution():
    """A release of S in a random order (no relation to P left): a model fitted on it predicts
    about the mean for everybody, which puts the records near the mean within 5 %.  That is
    no disclosure (every release keeps the mean), and the prior's mean and median say so."""
    from sdccore._risk.intruders import loo_quantile, prior_estimates

    t = np.array([5.0, 1.0, 3.0, 3.0, 9.0, 2.0])
    assert np.allclose(loo_quantile(t, 0.5), [np.median(np.delete(t, i)) for i in range(6)])  # 2.5 / 3 by hand
    # sorted 1 2 3 3 5 9: without a value above the middle the median of five is 3, without 1 or 2 it is 3
    assert loo_quantile(t, 0.5).tolist() == [3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    est = prior_estimates(np.c_[np.arange(6.0)], t, [0])
    assert np.allclose(est["mean"], (t.sum() - t) / 5) and np.allclose(est["median"], loo_quantile(t, 0.5))
    rng = np.random.default_rng(7)
    n = 1000
    P = rng.lognormal(3, 0.5, (n, 3))
    s = P @ [1.0, 2.0, 0.5] + rng.normal(0, 20, n)
    X = np.c_[P, s]
    Y = X.copy()
    Y[:, 3] = rng.permutation(s)
    prof = risk_profile(X, Y, ["p1", "p2", "p3", "S"], [3], link_on=[0, 1, 2])
    fit = prof.intruders.query("intruder == 'release_fit' and band != 'top 1 %'")
    assert fit.beyond_prior.max() < 0.1


def test_the_boosted_prior_is_cross_fitted_and_only_in_selective_protection():
    from sdccore._risk.intruders import boosted_fit, prior_estimates

    # nothing known (a constant column): each record's prediction is the mean of the folds
    # it is not in, so the one record with 100 is predicted 0, the others at most 100 / (n - n/5)
    t = np.zeros(50)
    t[7] = 100.0
    est = boosted_fit(np.zeros((50, 1)), t)
    assert est[7] == pytest.approx(0.0) and est.max() <= 100 / 40 + 1e-9
    # a known column equal to the target: the boosted law finds it (within 5 % for most records)
    rng = np.random.default_rng(9)
    k = rng.uniform(100, 200, 500)
    assert np.mean(np.abs(boosted_fit(k[:, None], k) - k) <= 0.05 * k) > 0.9
    P = np.c_[k, rng.standard_normal(500)]
    assert "boosting" in prior_estimates(P, k, [0, 1], boosting=True)
    assert "boosting" not in prior_estimates(P, k, [0, 1])
    sel = risk_profile(np.c_[P, k], np.c_[P, k * 1.5], ["a", "b", "s"], [2], link_on=[0, 1])
    gen = risk_profile(np.c_[P, k], np.c_[P, k * 1.5], ["a", "b", "s"], [2])
    assert sel.variables.loc["s", "prior"] > 0.9  # the boosted model (or OLS) predicts it
    assert gen.variables.loc["s", "prior_model"] != "boosting"


def test_a_record_of_high_leverage_is_charged_to_a_release_that_publishes_the_fit():
    """The regression fitted on every record is no prior knowledge: a record's own value is in
    it, weighted by its leverage.  statecrime's District of Columbia (leverage 0.805 on the
    other variables): the fit on every record is 3.6 % from its violent-crime rate 1348.9,
    the leave-one-out fit 18.7 % (computed here with numpy).  IPSO publishes that fit exactly,
    so the model fitted on the release puts DC within 5 %: one of the 5 largest states,
    counted beyond the prior (held-out intruder of issue 38; before, the prior held the fit
    on every record and the release was charged with nothing there)."""
    import sdccore
    from sdccore._risk.intruders import PRIOR_MODELS

    datasets = pytest.importorskip("statsmodels.datasets")
    d = datasets.statecrime.load_pandas().data
    dc = list(d.index).index("District of Columbia")
    d = d.reset_index(drop=True)
    y, P = d["violent"].to_numpy(), d.drop(columns=["violent"]).to_numpy()
    A = np.c_[np.ones(len(y)), P]
    H = A @ np.linalg.pinv(A)
    fit, h = H @ y, np.diag(H)
    loo = y - (y - fit) / (1 - h)
    assert h[dc] == pytest.approx(0.805, abs=1e-3) and y[dc] == 1348.9
    assert abs(fit[dc] - y[dc]) / y[dc] == pytest.approx(0.0365, abs=1e-3)
    assert abs(loo[dc] - y[dc]) / y[dc] == pytest.approx(0.187, abs=1e-3)
    assert not {"ols-fit", "log-ols-fit"} & set(PRIOR_MODELS)
    # the guard alone: the spread of the largest records moves DC's released value, and with it
    # the scale the intruder validates on the release (its subject here is the leverage)
    res = sdccore.protect(d, "ipso", sensitive=["violent"], rng=0, top_band="guard", allow_unsafe="test")
    released = res.data["violent"].to_numpy()
    np.testing.assert_allclose(H @ released, fit, atol=0.05)  # the fit, published exactly (up to the rounding to 0.1)
    t = res.risk.intruders.set_index(["band", "intruder"])
    top = t.loc[("top 1 %", "release_fit")]
    assert top.with_release == pytest.approx(0.4) and top.beyond_prior == pytest.approx(0.2)
    assert np.sort(y)[-5:].min() <= y[dc]  # DC is among the 5 largest


def _grouped(known_missing):
    """40 records: public p released unchanged; the released s* is 5 + 3 p + small noise on
    the 28 complete records and exactly 100 - 4 p on the 12 with a missing public cell (the
    group's own fit, which the truth equals there)."""
    rng = np.random.default_rng(2)
    n, inc = 40, np.zeros(40, dtype=bool)
    inc[:12] = known_missing
    p = rng.uniform(1, 10, n)
    q = rng.uniform(1, 10, n)
    y = np.where(inc, 100 - 4 * p, 5 + 3 * p + rng.normal(0, 2, n))
    x = np.where(inc, y, 5 + 3 * p + rng.normal(0, 2, n))  # the truth: the group fit where incomplete
    X, Y = np.c_[p, q, x], np.c_[p, q, y]
    cells = np.ones(X.shape, dtype=bool)
    cells[inc, 1] = False  # q missing (filled in the completed files the built-in intruders see)
    return X, Y, cells, inc


def test_release_fit_fits_within_the_records_with_a_missing_cell():
    """IPSO keeps the complete records' regression too (missing_rows='both'), so the release
    holds a fit per group: the group fit takes back the 12 incomplete records, which the
    fit over every record (a line through both groups) misses."""
    from dataclasses import replace

    X, Y, cells, inc = _grouped(True)
    ctx = replace(_ctx(X, Y, [0, 1], 2), cells=cells)
    guesses = construction.release_fit(ctx)
    grouped = construction._group_fits(ctx)
    assert grouped is not None and any(np.array_equal(g, grouped, equal_nan=True) for g in guesses)
    within = np.abs(grouped[inc] - X[inc, 2]) <= 0.05 * np.abs(X[inc, 2])  # on the scale it picks
    assert within.all()
    whole = construction._release_model(ctx, *construction._released(ctx))
    assert np.mean(np.abs(whole[inc] - X[inc, 2]) <= 0.05 * np.abs(X[inc, 2])) < 0.5


def test_release_fit_has_no_group_guess_without_missing_cells():
    from dataclasses import replace

    X, Y, cells, inc = _grouped(False)
    assert construction._group_fits(replace(_ctx(X, Y, [0, 1], 2), cells=cells)) is None
    assert construction._group_fits(_ctx(X, Y, [0, 1], 2)) is None
    assert len(construction.release_fit(_ctx(X, Y, [0, 1], 2))) == 2  # the release's model and the halfway guess


def test_shrinkage_divides_the_released_value_by_the_ratio_learnt_on_the_release():
    # the guess computed by hand: the release taken as the original, its residuals around its
    # own least-squares fit handed round by 5 permutations of numpy's generator seeded 0, its
    # largest 5 records' simulated values, none within the tolerance of their own (the
    # construction leaves none that close); three ways to undo the shrinkage (divide by the
    # median ratio, by the ratio of the densest window, add the median shortfall), the one
    # that undoes the simulation best is the guess
    X, Y = _ipso_like()
    ctx = _ctx(X, Y, [0, 1], 2)
    (guess,) = construction.shrinkage(ctx)
    y = Y[:, 2]
    A = np.c_[np.ones(len(y)), Y[:, :2]]
    fit = A @ np.linalg.lstsq(A, y, rcond=None)[0]
    res = y - fit
    top = np.argsort(y, kind="stable")[-5:]
    gen = np.random.default_rng(0)
    sims, owns = [], []
    for _ in range(5):
        v = fit[top] + res[gen.permutation(len(y))][top]
        far = np.abs(v - y[top]) > 0.05 * y[top]
        sims += list(v[far])
        owns += list(y[top][far])
    sims, owns = np.array(sims), np.array(owns)
    rho = sims[sims > 0] / owns[sims > 0]
    c = np.median(rho)
    assert 0 < c < 1  # the largest released values are shrunk when their residuals go elsewhere
    # the densest window by brute force: every ratio as its lower edge (1 - t) c
    counts = [np.sum((rho >= r) & (rho <= r * 1.05 / 0.95 * (1 + 1e-12))) for r in np.sort(rho)]
    c2 = np.sort(rho)[int(np.argmax(counts))] / 0.95
    d = np.median(owns - sims)
    ways = [lambda v: v / c, lambda v: v / c2, lambda v: v + d]
    hits = [np.sum(np.abs(f(sims) - owns) <= 0.05 * owns) for f in ways]
    np.testing.assert_allclose(guess, ways[int(np.argmax(hits))](y), rtol=1e-9)


def test_shrinkage_gets_nothing_where_the_largest_are_not_shrunk():
    # a release whose every value is the record's own times a factor drawn from 0.5-0.8 or
    # 1.2-1.5: no one ratio undoes it for more than the chance share of the largest
    X, _ = _ipso_like()
    rng = np.random.default_rng(3)
    f = np.where(rng.random(len(X)) < 0.5, rng.uniform(0.5, 0.8, len(X)), rng.uniform(1.2, 1.5, len(X)))
    Y = X.copy()
    Y[:, 2] = X[:, 2] * f
    prof = risk_profile(X, Y, ["p", "q", "s"], [2], link_on=[0, 1], method="ipso")
    I = prof.intruders.set_index(["band", "intruder"])
    assert I.loc[("top 1 %", "shrinkage"), "beyond_prior"] <= 0.2
    assert I.loc[("all", "shrinkage"), "beyond_prior"] < 0.1


def test_one_contexts_intruders_share_their_fits_and_free_them_with_it(monkeypatch):
    """The residual, shrinkage, release-fit and correction intruders of one checked variable
    fit the same regressions on the same release: each (scale, columns) is fitted once per
    context (general FA of 6 variables: 6 fits, where each intruder fitting its own made 17),
    the risk profile is the same as with a fresh fit for every call, and nothing is kept once
    the contexts are gone."""
    import gc

    import sdccore

    g = np.random.default_rng(3)
    M = np.eye(6) + 0.3 * g.standard_normal((6, 6))  # related, none a near-duplicate of another
    X = pd.DataFrame(np.exp(0.5 * g.standard_normal((1500, 6)) @ M), columns=list("abcdef"))
    calls = []
    fresh = construction._ols

    def counted(A, t):
        calls.append(A.shape)
        return fresh(A, t)

    monkeypatch.setattr(construction, "_ols", counted)
    shared = sdccore.protect(X, "fa", rng=1, allow_unsafe="test").risk
    assert {"residual", "release_fit", "correction"} <= set(shared.intruders.intruder)
    n_shared = len(calls)
    assert 0 < n_shared <= 2 * 6
    monkeypatch.setattr(construction, "_memo", lambda ctx: {})  # no sharing: every intruder fits its own
    calls.clear()
    alone = sdccore.protect(X, "fa", rng=1, allow_unsafe="test").risk
    assert len(calls) >= n_shared + 6  # (17 against 6 here)
    pd.testing.assert_frame_equal(shared.variables, alone.variables)
    pd.testing.assert_frame_equal(shared.intruders, alone.intruders)
    gc.collect()
    assert construction._MEMO == {}


def _moments_of(F):
    mu = F.mean(axis=0)
    return mu, (F - mu).T @ (F - mu)


def test_whole_file_fits_agree_with_the_direct_least_squares():
    # the intruders' fits on a whole file of more than GRAM_ROWS records are solved from its
    # moments (issue 42); the same coefficients, fitted values and related columns as the
    # direct least squares on the file's rows, on the raw and the signed-log scale, and the
    # minimum-norm fit's values where a column is the sum of two others
    gen = np.random.default_rng(4)
    n = construction.GRAM_ROWS + 500
    X = gen.standard_normal((n, 6)) @ gen.standard_normal((6, 6)) * np.array([1e-2, 1, 10, 1e3, 1e5, 3])
    X[:, 5] = X[:, 1] + X[:, 2]                       # an exact identity among the known columns
    X[:, 0] = np.exp(X[:, 0] * 50) * 1e3              # a skewed positive target
    ctx = _ctx(X, X, [1, 2, 3, 4, 5], 0, rows=np.arange(0, n, 7))
    assert construction._whole_rows(ctx)
    cols = np.array([0, 1, 2, 4])                      # positions in known: columns 1, 2, 3, 5
    for scale, f in ((0, lambda v: v), (1, construction.slog)):
        b = construction._release_ols(ctx, scale, cols)
        D = np.c_[np.ones(n), f(X[:, [1, 2, 3, 5]])]
        direct = np.linalg.lstsq(D, f(X[:, 0]), rcond=None)[0]
        spread = np.std(D @ direct)
        assert np.abs(D @ b - D @ direct).max() < 1e-9 * spread
        fitted = construction._fitted(ctx, scale, cols, b)
        assert np.abs(fitted - D @ direct).max() < 1e-9 * spread
    from sdccore._risk.intruders import related_columns

    for most in (2, 3):
        assert list(construction._related(ctx, most)) == list(related_columns(X[:, [1, 2, 3, 4, 5]], X[:, 0], most))
    # a file with a blank cell: the records with every cell, directly (no moments)
    Y = X.copy()
    Y[3, 2] = np.nan
    gap = _ctx(X, Y, [1, 2, 3, 4, 5], 0)
    assert not construction._whole_rows(gap)
    b = construction._release_ols(gap, 0, cols)
    ok = np.isfinite(Y).all(axis=1)
    D = np.c_[np.ones(ok.sum()), Y[ok][:, [1, 2, 3, 5]]]
    direct = np.linalg.lstsq(D, Y[ok, 0], rcond=None)[0]
    assert np.abs(D @ b - D @ direct).max() < 1e-9 * np.std(D @ direct)
    # a relation the cross-products cannot resolve (x2 - x1 of 1e-5 of x1) and a column without
    # variance: the rows themselves are fitted, as the SVD of fewer rows does
    x1 = gen.standard_normal(n)
    u = 1e-5 * gen.standard_normal(n)
    for A, t in ((np.c_[x1, x1 + u], u), (np.c_[x1, np.full(n, 3.0)], 2 * x1 + 1)):
        D = np.c_[np.ones(n), A]
        assert construction._solve(*_moments_of(np.c_[A, t]), 2, [0, 1]) is None
        np.testing.assert_allclose(construction._ols(A, t), np.linalg.lstsq(D, t, rcond=None)[0], rtol=1e-6, atol=1e-12)
    # _ols of many rows (the cross-products) against the SVD
    A = X[:, [1, 2, 3, 5]]
    D = np.c_[np.ones(n), A]
    assert np.abs(D @ construction._ols(A, X[:, 0]) - D @ np.linalg.lstsq(D, X[:, 0], rcond=None)[0]).max() \
        < 1e-9 * np.std(X[:, 0])


def test_a_whole_files_moments_are_kept_while_it_lives_and_no_longer():
    import gc

    gen = np.random.default_rng(5)
    Y = gen.standard_normal((construction.GRAM_ROWS + 10, 4))
    first = construction._moments(Y, 0)
    assert construction._moments(Y, 0) is first           # once per file
    mu, C = first
    Z = Y - Y.mean(axis=0)
    assert np.allclose(mu, Y.mean(axis=0)) and np.allclose(C, Z.T @ Z)
    Y2 = Y.copy()
    Y2[0, 0] = np.inf
    assert construction._moments(Y2, 0) is None            # a cell not finite: no moments
    key = id(Y)
    del Y, Y2, first, mu, C
    gc.collect()
    assert key not in construction._WHOLE


def test_the_prior_percentiles_are_each_records_quantile_of_the_others():
    """The prior's 49 constants share one sort of the variable (``_constants``): each is, record
    by record, the order statistic of rank round(q (n - 2)) of the other n - 1 values, computed
    here by deleting the record and sorting (ties included)."""
    from sdccore._risk.intruders import PERCENTILES, _constants

    t = np.random.default_rng(3).integers(0, 40, 57).astype(float)  # many ties
    got = _constants(t)
    for p in PERCENTILES:
        q = p / 100
        if p == 50:  # 56 others: the mean of the two middle ones
            want = [np.sort(np.delete(t, i))[27:29].mean() for i in range(len(t))]
        else:
            want = [np.sort(np.delete(t, i))[int(round(q * 55))] for i in range(len(t))]
        assert got["median" if p == 50 else f"P{p}"].tolist() == want, p


def test_shares_by_hand():
    """The battery's shares per set of records, by hand: two prior models, one intruder with two
    variants, the whole sample, two bands and an empty one.  Beyond the prior is the fewest hits
    outside any one model's; the best variant is the one with the most beyond, then the most with."""
    from sdccore._risk.variables import _shares

    PM = np.array([[1, 1, 0, 0, 0, 0], [0, 0, 0, 1, 1, 0]], dtype=bool)
    H = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], dtype=bool)
    sets = [np.arange(6), np.array([0, 1, 2]), np.array([3, 4, 5]), np.array([], dtype=np.int64)]
    whole, low, high, empty = _shares((["m0", "m1"], PM), {"x": H}, sets)
    # whole: both models get 2 of 6 (the first wins); each variant 3 of 6, 1 of 6 beyond (v0
    # outside m0: record 2; v1 outside m1: record 5); tied, the later variant is taken
    assert whole == (pytest.approx(1 / 3), "m0", {"x": (0.5, pytest.approx(1 / 6))})
    assert low == (pytest.approx(2 / 3), "m0", {"x": (1.0, pytest.approx(1 / 3))})
    assert high == (pytest.approx(2 / 3), "m1", {"x": (1.0, pytest.approx(1 / 3))})
    assert np.isnan(empty[0]) and empty[1:] == (None, {})
    # without prior models, beyond is with
    assert _shares(([], np.zeros((0, 6), bool)), {"x": H}, sets[:2])[1] == (0.0, None, {"x": (1.0, 1.0)})


def test_the_records_of_highest_leverage_are_a_band_of_their_own():
    """Five records with extreme public values and amounts spread over the size bands: a release
    that hands those five back (and moves every other record) breaks no size band (one of them in
    a band of 60 is under the floor) but gets five of the six records of
    the highest-leverage band, which the intruder can pick out by the public values alone (no one
    constant of the prior gets two of them).  The band is the hat matrix's largest diagonal, as an
    independent computation gives it."""
    from sdccore._risk.variables import LEVERAGE, leverage_band

    rng = np.random.default_rng(11)
    n = 600
    P = rng.normal(0, 1, (n, 2))
    far = np.array([10, 130, 250, 370, 490])
    P[far, 0] = [9.0, -8.0, 10.0, -9.5, 8.5]
    s = 50 + 5 * P[:, 1] + rng.normal(0, 10, n)
    s[far] = [22.0, 36.0, 58.0, 66.0, 72.0]
    A = np.c_[np.ones(n), P]
    hat = np.diag(A @ np.linalg.inv(A.T @ A) @ A.T)
    assert leverage_band(P, 5).tolist() == sorted(np.argsort(-hat)[:5].tolist()) == far.tolist()
    X = np.c_[P, s]
    Y = X.copy()
    Y[:, 2] = s[rng.permutation(n)] * rng.uniform(0.85, 1.15, n)  # everybody moved ...
    Y[far, 2] = s[far]                                             # ... but the five
    prof = risk_profile(X, Y, ["p", "q", "s"], [2], link_on=[0, 1], method="ipso")
    b = prof.bands.set_index("band")
    assert b.loc[LEVERAGE, "records"] == 6 and b.loc[LEVERAGE, "beyond_prior"] >= 0.6  # max(5, 1 % of 600)
    assert (b.drop(index=LEVERAGE).beyond_prior <= 0.2).all()
    assert any("the records of highest leverage" in v for v in prof.violations)
