"""Issue 38: rank swapping by shifted ranks (the default since recipe format 8).  Every record's
rank r is shifted to r + 2w u (u uniform, w = p % of the records) and the sorted values are
handed out in the shifted order: no value stays in place, values move as far as in sdcMicro's
pairs on average, and records are not paired (in pairs a record's own value sits in its
partner's row: tests/risk/test_partner.py)."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import sdccore
from conftest import older_recipe
from sdccore._methods.perturbations import rankswap, rankswap_shifted


def _moves(f, g):
    """(each record's rank, the rank whose value it shows) (values distinct)."""
    r = np.argsort(np.argsort(f, kind="stable"), kind="stable")
    return r, np.searchsorted(np.sort(f), g)


@pytest.mark.parametrize("n, p", [(3, 40.0), (7, 10.0), (100, 5.0), (834, 40.0), (1200, 40.0), (5000, 1.0)])
def test_a_permutation_that_moves_every_value_within_two_windows(n, p):
    f = np.random.default_rng(n).lognormal(size=n)
    g = rankswap_shifted(f, p, np.random.default_rng(1))
    assert np.array_equal(np.sort(f), np.sort(g))  # the values themselves, in another order
    r, src = _moves(f, g)
    by_rank = np.empty(n, dtype=np.int64)
    by_rank[r] = src
    assert not np.any(by_rank == np.arange(n))  # no value left in place
    w = max(1.0, p * n / 100)
    # a shifted rank passes at most the 2w ranks above it, and is passed by at most those below
    assert np.abs(by_rank - np.arange(n)).max() <= 2 * w + 1


def test_the_shifted_order_is_the_sorted_values_handed_out_by_rank_plus_two_windows():
    # hand-made: 6 values, p = 40 % (w = 2.4 ranks); the generator's draws are known
    f = np.array([5.0, 1.0, 4.0, 2.0, 6.0, 3.0])
    u = np.random.default_rng(10).random(6)
    shifted = np.arange(6) + 2 * 2.4 * u
    order = np.argsort(shifted, kind="stable")          # rank order[m] takes the m-th smallest value
    expect_by_rank = np.empty(6)
    expect_by_rank[order] = np.arange(1.0, 7.0)
    # these draws leave no rank in place and make no pair
    assert expect_by_rank.tolist() == [3.0, 1.0, 5.0, 2.0, 6.0, 4.0]
    g = rankswap_shifted(f, 40.0, np.random.default_rng(10))
    # record i has rank f[i] - 1 (the values are 1..6)
    assert np.array_equal(g, expect_by_rank[(f - 1).astype(int)])


def test_values_move_as_far_as_in_pairs_and_pairs_are_rare():
    f = np.random.default_rng(0).lognormal(size=10000)
    stats = {}
    for name, fn in (("pairs", rankswap), ("shifted", rankswap_shifted)):
        d, two = [], 0
        for seed in range(5):
            r, src = _moves(f, fn(f, 5.0, np.random.default_rng(seed)))
            by_rank = np.empty(len(f), dtype=np.int64)
            by_rank[r] = src
            d.append(np.abs(by_rank - np.arange(len(f))))
            two += int(np.sum(by_rank[by_rank] == np.arange(len(f))))
        d = np.concatenate(d)
        stats[name] = (d.mean(), np.mean(d < 50), two / 50000)
    # measured (w = 500 ranks): on average pairs 274 ranks, shifted 245; under w/10 pairs 7.8 %,
    # shifted 10.5 % (the shift is even on -w..w, a pair's partner on 1..w as far as one is free);
    # records holding each other's values: pairs all, shifted 0.1 %
    assert 0.8 < stats["shifted"][0] / stats["pairs"][0] < 1.0, stats
    assert stats["shifted"][1] < 1.5 * stats["pairs"][1], stats
    assert stats["pairs"][2] == 1.0 and stats["shifted"][2] < 0.002, stats


def test_the_same_seed_gives_the_same_release_and_a_two_record_file_swaps():
    f = np.random.default_rng(5).normal(size=300)
    a = rankswap_shifted(f, 10.0, np.random.default_rng(9))
    assert np.array_equal(a, rankswap_shifted(f, 10.0, np.random.default_rng(9)))
    assert not np.array_equal(a, rankswap_shifted(f, 10.0, np.random.default_rng(10)))
    assert rankswap_shifted(np.array([1.0, 2.0]), 40.0, np.random.default_rng(0)).tolist() == [2.0, 1.0]
    assert rankswap(np.array([1.0, 2.0]), 40.0, np.random.default_rng(0)).tolist() == [1.0, 2.0]  # sdcMicro's: no window
    assert rankswap_shifted(np.array([4.0]), 40.0, np.random.default_rng(0)).tolist() == [4.0]


def test_protect_records_the_exchange_and_an_older_recipe_rebuilds_its_pairs():
    d = sdccore.load_dataset("tarragona")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = sdccore.protect(d, "rankswap", sensitive=["SALES"], rng=7, allow_unsafe="test")
        pairs = sdccore.protect(d, "rankswap", sensitive=["SALES"], rng=7, exchange="pairs", allow_unsafe="test")
        rec = json.loads(new.recipe_json())
        assert rec["exchange"] == "shifted" and rec["recipe_version"] == sdccore.RECIPE_VERSION == 9
        # a recipe of format 7 has no exchange: it swapped in pairs, and rebuilds them
        old = older_recipe(new, "exchange", 7)
        assert old.options["exchange"] == "pairs"
        again = sdccore.make_release(d, old, allow_unsafe="test").csv()
        assert again == sdccore.make_release(d, sdccore.Recipe.from_json(pairs.recipe_json()),
                                             allow_unsafe="test").csv()
    assert not new.data["SALES"].equals(pairs.data["SALES"])
    # the released values are the column's own in both
    assert np.array_equal(np.sort(new.data["SALES"]), np.sort(d["SALES"]))


def test_missing_cells_go_round_among_the_observed_ones_only():
    g = np.random.default_rng(2)
    d = pd.DataFrame({"a": g.lognormal(size=400), "b": g.normal(size=400)})
    d.loc[::9, "a"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sdccore.protect(d, "rankswap", sensitive=["a"], rng=3, allow_unsafe="test")
    out = r.data["a"]
    assert out.isna().equals(d["a"].isna())
    assert np.array_equal(np.sort(out.dropna()), np.sort(d["a"].dropna()))
