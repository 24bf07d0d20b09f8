"""IPSO in two parts for amounts with a mass at 0 (``zeros='pattern'``, ``_methods/zeros.py``):
who is at 0 handed between records of the same domain, the positives on the log scale, and
every OLS among the released columns kept.  Checked by hand on the helpers and, on a persons
file whose wage is 0 exactly where hours are 0, against least squares computed here."""

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._methods import zeros as zp


def _persons(n=1500, seed=3):
    """Region (3), sex, age, hours (0 for about 30 %), wage (0 exactly where hours are 0,
    lognormal given the rest), capital (about 60 % at 0, lognormal), weight."""
    r = np.random.default_rng(seed)
    region = r.choice(["north", "south", "east"], n, p=[0.4, 0.35, 0.25])
    sex = r.choice(["f", "m"], n)
    age = r.integers(18, 80, n).astype(float)
    works = r.random(n) < 1 / (1 + np.exp(-(1.5 - 0.05 * np.abs(age - 42) + 0.4 * (sex == "m"))))
    hours = np.where(works, np.clip(np.round(r.normal(38, 8, n)), 5, 70), 0.0)
    lw = 8 + 0.01 * age + 0.2 * (sex == "m") + 0.1 * (region == "north") + 0.015 * hours + r.normal(0, 0.45, n)
    wage = np.where(works, np.exp(lw), 0.0)
    cap = np.where(r.random(n) < 0.4, np.exp(r.normal(6 + 0.02 * age, 1.2, n)), 0.0)
    return pd.DataFrame({"region": region, "sex": sex, "age": age, "hours": hours, "wage": wage,
                         "capital": cap, "weight": np.round(r.uniform(50, 150, n), 1)})


def _design(d, y, logy=False):
    """[1, age, hours, the other amount, region and sex indicators] and y (its log, positives only)."""
    other = [c for c in ("wage", "capital") if c != y]
    X = np.column_stack([np.ones(len(d)), d.age, d.hours] + [d[c] for c in other]
                        + [(d.region == v).astype(float) for v in ("north", "south")] + [(d.sex == "m").astype(float)])
    v = d[y].to_numpy(dtype=float)
    if logy:
        keep = v > 0
        return X[keep][:, :3], np.log(v[keep])  # log(wage) on [1, age, hours] among the positives
    return X, v


def _ols(X, y, w=None):
    s = np.ones(len(y)) if w is None else np.sqrt(w)
    b = np.linalg.lstsq(X * s[:, None], y * s, rcond=None)[0]
    return b, float(((y - X @ b) ** 2 * (s ** 2)).sum())


def _release(d, seed=1, **kw):
    return sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=seed, zeros="pattern", rounding="none",
                           **kw)


def test_semicontinuous_by_hand():
    assert zp.semicontinuous([0, 0, 1, 2, 3, 4, 5, 6, 7, 8])  # 20 % zeros
    assert not zp.semicontinuous(np.r_[0, np.arange(1, 40)])  # 2.5 % zeros
    assert not zp.semicontinuous([0, 0, -1, 2, 3])  # a negative value: not an amount
    assert not zp.semicontinuous([0, 0, 0, 0, 5])  # one positive value
    assert not zp.semicontinuous([0, np.nan, 1, 2, 3])


def test_cells_join_the_small_ones_within_their_first_codes_and_never_across_a_rule():
    codes = np.array([[0, 0]] * 12 + [[0, 1]] * 3 + [[1, 0]] * 10 + [[1, 1]] * 2 + [[0, 2]] * 8)
    c = zp.cells(codes, 10)
    # (0,0) and (1,0) hold 10 or more: cells of their own; (0,1) and (0,2), 3 + 8 records, join as
    # code 0's rest (11); (1,1), 2 records, is left with the rest of the file (its rule group)
    assert len(set(c[:12])) == 1 and len(set(c[15:25])) == 1 and c[0] != c[15]
    assert len(set(c[12:15]) | set(c[27:])) == 1 and c[12] not in (c[0], c[15])
    assert len({c[25], c[0], c[15], c[12]}) == 4
    # a rule splits every cell, and the rest joins within its rule group only
    rules = np.array([[0]] * 6 + [[1]] * 6 + [[0]] * 23).reshape(-1, 1)
    c = zp.cells(codes, 10, rules)
    assert not set(c[rules[:, 0] == 0]) & set(c[rules[:, 0] == 1])
    assert (zp.cells(np.zeros((5, 0), dtype=int), 10) == 0).all()


def test_hand_on_permutes_within_cells_and_blocks_and_breaks_ties_at_random():
    score = np.array([5.0, 1, 4, 2, 3, 9, 8, 7, 6, 0, 0.5, 10])
    cell = np.array([1] * 9 + [2] * 3)
    p = zp.hand_on(score, cell, 3, np.random.default_rng(0))
    assert sorted(p) == list(range(12))  # a permutation
    # cell 1 in the order of the score: [1, 3, 4 | 2, 0, 8 | 7, 6, 5] (scores 1 2 3 | 4 5 6 | 7 8 9)
    for block in ([1, 3, 4], [2, 0, 8], [7, 6, 5], [9, 10, 11]):
        assert set(p[block]) == set(block)
    # 7 records: a last block of 1 joins the one before (blocks of 3 and 4)
    p = zp.hand_on(np.arange(7.0), np.zeros(7, dtype=int), 3, np.random.default_rng(1))
    assert set(p[:3]) == {0, 1, 2} and set(p[3:]) == {3, 4, 5, 6}
    # equal scores: the blocks are not the file's row order (the order a release must not show)
    firsts = {frozenset(zp.hand_on(np.zeros(9), np.zeros(9, dtype=int), 3, np.random.default_rng(s))[:3])
              for s in range(20)}
    assert any(f != frozenset({0, 1, 2}) for f in firsts)


def test_the_ladder_spaces_the_largest_records_ratios_off_one():
    rng = np.random.default_rng(2)
    x = rng.lognormal(9, 0.5, 600)
    v = x * 0.4  # every released value 0.4 of its own: one divisor would take them all back
    out, got, rungs, gap = zp.ladder(x, v, 0.05, 0.2, np.random.default_rng(0))
    band = np.union1d(np.argsort(v)[-6:], np.argsort(x)[-6:])
    assert len(band) == 6 and (got == band).all() and np.allclose(np.log(x[band] / out[band]), rungs)
    others = np.setdiff1d(np.arange(600), band)
    assert (out[others] == v[others]).all()
    lr = np.sort(np.log(x[band] / out[band]))
    w, h = np.log(1.05 / 0.95), -1.02 * np.log(0.95)
    # rungs h + gap*k on both sides, gap = w / max(1, floor(.5 * .2 * 6)) = w; none within 5 % of the own value
    assert np.allclose(lr, np.array([-h - 2 * w, -h - w, -h, h, h + w, h + 2 * w]))
    assert (np.abs(out[band] / x[band] - 1) > 0.05).all()


def test_the_release_keeps_who_is_at_0_per_domain_and_the_rule_hours_0_wage_0():
    d = _persons()
    r = _release(d).data
    for c in ("wage", "capital"):
        assert ((r[c] == 0) == (r[c] == 0)).all() and (r[c] >= 0).all()
        assert (r[c] == 0).sum() == (d[c] == 0).sum()
        for g in ("region", "sex"):
            pd.testing.assert_series_equal((r[c] == 0).groupby(d[g]).sum(), (d[c] == 0).groupby(d[g]).sum())
    assert ((r.hours == 0) == (r.wage == 0)).all()  # the edit rule of the original, exactly
    moved = ((r.wage > 0) != (d.wage > 0)) | ((r.capital > 0) != (d.capital > 0))
    assert moved.sum() > 50  # who is at 0 is handed on (capital is hardly predicted)
    assert not np.isclose(r.wage[d.wage > 0], d.wage[d.wage > 0], rtol=1e-6).any()


def test_every_ols_among_the_released_columns_and_the_log_wage_equation_are_the_originals():
    d = _persons()
    r = _release(d).data
    for y in ("wage", "capital"):
        (bo, so), (br, sr) = _ols(*_design(d, y)), _ols(*_design(r, y))
        assert np.allclose(br, bo, rtol=1e-7, atol=1e-9 * np.abs(bo).max()) and sr == pytest.approx(so, rel=1e-7)
    # the log-wage equation among the workers (the same records as hours > 0 in both files): its
    # coefficients exactly, its residual sum of squares (not a target of the construction) within 2 %
    (bo, so), (br, sr) = _ols(*_design(d, "wage", True)), _ols(*_design(r, "wage", True))
    assert np.allclose(br, bo, rtol=1e-7) and sr == pytest.approx(so, rel=0.02) and sr != pytest.approx(so, rel=1e-6)
    for c in ("wage", "capital"):
        assert r[c].mean() == pytest.approx(d[c].mean(), rel=1e-9)
        for g in ("region", "sex"):  # domain means: each level's indicator is in the basis
            assert np.allclose(r[c].groupby(d[g]).mean(), d[c].groupby(d[g]).mean(), rtol=1e-8)


def test_with_weights_the_weighted_least_squares_and_means_are_kept():
    d = _persons()
    r = _release(d, weights="weight").data
    w = d.weight.to_numpy()
    for y in ("wage", "capital"):
        (bo, so), (br, sr) = _ols(*_design(d, y), w), _ols(*_design(r, y), w)
        assert np.allclose(br, bo, rtol=1e-7, atol=1e-9 * np.abs(bo).max()) and sr == pytest.approx(so, rel=1e-7)
        assert np.average(r[y], weights=w) == pytest.approx(np.average(d[y], weights=w), rel=1e-9)
        assert (r[y] == 0).sum() == (d[y] == 0).sum()  # the weighted mean's shift did not lift the zeros


def test_same_seed_same_bytes_and_the_floors_judge_it():
    d = _persons()
    a, b, c = _release(d, seed=5), _release(d, seed=5), _release(d, seed=6)
    assert a.data.equals(b.data) and not a.data.equals(c.data)
    assert a.risk.ok and c.risk.ok
    assert any("in two parts (zeros='pattern')" in n for n in a.notes)


def test_without_an_amount_it_is_ipso_as_chosen_and_says_so():
    """Sensitive variables that can be negative (a profit, a change) are no amounts: IPSO as chosen."""
    d = _persons()
    d = d.assign(wage=d.wage - d.wage.mean(), capital=d.capital - d.capital.mean())
    a = sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=2, zeros="pattern")
    b = sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=2)
    assert a.data.equals(b.data)
    assert any("no sensitive variable is an amount" in n for n in a.notes)


def test_a_skewed_amount_without_zeros_joins_the_two_parts_and_a_profit_is_ipsos_first():
    """capital + 50 (positive, skewed) goes through the two parts too (nothing handed on: its
    positives on the log scale, kept with wage); a profit that can be negative is IPSO's, first,
    and every OLS among them is the original's."""
    d = _persons()
    r0 = np.random.default_rng(1)
    d = d.assign(capital=d.capital + 50.0, profit=0.02 * d.wage + 5 * d.age - 300 + r0.normal(0, 300, len(d)))
    r = sdccore.protect(d, "ipso", sensitive=["wage", "capital", "profit"], rng=2, zeros="pattern", rounding="none")
    assert (r.data.wage == 0).sum() == (d.wage == 0).sum() and (r.data.capital > 0).all()
    assert any(n.startswith("wage, capital: in two parts") for n in r.notes)
    assert any("profit: redrawn by IPSO on the public variables, first" in n for n in r.notes)
    for y, other in (("wage", ["capital", "profit"]), ("capital", ["wage", "profit"])):
        def fit(f):
            X = np.column_stack([np.ones(len(f)), f.age, f.hours, f.weight] + [f[c] for c in other]
                                + [(f.region == v).astype(float) for v in ("north", "south")]
                                + [(f.sex == "m").astype(float)])
            return _ols(X, f[y].to_numpy(float))[0]
        bo, br = fit(d), fit(r.data)
        assert np.allclose(br, bo, rtol=1e-6, atol=1e-8 * np.abs(bo).max())
    assert np.log(r.data.capital).mean() == pytest.approx(np.log(d.capital).mean(), abs=0.05)


def test_refusals_name_the_variable_and_the_fix():
    d = _persons()
    m = d.copy()
    m.loc[[3, 9], "wage"] = np.nan
    with pytest.raises(ValueError, match=r"zeros='pattern' needs wage complete \(2 cells missing\).*zeros='redraw'"):
        sdccore.protect(m, "ipso", sensitive=["wage", "capital"], rng=1, zeros="pattern")
    with pytest.raises(ValueError, match=r"puts capital's positive values on the log scale itself; leave it out of"):
        sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=1, zeros="pattern", transform=["capital"])
    few = d.assign(capital=np.where(np.arange(len(d)) < 60, d.capital + 1.0, 0.0))
    with pytest.raises(ValueError, match=r"capital has 60 positive values, too few for the log-scale fit on 9 predictors "
                                         r"\(the public variables, codes and amounts released before it; at least 100\)"):
        sdccore.protect(few, "ipso", sensitive=["wage", "capital"], rng=1, zeros="pattern")


def test_the_battery_sees_what_redraw_loses_and_pattern_keeps():
    """The share at zero and the distribution of an amount with a mass at 0: IPSO redrawn around
    the fit lifts the non-workers off 0 (or clips them); in two parts they stay."""
    d = _persons()
    kw = dict(sensitive=["wage", "capital"], domains=["region", "sex"])
    rd = sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=1, allow_unsafe="test").data
    t = sdccore.analyst_checks(d, rd, **kw).table.set_index(["variable", "analysis"])
    assert not t.loc[("capital", "zeros"), "ok"] and t.loc[("capital", "zeros"), "kept"] > 0.2
    rp = _release(d).data
    t = sdccore.analyst_checks(d, rp, **kw).table.set_index(["variable", "analysis"])
    for v in ("wage", "capital"):
        assert t.loc[(v, "zeros"), "kept"] == 0 and t.loc[(v, "zeros"), "ok"]
        assert t.loc[(v, "ks"), "ok"] and t.loc[(v, "mean"), "ok"] and t.loc[(v, "ols"), "ok"]


def test_a_total_rebuilt_from_the_amounts_is_not_conditioned_on():
    """income = wage + capital + pension is an exact dependency, rebuilt in the release from the
    released amounts: its original values, which hold the amounts, must not enter the basis
    (conditioned on them, the released wage would be the original total less the rest)."""
    d = _persons()
    d["pension"] = np.where(d.age > 62, 9000.0, 0.0)
    d["income"] = d.wage + d.capital + d.pension
    # (the floors refuse this release: income is public here, and with the released pension the
    # identity intruder solves for the amounts; the custodian is told to mark income sensitive too)
    r = sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=1, zeros="pattern", rounding="none",
                        allow_unsafe="test").data
    assert np.allclose(r.income, r.wage + r.capital + r.pension)  # rebuilt
    pos = d.wage > 0
    close = np.abs(r.wage[pos] - d.wage[pos]) <= 0.05 * d.wage[pos]
    assert close.mean() < 0.15  # about what the public variables give; with the total in the basis, most


def test_a_numeric_column_set_apart_is_conditioned_on():
    """weight set apart (released unchanged): the OLS of each amount on the rest, weight among the
    predictors, is the original's (it was not, before the set-apart numeric columns joined the basis)."""
    d = _persons()
    r = sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=1, zeros="pattern", rounding="none",
                        exclude=["weight"]).data
    for y in ("wage", "capital"):
        Xo, yo = _design(d, y)
        Xr, yr = _design(r, y)
        (bo, so), (br, sr) = _ols(np.column_stack([Xo, d.weight]), yo), _ols(np.column_stack([Xr, r.weight]), yr)
        assert np.allclose(br, bo, rtol=1e-7, atol=1e-9 * np.abs(bo).max()) and sr == pytest.approx(so, rel=1e-7)


def test_refused_on_the_dask_engine_rather_than_released_around_the_fit():
    """The Dask engine's IPSO has no two parts: a recipe asking for them is refused in one line,
    never released redrawn around the fit under the recipe's name."""
    got = sdccore.scale_refusal({"method": "ipso", "sensitive": ["wage"], "zeros": "pattern"})
    assert got == "IPSO's zeros='pattern' is not built for the Dask engine; use zeros='redraw' or protect in memory"
    assert sdccore.scale_refusal({"method": "ipso", "sensitive": ["wage"], "zeros": "redraw"}) is None


def test_its_recipe_rebuilds_the_release_byte_for_byte():
    """The recipe of a two-part release (written as JSON, read back) makes the same file again;
    a recipe without ``zeros`` (one written before the option existed) means 'redraw'."""
    d = _persons(n=900)
    why = "test: the rebuild, whatever the floors say of a file of 900"
    res = sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=4, zeros="pattern", allow_unsafe=why)
    recipe = sdccore.Recipe.from_result(res, shuffle=True)
    assert recipe.to_dict()["zeros"] == "pattern"
    a = sdccore.make_release(d, recipe, allow_unsafe=why)
    b = sdccore.make_release(d, sdccore.Recipe.from_json(recipe.to_json()), allow_unsafe=why)
    assert a.to_bytes() == b.to_bytes() and (a.data.wage == 0).sum() == (d.wage == 0).sum()
    old = {k: v for k, v in recipe.to_dict().items() if k != "zeros"}
    plain = sdccore.make_release(d, sdccore.Recipe.from_dict(old), allow_unsafe=why)
    redraw = sdccore.make_release(d, sdccore.Recipe.from_dict({**old, "zeros": "redraw"}), allow_unsafe=why)
    assert plain.to_bytes() == redraw.to_bytes() != a.to_bytes()


def test_a_threshold_rule_of_a_public_column_is_kept():
    """R&D only from 10 employees (an outside custodian's rule, broken for 105 firms by the
    suggested rank swap): every public range where an amount's status never changes is a
    cell of the hand-on, so the release keeps the rule exactly.  Here R&D also leans on the
    firm's age, so the predicted chance alone mixes small young firms with large old ones: with
    only the zeros of public columns as rules, 64 of the 501 small firms got R&D."""
    r = np.random.default_rng(8)
    n = 1500
    emp = np.round(np.exp(r.normal(2.6, 1.0, n))) + 1
    age = r.uniform(1, 60, n)
    turnover = emp * np.exp(r.normal(4, 0.5, n))
    p = 1 / (1 + np.exp(-(2 - 0.12 * age)))
    rnd = np.where((emp >= 10) & (r.random(n) < p), turnover * np.exp(r.normal(-3, 0.7, n)), 0.0)
    d = pd.DataFrame({"age": age, "employees": emp, "turnover": turnover, "rnd": rnd})
    assert (d.employees < 10).sum() == 501 and (d.rnd[d.employees < 10] == 0).all()
    out = sdccore.protect(d, "ipso", sensitive=["turnover", "rnd"], rng=3, zeros="pattern", allow_unsafe="test").data
    assert (out.rnd[d.employees < 10] == 0).all() and (out.rnd == 0).sum() == (d.rnd == 0).sum()
    assert ((out.rnd > 0) != (d.rnd > 0)).sum() > 20  # handed on among the larger firms
    z = zp._structural(d[["age", "employees"]].to_numpy(float), d[["rnd"]].to_numpy(float))
    assert any(((col == 1) == (d.employees < 10)).all() for col in z.T)


def test_with_keys_the_small_cells_keep_the_rule_and_each_domains_share():
    """The dashboard's suggested keys (region, sex, age, education) make the codes' cells small:
    joined all into one, 2 persons without hours got a wage and capital's share at 0 moved in two
    regions; joined within their first codes and their rule group, neither."""
    d = _persons()
    d["edu"] = np.random.default_rng(5).integers(6, 20, len(d)).astype(float)
    r = sdccore.protect(d, "ipso", sensitive=["wage", "capital"], rng=1, zeros="pattern",
                        exclude=["region", "sex", "edu"], keys=["region", "sex", "age", "edu"], k_anonymity=3,
                        allow_unsafe="test: the cells").data
    assert ((r.hours == 0) == (r.wage == 0)).all()
    for g in ("region", "sex"):
        pd.testing.assert_series_equal((r.capital == 0).groupby(d[g]).sum(), (d.capital == 0).groupby(d[g]).sum())
