"""The band-mates intruder (issue 39): a release that hands places round within blocks of a
band keeps each block's set of places, so a record's own place is one of its block-mates'
released places; the intruder reads the bands from planes fitted on the release and guesses the
candidate around which most candidates lie."""

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._methods import conditional
from sdccore._risk.partner import band_mates
from sdccore._risk.registry import IntruderContext


def _ctx(released, method="qexchange", settings=None):
    n = len(released)
    return IntruderContext(variable="S", target=1, names=("P", "S"), original=released.copy(), released=released,
                           rows=np.arange(n), linked=np.arange(n), known=(0,), selective=True, method=method,
                           settings=settings, tolerance=0.05)


def test_the_guess_is_the_densest_block_mate_by_hand(monkeypatch):
    """Flat planes at 0 and 10 (one middle band; a record's place is its value / 10), twenty
    records in two blocks of ten (the order of their predicted size: the file's, all equal).
    Record 0 (released 1.0): its candidates are its nine block-mates' values; 5.0, 5.05, 5.1 and
    5.2 each have four candidates within 5 %, the first of them is the guess; their median 5.1."""
    monkeypatch.setattr(conditional, "planes", lambda S, Z, Zr, taus, gen: (np.tile([0.0, 10.0], (len(S), 1)),) * 2)
    a = [1.0, 5.0, 5.1, 5.2, 5.05, 9.0, 2.0, 3.0, 7.0, 8.0]
    b = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5]
    rel = np.column_stack([np.arange(20.0), a + b])
    mode, median, _ = band_mates(_ctx(rel, settings={"block": 10, "quantiles": "0.1,0.5,0.9"}))
    assert mode[0] == 5.0 and median[0] == pytest.approx(5.1)
    assert mode[5] == 5.0  # record 5 (9.0): 8.0 is more than 5.25 % away, still a candidate; 5.0 densest
    # record 10 (0.5) of the second block: its candidates are 1.5 .. 9.5, none within 5 % of another
    assert mode[10] == 1.5 and median[10] == pytest.approx(5.5)
    # the published block read from the settings: blocks of 5, record 0's candidates 5.0 .. 5.2
    mode5, median5, _ = band_mates(_ctx(rel, settings={"block": 5}))
    assert mode5[0] == 5.0 and median5[0] == pytest.approx(5.075)


def test_it_needs_the_construction():
    rel = np.column_stack([np.arange(40.0), np.linspace(1, 50, 40)])
    assert band_mates(_ctx(rel, method=None)) is None  # evaluate: the quantiles and block are not known
    assert band_mates(_ctx(rel[:15], settings={"block": 10})) is None  # fewer records than two blocks
    assert "band_mates" in sdccore.intruders(selective=True, method="qexchange")
    assert "band_mates" not in sdccore.intruders(selective=True, method="shuffle")
    assert "band_mates" not in sdccore.intruders(selective=False)


def test_the_places_are_matched_to_the_prior_one_each_by_hand():
    """A block of three in the band between flat planes 0 and 10, released 2, 5 and 8 (places .2,
    .5, .8), the prior predicting 5, 8 and 2: no record keeps its own place, each place goes to one
    record, the least total log distance to the predictions is 0 (5, 8, 2)."""
    from sdccore._methods.conditional import _values
    from sdccore._risk.partner import _matched

    F = np.tile([0.0, 10.0], (3, 1))
    y = np.array([2.0, 5.0, 8.0])
    got = _matched(np.arange(3), y, np.array([5.0, 8.0, 2.0]), y / 10, np.ones(3, dtype=int), F, 0.0,
                   np.full(3, 10.0), 0.05, _values)
    assert got == pytest.approx([5.0, 8.0, 2.0])
    # the prior at the records' own released values: each must still take another's place
    got = _matched(np.arange(3), y, y, y / 10, np.ones(3, dtype=int), F, 0.0, np.full(3, 10.0), 0.05, _values)
    assert not np.any(got == y) and sorted(got) == [2.0, 5.0, 8.0]


def test_the_intruders_read_the_codes_a_conditional_method_was_given():
    """The codes released unchanged (a text column of 2 large levels) are part of what the release
    publishes of a conditional method's construction: the intruders get their indicators in
    ``ctx.settings['codes']`` (one column: the level other than the largest), with the method's own
    options; a method that is not conditional publishes its options only."""
    seen = {}

    def spy(ctx):
        seen[ctx.method] = ctx.settings
        return None

    g = np.random.default_rng(1)
    n = 200
    x = g.lognormal(3, 1, n)
    d = pd.DataFrame({"x": x, "y": 2 * x * g.lognormal(0, 0.3, n), "grp": np.where(np.arange(n) < 120, "a", "b")})
    sdccore.register_intruder(sdccore.IntruderInfo("spy", "a spy", spy), replace=True)
    try:
        sdccore.protect(d, method="qexchange", sensitive=["y"], rng=1, allow_unsafe="a test")
        sdccore.protect(d, method="rankswap", sensitive=["y"], rng=1, allow_unsafe="a test")
    finally:
        sdccore.unregister_intruder("spy")
    codes = seen["qexchange"]["codes"]
    assert codes.shape == (n, 1) and codes[:, 0].tolist() == [0.0] * 120 + [1.0] * 80
    assert seen["qexchange"]["block"] == 10 and seen["qexchange"]["keep"] == "total"
    assert "codes" not in seen["rankswap"] and seen["rankswap"]["p"] > 0
