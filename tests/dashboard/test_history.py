"""History and undo in the dashboard (issue 14, part 5): every run of the session listed with
its settings, seed, scores and per-variable risk; go back to one, compare two, multi-step
undo of roles and settings; the list in the internal report; nothing written to disk."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import sdccore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def app(monkeypatch):
    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(ROOT)
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


def test_multi_step_undo_of_roles_and_settings(app):
    # (AppTest shows the sidebar only on the first run: the sidebar's Undo button is checked
    # there, and the steps are undone with the History page's button, which calls the same
    # state.undo)
    at = app
    assert at.button(key="undo_button").disabled and "nothing to undo" in at.button(key="undo_button").label
    at.sidebar.number_input(key="seed_input").set_value(77).run()
    _ok(at)
    at.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    _ok(at)
    at.switch_page("pages/3_configure.py").run()
    at.radio(key="config_method").set_value("M-AGG").run()
    at.number_input(key="magg_k").set_value(5).run()
    _ok(at)
    assert at.session_state["seed"] == 77 and at.session_state["cfg_magg"]["k"] == 5
    at.switch_page("pages/6_history.py").run()
    _ok(at)
    # pages filling in defaults are not steps: only the user's three changes
    assert [u["what"] for u in at.session_state["undo_stack"]] == ["seed", "roles", "M-AGG settings"]
    assert "M-AGG settings; " in " ".join(c.value for c in at.caption)  # latest first
    at.button(key="history_undo").click().run()
    _ok(at)
    assert at.session_state["cfg_magg"].get("k", 3) == 3 and at.session_state["roles"]["SALES"] == "sensitive"
    at.switch_page("pages/3_configure.py").run()
    at.radio(key="config_method").set_value("M-AGG").run()
    assert at.number_input(key="magg_k").value == 3  # the widget is drawn again from the restored value
    at.switch_page("pages/6_history.py").run()
    at.button(key="history_undo").click().run()
    _ok(at)
    assert at.session_state["roles"]["SALES"] == "public" and at.session_state["seed"] == 77
    at.button(key="history_undo").click().run()
    _ok(at)
    assert at.session_state["seed"] == 12345
    assert at.button(key="history_undo").disabled


def test_runs_listed_restored_and_compared(app):
    at = app
    # SALES alone: a rank swap of SALES and NET.PROFIT is refused (the assignment intruder)
    at.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    at.switch_page("pages/4_run.py").run()
    at.multiselect(key="run_methods").set_value(["M-AGG", "Rank swap"]).run()
    at.slider(key="run_reps").set_value(2).run()
    at.button(key="run_button").click().run()
    _ok(at)
    at.radio(key="release_pick").set_value("Rank swap").run()
    _ok(at)
    hist = at.session_state["history"]
    assert [(h["kind"], h["label"]) for h in hist] == [("comparison", "M-AGG"), ("comparison", "Rank swap"),
                                                       ("release", "Rank swap")]
    res = at.session_state["comparison"]["result"]
    want = res.summary[(res.summary.config == "M-AGG") & (res.summary.score == "overall")]["mean"].iloc[0]
    assert hist[0]["scores"]["overall"] == pytest.approx(want)
    assert set(hist[2]["risk"].index) == {"SALES"} and hist[2]["seed"] == 12345
    # change the settings and the roles, then go back to run 1
    at.switch_page("pages/3_configure.py").run()
    at.radio(key="config_method").set_value("M-AGG").run()
    at.number_input(key="magg_k").set_value(6).run()
    at.switch_page("pages/1_data.py").run()
    at.multiselect(key="sensitive_select").set_value(["SALES", "NET.PROFIT"]).run()
    at.switch_page("pages/6_history.py").run()
    _ok(at)
    table = at.dataframe[0].value
    assert list(table["#"]) == [1, 2, 3] and list(table["configuration"]) == ["M-AGG", "Rank swap", "Rank swap"]
    at.selectbox(key="history_pick").set_value(1).run()
    at.button(key="history_restore").click().run()
    _ok(at)
    assert at.session_state["cfg_magg"].get("k", 3) == 3
    assert at.session_state["roles"]["NET.PROFIT"] == "public"
    assert any("restored" in s.value for s in at.success)
    # compare runs 1 and 3 side by side
    at.selectbox(key="history_a").set_value(1).run()
    at.selectbox(key="history_b").set_value(3).run()
    _ok(at)
    frames = {d.value.index.name: d.value for d in at.dataframe}
    scores = [d.value for d in at.dataframe if "difference" in d.value.columns][0]
    assert scores["difference"].notna().any()
    opts = [d.value for d in at.dataframe if any(str(i).endswith("option: method") for i in d.value.index)][0]
    assert any(str(i) == "* option: method" for i in opts.index)  # magg vs rankswap: marked as different
    del frames
    # and undo the going back
    assert "went back to run 1" in " ".join(c.value for c in at.caption)
    at.button(key="history_undo").click().run()
    assert at.session_state["cfg_magg"]["k"] == 6 and at.session_state["roles"]["NET.PROFIT"] == "sensitive"


def test_internal_report_lists_the_history(tarragona):
    from ui import report
    # (general PCA is refused on this file since issue 38: the report's history is tested, not the floors)
    res = sdccore.protect(tarragona, method="pca", rng=3, allow_unsafe="test: the report's history")
    ev = sdccore.evaluate(tarragona, res.data)
    hist = [{"id": 1, "time": "10:00:00", "kind": "comparison", "label": "PCA", "data_name": "t", "seed": 3, "reps": 2,
             "scores": dict(ev.scores), "risk": res.risk.variables}]
    internal = report.build_report("internal", "t", (834, 13), {}, "PCA", res.options, ev, history=hist)
    external = report.build_report("external", "t", (834, 13), {}, "PCA", res.options, ev, history=hist)
    assert "History of this session" in internal and "History of this session" not in external


def test_a_drop_of_records_can_be_undone(app):
    at = app
    df = sdccore.load_dataset("tarragona").astype(float)
    df.loc[[3, 9], "SALES"] = np.nan
    # the session's data as an upload leaves it (same columns: the roles are kept)
    at.session_state["data"] = df
    at.session_state["data_name"] = "gaps.csv"
    at.session_state["data_token"] = "gaps"
    at.run()
    at.radio(key="missing_choice").set_value("drop_records").run()
    at.button(key="apply_missing_choice").click().run()
    _ok(at)
    assert at.session_state["data"].shape[0] == 832
    at.button(key="restore_drop").click().run()
    _ok(at)
    assert at.session_state["data"].shape[0] == 834 and int(at.session_state["data"].SALES.isna().sum()) == 2
    assert at.session_state["roles"]["SALES"] == "public"
