"""The key-matching intruder (issue 40): the released keys narrow the search to the records
that agree with the target's (a blank agreeing with every value), and the keys' own prior (the
leave-one-out cell mean) is what the release is measured beyond."""
import numpy as np
import pandas as pd

import sdccore
from sdccore._risk.floors import risk_profile
from sdccore._risk.keymatch import _candidates, key_match, key_prior
from sdccore._risk.registry import IntruderContext


def _ctx(X, Y, K0, K1, target, known, rows=None):
    rows = np.arange(len(X)) if rows is None else rows
    return IntruderContext(variable="y", target=target, names=tuple(f"c{i}" for i in range(X.shape[1])),
                           original=X[rows], released=Y, rows=rows, linked=rows, known=tuple(known),
                           selective=False, whole_original=X, keys=(K0, K1))


def test_candidates_with_blanks_as_wildcards_by_hand():
    # released keys: r0 (1, 5), r1 (1, blank), r2 (2, 5), r3 (blank, blank)
    K1 = np.array([[1, 5], [1, -1], [2, 5], [-1, -1]])
    K0 = np.array([[1, 5], [2, 7], [3, 3]])  # targets' true keys
    c = [sorted(x.tolist()) for x in _candidates(K0, K1)]
    assert c == [[0, 1, 3], [3], [3]]  # (1, 5): r0, r1 (5 under the blank), r3; (2, 7): only r3; (3, 3): r3


def test_it_wins_where_the_keys_single_out_the_record():
    # 300 records, keys unique (region x age); the amounts given 3 % noise: the own record is within 5 %,
    # but linking on the other noisy amounts over the whole file often finds a look-alike
    g = np.random.default_rng(7)
    n = 300
    base = g.lognormal(10, 0.1, n)
    X = np.column_stack([base * g.lognormal(0, 0.02, n), base * g.lognormal(0, 0.02, n), g.lognormal(10, 1, n)])
    Y = X * (1 + g.uniform(-0.03, 0.03, X.shape))
    K = np.column_stack([np.arange(n) % 10, np.arange(n) // 10])  # 300 distinct combinations
    prof = risk_profile(X, Y, ["a", "b", "y"], [2], keys=(K, K))
    I = prof.intruders.set_index(["band", "intruder"])
    assert I.loc[("all", "key_match"), "with_release"] == 1.0  # every record found through its keys
    assert I.loc[("all", "linked"), "with_release"] < 0.5
    assert not prof.ok and any("key-matching intruder" in v for v in prof.violations)
    # without keys the intruder does not run
    assert "key_match" not in set(risk_profile(X, Y, ["a", "b", "y"], [2]).intruders.intruder)


def test_it_does_not_win_on_three_anonymous_keys_with_the_amounts_swapped_inside():
    # every key cell has 5 records whose y values are redrawn: matching the keys narrows to the cell, but
    # the cell's values are nobody's own
    g = np.random.default_rng(3)
    n = 500
    K = np.repeat(np.arange(100), 5)[:, None]
    X = np.column_stack([g.lognormal(0, 1, n), g.lognormal(5, 1, n)])
    Y = X.copy()
    Y[:, 1] = g.lognormal(5, 1, n)
    prof = risk_profile(X, Y, ["a", "y"], [1], keys=(K, K))
    row = prof.intruders.set_index(["band", "intruder"]).loc[("all", "key_match")]
    assert row.beyond_prior < 0.05


def test_all_keys_blank_is_plain_linking():
    # with every released key suppressed the match is the whole file: the nearest is the linking intruder's
    g = np.random.default_rng(11)
    X = g.normal(size=(80, 3))
    Y = X + g.normal(scale=0.3, size=X.shape)
    K0 = g.integers(0, 4, size=(80, 2))
    K1 = np.full_like(K0, -1)
    from sdccore._risk.intruders import link

    ctx = _ctx(X, Y, K0, K1, 2, [0, 1])
    near, avg, med = key_match(ctx)
    assert np.array_equal(near, Y[link(X, Y, np.arange(80), [0, 1]), 2])
    assert np.allclose(avg, Y[:, 2].mean()) and np.allclose(med, np.median(Y[:, 2]))


def test_the_keys_prior_is_the_leave_one_out_cell_mean():
    g = np.random.default_rng(5)
    n = 60
    X = g.normal(10, 2, size=(n, 2))
    K = g.integers(0, 3, size=(n, 2))
    got = key_prior(_ctx(X, X, K, K, 1, [0]))
    df = pd.DataFrame({"a": K[:, 0], "b": K[:, 1], "y": X[:, 1]})
    s = df.groupby(["a", "b"]).y.transform("sum")
    c = df.groupby(["a", "b"]).y.transform("count")
    want = ((s - df.y) / (c - 1)).where(c > 1)
    assert np.allclose(got, want.to_numpy(), equal_nan=True)


def test_protect_holds_the_amounts_against_the_key_match_on_testdata():
    # general protection of sdcMicro's tutorial file with its keys: the key-matching intruder and the keys'
    # prior are in the battery, and the figures are what the key match finds (not the plain link)
    d = sdccore.load_dataset("testdata")
    keys = ["urbrur", "water", "sex", "age"]
    apart = ["roof", "walls", "electcon", "relat", "hhcivil", "ori_hid", "household_weights"]
    r = sdccore.protect(d, "fa", keys=keys, household="ori_hid", weights="sampling_weight", exclude=apart,
                        rng=12345, allow_unsafe="test: figures")
    I = r.risk.intruders
    km = I[(I.intruder == "key_match") & (I.band == "all")].set_index("variable")
    assert set(km.index) == {"expend", "income", "savings"} and km.held.all()
    assert (km.beyond_prior <= 0.2).all()
