"""Issue 38: the partner intruder.  Rank swapping in pairs (sdcMicro's rankSwap) hands each
record's own value to its partner's row; an intruder who knows the records' other variables
finds the partner (its prediction fits the target's released value, and the target's
prediction fits the partner's released value) and reads the partner's row.  Rank swapping now
shifts every rank by a random amount by default, where that row holds an unrelated record's
value."""
import warnings

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._methods.perturbations import rankswap, rankswap_shifted
from sdccore._risk.partner import _guess as _guess_index, _index


def _guess(own, y, pred, ok, window):
    return _guess_index(own, y, _index(y, pred, ok), window)


def test_hand_made_pairs_hand_every_value_back_and_a_cycle_none():
    # six records, their predictions 10 % above their values (no prediction within 5 %)
    x = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    pred = 1.1 * x
    ok = np.ones(6, dtype=bool)
    rows = np.arange(6)
    # pairs (0,1) (2,3) (4,5): record 0 shows 20; record 1's prediction 22 fits 20 best and
    # record 1 shows 10, which fits record 0's prediction 11: the guess for record 0 is 10
    y_pairs = x[[1, 0, 3, 2, 5, 4]]
    assert np.array_equal(_guess(rows, y_pairs, pred, ok, None), x)
    # one cycle 0 -> 1 -> 2 -> 3 -> 4 -> 5 -> 0: record 0 shows 20, record 1 (whose prediction 22
    # fits 20) shows 30, and record 1's best partner is record 2, not 0: partners that do not
    # choose each other are no pair, and the intruder has no guess.  Records 3 (showing 50) and
    # 4 (showing 60) do choose each other: 3 gets 60 (not its 40), 4 gets 50, its own, which is
    # the released value nearest its prediction 55 among six, what the prediction alone gives
    y_cycle = x[[1, 2, 3, 4, 5, 0]]
    g = _guess(rows, y_cycle, pred, ok, None)
    assert np.isnan(g[[0, 1, 2, 5]]).all() and g[3] == 60 and g[4] == 50
    # a window of 1 rank keeps the partner of rank 0 to the released values of ranks 0-1
    g1 = _guess(rows, y_pairs, pred, ok, 1)
    assert np.array_equal(g1, x)
    # a record whose cell is not released is never a partner, and gets no guess itself
    ok2 = ok.copy()
    ok2[1] = False
    g2 = _guess(rows, y_pairs, pred, ok2, None)
    assert np.isnan(g2[[0, 1]]).all() and np.array_equal(g2[2:], x[2:])


def test_the_partner_intruder_is_registered_for_rank_swapping_and_unknown_releases():
    assert "partner" in sdccore.intruders(method="rankswap")
    assert "partner" not in sdccore.intruders(selective=True, method="fa")
    assert sdccore.intruder_info("partner").applies(True, None)  # evaluate: the method is not known


def _file(seed=3, n=1000, sd=0.05):
    g = np.random.default_rng(seed)
    z = g.lognormal(10, 1, n)
    return pd.DataFrame({"z": z, "u": g.normal(size=n), "x": z * np.exp(sd * g.normal(size=n))})


def _exact(pairing, seed, d):
    """The share of records whose own value the partner intruder reads exactly, with a log-OLS
    prediction from z (what the public variable gives)."""
    x, z = d["x"].to_numpy(), d["z"].to_numpy()
    b = np.polyfit(np.log(z), np.log(x), 1)
    pred = np.exp(np.polyval(b, np.log(z)))
    y = (rankswap if pairing == "pairs" else rankswap_shifted)(x, 40.0, np.random.default_rng(seed))
    g = _guess(np.arange(len(x)), y, pred, np.ones(len(x), dtype=bool), int(0.4 * len(x)))
    return float(np.mean(g == x))


def test_pairs_hand_back_several_times_what_shifted_ranks_do():
    d = _file()
    pairs = [_exact("pairs", s, d) for s in range(1, 6)]
    shifted = [_exact("shifted", s, d) for s in range(1, 6)]
    # what the prediction and the value set give alone: the released value nearest the
    # prediction is the record's own for 4.8 % of the records
    x, z = d["x"].to_numpy(), d["z"].to_numpy()
    pred = np.exp(np.polyval(np.polyfit(np.log(z), np.log(x), 1), np.log(z)))
    s = np.sort(x)
    i = np.clip(np.searchsorted(s, pred), 1, len(s) - 1)
    snap = float(np.mean(np.where(np.abs(s[i] - pred) < np.abs(s[i - 1] - pred), s[i], s[i - 1]) == x))
    assert snap == pytest.approx(0.048)
    # measured: pairs 0.26-0.30 of the records read exactly, shifted ranks 0.013-0.022
    assert min(pairs) > 0.2, pairs
    assert max(shifted) < snap and np.mean(pairs) > 10 * np.mean(shifted), (pairs, shifted)


def test_protect_holds_the_partner_intruder_to_the_floors():
    d = _file()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sdccore.protect(d, "rankswap", sensitive=["x"], rng=2, exchange="pairs", allow_unsafe="test")
        # the 10 largest records: 8 within 5 %, 5 of them beyond the 4 the public variable gives
        words = " ".join(r.risk.violations)
        assert "the largest records, the partner intruder gets 50.0%" in words and "exchange='shifted'" in words
        it = r.risk.intruders
        top = it[(it.intruder == "partner") & (it.band == "top 1 %")].iloc[0]
        assert (top.prior, top.with_release, top.beyond_prior) == pytest.approx((0.4, 0.8, 0.5))
        new = sdccore.protect(d, "rankswap", sensitive=["x"], rng=2, allow_unsafe="test")
    assert "\"exchange\": \"shifted\"" in new.recipe_json()
    assert "partner intruder" not in " ".join(new.risk.violations)
    it = new.risk.intruders
    assert it[(it.intruder == "partner") & (it.band == "top 1 %")].beyond_prior.iloc[0] <= 0.2


@pytest.mark.parametrize("pairing", ["pairs", "shifted"])
def test_evaluate_runs_the_partner_intruder_on_a_release_it_did_not_make(pairing):
    d = _file(n=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sdccore.protect(d, "rankswap", sensitive=["x"], rng=1, exchange=pairing, allow_unsafe="test")
        ev = sdccore.evaluate(d, r.data, sensitive=["x"])
    assert "partner" in set(ev.risk.intruders.intruder)
