"""The dashboard with streamlit.testing.v1.AppTest: every page, the main flow by widget
keys, bad uploads, and the pure figure builders."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import sdccore
from sdccore._io import read as _io

ROOT = Path(__file__).resolve().parents[2]
# every page file (a page added later is opened first by the test of a fresh server too)
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))


@pytest.fixture()
def app(monkeypatch, request):
    if "no_prefetch" in request.fixturenames:
        request.getfixturevalue("no_prefetch")  # before the first run, which would start it
    monkeypatch.setenv("SDC_DEBUG", "1")  # page errors raise instead of showing the plain message
    monkeypatch.chdir(ROOT)
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _ok_but_floors(at):
    """No exception, and the only errors are risk-floor findings (a variable, a floor, a fix)."""
    assert not at.exception, [e.value for e in at.exception]
    for e in at.error:
        assert "floor" in e.value or "more violation" in e.value, e.value


def _cells_whole(at):
    """Issue 41: no table cuts a header or a cell (st.dataframe cuts text at its column's edge):
    every table is sized by ``ui.widgets.table``, each column as wide as its header and, for
    long text, wrapped over rows tall enough for its longest cell."""
    from ui import widgets as w
    assert at.dataframe
    for d in at.dataframe:
        cfg = json.loads(d.proto.columns or "{}")
        lines = 1 if not d.proto.row_height else (d.proto.row_height - 12) // w.LINE_PX
        for col in d.value.columns:
            assert str(col) in cfg and "width" in cfg[str(col)], (d.proto.id, col)
            width = cfg[str(col)]["width"]
            assert len(str(col)) * w.CHAR_PX + w.PAD_PX <= width, (col, width)  # the header whole
            longest = max([len(w._shown(v)) for v in d.value[col].tolist()] or [0])
            per_line = (width - w.PAD_PX) / w.CHAR_PX * (0.8 if lines > 1 else 1)
            assert longest <= per_line * lines, (col, longest, width, lines)


def test_every_page_renders_on_the_sample(app):
    _ok(app)
    assert app.session_state["data_name"] == "tarragona"
    # the sidebar shows data set, size and roles
    side = " ".join(m.value for m in app.markdown)
    assert "tarragona" in side and "834" in side
    for page in PAGES:
        app.switch_page(page).run()
        if page == "pages/3_configure.py":
            # (since issue 38 general protection of the sample breaks the floors with every method:
            # the one-run preview lists the violations)
            _ok_but_floors(app)
            assert app.error
        elif page == "pages/5_download.py":
            # (since issue 38: and nothing is offered for download, with the reason)
            assert not app.exception, [e.value for e in app.exception]
            assert [e.value.startswith("No method meets the risk floors with its default settings on these data")
                    for e in app.error] == [True]
        else:
            _ok(app)


def test_main_flow_by_widget_keys(app):
    # SALES alone: with NET.PROFIT too, no method offered today meets the floors (the assignment
    # intruder gets a third of the largest firms' NET.PROFIT from a rank swap beyond the prior)
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    _ok(app)
    assert app.session_state["roles"]["SALES"] == "sensitive"
    app.switch_page("pages/2_explore.py").run()
    _ok(app)
    assert any("Recommended" in s.value for s in app.success)
    app.switch_page("pages/3_configure.py").run()
    # selective FA changes the public variables: the preview says SALES is given away, and why
    _ok_but_floors(app)
    assert any("reconstructs SALES" in e.value for e in app.error)
    app.selectbox(key="fa_rotation").set_value("varimax").run()
    app.radio(key="fa_selection").set_value("manual").run()
    app.checkbox(key="fa_mask_2").check().run()
    assert not app.exception
    cfg = app.session_state["cfg_fa"]
    assert cfg["rotation"] == "varimax" and cfg["factors"] == [1, 2]
    # varimax factors 1-2 leave SALES mostly untouched: said before anything runs
    assert any("SALES: only" in e.value and "no release can be made" in e.value for e in app.error)
    app.radio(key="fa_selection").set_value("all").run()
    _ok_but_floors(app)
    app.radio(key="config_method").set_value("M-AGG").run()
    app.number_input(key="magg_k").set_value(5).run()
    assert app.session_state["cfg_magg"]["k"] == 5
    # remembered across pages
    app.switch_page("pages/1_data.py").run()
    app.switch_page("pages/3_configure.py").run()
    app.radio(key="config_method").set_value("FA").run()
    assert app.selectbox(key="fa_rotation").value == "varimax"
    app.radio(key="config_method").set_value("PCA").run()
    _ok_but_floors(app)
    app.radio(key="config_method").set_value("Rank swap").run()
    app.number_input(key="rankswap_p").set_value(80.0).run()
    _ok(app)  # SALES swapped alone: the public variables show nothing, the assignment adds < 20 %
    assert app.session_state["cfg_rankswap"] == {"method": "rankswap", "p": 80.0}
    # the prior beside the risk: what the public variables already give, what the release adds
    assert any("known within 5% beforehand" in m.value
               and "the release finds" in m.value for m in app.markdown)
    app.switch_page("pages/4_run.py").run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    _ok(app)
    _cells_whole(app)
    res = app.session_state["comparison"]["result"]
    first = {"FA", "PCA", "M-AGG", "Rank swap", "PCA-R", "IPSO", "Shuffle", "FA-cond", "Q-exchange"}
    # the log scale's second round: the offered ones that lose SALES's log-log regression, again keeping both
    # scales (their method's settings for it)
    second = set(res.configs) - first
    assert first <= set(res.configs) and "IPSO + both scales" in second
    assert second <= {"IPSO + both scales", "Q-exchange + both scales"}
    assert res.configs["IPSO + both scales"] == {**res.configs["IPSO"], "keep": "scales", "classes": 5}
    assert len(res.runs) == 2 * len(res.configs)  # 2 runs of each configuration of both rounds
    assert {"selectivity", "overall", "validity_loss"} <= set(res.summary.score)
    safety = res.safety().set_index("config")
    safe = safety.floors_met
    # (rank swapping with p = 80 % by shifted ranks, since issue 38, and IPSO, which guards its largest
    # records, meet every floor in both runs; in pairs with p = 60 % the first run broke the floor
    # in the largest 9 records by the residual intruder, where one record decides)
    assert safe["Rank swap"] == 1.0 and safe["IPSO"] == 1.0 and safe["FA"] == 0.0 and safe["PCA"] == 0.0
    assert list(safety.expected_ok[["Rank swap", "IPSO", "FA", "PCA"]]) == [True, True, False, False]
    # the suggestion: of the safe ones, the release that keeps the most of the analysts' battery
    # (issue 39); IPSO keeps the regression of SALES on the public variables, little else
    said = next(s.value for s in app.success if s.value.startswith("Suggested release: **"))
    suggested = said.split("**")[1]
    assert "analyses researchers run" in said and "and in the run released" in said
    # the safety table says what each safe configuration's run released keeps; the suggestion
    # keeps the most, or within one of the most
    kept = next(d.value for d in app.dataframe if "analyses kept in the run released" in d.value.columns)
    kept = kept.set_index("config")["analyses kept in the run released"]
    met = {c: int(v.split(" of ")[0]) for c, v in kept.items() if v}
    assert suggested in met and met[suggested] >= max(met.values()) - 1
    assert f"keeps {met[suggested]} of 14 analyses" in said
    assert kept["IPSO"].startswith(f"{met['IPSO']} of 14 (misses: ") and "median regression" in kept["IPSO"]
    assert "OLS with robust errors" in kept["IPSO"]
    assert app.radio(key="utility_axis").value == "validity_loss"
    app.radio(key="release_pick").set_value("IPSO").run()
    _ok(app)
    # the Run page shows what analysts keep in the picked release (issue 39): IPSO keeps the OLS of
    # SALES on the public variables exactly, not its median regression
    table = next(d.value for d in app.dataframe if "Analysis" in d.value.columns).set_index("Analysis")
    assert table.loc["OLS regression", "Kept"] == "yes" and table.loc["median regression", "Kept"] == "NO"
    assert any("Analysts would see a difference: " in w.value for w in app.warning)
    app.switch_page("pages/5_download.py").run()
    _ok(app)
    csv = next(b for b in app.get("download_button") if b.label == "Download the protected CSV").proto.url
    assert csv  # the file itself is checked in the browser test
    _cells_whole(app)
    app.switch_page("pages/4_run.py").run()
    app.radio(key="release_pick").set_value("Rank swap").run()
    _ok(app)
    app.switch_page("pages/5_download.py").run()
    _ok(app)
    labels = [b.label for b in app.get("download_button")]
    assert labels == ["Download the protected CSV", "Download the recipe (JSON)", "Download the codebook (CSV)",
                      "Download the codebook (JSON)", "Download the report (HTML)"]
    # rank swapping runs at scale too (sdccore.scale_refusal says so): the page gives the command
    assert [c for c in app.code if "--engine dask" in c.value and "_recipe.json" in c.value]
    assert not any("does not run on the Dask engine" in c.value for c in app.caption)


def test_conditional_methods_on_the_configure_page(no_prefetch, app):
    """IPSO, shuffling and conditional FA are offered with sensitive and public variables,
    configured by widget key and previewed against the floors; not offered in general
    protection."""
    app.switch_page("pages/3_configure.py").run()
    _ok_but_floors(app)  # (since issue 38 the general preview on the sample lists floor violations)
    assert "IPSO" not in app.radio(key="config_method").options
    app.switch_page("pages/1_data.py").run()
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    app.switch_page("pages/3_configure.py").run()
    assert {"IPSO", "Shuffle", "FA-cond"} <= set(app.radio(key="config_method").options)
    app.radio(key="config_method").set_value("IPSO").run()
    _ok(app)
    app.number_input(key="ipso_classes").set_value(2).run()
    _ok_but_floors(app)
    assert app.session_state["cfg_ipso"] == {"method": "ipso", "classes": 2}
    app.radio(key="config_method").set_value("FA-cond").run()
    app.number_input(key="cfa_n_factors").set_value(3).run()
    _ok_but_floors(app)
    assert app.session_state["cfg_cfa"]["n_factors"] == 3
    # what each factor means for the result, as the caption promises
    assert any(i.value.startswith("factor F") and "the public variables determine" in i.value for i in app.info)
    app.radio(key="config_method").set_value("Shuffle").run()
    _ok_but_floors(app)
    assert any("Data shuffling" in c.value for c in app.caption)


def _upload(raw, name):
    """Run the dashboard's upload path (ui.loading.handle_upload) inside a Streamlit script."""
    def script():
        import streamlit as st
        from ui import compute, loading, session
        loading.init()
        err = loading.handle_upload(st.session_state["raw"], st.session_state["name"])
        st.write(err or f"ok {session.data().shape[0]} x {session.data().shape[1]}")
        for n in st.session_state.get("read_notes", []):
            st.write(n)
        for p in compute.problems():
            st.write(f"{p.message}. Fix: {p.fix}")
    at = AppTest.from_function(script, default_timeout=60)
    at.session_state["raw"] = raw
    at.session_state["name"] = name
    at.run()
    assert not at.exception
    return [m.value for m in at.markdown]


@pytest.mark.parametrize("raw,name,expect", [
    (b"", "empty.csv", "the file is empty"),
    (b"just some words\nand more words here\n", "text.csv", "0 numeric column(s) to protect"),
    (b"a;b;c\n1,5;2,25;3\n2,5;3,5;1\n4,0;1,0;2\n3,1;2,2;9\n", "semi.csv", "ok 4 x 3"),
    (b"a,b,c\n1,2,3\n,3,1\n4,,2\n5,6,7\n", "nan.csv", "2 missing cell(s) in 2 record(s)"),
    (b"a,b\n1,2\n", "onerow.csv", "1 record(s)"),
    (b"a,b,c\nx1,2,3\n4,5,6\n7,8,1\n", "mixed.csv", "column 'a' is mostly numbers but has 1 non-numeric value(s)"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "image.csv", "binary file"),
])
def test_bad_uploads_get_plain_messages(raw, name, expect, no_prefetch):
    out = _upload(raw, name)
    assert any(expect in m for m in out), out


def test_semicolon_decimal_comma_values(no_prefetch):
    out = _upload(b"a;b;c\n1,5;2,25;3\n2,5;3,5;1\n4,0;1,0;2\n3,1;2,2;9\n", "semi.csv")
    assert out[0] == "ok 4 x 3"


def test_failed_upload_keeps_previous_data(no_prefetch):
    def script():
        import streamlit as st
        from ui import loading, session
        loading.init()
        err = loading.handle_upload(b"", "empty.csv")
        st.write(f"{err} | {st.session_state['data_name']} {session.data().shape}")
    at = AppTest.from_function(script).run()
    assert "tarragona (834, 13)" in at.markdown[0].value


def test_two_sessions_do_not_share_data(no_prefetch):
    a = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    b = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    a.selectbox(key="sample_choice").set_value("casc").run()
    assert a.session_state["data_name"] == "casc"
    b.run()
    assert b.session_state["data_name"] == "tarragona"
    assert b.session_state["data_token"] != a.session_state["data_token"]


# ------------------------------------------------------------------ pure figure builders

def test_figure_builders_are_pure_and_labelled(tarragona):
    from ui import figures
    R = sdccore.correlation_matrix(tarragona)
    fig = figures.correlation_heatmap(R)
    assert fig.data[0].z.shape == (13, 13) and list(fig.data[0].x) == list(R.columns)
    dec = sdccore.decompose(tarragona, sensitive=["SALES"])
    fig = figures.loadings_heatmap(dec.loadings, ["SALES"], dec.perturbed)
    assert "SALES *" in fig.data[0].y and len(fig.layout.shapes) == len(dec.perturbed)
    fig = figures.perturbed_share_figure(dec.perturbed_share, ["SALES"])
    assert fig.data[0].x[list(dec.perturbed_share.index).index("SALES")] > 90
    cmp_ = sdccore.compare(tarragona, {"PCA": {"method": "pca"}}, reps=2, rng=0)
    ru = cmp_.risk_utility()
    fig = figures.risk_utility_figure(ru)
    assert fig.data[0].x[0] == pytest.approx(ru.risk.iloc[0])
    assert "DBRL" in fig.layout.xaxis.title.text
    # issue 41: a refused configuration is a marker of its own style, in its colour, with a legend entry
    # (it was a white open cross, invisible, with a text label that collided with the others')
    fig = figures.risk_utility_figure(ru, refused=["PCA"])
    m = fig.data[0].marker
    assert fig.data[0].name == "PCA (refused)" and fig.data[0].mode == "markers" and m.symbol == "x-thin-open"
    assert m.color != "white" and m.color == m.line.color
    fig = figures.bw_map_figure(sdccore.load_bw_map(), (0.3, 0.4))
    assert fig.data[-1].name == "your data (black ring)" and fig.data[-1].mode == "markers"  # no label on the grid
    # one legend entry per winner, one for every tie, one for no winner (a dozen near-identical squares before)
    names = [d.name for d in fig.data[:-1]]
    assert len(names) == len(set(names)) <= 9 and sum("tie" in n for n in names) <= 1


def test_the_report_says_what_analysts_keep(tarragona):
    """Issue 39: the report carries the battery of the release, one row per analysis, with its
    verdict (IPSO on Tarragona SALES keeps the OLS, not the median regression)."""
    from ui import report

    res = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=12345)
    ev = sdccore.evaluate(tarragona, res.data, sensitive=["SALES"])
    checks = sdccore.analyst_checks(tarragona, res.data, sensitive=["SALES"])
    doc = report.build_report("external", "t", (834, 13), {"SALES": "sensitive"}, "IPSO", res.options, ev,
                              analyses=checks)
    part = doc.split("<h2>What analysts keep</h2>")[1].split("<h2>")[0]
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", part, flags=re.S):
        cells = [c.strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, flags=re.S)]
        rows[cells[0]] = cells[1:]
    assert rows["OLS regression"][-1] == "yes" and rows["median regression"][-1] == "NO"
    assert f"{checks.worst.set_index('analysis').loc['median', 'kept']:.3f}" in rows["median regression"]
    assert "Analysts would see a difference: " in part and "Not applicable here: domain means" in part
    assert "What analysts keep" not in report.build_report("external", "t", (834, 13), {}, "IPSO", res.options, ev)


def test_report_internal_has_seed_external_not(tarragona):
    from ui import report
    # (general PCA is refused on this file since issue 38: the report's seed is tested, not the floors)
    res = sdccore.protect(tarragona, method="pca", rng=777, allow_unsafe="test: the report's seed")
    ev = sdccore.evaluate(tarragona, res.data)
    internal = report.build_report("internal", "t", (834, 13), {"SALES": "public"}, "PCA", res.options, ev)
    external = report.build_report("external", "t", (834, 13), {"SALES": "public"}, "PCA", res.options, ev)
    assert ">777<" in internal and ">777<" not in external
    assert "INTERNAL" in internal and "External" in external


def test_prepare_release_and_injection():
    df = pd.DataFrame({"id": [1, 2, 3], "name": ["=cmd()", "+1", "ok"], "x": [-1.0, 2.0, 3.0], "@col": ["a", "-b", "c"]})
    out = _io.prepare_release(df, drop=["id"], shuffle=True, rng=[5, 1])
    assert list(out.columns) == ["name", "x", "'@col"]
    assert set(out["name"]) == {"'=cmd()", "'+1", "ok"}
    assert sorted(out["x"]) == [-1.0, 2.0, 3.0]  # numbers untouched
    again = _io.prepare_release(df, drop=["id"], shuffle=True, rng=[5, 1])
    pd.testing.assert_frame_equal(out, again)


def test_cli_reproduces_dashboard_release(tmp_path, tarragona):
    """The recipe downloaded from the dashboard rebuilds the downloaded CSV with the command line
    (its entry point called in this process, conftest's run_cli: a new interpreter would add
    its start and imports, about 3 CPU-s, and the command line's own start is tested in
    tests/cli/; the recipe's options and seeds are what rebuild the file)."""
    from conftest import run_cli
    res = sdccore.protect(tarragona, method="rankswap", sensitive=["SALES"], rng=99)
    recipe = dict(res.options)
    recipe["release"] = {"drop": [], "shuffle": True}
    expected = _io.prepare_release(res.data, shuffle=True, rng=[99, 1]).to_csv(index=False)
    (tmp_path / "r.json").write_text(json.dumps(recipe))
    tarragona.to_csv(tmp_path / "in.csv", index=False)
    code, _, err = run_cli(["protect", str(tmp_path / "in.csv"), "--recipe", str(tmp_path / "r.json"),
                            "--out", str(tmp_path / "out.csv")])
    assert code == 0, err
    assert (tmp_path / "out.csv").read_text() == expected


def test_returning_to_the_data_page_keeps_uploaded_data(no_prefetch, app):
    """Regression: the Data page once reloaded the sample over an uploaded file."""
    df = sdccore.load_dataset("tarragona").iloc[:100]
    app.session_state["data"] = df
    app.session_state["data_name"] = "mine.csv"
    app.session_state["data_token"] = "tok"
    app.session_state["roles"] = {c: "public" for c in df.columns}
    app.switch_page("pages/2_explore.py").run()
    app.switch_page("pages/1_data.py").run()
    _ok(app)
    assert app.session_state["data_name"] == "mine.csv" and len(app.session_state["data"]) == 100
    # choosing a sample on purpose does replace it
    app.selectbox(key="sample_choice").set_value("casc").run()
    assert app.session_state["data_name"] == "casc"


def test_every_session_starts_with_its_own_random_seed(no_prefetch, monkeypatch):
    """Issue 38 (an outside intruder found the release's seed by trying the tool's default,
    12345, and could then redo its random draws): the seed is drawn from the operating
    system's randomness for every session, and a short seed is flagged."""
    monkeypatch.delenv("SDCCORE_SEED")
    a = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    b = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    seeds = [a.session_state["seed"], b.session_state["seed"]]
    # two draws of 0 .. 2^53 - 1: equal, or one below 2^32, with chance under 1e-6
    assert seeds[0] != seeds[1] and min(seeds) >= 2**32 and max(seeds) < 2**53, seeds
    assert not any("short enough to be found" in w.value for w in a.sidebar.warning)
    a.sidebar.number_input(key="seed_input").set_value(12345).run()
    assert any("Seed 12,345 is short enough to be found by trying every seed" in w.value for w in a.sidebar.warning)


def test_seed_widget_reaches_the_page_in_the_same_run(no_prefetch, app):
    # (AppTest reports the sidebar only before a switch_page, so the seed is set on page 1)
    app.sidebar.number_input(key="seed_input").set_value(777).run()
    assert app.session_state["seed"] == 777
    app.switch_page("pages/4_run.py").run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    # (general protection of the sample at seed 777: no method of the first round can be offered, so
    # the methods that broke a floor among the largest firms run again with their largest values
    # aggregated (issue 38); none of those either (FA, PCA and M-AGG set a fifth of the skewed amounts
    # to 0, a heap that breaks a floor since issue 39): the page says so)
    assert not app.exception, [e.value for e in app.exception]
    assert [e.value.startswith("No configuration can be suggested: ") for e in app.error] == [True]
    res = app.session_state["comparison"]["result"]
    first = [c for c in res.configs if not c.endswith(" + largest aggregated")]
    assert len(first) == 5 and (res.runs.config.isin(first)).sum() == 10  # 5 methods x 2
    assert all(res.configs[c]["tail"] == "aggregate" for c in res.configs if c not in first)
    assert "777" in " ".join(c.value for c in app.caption)


def _visit_methods(app):
    app.switch_page("pages/3_configure.py").run()
    out = {}
    for label, m in (("FA", "fa"), ("PCA", "pca")):
        app.radio(key="config_method").set_value(label).run()
        assert not app.exception
        out[m] = dict(app.session_state[f"cfg_{m}"])
        out[m + "_errors"] = sorted(e.value for e in app.error)
    return out


def _set_sensitive(app, names):
    app.switch_page("pages/1_data.py").run()
    app.multiselect(key="sensitive_select").set_value(names).run()
    assert not app.exception


def test_selective_general_selective_walk_equals_fresh_sessions(monkeypatch, no_prefetch):
    """Issue 28: settings of one mode do not carry into the other; a walk selective ->
    general -> selective gives what fresh sessions give."""
    def fresh(names):
        monkeypatch.setenv("SDC_DEBUG", "1")
        monkeypatch.chdir(ROOT)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        if names:
            _set_sensitive(at, names)
        return _visit_methods(at)

    general, selective = fresh([]), fresh(["SALES"])
    assert general["fa"]["residuals"] == "swap_rows" and selective["fa"]["residuals"] == "keep"
    walk = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    _set_sensitive(walk, ["SALES"])
    assert _visit_methods(walk) == selective
    _set_sensitive(walk, [])
    assert _visit_methods(walk) == general  # general FA with its own defaults, not selective mode's
    _set_sensitive(walk, ["SALES"])
    assert _visit_methods(walk) == selective


def test_a_fix_on_the_configure_page_reaches_the_picked_release(no_prefetch, app):
    """Issue 28: the release picked on the Run page follows the method's current settings, a
    new comparison resets the pick, and a changed setting marks the comparison as stale."""
    _set_sensitive(app, ["SALES"])
    app.switch_page("pages/3_configure.py").run()
    app.radio(key="config_method").set_value("Rank swap").run()
    app.number_input(key="rankswap_p").set_value(5.0).run()  # too small a window: refused
    app.switch_page("pages/4_run.py").run()
    app.multiselect(key="run_methods").set_value(["Rank swap"]).run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    assert not app.exception
    assert any("No configuration can be suggested" in e.value for e in app.error)
    assert app.radio(key="release_pick").value is None
    app.radio(key="release_pick").set_value("Rank swap").run()
    refusal = next(e.value for e in app.error if "This release is refused" in e.value)
    assert "\n- SALES:" in refusal  # one violation per line, not run into one paragraph
    # every interval of a score in [0, 1] is written [lo, hi] within [0, 1]
    table = next(d.value for d in app.dataframe if "method" in d.value.columns
                 and "Record linkage (DBRL)" in d.value.columns)
    cells = " ".join(str(v) for v in table.drop(columns="method").to_numpy().ravel())
    assert "[" in cells and "[-" not in cells and ", -" not in cells
    # the fix, on the Configure page
    app.switch_page("pages/3_configure.py").run()
    app.radio(key="config_method").set_value("Rank swap").run()
    app.number_input(key="rankswap_p").set_value(80.0).run()
    app.switch_page("pages/4_run.py").run()
    assert not app.exception
    assert any("Changed since this comparison ran: Rank swap settings" in w.value for w in app.warning)
    assert not any("This release is refused" in e.value for e in app.error)
    assert any("The release with Rank swap" in h.value for h in app.subheader)
    app.switch_page("pages/5_download.py").run()
    assert not app.exception and not app.error
    # a new comparison: its suggestion is pre-selected (no stale pick, no contradiction)
    app.switch_page("pages/4_run.py").run()
    app.multiselect(key="run_methods").set_value(["Rank swap"]).run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    assert any("Suggested release: **Rank swap**" in s.value for s in app.success)
    assert app.radio(key="release_pick").value == "Rank swap"
    assert not any("No configuration is pre-selected" in i.value for i in app.info)
    assert not any("Changed since this comparison ran" in w.value for w in app.warning)


def test_a_refusal_offers_the_setting_that_passes(no_prefetch, app):
    """Issue 28: when nothing meets the floors, the Run page tries the main settings stronger
    and its button leads to a passing release."""
    _set_sensitive(app, ["SALES"])
    app.switch_page("pages/3_configure.py").run()
    app.radio(key="config_method").set_value("Rank swap").run()
    app.number_input(key="rankswap_p").set_value(5.0).run()
    app.switch_page("pages/4_run.py").run()
    app.multiselect(key="run_methods").set_value(["Rank swap"]).run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    assert any("No configuration can be suggested" in e.value for e in app.error)
    # the fix text names rank swapping's own setting
    assert any("a larger rank-swap window p" in e.value for e in app.error)
    app.button(key="stronger_button").click().run()
    assert not app.exception
    assert any(s.value.startswith("Found: Rank swap p=") for s in app.success)
    label = app.button(key="use_stronger").label
    assert label.startswith("Use p = ") and label.endswith(" % for Rank swap")
    app.button(key="use_stronger").click().run()
    assert not app.exception
    assert app.session_state["cfg_rankswap"]["p"] in (60.0, 80.0)
    assert any("The release with Rank swap" in h.value for h in app.subheader)
    assert not any("This release is refused" in e.value for e in app.error)


def test_a_file_too_small_for_the_floors_is_told_so(no_prefetch, app):
    import numpy as np

    rng = np.random.default_rng(0)
    small = pd.DataFrame(np.exp(rng.standard_normal((51, 4))), columns=["a", "b", "c", "d"])

    def script():
        import streamlit as st
        from ui import loading, runs
        loading.init()
        loading.set_data(st.session_state["raw_small"], "small.csv")
        st.write(runs.small_file_warning() or "fine")
    at = AppTest.from_function(script, default_timeout=60)
    at.session_state["raw_small"] = small
    at.run()
    assert not at.exception
    text = at.markdown[0].value
    assert text.startswith("51 records make 10 size bands of about 5 records each") and "fewer size bands" in text
    # the sample file is large enough: no warning
    app.switch_page("pages/4_run.py").run()
    assert not any("size bands of about" in w.value for w in app.warning)


def test_charts_and_tables_agree_with_the_text():
    """Issue 28: labels that do not pile up, the sensitive variable marked as the title says, a
    legend that fits, reasons instead of 'not assessed', percentages in History."""
    import numpy as np
    from ui import figures
    per = pd.DataFrame({"between": [0.2, 0.21, 0.5], "within": [0.3, 0.31, 0.4]}, index=["A", "B", "S"])
    fig = figures.indices_figure(per, ["S"], (0.5, 0.4))
    # issue 41: the legend's markers are the points' own colours; the set's point a ring round the variable's
    (others, sens, ring) = fig.data
    assert list(others.customdata) == ["A", "B"] and others.marker.color == "#7f7f7f" and others.text is None
    assert list(sens.text) == ["S"] and sens.marker.color == "#d62728"
    assert ring.marker.symbol == "circle-open" and ring.marker.size > sens.marker.size
    load = pd.DataFrame(np.eye(3), index=["A", "B", "S"], columns=["F1", "F2", "F3"])
    heat = figures.loadings_heatmap(load, ["S"], (3,))
    assert "color:#d62728" in heat.layout.yaxis.ticktext[2] and "color" not in heat.layout.yaxis.ticktext[0]
    bands = pd.DataFrame([{"config": f"M{c}", "variable": v, "band": b, "beyond_mean": 0.1 * c, "prior": 0.05}
                          for c in range(5) for v in ("x", "y") for b in ("1", "2", "top 1 %")])
    fb = figures.band_risk_figure(bands, 0.2)
    assert sum(t.showlegend is not False for t in fb.data) == 5  # one line per configuration
    assert "worst sensitive variable" in fb.layout.title.text
    # issue 41: thirteen variables of one release: six lines drawn (each with its dotted prior), the rest
    # in the legend (26 lines before)
    many = pd.DataFrame([{"variable": f"v{v}", "band": b, "beyond_prior": 0.01 * v, "prior": 0.05}
                         for v in range(13) for b in ("1", "2", "top 1 %")])
    fm = figures.band_risk_figure(many, 0.2)
    drawn = [t.name for t in fm.data if t.visible is True and t.showlegend is not False]
    assert drawn == [f"v{v}" for v in range(7, 13)] and len(fm.data) == 26 and "6 highest of 13" in fm.layout.title.text
    risk = pd.DataFrame({"prior": [0.1], "beyond_prior": [0.0], "close_identity": [np.nan], "ok": [True]},
                        index=pd.Index(["S"], name="variable"))
    assert figures.risk_table(risk).iloc[0]["identity (beyond prior)"] == "n/a: no identity between columns"
    hist = [{"id": 1, "time": "10:00", "kind": "release", "label": "IPSO", "data_name": "t", "seed": 1,
             "scores": {"dbrl": 0.0012, "id": 0.4, "pil": 0.02, "ps": 0.0005, "overall": 0.1}, "risk": None}]
    row = figures.history_table(hist).iloc[0]
    assert row[figures.SCORE_NAMES["ps"]] == "0.1 %" and row["configuration"] == "IPSO"


def test_explore_numbers_start_in_the_background_and_equal_the_librarys(app):
    # issue 29: choosing sensitive variables starts Explore's numbers in a background thread;
    # the page then shows those results, the library's own
    from ui import compute
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    _ok(app)
    store = app.session_state[compute.PREFETCH]
    if not compute._threadsafe_kernels():
        pytest.skip("numba's workqueue layer: parallel kernels cannot run in a second thread, nothing prefetched")
    # the data set's first roles and then SALES sensitive: explore once, the others for each
    assert {k[0] for k in store} == {"_explore_call", "_indices_call", "_recommend_call"}
    assert all(k[1] == app.session_state["data_token"] for k in store)
    rec = next(f for k, f in store.items() if k[0] == "_recommend_call" and k[2].endswith('[["SALES"]]]')).result(timeout=120)
    df = app.session_state["data"]
    cols = [c for c, r in app.session_state["roles"].items() if r in ("sensitive", "public")]
    direct = sdccore.recommend(df[[c for c in df.columns if c in cols]], sensitive=["SALES"])
    assert rec.label == direct.label and rec.reasons == direct.reasons
    app.switch_page("pages/2_explore.py").run()
    _ok(app)
    assert any(f"Recommended: **{direct.label}**" in s.value for s in app.success)


def test_download_page_protects_its_configuration_once(app, monkeypatch):
    # issue 30, point 4: the page evaluates the release and builds the file from the same
    # protection (it protected twice: once to evaluate, once in make_release)
    import streamlit as st

    import sdccore._protect.pipeline as prot

    st.cache_data.clear()  # another test's session may have cached this very release
    calls = []
    real = prot._protect
    monkeypatch.setattr(prot, "_protect", lambda *a, **k: calls.append(1) or real(*a, **k))
    from ui import compute
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    for fut in app.session_state[compute.PREFETCH].values():  # Explore's numbers (the recommendation protects)
        fut.result(timeout=120)
    calls.clear()
    app.switch_page("pages/5_download.py").run()
    _ok(app)
    # issue 41: nothing picked on page 4, so nothing is protected (nor added to the history) until asked
    assert not calls and not app.get("download_button")
    assert "history" not in app.session_state or not [e for e in app.session_state["history"] if e["kind"] == "release"]
    assert any("No release was picked on page 4. Prepare the recommended method" in i.value for i in app.info)
    app.button(key="prepare_release").click().run()
    _ok(app)
    assert any(b.label == "Download the protected CSV" for b in app.get("download_button"))
    assert len(calls) == 1, f"protected {len(calls)} times"


def test_the_kernel_warm_up_says_when_it_is_done():
    """The Explore page's spinner says that the first time after an install can take a minute
    until the background warm-up (``ui.compute._preload``) has compiled the kernels; once it has
    finished, ``kernels_warm`` is true and the spinner says nothing more."""
    import threading

    from ui import compute

    for t in threading.enumerate():
        if t.name == "sdccore-preload":
            t.join(300)
    assert compute.kernels_warm()
    src = (ROOT / "pages" / "2_explore.py").read_text()
    assert "compute.kernels_warm()" in src and "the risk " in src


TITLES = {"pages/1_data.py": "Data", "pages/2_explore.py": "Explore", "pages/3_configure.py": "Configure",
          "pages/4_run.py": "Run and compare", "pages/5_download.py": "Download",
          "pages/6_history.py": "History of this session"}


@pytest.mark.parametrize("page", PAGES)
def test_every_page_works_as_the_first_page_of_a_fresh_server(page, monkeypatch, no_prefetch):
    """A bookmark or a reload after a restart opens a page before app.py has ever run: with a
    pages/ folder Streamlit then runs the page's script on its own (AppTest.from_file resets
    that state as a fresh server has it). The page failed with KeyError 'roles' (no session
    set-up); ui/shell.py runs it inside app.py instead, so it gets data, roles and the sidebar."""
    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == [TITLES[page]]
    assert at.session_state["data_name"] == "tarragona" and "SALES" in at.session_state["roles"]
    side = " ".join(m.value for m in at.sidebar.markdown)
    assert "tarragona" in side and "834 records x 13 columns" in side


def test_download_page_shows_what_analysts_keep(app, monkeypatch):
    """The Download page shows, for the release to download, each analysis researchers run with
    its worst variable against its target (sdccore.analyst_checks), from the release the page
    protected (no second protection); Tarragona with SALES sensitive: the recommended IPSO keeps
    the OLS and not the median regression."""
    from sdccore._protect import pipeline as prot

    calls = []
    real = prot._protect
    monkeypatch.setattr(prot, "_protect", lambda *a, **k: calls.append(1) or real(*a, **k))
    from ui import compute
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    for fut in app.session_state[compute.PREFETCH].values():  # the recommendation protects in the background
        fut.result(timeout=120)
    calls.clear()
    app.switch_page("pages/5_download.py").run()
    app.button(key="prepare_release").click().run()
    _ok(app)
    table = next(d.value for d in app.dataframe if "Analysis" in d.value.columns).set_index("Analysis")
    assert table.loc["OLS regression", "Kept"] == "yes"
    assert table.loc["median regression", "Kept"] == "NO" and table.loc["median regression", "Worst variable"] == "SALES"
    assert table.loc["domain means", "Figure"] == "n/a" and table.loc["domain means", "Kept"] == "does not apply"
    assert any("Not applicable here: domain means: no domain column." in c.value for c in app.caption)
    assert any("Analysts would see a difference: " in w.value and "median regression (SALES)" in w.value
               for w in app.warning)
    # at most the release itself (none when another test of this process left it in the cache)
    assert len(calls) <= 1, f"protected {len(calls)} times"


def test_a_required_regression_on_the_run_page_decides_the_suggestion(no_prefetch, app):
    """Issue 39: the Run page's regressions can be marked as required; the suggestion then
    keeps only configurations whose releases keep every slope with the stated CI overlap, or
    says that none does (Tarragona, SALES sensitive, IPSO and shuffling, 2 runs)."""
    _set_sensitive(app, ["SALES"])
    app.switch_page("pages/4_run.py").run()
    app.multiselect(key="run_methods").set_value(["IPSO", "Shuffle"]).run()
    app.slider(key="run_reps").set_value(2).run()
    log = "np.log(SALES) ~ np.log(LABOR.COSTS) + np.log(FIXED.ASSETS)"
    app.text_area(key="run_models").set_value(log).run()
    app.button(key="run_button").click().run()
    _ok(app)
    assert any("Suggested release: **IPSO**" in s.value for s in app.success)
    summ = app.session_state["comparison"]["result"].regression_summary()
    slopes = summ[summ.term != "Intercept"].groupby("config").overlap.min()
    assert slopes["IPSO"] < 0.8 < slopes["Shuffle"]
    app.checkbox(key="run_models_required").check().run()
    app.number_input(key="run_models_overlap").set_value(0.8).run()
    assert not app.exception
    assert any("Suggested release: **Shuffle**" in s.value and "keeps your required regression(s)" in s.value
               for s in app.success)
    assert app.radio(key="release_pick").value == "Shuffle"  # the new suggestion, pre-selected
    app.number_input(key="run_models_overlap").set_value(0.99).run()
    assert any("No configuration can be suggested" in e.value and "keeps your required regression(s)" in e.value
               for e in app.error)
    # a changed requirement resets the pick made for the old suggestion (none is pre-selected now)
    assert app.radio(key="release_pick").value is None


def test_the_data_page_shows_who_the_key_variables_single_out(no_prefetch, app):
    """Issue 40: on sdcMicro's tutorial file the Data page suggests the categorical columns and
    age as keys, ori_hid as the household and sampling_weight as the weight (all released
    unchanged), and shows the identity risk; with the tutorial's keys it is sdcMicro's."""
    app.selectbox(key="sample_choice").set_value("testdata").run()
    _ok(app)
    roles = app.session_state["roles"]
    assert roles["ori_hid"] == roles["sampling_weight"] == roles["household_weights"] == "excluded"
    assert app.multiselect(key="keys_select").value == ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex",
                                                         "age", "hhcivil"]
    assert app.selectbox(key="household_select").value == "ori_hid"
    assert app.selectbox(key="weight_select").value == "sampling_weight"
    # with nine keys every release would blank age for 55 % of the persons: by default age is banded, said with why
    # (a walk downloaded a release with 88.5 % of its ages blank)
    twenty = "age in bands of 20: 0-19, 20-39, 40-59, 60-79, 80+ (88 values -> 5)"
    assert any(i.value.startswith(f"By default age recoded ({twenty}): local suppression would otherwise blank it "
                                  "for 55.3% of records (2,534 of 4,580), with it for 9.3%") for i in app.info)
    assert app.multiselect(key="recode_select").value == [twenty]
    assert app.session_state["key_choice"]["recode"]["age"]["kind"] == "bands"
    assert not any(w.value.startswith("age is blank") for w in app.warning)
    # taken out, the page says what the blanks cost, with the fix
    app.multiselect(key="recode_select").set_value([]).run()
    _ok(app)
    assert any(w.value.startswith("age is blank for 55.3% of records (2,534 of 4,580)") and
               "recoded as age in bands of 10: 0-9, 10-19, ..., 90+ (88 values -> 10)" in w.value for w in app.warning)
    assert not any(i.value.startswith("By default") for i in app.info)
    app.multiselect(key="keys_select").set_value(["urbrur", "water", "sex", "age"]).run()
    _ok(app)
    assert not any("55.3%" in w.value for w in app.warning)
    # the tutorial's keys still blank 14.7 % of ages, all of them where water = 6: said with the recoding
    assert any(w.value.startswith("age is blank for 14.7% of records (674 of 4,580)") and
               "age in bands of 5: 0-4, 5-9, ..., 90+ (88 values -> 19), 114 key value(s)" in w.value
               for w in app.warning)
    assert any("100.0% where water = 6 (26 records)" in w.value for w in app.warning)
    got = {m.label: m.value for m in app.metric}
    assert got["Unique records"] == "330" and got["Fewer than 3 alike"] == "674"
    assert got["Expected re-identifications"] == "24.8" and got["Household risk (persons)"] == "117.2"
    assert any("674 record(s) share their key values with fewer than 2 other(s)" in w.value for w in app.warning)
    table = next(d.value for d in app.dataframe if "fk" in d.value.columns)
    assert (table.fk == 1).all() and len(table) == 20
    # the choice survives a visit to another page
    app.switch_page("pages/2_explore.py").run()
    app.switch_page("pages/1_data.py").run()
    assert app.multiselect(key="keys_select").value == ["urbrur", "water", "sex", "age"]


def test_recoding_the_keys_on_the_data_page_and_the_keys_of_the_release(no_prefetch, app):
    """Issue 40: the Data page suggests recodings with what each saves; picking age in 10-year
    bands shows the risk after it (sdcMicro's figures on the recoded ages: 21 unique, 43 below
    3) and what every release will blank; the Run page's release is 3-anonymous on the recoded
    keys and says what it blanked."""
    app.selectbox(key="sample_choice").set_value("testdata").run()
    app.multiselect(key="keys_select").set_value(["urbrur", "water", "sex", "age"]).run()
    _ok(app)
    # 14.7 % of ages blank without a recoding: by default age in bands of 5 (the fewest bits lost under 10 %)
    assert app.multiselect(key="recode_select").value == ["age in bands of 5: 0-4, 5-9, ..., 90+ (88 values -> 19)"]
    app.multiselect(key="recode_select").set_value([]).run()  # the custodian's choice: no recoding
    assert any("Every release blanks 677 key value(s) (sex 3, age 674)" in w.value for w in app.warning)
    table = next(d.value for d in app.dataframe if "suppressions needed after" in d.value.columns)
    assert len(table) == 5 and set(table.variable) == {"age", "water"}
    tens = next(o for o in app.multiselect(key="recode_select").options if "age in bands of 10" in o)
    app.multiselect(key="recode_select").set_value([tens]).run()
    _ok(app)
    got = {m.label: m.value for m in app.metric}
    assert got["Unique records"] == "21" and got["Fewer than 3 alike"] == "43"
    assert any("Every release blanks 64 key value(s) (sex 3, age 61)" in w.value for w in app.warning)
    assert app.session_state["key_choice"]["recode"]["age"]["kind"] == "bands"
    app.switch_page("pages/4_run.py").run()
    app.multiselect(key="run_methods").set_value(["Rank swap"]).run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    assert not app.exception, [e.value for e in app.exception]
    cfg = app.session_state["comparison"]["configs"]["Rank swap"]
    assert cfg["keys"] == ["urbrur", "water", "sex", "age"] and cfg["k_anonymity"] == 3 and "age" in cfg["recode"]
    app.radio(key="release_pick").set_value("Rank swap").run()
    assert not app.exception, [e.value for e in app.exception]
    keys = next(d.value for d in app.dataframe if "Key variable" in d.value.columns).set_index("Key variable")
    assert keys.loc["age", "Values blanked"] == 61 and keys.loc["sex", "Values blanked"] == 3
    assert cfg["household_ids"] == "drop"  # no household link by default
    got = {m.label: m.value for m in app.metric}
    assert got["Fewer than 3 alike"] == "0"


def test_what_the_blanks_cost_is_said_on_the_run_and_download_pages(no_prefetch, app):
    """The analysts' audit of a release with 38 % of ages blanked (69 % in one region): the Run
    page's keys and the Download page, before the file, say what share of a key is blank (every
    analysis with it runs on the rest), where the blanks fall unevenly, and the recoding that saves
    most of them (sdcMicro's tutorial keys: 674 ages, 114 blanks in all with ages in bands of 5)."""
    app.selectbox(key="sample_choice").set_value("testdata").run()
    app.multiselect(key="keys_select").set_value(["urbrur", "water", "sex", "age"]).run()
    app.multiselect(key="recode_select").set_value([]).run()  # without the default recoding of age
    app.switch_page("pages/4_run.py").run()
    app.multiselect(key="run_methods").set_value(["Rank swap"]).run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    assert not app.exception, [e.value for e in app.exception]
    heavy = "age is blank for 14.7% of records (674 of 4,580): every analysis with age runs on the other 85.3%"
    # beside the suggestion too, once (a walk downloaded a release with 88.5 % of its ages blank)
    assert sum(w.value.startswith("Whichever release: " + heavy) for w in app.warning) == 1
    app.radio(key="release_pick").set_value("Rank swap").run()
    assert not app.exception, [e.value for e in app.exception]
    assert sum(w.value.startswith(heavy) and "age in bands of 5" in w.value for w in app.warning) == 1
    assert sum(w.value.startswith("Blanks fall unevenly: age blanked for 14.7% of records, 100.0% where water = 6")
               for w in app.warning) == 1
    app.switch_page("pages/5_download.py").run()
    assert not app.exception, [e.value for e in app.exception]
    warned = [w.value for w in app.warning]
    assert sum(w.startswith(heavy) for w in warned) == 1  # once, above the file (not again in the keys' table)
    assert any(w.startswith("Blanks fall unevenly") for w in warned)


def test_the_data_page_never_gives_an_all_clear_under_an_open_decision(no_prefetch, app):
    """Issue 41: EIA has text columns released unchanged until the custodian confirms: the red
    'Decide before release' and a green 'No problems found' together read as a contradiction."""
    app.selectbox(key="sample_choice").set_value("eia").run()
    # STATE is a suggested key (no decision needed: released k-anonymous); out of the keys it is released as text
    assert not any(e.value.startswith("Decide before release") for e in app.error)
    app.multiselect(key="keys_select").set_value(["MONTH"]).run()
    assert not app.exception
    assert any(e.value.startswith("Decide before release") for e in app.error)
    assert not any("No problems found" in s.value for s in app.success)
    assert any("the decision about the columns above is still open" in i.value for i in app.info)
    app.checkbox(key="confirm_passthrough").check().run()
    assert not any(e.value.startswith("Decide before release") for e in app.error)
    assert any("No problems found in the columns to protect" in s.value for s in app.success)


def test_released_household_ids_are_the_custodians_choice_with_the_make_up_shown(no_prefetch, app):
    """Issue 40 after the outside audit: the Data page says how many persons a released household
    link would single out, releases no link by default, and with the ids kept counts the household
    size as a key (2,840 blanks on testdata's tutorial keys)."""
    app.selectbox(key="sample_choice").set_value("testdata").run()
    app.multiselect(key="keys_select").set_value(["urbrur", "water", "sex", "age"]).run()
    app.multiselect(key="recode_select").set_value([]).run()  # without the default recoding of age
    _ok(app)
    assert app.radio(key="household_ids_choice").value == "drop"
    assert any("4,548 persons live in a household whose make-up" in c.value for c in app.caption)
    app.radio(key="household_ids_choice").set_value("kept").run()
    _ok(app)
    assert any("Every release blanks 2,840 key value(s)" in w.value for w in app.warning)
    assert app.session_state["key_choice"]["household_ids"] == "kept"


def test_a_green_verdict_says_first_what_was_known_already(no_prefetch, app):
    """Issue 41: EIA with RESREVENUE sensitive: the public columns already predict it within 5 %
    for most utilities, so a release meeting the floors protects nothing; the page says that
    first, in the warning colour, with what to do."""
    app.selectbox(key="sample_choice").set_value("eia").run()
    app.multiselect(key="sensitive_select").set_value(["RESREVENUE"]).run()
    app.switch_page("pages/3_configure.py").run()
    app.radio(key="config_method").set_value("IPSO").run()
    assert not app.exception, [e.value for e in app.exception]
    warn = [w.value for w in app.warning if w.value.startswith("Already revealed before any release")]
    assert warn and "RESREVENUE for" in warn[0] and "Mark the variables that determine them sensitive" in warn[0]
    import re
    share = int(re.search(r"RESREVENUE for (\d+)% of records", warn[0]).group(1))
    assert share > 50


def test_every_table_of_the_pages_is_sized_to_show_its_text_whole():
    """Issue 41: the pages draw tables only through ``ui.widgets.table`` (st.dataframe cuts a
    cell's text at its column's edge), and its layout holds the longest cell: a hand-checked case."""
    import ast
    for p in list((ROOT / "pages").glob("*.py")) + list((ROOT / "ui").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "dataframe" and p.name != "widgets.py":
                raise AssertionError(f"{p.name} calls .dataframe directly: use widgets.table")
    from ui import widgets as w
    fix = ("the assignment intruder gets 22 % of the largest records within 5 % of the truth; fix: perturb the "
           "components that load on it, or mark the public variables that predict it sensitive too")  # 176 chars
    df = pd.DataFrame({"method": ["FA", "PCA"], "first violation (with its fix)": [fix, "none"]})
    cfg, height = w.table_layout(df, hide_index=True)
    assert cfg["method"]["width"] == 6 * 7.5 + 30 + 16  # its header (6 characters) and the sort arrow
    assert cfg["first violation (with its fix)"]["width"] == w.WRAP_PX  # wrapped at 420 px ...
    per_line = (420 - 30) / 7.5 * 0.8  # 41.6 characters a line
    assert height == 12 + 21 * 5 and 176 <= per_line * 5  # ... over five lines of 21 px
    assert "prior" in w.table_layout(pd.DataFrame({"prior": [0.1]}), True)[0]["prior"]["help"]  # the glossary
    # wrapped rows: the table as tall as its rows (the Run page's floors table showed one of six at a time)
    assert w.table_height(2, height) == 40 + 2 * (12 + 21 * 5)
    assert w.table_height(4, 12 + 21 * 15) == 40 + 4 * 327 and w.table_height(60, 327) == 1600
    # a paragraph (over six lines at 420 px) is wrapped at 640 px: 600 characters over 10 lines, not 15
    cfg, tall = w.table_layout(pd.DataFrame({"why": ["x" * 600]}), hide_index=True)
    assert cfg["why"]["width"] == w.WIDE_PX and tall == 12 + 21 * 10  # 600 / ((640 - 30) / 7.5 * 0.8) = 9.2

    class Box:
        def dataframe(self, df, **kw):
            return kw
    assert Box().dataframe(df) == {} and w.table(Box(), df, hide_index=True)["height"] == 40 + 2 * 117
    assert "height" not in w.table(Box(), pd.DataFrame({"a": [1, 2]}))  # one-line rows: Streamlit's own


def test_the_second_round_is_offered_and_downloaded(no_prefetch, app):
    """Issue 38: Tarragona with SALES and NET.PROFIT sensitive, where no method of the first round
    meets the floors, gets the Run page's second round ('... + largest aggregated'); its suggestion
    is pre-selected, protected with its own configuration (tail='aggregate') and downloadable."""
    _set_sensitive(app, ["SALES", "NET.PROFIT"])
    app.switch_page("pages/4_run.py").run()
    app.slider(key="run_reps").set_value(3).run()
    app.button(key="run_button").click().run()
    _ok(app)
    said = [s.value for s in app.success if s.value.startswith("Suggested release: **")]
    assert said and "+ largest aggregated**" in said[0], said
    label = said[0].split("**")[1]
    res = app.session_state["comparison"]["result"]
    assert res.configs[label]["tail"] == "aggregate"
    assert app.radio(key="release_pick").value == label
    assert any(h.value.startswith(f"The release with {label}") for h in app.subheader)
    app.switch_page("pages/5_download.py").run()
    _ok(app)
    assert "Download the protected CSV" in [b.label for b in app.get("download_button")]
    assert app.session_state["release_config"]["tail"] == "aggregate"
