"""The battery's share at zero (the extensive margin of an amount with a mass at 0: the firms
that export, the persons who receive a benefit), by hand."""

import numpy as np
import pandas as pd
import pytest

import sdccore


def _file():
    """100 firms in two sectors of 50: exports 0 for 10 of sector A's and 40 of sector B's
    (50 % overall), the exporters' amounts 1..50; x a public variable."""
    g = np.repeat(["A", "B"], 50)
    y = np.zeros(100)
    y[10:50] = np.arange(1, 41)
    y[90:100] = np.arange(41, 51)
    return pd.DataFrame({"sector": g, "x": np.cos(np.arange(100.0)), "exports": y})


def _zeros(o, r, **kw):
    t = sdccore.analyst_checks(o, r, sensitive=["exports"], domains=["sector"], **kw).table
    return t[t.analysis == "zeros"].iloc[0]


def test_the_share_at_zero_sees_zeros_moved_between_domains_and_lifted():
    o = _file()
    kept = _zeros(o, o)
    assert (kept.original, kept.released, kept.kept, kept.ok) == (0.5, 0.5, 0.0, True)
    # the amounts handed round over the whole file (the rows reversed): still half at 0, but
    # sector A now has 40 of 50 at 0 (20 % -> 80 %) and B 10 (80 % -> 20 %): 60 points
    r = o.assign(exports=o.exports.to_numpy()[::-1])
    z = _zeros(o, r)
    assert z.released == 0.5 and z.kept == pytest.approx(0.6, abs=1e-15) and z.ok is False
    assert z.note == "sector = A: 20.0% -> 80.0% at 0"
    # a release that redraws around a fit puts the non-exporters at small positive amounts: none at 0
    r = o.assign(exports=np.where(o.exports == 0, 0.3, o.exports))
    z = _zeros(o, r)
    assert z.released == 0.0 and z.kept == pytest.approx(0.8, abs=1e-15) and z.ok is False  # sector B: 80 % -> 0
    # one firm of 100 moved off 0 (sector A): 1 point overall, 2 in its sector, within the 2-point target
    r = o.assign(exports=np.where(np.arange(100) == 0, 5.0, o.exports))
    z = _zeros(o, r)
    assert z.kept == 0.02 and z.ok is True and z.note == "sector = A: 20.0% -> 18.0% at 0"


def test_the_weighted_share_at_zero_by_hand_and_where_it_does_not_apply():
    o = _file().assign(w=np.r_[np.full(50, 1.0), np.full(50, 3.0)])
    z = _zeros(o, o, weights="w")
    assert z.original == pytest.approx((10 + 3 * 40) / (50 + 150), abs=1e-15)  # .65
    # a profit (negative values) has no mass at 0 to keep; an amount with 4 % zeros neither
    z = _zeros(o.assign(exports=o.exports - 1), o.assign(exports=o.exports - 1))
    assert np.isnan(z.kept) and z.ok is None and "negative" in z.note
    few = o.assign(exports=np.where(np.arange(100) < 4, 0.0, np.arange(100.0) + 1))
    z = _zeros(few, few)
    assert z.original == pytest.approx(0.04) and np.isnan(z.kept) and z.ok is None and "5%" in z.note
