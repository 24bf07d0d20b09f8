"""The regression check (issue 14, part 4): a researcher's linear regression on the original
and on the release, coefficient by coefficient, with the confidence-interval overlap of Karr
et al. (2006); in the library, in ``compare`` (averaged over runs) and in the CLI."""

import io
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sdccore
from sdccore.__main__ import main as cli_main
from sdccore._measures.regression import _overlap

MODEL = "SALES ~ LABOR.COSTS + FIXED.ASSETS"


@pytest.fixture(scope="module")
def tarr():
    return sdccore.load_dataset("tarragona")


def test_hand_computed_simple_regression():
    # y = 0.8 + 1.3 x: Sxy = 6.5, Sxx = 5, residuals 0.2, -0.1, -0.4, 0.3 (SSR 0.30, s^2 0.15),
    # se(slope) = sqrt(0.15 / 5); t(0.975, 2) = 4.302652729911275
    d = pd.DataFrame({"x": [0.0, 1, 2, 3], "y": [1.0, 2, 3, 5]})
    chk = sdccore.regression_check(d, d, "y ~ x")
    t = chk.table
    assert t.loc["x", "coef_original"] == pytest.approx(1.3, abs=1e-12)
    assert t.loc["Intercept", "coef_original"] == pytest.approx(0.8, abs=1e-12)
    half = 4.302652729911275 * np.sqrt(0.15 / 5)
    assert t.loc["x", "lo_original"] == pytest.approx(1.3 - half, abs=1e-10)
    assert t.loc["x", "hi_original"] == pytest.approx(1.3 + half, abs=1e-10)
    # identical files: the intervals coincide
    assert (t["overlap"] == 1).all() and (t["std_diff"] == 0).all() and t["sign_kept"].all()
    assert chk.mean_overlap == 1 and chk.n_original == chk.n_protected == 4


def test_overlap_formula_by_hand():
    # (0, 2) against (1, 3): the common part 1 is half of each: 0.5
    assert _overlap(np.array([0.0]), np.array([2.0]), np.array([1.0]), np.array([3.0]))[0] == pytest.approx(0.5)
    # (0, 1) against (2, 3): one interval width apart: -1 (synthpop's ci.overlap is not clamped)
    assert _overlap(np.array([0.0]), np.array([1.0]), np.array([2.0]), np.array([3.0]))[0] == pytest.approx(-1.0)
    # (0, 4) against (1, 2): (1/4 + 1/1) / 2
    assert _overlap(np.array([0.0]), np.array([4.0]), np.array([1.0]), np.array([2.0]))[0] == pytest.approx(0.625)


def _ols_by_hand(df, y, xs, level=0.95):
    """The same fit computed a second way: numpy least squares and the t quantile."""
    X = np.column_stack([np.ones(len(df))] + [df[c].to_numpy(float) for c in xs])
    Y = df[y].to_numpy(float)
    b, *_ = np.linalg.lstsq(X, Y, rcond=None)
    r = Y - X @ b
    dof = len(Y) - X.shape[1]
    s2 = r @ r / dof
    se = np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X)))
    q = stats.t.ppf(0.5 + level / 2, dof)
    return b, b - q * se, b + q * se, se


def test_statsmodels_agrees_with_least_squares_by_hand(tarr):
    rel = sdccore.protect(tarr, "magg", rng=3, allow_unsafe="test of the fit, not published").data
    chk = sdccore.regression_check(tarr, rel, MODEL, level=0.9)
    t = chk.table
    for which, df in (("original", tarr), ("protected", rel)):
        b, lo, hi, se = _ols_by_hand(df, "SALES", ["LABOR.COSTS", "FIXED.ASSETS"], level=0.9)
        np.testing.assert_allclose(t[f"coef_{which}"].to_numpy(), b, rtol=1e-8)
        np.testing.assert_allclose(t[f"lo_{which}"].to_numpy(), lo, rtol=1e-8)
        np.testing.assert_allclose(t[f"hi_{which}"].to_numpy(), hi, rtol=1e-8)
        if which == "original":
            np.testing.assert_allclose(t["std_diff"].to_numpy(), (t["coef_protected"].to_numpy() - b) / se,
                                       rtol=1e-8)
    assert list(t.index) == ["Intercept", "LABOR.COSTS", "FIXED.ASSETS"]
    assert chk.mean_overlap == pytest.approx(t["overlap"].mean())


def test_shuffled_release_gives_the_same_check(tarr):
    # general PCA is refused since issue 38 (intruders who know the method); the release is
    # only the vehicle of the check here
    rel = sdccore.protect(tarr, "pca", rng=1, allow_unsafe="test of the record order, not published").data
    a = sdccore.regression_check(tarr, rel, MODEL).table
    b = sdccore.regression_check(tarr, rel.sample(frac=1, random_state=4), MODEL).table
    pd.testing.assert_frame_equal(a, b, rtol=1e-9)


def test_names_with_dots_bare_or_quoted_give_the_same_fit(tarr):
    bare = sdccore.regression_check(tarr, tarr, "SALES ~ FIXED.ASSETS + np.log(LABOR.COSTS)")
    quoted = sdccore.regression_check(tarr, tarr, 'SALES ~ Q("FIXED.ASSETS") + np.log(Q("LABOR.COSTS"))')
    assert list(bare.table.index) == list(quoted.table.index) == ["Intercept", "FIXED.ASSETS", "np.log(LABOR.COSTS)"]
    np.testing.assert_array_equal(bare.table["coef_original"], quoted.table["coef_original"])


def test_transformations_and_missing_cells(tarr):
    d = tarr.copy()
    d.loc[:9, "SALES"] = np.nan
    chk = sdccore.regression_check(d, tarr, "np.log(SALES) ~ np.log(LABOR.COSTS) + FIXED.ASSETS")
    # left out: the 10 missing SALES and the records whose log is not finite (amounts of 0)
    usable = lambda x: int((x["SALES"].gt(0) & x["LABOR.COSTS"].gt(0)).sum())  # noqa: E731 (NaN > 0 is False)
    assert chk.n_original == usable(d) < len(tarr) - 10 and chk.n_protected == usable(tarr)
    assert list(chk.table.index) == ["Intercept", "np.log(LABOR.COSTS)", "FIXED.ASSETS"]
    # the same fit with the records dropped by hand
    full = sdccore.regression_check(d.dropna(), d.dropna(), "np.log(SALES) ~ np.log(LABOR.COSTS) + FIXED.ASSETS")
    np.testing.assert_allclose(chk.table["coef_original"], full.table["coef_original"], rtol=1e-12)


@pytest.mark.parametrize("model,match", [
    ("SALES LABOR.COSTS", "must be a formula"),
    ("~ LABOR.COSTS", "needs a response"),
    ("SALES ~ NOT_THERE", "could not be read on the original data"),
    (42, "must be a formula"),
])
def test_bad_models_are_refused_plainly(tarr, model, match):
    with pytest.raises(ValueError, match=match):
        sdccore.regression_check(tarr, tarr, model)


def test_too_few_records_and_bad_level(tarr):
    with pytest.raises(ValueError, match="usable record"):
        sdccore.regression_check(tarr.iloc[:3], tarr.iloc[:3], MODEL)
    with pytest.raises(ValueError, match="level=1.5"):
        sdccore.regression_check(tarr, tarr, MODEL, level=1.5)


def test_compare_averages_the_runs_and_each_run_is_the_library_check(tarr):
    models = [MODEL, "np.log(SALES) ~ np.log(LABOR.COSTS)"]
    c = sdccore.compare(tarr, {"M-AGG": {"method": "magg"}}, reps=3, rng=5, models=models, n_jobs=1)
    assert set(c.regression["model"]) == set(models) and len(c.regression) == 3 * (3 + 2)
    # run 1's table is regression_check on the release protect gives for that run's seed
    seed = int(c.runs.loc[c.runs.run == 1, "seed"].iloc[0])
    rel = sdccore.protect(tarr, "magg", rng=seed, allow_unsafe="test: the same run again").data
    want = sdccore.regression_check(tarr, rel, MODEL).table
    got = c.regression[(c.regression.run == 1) & (c.regression.model == MODEL)].set_index("term")
    np.testing.assert_allclose(got["overlap"].to_numpy(), want["overlap"].to_numpy(), rtol=1e-10)
    s = c.regression_summary()
    row = s[(s.model == MODEL) & (s.term == "LABOR.COSTS")].iloc[0]
    runs = c.regression[(c.regression.model == MODEL) & (c.regression.term == "LABOR.COSTS")]
    assert row["overlap"] == pytest.approx(runs["overlap"].mean()) and row["reps"] == 3
    assert row["overlap_lo"] <= row["overlap"] <= row["overlap_hi"]


def test_compare_refuses_a_bad_model_before_any_run(tarr):
    calls = []
    with pytest.raises(ValueError, match="could not be read"):
        sdccore.compare(tarr, {"PCA": {"method": "pca"}}, reps=2, rng=0, models=["SALES ~ NOPE"],
                        progress=lambda d, t: calls.append(d))
    assert calls == []
    with pytest.raises(TypeError, match="models="):
        sdccore.compare(tarr, {"PCA": {"method": "pca"}}, reps=2, rng=0, models=[1])


def _cli(args):
    out, err = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(args)
    return code, out.getvalue(), err.getvalue()


def test_cli_evaluate_model(tarr, tmp_path):
    # general PCA is refused since issue 38; the release is only the vehicle of the CLI check
    rel = sdccore.protect(tarr, "pca", rng=1, allow_unsafe="test of evaluate --model, not published").data
    tarr.to_csv(tmp_path / "o.csv", index=False)
    rel.to_csv(tmp_path / "p.csv", index=False)
    code, out, err = _cli(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "p.csv"), "--model", MODEL, "--json"])
    assert code == 0, err
    import json
    reg = json.loads(out)["regression"][0]
    want = sdccore.regression_check(pd.read_csv(tmp_path / "o.csv"), pd.read_csv(tmp_path / "p.csv"), MODEL)
    assert reg["model"] == MODEL and reg["n_protected"] == want.n_protected
    assert reg["coefficients"]["FIXED.ASSETS"]["overlap"] == pytest.approx(want.table.loc["FIXED.ASSETS", "overlap"],
                                                                          rel=1e-10)
    code, out, _ = _cli(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "p.csv"), "--model", MODEL,
                         "--model", "np.log(SALES) ~ np.log(LABOR.COSTS)"])
    assert code == 0 and out.count("regression ") == 2 and "FIXED.ASSETS" in out and "overlap" in out
    code, out, err = _cli(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "p.csv"), "--model", "SALES ~ NOPE"])
    assert code == 2 and err.count("\n") == 1 and "could not be read on the original data" in err and out == ""


def test_cli_compare_model(tarr, tmp_path):
    import json
    tarr.to_csv(tmp_path / "o.csv", index=False)
    code, out, err = _cli(["compare", str(tmp_path / "o.csv"), "--reps", "2", "--seed", "3", "--model", MODEL, "--json",
                           "--methods", "fa,pca,magg"])
    assert code == 0, err
    regs = json.loads(out)["regression"]
    # the three methods --methods names, and their second round with the largest records aggregated
    assert {r["config"].replace(" + largest aggregated", "") for r in regs} <= {"FA", "PCA", "M-AGG"} and len(regs) >= 2
    want = sdccore.compare(tarr, {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"}},
                           reps=2, rng=3, models=[MODEL], tails=True, scales=True, domains=True).regression_summary()
    r = next(x for x in regs if x["config"] == "PCA")
    w = want[(want.config == "PCA") & (want.term == "LABOR.COSTS")].iloc[0]
    assert r["coefficients"]["LABOR.COSTS"]["overlap"] == pytest.approx(w["overlap"], rel=1e-10)


# ----------------------------------------------------------------------------- dashboard

def test_dashboard_run_page_regression(monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(root)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=180).run()
    # selective rank swapping of SALES meets the floors on Tarragona (test_app.py; with NET.PROFIT
    # too the assignment intruder refuses it)
    at.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    at.switch_page("pages/4_run.py").run()
    # a typo is said at once, the good formula is kept
    at.text_area(key="run_models").input(MODEL + "\nSALES ~ NOPE").run()
    assert not at.exception
    assert any("`SALES ~ NOPE` is left out" in e.value for e in at.error)
    assert at.session_state["models"] == [MODEL]
    at.multiselect(key="run_methods").set_value(["M-AGG", "Rank swap"]).run()
    at.slider(key="run_reps").set_value(2).run()
    at.button(key="run_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    res = at.session_state["comparison"]["result"]
    assert set(res.regression["model"]) == {MODEL} and set(res.regression["config"]) == {"M-AGG", "Rank swap"}
    tables = [d for d in at.dataframe if "original [95 % CI]" in list(d.value.columns)]
    assert tables, "the coefficients are shown side by side"
    shown = tables[0].value
    assert list(shown.columns[:4]) == ["method", "coefficient", "original [95 % CI]", "protected [95 % CI]"]
    # the chosen release's own check
    at.radio(key="release_pick").set_value("Rank swap").run()
    assert not at.exception
    assert any("This release (seed" in c.value for c in at.caption)
    # into the report
    at.switch_page("pages/5_download.py").run()
    assert not at.exception
    assert at.session_state["models"] == [MODEL]


def test_regression_figure_and_table_are_pure():
    from ui import figures
    d = pd.DataFrame({"x": [0.0, 1, 2, 3, 4], "y": [1.0, 2, 3, 5, 4]})
    chk = sdccore.regression_check(d, d.assign(y=d.y + [0.5, -0.5, 0.5, -0.5, 0.0]), "y ~ x")
    fig = figures.regression_figure(chk.table, chk.model)
    # the original's interval is -1..1 on the common scale, for every coefficient
    assert list(fig.data[0].x) == [0.0, 0.0] and list(fig.data[0].error_x.array) == [1.0, 1.0]
    t = chk.table
    want = (t.loc["x", "coef_protected"] - t.loc["x", "coef_original"]) / (t.loc["x", "hi_original"] - t.loc["x", "coef_original"])
    assert fig.data[1].x[1] == pytest.approx(want)
    tab = figures.regression_table(chk.table)
    assert tab["coefficient"].tolist() == ["Intercept", "x"] and tab["sign kept"].tolist() == ["yes", "yes"]


def test_report_has_the_regression(tarr):
    from ui import report
    # general PCA is refused since issue 38; the release is only the vehicle of the report
    res = sdccore.protect(tarr, method="pca", rng=7, allow_unsafe="test of the report's regression, not published")
    ev = sdccore.evaluate(tarr, res.data)
    chk = sdccore.regression_check(tarr, res.data, MODEL)
    html = report.build_report("internal", "t", (834, 13), {"SALES": "public"}, "PCA", res.options, ev,
                               regressions=[chk])
    assert "Does the analysis still hold?" in html and "FIXED.ASSETS" in html and f"{chk.mean_overlap:.3f}" in html
    plain = report.build_report("internal", "t", (834, 13), {"SALES": "public"}, "PCA", res.options, ev)
    assert "Does the analysis still hold?" not in plain
