"""Every option in the schema (issue 30, point 3): the schema equals the keywords each public
function accepts, as scikit-learn's test_public_functions.py checks its constraint tables.
``option_schema(method)`` lists exactly what ``protect`` (and ``decompose``) take besides
``sensitive``, ``rng`` and ``allow_unsafe``; ``option_schema('evaluate' | 'compare' |
'search')`` exactly those functions' options."""

import inspect
import re

import numpy as np
import pandas as pd
import pytest

import sdccore

ARGUMENTS = {"sensitive", "rng", "progress", "partial", "allow_unsafe", "_with_risk", "tails", "scales", "domains"}  # arguments, not options


@pytest.fixture(scope="module")
def data():
    # six of Tarragona's 13 variables (SALES and LABOR.COSTS among them, named below): which options
    # a call takes does not depend on how many variables there are, and the risk floors' battery,
    # most of each protect's time, runs once a variable
    cols = ["FIXED.ASSETS", "CURRENT.ASSETS", "SHORT.TERM.DEBT", "SALES", "LABOR.COSTS", "NET.PROFIT"]
    d = sdccore.load_dataset("tarragona").iloc[:300][cols].reset_index(drop=True)
    d["region"] = np.where(np.arange(len(d)) % 2, "north", "south")
    d["w"] = 1.0 + (np.arange(len(d)) % 3)
    return d


@pytest.mark.parametrize("method", sdccore.methods())
def test_the_schema_is_what_protect_accepts(data, method):
    names = [o.name for o in sdccore.option_schema(method)]
    # a name outside the schema is refused, and the message lists exactly the schema's names
    with pytest.raises(ValueError, match="do not apply") as info:
        sdccore.protect(data, method, bogus=1)
    listed = re.search(r"its options are (.*)\.$", str(info.value)).group(1).split(", ")
    assert sorted(listed) == sorted(names)
    # the design options: weights for every method, strata for those that take it
    assert "weights" in names and ("strata" in names) == sdccore.method_info(method).strata
    # every option of the schema is taken (its default, or a valid value where the default
    # depends on the data or on another option)
    sens = ["SALES"] if sdccore.method_info(method).conditional else None
    valid = {"strata": ["region"], "weights": "w", "exclude": ["LABOR.COSTS"], "floors": {"max_abs_cor": 0.95}}
    for opt in sdccore.option_schema(method):
        if opt.applies is not None:
            continue  # applies only after another option is set (test_options.ENABLE covers them)
        value = valid.get(opt.name, opt.default)
        if callable(value) or value is None or value is sdccore._protect.options.OMIT:
            continue
        sdccore.protect(data, method, sensitive=sens, rng=1, allow_unsafe="schema check", **{opt.name: value})


def test_decompose_takes_the_design_options_protect_takes(data):
    base = sdccore.decompose(data, "fa")
    with_design = sdccore.decompose(data, "fa", strata=["region"], weights="w")
    pd.testing.assert_frame_equal(base.loadings, with_design.loadings)  # the whole file's factors are shown
    with pytest.raises(ValueError, match="strata names column"):
        sdccore.decompose(data, "fa", strata=["nope"])
    with pytest.raises(ValueError, match="option\\(s\\) .strata. do not apply to method=.pca_remove."):
        sdccore.decompose(data, "pca_remove", strata=["region"])


@pytest.mark.parametrize("name, func", [("compare", sdccore.compare), ("search", sdccore.search)])
def test_the_schema_is_the_keywords_of_compare_and_search(name, func):
    kw = {p.name for p in inspect.signature(func).parameters.values() if p.kind is p.KEYWORD_ONLY}
    assert {o.name for o in sdccore.option_schema(name)} == kw - ARGUMENTS
    for o in sdccore.option_schema(name):  # the defaults are the signature's
        assert inspect.signature(func).parameters[o.name].default == o.default, o.name


def test_the_schema_is_what_evaluate_accepts(data):
    schema = {o.name: o for o in sdccore.option_schema("evaluate")}
    res = sdccore.protect(data, "pca", rng=1, allow_unsafe="measuring only")
    with pytest.raises(ValueError, match="evaluate takes") as info:
        sdccore.evaluate(data, res.data, bogus=1)
    assert set(str(info.value).split("evaluate takes ")[1].rstrip(".").split(", ")) == set(schema)
    num = [c for c in data.columns if c != "region"]
    for name, value in {"linkage": ["SALES"], "id_reference": "own", "pil_statistics": 5, "ps_order": 3,
                        "floors": {"max_abs_cor": 0.95}, "weights": "w"}.items():
        assert name in schema
        if schema[name].kind == "choice":
            assert value in schema[name].choices
        sdccore.evaluate(data[num], res.data[num], **{name: value})
    # the documented options of evaluate are the schema's
    doc = inspect.getdoc(sdccore.evaluate).split("**options")[1].split("Returns")[0]
    assert set(re.findall(r"``(\w+)`` \(", doc)) == set(schema)


def test_the_floors_schema_is_riskfloors():
    import dataclasses

    schema = sdccore.option_schema("floors")
    fields = dataclasses.fields(sdccore.RiskFloors)
    assert [o.name for o in schema] == [f.name for f in fields]
    assert {o.name: o.default for o in schema} == sdccore.RiskFloors().to_dict()
    for o in schema:  # every limit the schema states is one RiskFloors enforces
        if o.high is not None and o.kind != "flag":
            with pytest.raises(ValueError):
                sdccore.RiskFloors.from_value({o.name: o.high + 1})
        if o.low is not None and o.kind != "flag":
            with pytest.raises(ValueError):
                sdccore.RiskFloors.from_value({o.name: o.low - 1 if not o.low_open else o.low})
    with pytest.raises(ValueError):
        sdccore.RiskFloors.from_value({"no_such_floor": 1})


def test_the_configure_page_draws_the_floors_from_the_schema(monkeypatch, no_prefetch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    app = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
    app.switch_page("pages/3_configure.py").run()
    assert not app.exception
    keys = {"min_perturbed_share": "floor_share", "max_abs_cor": "floor_cor", "tolerance": "floor_tolerance",
            "max_close_share": "floor_close", "bands": "floor_bands", "top_records": "floor_top"}
    for o in sdccore.option_schema("floors"):
        if o.kind == "flag":
            box = app.checkbox(key="floor_all_intruders")
            assert box.label == o.label and box.value == bool(o.default)
            continue
        w = app.number_input(key=keys[o.name])
        assert w.label.startswith(o.label) and (o.unit in w.label) and w.help == o.help
        assert w.value == pytest.approx(o.default * o.scale)
    app.number_input(key="floor_top").set_value(9).run()
    app.number_input(key="floor_tolerance").set_value(10.0).run()
    assert app.session_state["floors"]["top_records"] == 9 and app.session_state["floors"]["tolerance"] == 0.1


# the Configure page's input widgets by key, and the option whose label, help and default they show
CONFIGURE_WIDGETS = {
    "FA": {"fa_n_factors": ("fa", "n_factors"), "fa_extraction": ("fa", "extraction"), "fa_rotation": ("fa", "rotation"),
           "fa_selection": ("fa", "factors"), "fa_perturbation": ("fa", "perturbation"),
           "fa_residuals": ("fa", "residuals"), "fa_scores": ("fa", "scores")},
    "PCA": {"pca_selection": ("pca", "components"), "pca_perturbation": ("pca", "perturbation")},
    "M-AGG": {"magg_k": ("magg", "k"), "magg_noise": ("magg", "noise_model")},
    "Rank swap": {"rankswap_p": ("rankswap", "p")},
    "IPSO": {"ipso_classes": ("ipso", "classes")},
    "FA-cond": {"cfa_n_factors": ("cfa", "n_factors"), "cfa_extraction": ("cfa", "extraction")},
    "PCA-R": {"pcar_metric": ("pca_remove", "metric")},
}


def test_the_configure_page_labels_every_method_widget_from_the_schema(monkeypatch, no_prefetch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    app = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    app.switch_page("pages/3_configure.py").run()
    widgets_by_key = {}
    for label, keys in CONFIGURE_WIDGETS.items():
        app.radio(key="config_method").set_value(label).run()
        assert not app.exception, [e.value for e in app.exception]
        for w in list(app.number_input) + list(app.selectbox) + list(app.radio):
            widgets_by_key[w.key] = w
        for key, (method, name) in keys.items():
            o = next(o for o in sdccore.option_schema(method) if o.name == name)
            w = widgets_by_key[key]
            assert w.label.startswith(o.label) and w.help == o.help, (key, w.label, o.label)
    assert "ipso_missing_rows" not in widgets_by_key  # offered only where cells are missing (not in the sample)
    # with SALES sensitive the schema's selective defaults are the page's
    assert app.session_state["cfg_fa"]["rotation"] == sdccore.option_schema("fa")[2].default_given(True)
    assert app.session_state["cfg_fa"]["residuals"] == "keep"


def test_the_configure_page_sets_the_largest_records_for_every_method(monkeypatch, no_prefetch):
    """The common option 'tail' has its widget beside bounds and rounding, drawn from the
    schema, and a choice there reaches every method's configuration."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    app = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
    app.switch_page("pages/3_configure.py").run()
    o = next(o for o in sdccore.option_schema("fa") if o.name == "tail")
    w = app.selectbox(key="pv_tail")
    assert w.label.startswith(o.label) and w.help == o.help and w.value == o.default == "none"
    assert list(w.options) == [o.choice_text[c] for c in o.choices]
    w.set_value("aggregate").run()
    assert not app.exception
    assert app.session_state["plausible"]["tail"] == "aggregate"
    # the run the page previews has it: IPSO's note says what the aggregation moves
    app.switch_page("pages/1_data.py").run()
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    app.switch_page("pages/3_configure.py").run()
    assert app.selectbox(key="pv_tail").value == "aggregate"
    app.radio(key="config_method").set_value("IPSO").run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("before the largest values are aggregated" in i.value for i in app.info)
