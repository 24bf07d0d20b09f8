"""The largest records protected on purpose (issue 38, item 4): tail='aggregate'."""
import warnings

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._core.tail import aggregate, tail_records, top_group


def test_the_group_size_is_max_5_or_1_percent_at_most_100():
    assert [tail_records(n) for n in (10, 400, 834, 1000, 50_000)] == [5, 5, 9, 10, 100]


def test_a_hand_made_group_takes_the_mean_and_keeps_the_total():
    """Ten values; the 5 largest (released) 60, 70, 80, 90, 100 -> their mean 80.  The originals
    are far from 80 except ... none: 80 lands within 7.5 % of no original value below."""
    rel = np.array([1.0, 2, 3, 4, 5, 60, 70, 100, 90, 50])
    orig = np.array([1.0, 2, 3, 4, 5, 50, 65, 120, 95, 55])  # none within 7.5 % of 74
    pos, m = top_group(rel, orig, 0.05)
    assert sorted(pos.tolist()) == [5, 6, 7, 8, 9] and m == pytest.approx(74.0)
    X = rel[:, None].copy()
    done = aggregate(X, orig[:, None], [0], 0.05)
    assert done == {0: (5, pytest.approx(74.0))}
    assert X[:, 0].sum() == pytest.approx(rel.sum())
    assert X[[5, 6, 7, 8, 9], 0].tolist() == [74.0] * 5


def test_the_group_grows_while_its_mean_lands_near_a_members_own_value():
    """20 records; the 5 largest released 60..100 average 80, within 7.5 % of the original 79 of
    a member: the group takes the 6th (20) as well, mean 70, which lies within 7.5 % of no
    original value of the group or of the 10 largest."""
    rel = np.r_[np.arange(1.0, 15.0), 20, 60, 70, 80, 90, 100]
    orig = np.r_[np.arange(1.0, 15.0), 18, 55, 62, 79, 99, 110]
    pos, m = top_group(rel, orig, 0.05)
    assert m == pytest.approx(70.0) and sorted(pos.tolist()) == list(range(14, 20))
    assert not np.any(np.abs(orig - m) <= 0.075 * np.abs(orig))
    # had it stayed at 5, the member whose own value is 79 would be released within 1.3 % of it
    assert abs(80 - 79) / 79 < 0.05


def test_weights_keep_the_weighted_total():
    rng = np.random.default_rng(1)
    rel = rng.lognormal(size=200)
    w = rng.uniform(1, 5, size=200)
    X = rel[:, None].copy()
    aggregate(X, rel[:, None] * 1.3, [0], 0.05, weights=w)
    assert (w * X[:, 0]).sum() == pytest.approx((w * rel).sum(), rel=1e-12)


def test_protect_with_tail_aggregate_on_tarragona():
    """Rank swapping of SALES: the 9 largest released values (of 834) become their mean, the
    total moves by the rounding only, the rest of the values as rank swapping leaves them, and the
    note says so; recorded in the recipe, rebuilt byte for byte."""
    d = sdccore.load_dataset("tarragona")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = sdccore.protect(d, "rankswap", sensitive=["SALES"], rng=3, allow_unsafe="test")
        r = sdccore.protect(d, "rankswap", sensitive=["SALES"], rng=3, allow_unsafe="test", tail="aggregate")
        again = sdccore.protect(d, **r.options, allow_unsafe="test")
    top = plain.data.SALES.sort_values().index[-9:]
    assert r.data.loc[top, "SALES"].nunique() == 1
    assert r.data.loc[top, "SALES"].iloc[0] == round(plain.data.loc[top, "SALES"].mean())
    rest = plain.data.index.difference(top)
    assert r.data.loc[rest, "SALES"].equals(plain.data.loc[rest, "SALES"])
    assert abs(r.data.SALES.sum() - d.SALES.sum()) <= 9
    assert r.options["tail"] == "aggregate" and any("9 largest released values" in n for n in r.notes)
    pd.testing.assert_frame_equal(again.data, r.data)
    assert plain.options["tail"] == "none"


def test_tail_is_checked_by_the_schema():
    d = sdccore.load_dataset("tarragona")
    with pytest.raises(ValueError, match="tail"):
        sdccore.protect(d, "rankswap", sensitive=["SALES"], rng=1, tail="cap")
