"""Adding an analysis is one register call (issue 37, point 2, the analyses half): a toy
analysis registered once is reported by evaluate, compare (also in worker processes), the
command line, the evaluation at scale and the dashboard's Run page, under the registry's
label; unregistered, it is gone everywhere."""

import io
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._choose import compare as compare_mod

ROOT = Path(__file__).resolve().parents[2]
# the largest change of a mean, in the original's sds (a lambda: it travels to the worker
# processes by value)
TOY = sdccore.AnalysisInfo("mean_gap", "Largest mean change (in sds)",
                           lambda o, r: float(((r.mean() - o.mean()).abs() / o.std()).max()),
                           description="the largest change of a mean, in the original's standard deviations")
BUILT_IN = ["dbrl", "id", "pil", "ps", "summary", "ps_shape", "validity_loss"]


def _drop(name):
    if name in sdccore.analyses():
        sdccore.unregister_analysis(name)


@pytest.fixture()
def toy():
    sdccore.register_analysis(TOY)
    try:
        yield TOY
    finally:
        _drop("mean_gap")


@pytest.fixture(scope="module")
def tarr():
    return sdccore.load_dataset("tarragona")


@pytest.fixture(scope="module")
def released(tarr):
    # a released file is only the vehicle here: general PCA is refused by the floors since
    # issue 38 (intruders who know the method), so it is released with a stated reason
    return sdccore.protect(tarr, "pca", rng=1, allow_unsafe="a release to measure the toy analysis on").data


def by_hand(original, released):
    """The toy's value computed column by column, without the registry."""
    gaps = []
    for c in original.columns:
        o, r = original[c].astype(float), released[c].astype(float)
        gaps.append(abs(r.mean() - o.mean()) / o.std())
    return max(gaps)


def test_evaluate_reports_the_toy_after_the_built_in_scores(toy, tarr, released):
    ev = sdccore.evaluate(tarr, released)
    assert list(ev.scores) == BUILT_IN + ["mean_gap"]
    assert ev.scores["mean_gap"] == pytest.approx(by_hand(tarr, released), rel=1e-12)
    assert dict(ev.scores)["mean_gap"] == ev.scores["mean_gap"] and ev.scores.extra == (("mean_gap", ev.scores["mean_gap"]),)
    summary = ev.summary()
    assert f"  mean_gap (Largest mean change (in sds)): {ev.scores['mean_gap']:.4f}" in summary
    # the built-in scores, their positions and the repr are those of an evaluation without it
    _drop("mean_gap")
    plain = sdccore.evaluate(tarr, released)
    assert [ev.scores[k] for k in BUILT_IN] == [plain.scores[k] for k in BUILT_IN]
    assert repr(ev) == repr(plain) and ev.scores.dbrl == plain.scores.dbrl
    # the head says the plug-in's scale is its own; the built-in lines are the same
    assert summary.splitlines()[0].startswith("Evaluation (the built-in scores in [0, 1], lower is better; each plug-in")
    assert summary.splitlines()[1:8] == plain.summary().splitlines()[1:8]
    # selective protection: after selectivity and overall
    sdccore.register_analysis(TOY)
    sel = sdccore.evaluate(tarr, released, sensitive=["SALES"])
    assert list(sel.scores)[-3:] == ["selectivity", "overall", "mean_gap"]


def test_the_toy_sees_the_numeric_files_without_weights_with_missing_cells(tarr, released):
    seen = []

    def probe(o, r):
        seen.append((o.copy(), r.copy()))
        return 0.5

    o, r = tarr.copy(), released.copy()
    o.loc[3, "SALES"] = np.nan
    r.loc[3, "SALES"] = np.nan
    o["w"] = r["w"] = np.linspace(1, 2, len(o))
    sdccore.register_analysis(sdccore.AnalysisInfo("probe", "Probe", probe))
    try:
        ev = sdccore.evaluate(o, r, weights="w")
    finally:
        _drop("probe")
    assert ev.scores["probe"] == 0.5
    (po, pr), = seen
    assert list(po.columns) == list(pr.columns) == list(tarr.columns)  # the weight column left out
    assert len(po) == len(pr) == len(tarr) and np.isnan(po.SALES.iloc[3]) and np.isnan(pr.SALES.iloc[3])
    assert po.drop(index=3).SALES.tolist() == tarr.drop(index=3).SALES.astype(float).tolist()


CONFIGS = {"PCA": {"method": "pca"}, "FA": {"method": "fa"}}


# session, not module: pytest-xdist may run another module's test between the group's two on
# their worker, which tore a module fixture down and built it again
@pytest.fixture(scope="session")
def compared_with_the_toy():
    """compare with the toy registered, its runs in this process (n_jobs=1) and in worker
    processes (n_jobs=2): {n_jobs: Comparison}.  Both cases of the test below read this one
    pair (each case computed both comparisons before)."""
    tarr = sdccore.load_dataset("tarragona")
    sdccore.register_analysis(TOY)
    try:
        return {n_jobs: sdccore.compare(tarr, CONFIGS, reps=3, rng=5, n_jobs=n_jobs) for n_jobs in (1, 2)}
    finally:
        _drop("mean_gap")


@pytest.mark.xdist_group("compared_with_the_toy")  # one pytest-xdist worker, so that the fixture runs once
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_compare_summarises_the_toy_here_and_in_worker_processes(compared_with_the_toy, n_jobs):
    configs = CONFIGS
    assert len(configs) * 3 >= compare_mod.MIN_PARALLEL_TASKS  # with n_jobs=2 the runs go to worker processes
    c = compared_with_the_toy[n_jobs]
    assert c.runs["mean_gap"].notna().all() and len(c.runs) == 6  # measured in every run, every process
    s = c.summary[c.summary.score == "mean_gap"].set_index("config")
    assert list(s.index) == ["PCA", "FA"] and (s.reps == 3).all()
    for label in configs:
        vals = c.runs[c.runs.config == label].mean_gap
        assert s.loc[label, "mean"] == pytest.approx(vals.mean(), rel=1e-12)
        assert s.loc[label, "lo"] <= s.loc[label, "mean"] <= s.loc[label, "hi"]
    assert "mean_gap" in c.table().columns and c.table("mean_gap").index.tolist() == ["PCA", "FA"]
    # the built-in summary rows first, in their order; the plug-in's after them
    assert list(dict.fromkeys(c.summary.score)) == ["dbrl", "id", "pil", "ps", "ps_shape", "validity_loss", "summary",
                                                    "mean_gap"]
    # the same numbers whether the runs ran here or in workers
    other = compared_with_the_toy[3 - n_jobs]
    pd.testing.assert_frame_equal(c.summary, other.summary, rtol=1e-12)


def test_unregistered_the_toy_is_gone_from_evaluate_and_compare(tarr, released):
    sdccore.register_analysis(TOY)
    configs = {"PCA": {"method": "pca"}, "FA": {"method": "fa"}}
    assert "mean_gap" in sdccore.compare(tarr, configs, reps=2, rng=1, n_jobs=2).runs  # the workers have it
    sdccore.unregister_analysis("mean_gap")
    assert list(sdccore.evaluate(tarr, released).scores) == BUILT_IN
    c = sdccore.compare(tarr, configs, reps=2, rng=1, n_jobs=2)  # the workers drop it too
    assert "mean_gap" not in c.runs and "mean_gap" not in set(c.summary.score)
    assert "mean_gap" not in sdccore.analyses()


@pytest.mark.parametrize("measure, match", [
    (lambda o, r: 1 / 0, r"analysis 'bad' failed: ZeroDivisionError: division by zero"),
    (lambda o, r: "0.3", r"analysis 'bad' returned '0.3'; it must return one number"),
    (lambda o, r: np.inf, r"analysis 'bad' returned inf; it must return one number"),
    (lambda o, r: r.mean(), r"(?s)analysis 'bad' returned .*; it must return one number"),
    (lambda o, r: True, r"analysis 'bad' returned True; it must return one number"),
])
def test_a_bad_analysis_is_one_error_naming_it(tarr, released, measure, match):
    sdccore.register_analysis(sdccore.AnalysisInfo("bad", "Bad", measure))
    try:
        with pytest.raises(ValueError, match=match):
            sdccore.evaluate(tarr, released)
    finally:
        _drop("bad")


def test_nan_and_numpy_numbers_are_accepted(tarr, released):
    sdccore.register_analysis(sdccore.AnalysisInfo("nothing", "Nothing", lambda o, r: np.nan))
    sdccore.register_analysis(sdccore.AnalysisInfo("half", "Half", lambda o, r: np.float32(0.5), direction="higher"))
    try:
        ev = sdccore.evaluate(tarr, released)
        assert "  half (Half; higher is better): 0.5000" in ev.summary()
    finally:
        _drop("nothing")
        _drop("half")
    assert np.isnan(ev.scores["nothing"]) and ev.scores["half"] == 0.5 and type(ev.scores["half"]) is float


def test_register_refuses_what_it_cannot_report():
    with pytest.raises(ValueError, match="built in"):
        sdccore.register_analysis(sdccore.AnalysisInfo("dbrl", "Mine", lambda o, r: 0.0))
    with pytest.raises(ValueError, match="direction must be 'lower' or 'higher'"):
        sdccore.register_analysis(sdccore.AnalysisInfo("x", "X", lambda o, r: 0.0, direction="up"))
    with pytest.raises(TypeError, match="must be an AnalysisInfo"):
        sdccore.register_analysis({"name": "x", "label": "X", "measure": lambda o, r: 0.0})
    with pytest.raises(ValueError, match="built in"):
        sdccore.unregister_analysis("pil")
    assert "x" not in sdccore.analyses()


def test_the_labels_are_the_registrys_alone(toy, tarr, released, tmp_path):
    """The dashboard and the command line print the registry's labels (no second copy of the
    words anywhere in them)."""
    from sdccore._measures import analyses
    from sdccore.__main__ import main
    from ui import figures

    assert dict(figures.SCORE_NAMES) == analyses.labels() and list(figures.SCORE_NAMES)[-1] == "mean_gap"
    assert figures.SCORE_NAMES["mean_gap"] == "Largest mean change (in sds)"
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    tarr.to_csv(a, index=False)
    released.to_csv(b, index=False)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["evaluate", str(a), str(b)]) in (0, None)
    ev = sdccore.evaluate(pd.read_csv(a), pd.read_csv(b))
    printed = dict(re.findall(r"^  (.+?) +(\d\.\d{4})$", out.getvalue(), re.M))
    assert printed == {analyses.label(k): f"{v:.4f}" for k, v in ev.scores.items()}
    # no module of the dashboard or the command line spells a built-in score's label itself
    words = [lab for k, lab in analyses.labels().items() if k in analyses.BUILT_IN and " " in lab]
    files = (list((ROOT / "ui").glob("*.py")) + list((ROOT / "pages").glob("*.py"))
             + [ROOT / "app.py", ROOT / "sdccore" / "__main__.py"] + list((ROOT / "sdccore" / "_cli").glob("*.py")))
    for p in files:
        text = p.read_text()
        assert not [w for w in words if w in text], p.name


def test_compare_on_the_command_line_prints_the_toy(toy, tarr, tmp_path, monkeypatch):
    from sdccore.__main__ import main

    monkeypatch.setenv("SDCCORE_JOBS", "1")
    monkeypatch.setattr(compare_mod, "warm_workers", lambda wait=False: None)
    a = tmp_path / "a.csv"
    tarr.to_csv(a, index=False)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["compare", str(a), "--reps", "2", "--seed", "1", "--methods", "fa,pca,magg"])
    text = out.getvalue()
    assert text.startswith("Every configuration over 2 runs: the runs meeting every risk floor")
    assert "\nSummary over 2 runs (mean and 95 % t interval of the mean; lower is better):" in text
    assert "\nLargest mean change (in sds) over 2 runs" in text


def test_at_scale_a_scale_form_is_measured_and_the_others_are_named(tarr, released):
    dd = pytest.importorskip("dask.dataframe")
    import dask

    from sdccore._scale.measures import evaluate_dask

    gap = sdccore.AnalysisInfo("mean_gap", TOY.label, TOY.measure, scale=TOY.measure)
    sdccore.register_analysis(gap)
    sdccore.register_analysis(sdccore.AnalysisInfo("whole", "Whole file only", lambda o, r: 0.0,
                                                   scale_refusal="it needs every record in memory"))
    sdccore.register_analysis(sdccore.AnalysisInfo("plain", "Plain", lambda o, r: 0.0))
    try:
        with dask.config.set(scheduler="synchronous"):
            ev = evaluate_dask(dd.from_pandas(tarr, npartitions=3), dd.from_pandas(released, npartitions=2),
                               sample=len(tarr))
    finally:
        for n in ("mean_gap", "whole", "plain"):
            _drop(n)
    # every record sampled: the sample is the file, the value is evaluate's
    assert ev.table.loc["mean_gap", "estimate"] == pytest.approx(by_hand(tarr, released), rel=1e-12)
    assert "whole" not in ev.table.index and "plain" not in ev.table.index
    assert ev.notes == ("analysis 'whole' is not measured at scale: it needs every record in memory",
                        "analysis 'plain' is not measured at scale: it has no form at scale")


def test_the_run_page_shows_the_toy(toy, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    # since issue 38 general protection of Tarragona is refused at every seed (and the Run page
    # shows no metrics for a refused release): selective IPSO of SALES, which meets the floors
    # at the session's seed, is the release the toy is shown for
    at.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    at.switch_page("pages/4_run.py").run()
    at.multiselect(key="run_methods").set_value(["IPSO"]).run()
    at.slider(key="run_reps").set_value(2).run()
    at.button(key="run_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "method" in d.value.columns
                 and "Record linkage (DBRL)" in d.value.columns)
    assert list(table.columns)[-1] == "Largest mean change (in sds)"  # after the built-in scores, in their order
    assert table["Largest mean change (in sds)"].str.match(r"0\.\d{4} \(runs \[").all()
    if at.radio(key="release_pick").value is None:
        at.radio(key="release_pick").set_value(at.radio(key="release_pick").options[0]).run()
    labels = [m.label for m in at.metric]
    assert labels[-1] == "Largest mean change (in sds)" and labels[0] == "Record linkage (DBRL)"


def test_an_analysis_cannot_take_the_name_of_a_comparison_column():
    """After a plug-in author's review: an analysis named 'seed' or 'config' overwrote
    compare's columns (the runs' seeds lost, the summary empty)."""
    from sdccore._measures.analyses import RESERVED

    for name in ("seed", "config", "run", "score", "mean"):
        assert name in RESERVED
        with pytest.raises(ValueError, match=f"the analysis' name '{name}' is a column of compare's tables"):
            sdccore.register_analysis(sdccore.AnalysisInfo(name, "X", lambda o, r: 0.5))
    with pytest.raises(ValueError, match="needs a label"):
        sdccore.register_analysis(sdccore.AnalysisInfo("nolabel", "", lambda o, r: 0.5))


def test_a_run_an_analysis_cannot_measure_is_left_out_of_its_mean():
    """NaN in one run (the analysis could not measure there) leaves that run out of the mean
    and its interval instead of making them NaN."""
    df = sdccore.load_dataset("tarragona")
    calls = []

    def sometimes(o, r):
        calls.append(1)
        return float("nan") if len(calls) == 2 else 0.5
    sdccore.register_analysis(sdccore.AnalysisInfo("sometimes", "Sometimes", sometimes))
    try:
        c = sdccore.compare(df, [{"method": "rankswap"}], sensitive=["SALES"], reps=4, rng=1, n_jobs=1)
    finally:
        sdccore.unregister_analysis("sometimes")
    row = c.summary[c.summary.score == "sometimes"].iloc[0]
    assert row["mean"] == 0.5 and row.reps == 3 and c.runs["sometimes"].isna().sum() == 1
    assert c.summary[c.summary.score == "dbrl"].iloc[0].reps == 4


def test_the_kernel_warm_up_does_not_call_a_registered_analysis():
    """The dashboard warms the kernels in a background thread (``compile_kernels``: every
    method protected and evaluated on a synthetic file); a user's registered analysis is not
    run on that toy (it ran there, and a later comparison's analysis that counted its calls
    saw the warm-up's calls as its own)."""
    calls = []
    sdccore.register_analysis(sdccore.AnalysisInfo("counted", "Counted", lambda o, r: calls.append(1) or 0.0))
    try:
        sdccore.compile_kernels()
        assert calls == []
        sdccore.evaluate(*(sdccore.load_dataset("tarragona").select_dtypes("number"),) * 2, rng=1)
        assert calls == [1]  # evaluate itself still runs it
    finally:
        sdccore.unregister_analysis("counted")
