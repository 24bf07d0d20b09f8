"""The replay intruder (issue 38): it makes the release again from the release itself with the
published method and settings and learns there how a record's released value relates to its
own.  Hand-made constructions where it must win (a constant shrinkage, a residual reflected
about the fit), one where it must not (residuals handed round at random), and the
protection pipeline's replays of IPSO (the construction made again: the release's own OLS
kept exactly, the same replays for the same seed)."""
import itertools

import numpy as np
import pytest

import sdccore
from sdccore._core.plausible import close
from sdccore._risk import replay as rp
from sdccore._risk.registry import IntruderContext

_KEYS = itertools.count()


def _ctx(X, Y, construction, seeds=3):
    """A selective context (column 0 public and released unchanged, column 1 the target) whose
    replays apply ``construction(Y, seed)`` to the release taken as the original."""
    rows = np.arange(len(X))
    return IntruderContext(variable="x", target=1, names=("p", "x"), original=X, released=Y, rows=rows,
                           linked=rows, known=(0,), selective=True, whole_original=X, key=("replay", next(_KEYS)),
                           replays=lambda: [construction(Y, s) for s in range(seeds)])


def _file(n=500, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.lognormal(3, 1, n)
    x = 20 * p * rng.lognormal(0, 0.5, n)
    return np.c_[p, x]


def _ols_fit(X):
    A = np.c_[np.ones(len(X)), X[:, 0]]
    return A @ np.linalg.lstsq(A, X[:, 1], rcond=None)[0]


def test_a_constant_shrinkage_is_undone_for_every_record():
    # released x* = 0.8 x: in every replay z = 0.8 t, so the densest ratio is 0.8 (its window's
    # lower edge is 0.8 exactly: every ratio equal) and z / 0.8 is each record's own value
    X = _file()
    shrink = lambda F, s: np.c_[F[:, 0], 0.8 * F[:, 1]]  # noqa: E731
    guess = rp.replay(_ctx(X, shrink(X, 0), shrink))[0]
    assert close(X[:, 1], guess, 0.05).all()
    np.testing.assert_allclose(guess, X[:, 1], rtol=0.06)


def test_a_residual_reflected_about_the_fit_is_reflected_back():
    # released x* = fit - (x - fit): its OLS on p is the same fit (the residuals are orthogonal
    # to [1, p]), so the replay's best map is fit + c (z - fit) with c = -1 and the guess
    # fit - (x* - fit) = x for every record
    X = _file(seed=1)
    mirror = lambda F, s: np.c_[F[:, 0], 2 * _ols_fit(F) - F[:, 1]]  # noqa: E731
    Y = mirror(X, 0)
    guess = rp.replay(_ctx(X, Y, mirror))[0]
    np.testing.assert_allclose(guess, X[:, 1], rtol=1e-9, atol=1e-9 * np.abs(X[:, 1]).max())


def test_residuals_handed_round_at_random_give_no_more_than_the_fit():
    # released x* = fit + a random permutation of the residuals: a record's released residual
    # says nothing of its own, so the replay learns no better map than the fit itself (or its
    # log-scale version): within a few records of what the fit alone gets
    X = _file(n=2000, seed=2)
    fit = _ols_fit(X)

    def hand_round(F, s):
        f = _ols_fit(F)
        return np.c_[F[:, 0], f + (F[:, 1] - f)[np.random.default_rng(100 + s).permutation(len(F))]]

    Y = hand_round(X, 0)
    guess = rp.replay(_ctx(X, Y, hand_round))[0]
    by_fit = close(X[:, 1], fit, 0.05).sum()
    got = close(X[:, 1], guess, 0.05).sum()
    assert got <= by_fit + 0.02 * len(X)
    # and the own released value is no better than chance either (the release moves every record)
    assert close(X[:, 1], Y[:, 1], 0.05).mean() < 0.1


def test_no_replay_no_guess():
    X = _file()
    rows = np.arange(len(X))
    plain = IntruderContext(variable="x", target=1, names=("p", "x"), original=X, released=X, rows=rows,
                            linked=rows, known=(0,), selective=True)
    assert rp.replay(plain) is None  # evaluate: the method is not known
    refused = _ctx(X, X, lambda F, s: F, seeds=0)  # the construction refused the release
    assert rp.replay(refused) is None


def test_the_pipeline_replays_ipso_on_its_release(monkeypatch):
    # the replays are IPSO made again from the release with the same settings: each keeps the
    # release's own OLS of SALES on the public variables exactly and the public columns as
    # released; three of them for a file of 834 records, made once, and the same for the same seed
    from sdccore._protect import pipeline

    seen = []
    real = pipeline.risk_profile

    def spy(*a, **k):
        seen.append(k["replays"])
        return real(*a, **k)

    monkeypatch.setattr(pipeline, "risk_profile", spy)
    d = sdccore.load_dataset("tarragona")
    res = sdccore.protect(d, "ipso", sensitive=["SALES"], rng=4, allow_unsafe="a test")
    runs = seen[0]()
    assert len(runs) == 3 and seen[0]() is runs  # made once
    num = [c for c in d.columns if c in res.data.columns and np.issubdtype(res.data[c].dtype, np.number)]
    Y = res.data[num].to_numpy(float)
    j = num.index("SALES")
    A = np.c_[np.ones(len(Y)), np.delete(Y, j, axis=1)]
    b = np.linalg.lstsq(A, Y[:, j], rcond=None)[0]
    for R in runs:
        np.testing.assert_array_equal(np.delete(R, j, axis=1), np.delete(Y, j, axis=1))
        np.testing.assert_allclose(np.linalg.lstsq(A, R[:, j], rcond=None)[0], b, rtol=1e-6, atol=1e-6 * np.abs(b).max())
        assert not np.allclose(R[:, j], Y[:, j])
    again = sdccore.protect(d, "ipso", sensitive=["SALES"], rng=4, allow_unsafe="a test")
    assert again.data.equals(res.data)
    for R, R2 in zip(runs, seen[1]()):
        np.testing.assert_array_equal(R, R2)
    figs = res.risk.intruders.query("intruder == 'replay' and variable == 'SALES'")
    assert set(figs.band) >= {"all", "top 1 %"} and figs.with_release.notna().all()


@pytest.mark.parametrize("method", ["fa", "magg", "rankswap"])
def test_every_method_is_replayed_in_general_protection(method, monkeypatch):
    # the replay applies to every method the pipeline runs: the replayed files have the
    # release's shape, and the intruder's rows are in the risk profile
    from sdccore._protect import pipeline

    seen = []
    real = pipeline.risk_profile
    monkeypatch.setattr(pipeline, "risk_profile", lambda *a, **k: (seen.append(k["replays"]), real(*a, **k))[1])
    d = sdccore.load_dataset("tarragona")
    res = sdccore.protect(d, method, rng=1, allow_unsafe="a test")
    runs = seen[0]()
    assert len(runs) == 3 and all(R.shape == (len(d), res.data.select_dtypes("number").shape[1]) for R in runs)
    assert "replay" in set(res.risk.intruders.intruder)


def test_the_densest_ratio_by_hand():
    # t = 0.05: the window from 0.8 reaches 0.8 * 1.05 / 0.95 = 0.884: it holds 0.8, 0.8 and 0.81
    # (the most), whose median is 0.8; 1.5 is alone
    assert rp._densest_median(np.array([0.81, 1.5, 0.8, 0.8]), 0.05) == pytest.approx(0.8)
    assert rp._densest_median(np.array([1.0, 1.2, 1.21, 1.22]), 0.05) == pytest.approx(1.21)
