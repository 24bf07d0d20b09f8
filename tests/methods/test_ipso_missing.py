"""IPSO with missing cells (issue 39's finding, a fault): the regression an analyst runs drops
the records with a missing cell, and IPSO keeps that one exactly as well as the one on every
record with the missing cells filled (``missing_rows='complete'``, the default; ``'both'``,
what recipes before it made, moves the complete records' intercept); too few
incomplete records to do so without handing them their own values back: the filled one only,
and the release's note says which.  Coefficients compared with statsmodels' OLS on the
complete records (what ``sm.OLS(..., missing='drop')`` fits)."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import sdccore
from sdccore._methods import conditional_kernel as cd


def _firms(n=300, missing=60, seed=4):
    rng = np.random.default_rng(seed)
    emp = rng.lognormal(3, 1, n)
    assets = emp * rng.lognormal(2, 0.5, n)
    wages = emp * rng.lognormal(1, 0.2, n)
    turnover = 3 * emp + 0.5 * assets + 2 * wages + rng.normal(0, 20, n) + 200
    d = pd.DataFrame({"employees": emp, "assets": assets, "wages": wages, "turnover": turnover})
    d.loc[rng.choice(n, missing, replace=False), "assets"] = np.nan
    return d


def _ols(d, xs=("employees", "assets", "wages")):
    return sm.OLS(d["turnover"], sm.add_constant(d[list(xs)]), missing="drop").fit()


def _protect(d, **kw):
    return sdccore.protect(d, "ipso", sensitive=["turnover"], rng=1, rounding="none", bounds="none", **kw)


def test_the_complete_records_regression_is_kept_exactly():
    d = _firms()
    r = _protect(d)
    a, b = _ols(d), _ols(r.data)
    assert b.nobs == a.nobs == 240
    assert np.max(np.abs(b.params - a.params) / a.bse) < 1e-9
    # a model on columns that are never missing runs on every record: kept as before
    a2, b2 = _ols(d, ["employees", "wages"]), _ols(r.data, ["employees", "wages"])
    assert np.max(np.abs(b2.params - a2.params) / a2.bse) < 1e-9
    assert r.data["assets"].isna().sum() == 60  # the missing cells stay missing
    note = next(t for t in r.notes if "OLS" in t)
    assert "on the complete records" in note and "missing cells filled" in note


def test_the_intercept_is_exact_where_the_sensitive_variable_is_missing_too():
    """turnover missing in 40 records as well, so its observed cells are the complete records
    and the 43 or so with only assets missing: 'complete' shifts those 43 so that the observed
    mean is the original's and the complete records' fit stays exact, intercept included;
    'both' (older recipes) shifted every observed cell, which moved the intercept by 0.017 of
    its standard error (measured before the option)."""
    d = _firms()
    d.loc[np.random.default_rng(9).choice(len(d), 40, replace=False), "turnover"] = np.nan
    a = _ols(d)
    new, old = _protect(d), _protect(d, missing_rows="both")
    b, c = _ols(new.data), _ols(old.data)
    assert b.nobs == c.nobs == a.nobs == 213
    assert np.max(np.abs(b.params - a.params) / a.bse) < 1e-9
    off = (c.params - a.params) / a.bse
    assert 0.01 < abs(off["const"]) < 0.03 and np.max(np.abs(off.drop("const"))) < 1e-9
    for r in (new, old):  # the observed mean kept either way, the missing cells left missing
        assert r.data["turnover"].mean() == pytest.approx(d["turnover"].mean(), rel=1e-12)
        assert r.data["turnover"].isna().sum() == 40
    # the same residual draw: only the records with a public cell missing differ, by one constant
    both = d["turnover"].notna() & d["assets"].notna()
    assert np.allclose(new.data["turnover"][both] - old.data["turnover"][both], -(c.params - a.params)["const"],
                       rtol=0, atol=1e-9)
    other = d["turnover"].notna() & d["assets"].isna()
    moved = (new.data["turnover"][other] - old.data["turnover"][other]).to_numpy()
    assert other.sum() > 30 and np.ptp(moved) < 1e-9 and abs(moved[0]) > 1e-6


def test_filled_only_misses_the_complete_records_regression():
    """Before: the residuals were orthogonal to the public columns with the missing cells
    filled, and the complete records' coefficients moved by a good part of their standard
    error (the employees coefficient of the dashboard walk's file: 2.60 -> 3.93)."""
    d = _firms()
    a, b = _ols(d), _ols(_protect(d, missing_rows="filled").data)
    assert np.max(np.abs(b.params - a.params) / a.bse) > 1e-3


def test_without_missing_cells_both_settings_give_the_same_bytes():
    d = _firms(missing=0)
    x = _protect(d).data.to_numpy()
    y = _protect(d, missing_rows="filled").data.to_numpy()
    assert x.tobytes() == y.tobytes()


def test_too_few_incomplete_records_keep_the_filled_regression_and_say_so():
    """15 incomplete records of 300 with 3 public columns (40 needed on each side): their
    group's fit, which the release would hold exactly, leans to each one's own value (an
    outside intruder took 3 of 15 such firms beyond the prior in every run)."""
    d = _firms(missing=15)
    r = _protect(d)
    assert r.data.to_numpy().tobytes() == _protect(d, missing_rows="filled").data.to_numpy().tobytes()
    note = next(t for t in r.notes if "OLS" in t)
    assert "only 15 record(s) have a missing cell" in note and "at least 40" in note


def test_complete_rows_sets():
    assert cd.min_rows(3) == 40 and cd.min_rows(0) == 20
    obs = np.ones((200, 4), dtype=bool)
    assert cd.complete_rows(None, [3], [0, 1, 2]) == ([], 0)
    assert cd.complete_rows(obs, [3], [0, 1, 2]) == ([], 0)
    obs[:50, 1] = False  # a public column: 50 incomplete, 150 complete, 40 needed
    rows, left = cd.complete_rows(obs, [3], [0, 1, 2])
    assert len(rows) == 1 and rows[0].sum() == 150 and left == 0
    obs[150:, 3] = False  # the sensitive column too: 100 complete
    rows, left = cd.complete_rows(obs, [3], [0, 1, 2])
    assert rows[0].sum() == 100 and not rows[0][150:].any()
    obs = np.ones((200, 4), dtype=bool)
    obs[:39, 0] = False
    assert cd.complete_rows(obs, [3], [0, 1, 2]) == ([], 39)
    # two sensitive columns whose complete rows differ by 3 records: the second set would cut
    # those 3 out on their own, so it is not kept
    obs = np.ones((200, 5), dtype=bool)
    obs[:50, 1] = False
    obs[50:53, 3] = False
    rows, left = cd.complete_rows(obs, [4, 3], [0, 1, 2])
    assert len(rows) == 1 and rows[0].sum() == 150 and left == 53


def test_no_record_is_cut_out_alone_by_two_sensitive_columns():
    """turnover complete where the public columns are; profit missing in 3 more records.
    The regression of turnover on its complete records is kept; profit's would isolate the 3
    records (the basis would fit them exactly, turnover's own values released), so it is
    not, and no released value equals the truth."""
    d = _firms()
    d["profit"] = 0.1 * d["turnover"] + np.random.default_rng(7).normal(0, 30, len(d))
    d.loc[d.index[d["assets"].notna()][:3], "profit"] = np.nan
    r = sdccore.protect(d, "ipso", sensitive=["turnover", "profit"], rng=1, rounding="none", bounds="none",
                        allow_unsafe="test: the basis, on a made-up profit the public variables predict")
    a = sm.OLS(d["turnover"], sm.add_constant(d[["employees", "assets", "wages"]]), missing="drop").fit()
    b = sm.OLS(r.data["turnover"], sm.add_constant(r.data[["employees", "assets", "wages"]]), missing="drop").fit()
    assert np.max(np.abs(b.params - a.params) / a.bse) < 1e-9
    for c in ("turnover", "profit"):
        rel = np.abs(r.data[c] - d[c]) / np.abs(d[c])
        assert not (rel < 1e-6).any(), (c, np.flatnonzero(rel < 1e-6))


def test_an_old_recipe_without_the_option_rebuilds_the_filled_release(tmp_path):
    """A recipe of format 3 (before the option) rebuilds with missing_rows='filled', what it
    made then; this version's recipe records the option (rebuilt by the command line)."""
    import json

    from conftest import run_cli

    d = _firms()
    d.to_csv(tmp_path / "in.csv", index=False)
    old = _protect(d, missing_rows="filled")
    rec = json.loads(old.recipe_json())
    assert rec["missing_rows"] == "filled" and rec["recipe_version"] == sdccore.RECIPE_VERSION == 9
    rec["recipe_version"] = 3
    del rec["missing_rows"]
    (tmp_path / "r3.json").write_text(json.dumps(rec))
    new = json.loads(_protect(d).recipe_json())
    assert new["missing_rows"] == "complete"
    (tmp_path / "r4.json").write_text(json.dumps(new))
    outs = {}
    for name in ("r3", "r4"):
        code, out, err = run_cli(["protect", str(tmp_path / "in.csv"), "--recipe", str(tmp_path / f"{name}.json"),
                                  "--out", str(tmp_path / f"{name}.csv")])
        assert code == 0, err
        outs[name] = pd.read_csv(tmp_path / f"{name}.csv")
    a = _ols(d)
    assert np.allclose(outs["r3"]["turnover"], old.data["turnover"], rtol=1e-12, atol=0)
    assert np.max(np.abs(_ols(outs["r3"]).params - a.params) / a.bse) > 1e-3
    assert np.max(np.abs(_ols(outs["r4"]).params - a.params) / a.bse) < 1e-6


def test_the_configure_page_offers_the_choice_only_with_missing_cells(monkeypatch, no_prefetch):
    """IPSO's tab shows 'Regression kept with missing cells' (the schema's label, default
    'both') when a numeric column has a missing cell; the choice reaches the session's
    configuration.  (Not on a complete file: tests/protect/test_schema.py, on the sample.)"""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    o = next(o for o in sdccore.option_schema("ipso") if o.name == "missing_rows")
    for missing in (60,):
        d = _firms(missing=missing)
        at = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
        at.session_state["data"] = d
        at.session_state["data_name"] = "firms.csv"
        at.session_state["data_token"] = f"firms{missing}"
        at.session_state["roles"] = {c: "sensitive" if c == "turnover" else "public" for c in d.columns}
        at.switch_page("pages/3_configure.py").run()
        at.radio(key="config_method").set_value("IPSO").run()
        assert not at.exception, [e.value for e in at.exception]
        (box,) = [b for b in at.selectbox if b.key == "ipso_missing_rows"]
        assert box.label.startswith(o.label) and box.value == "complete" and box.help == o.help
        box.set_value("filled").run()
        assert at.session_state["cfg_ipso"]["missing_rows"] == "filled"
