"""A toy intruder registered in one place (issue 37, point 2): ``protect`` measures it (in
``risk.intruders``) and holds it to the floors, ``compare``'s worker processes run it, the
Run page and the report show it; a broken plug-in is one ValueError naming it."""
import re

from pathlib import Path

import numpy as np
import pytest

import sdccore
from sdccore._risk import registry

ROOT = Path(__file__).resolve().parents[2]


def _median(ctx):
    """Guesses every record's value as the released median of the variable."""
    return np.full(len(ctx.rows), np.median(ctx.released[:, ctx.target]))


def _oracle(ctx):
    """Knows the truth (a toy that must break every floor)."""
    return ctx.original[:, ctx.target].copy()


MEDIAN = sdccore.IntruderInfo("median", "the median intruder (guesses the released median)", _median,
                              knows="the released median", short="released median")
# a wild guess: ten times the linked record's released value (never within 5 %)
TENFOLD = sdccore.IntruderInfo("tenfold", "the tenfold intruder (guesses ten times the linked value)",
                               lambda ctx: 10 * ctx.released[ctx.linked, ctx.target], short="ten times linked")
ORACLE = sdccore.IntruderInfo("oracle", "the oracle intruder (knows the truth)", _oracle, knows="everything",
                              fix="nothing helps against an oracle: remove the toy intruder")


@pytest.fixture()
def registered():
    added = []

    def add(info):
        sdccore.register_intruder(info)
        added.append(info.name)
        return info
    yield add
    for n in added:
        if n in registry.REGISTRY:
            sdccore.unregister_intruder(n)


@pytest.fixture(scope="module")
def tarragona():
    return sdccore.load_dataset("tarragona")


def test_a_registered_intruder_is_measured_by_protect(registered, tarragona):
    registered(MEDIAN)
    # a constant guess at the median gets about half of the middle size band, nearly all of
    # which the prior's own percentiles explain (since issue 38; 2 points apart since the median
    # of IPSO's guarded release fell between two 5 points apart and got 15.7 % beyond them):
    # 6.0 % of a band beyond them at most here, the records between two percentiles
    res = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2, allow_unsafe="test of a toy intruder")
    assert not any("the median intruder" in v for v in res.risk.violations)
    t = res.risk.intruders
    assert t[t.intruder == "median"].beyond_prior.max() < 0.1
    row = t[(t.intruder == "median") & (t.band == "all") & (t.variable == "SALES")]
    assert len(row) == 1 and bool(row.held.iloc[0])
    # the share it gets, computed here from its guess: |median - x| <= tol |x| on the linked
    # sample (every record: Tarragona has 834 < 5,000)
    x = tarragona["SALES"].to_numpy()
    med = np.median(res.data["SALES"].to_numpy())
    tol = res.risk.floors.tolerance
    assert row.with_release.iloc[0] == pytest.approx(np.mean(np.abs(med - x) <= tol * np.abs(x)), abs=1e-12)
    assert 0 <= row.beyond_prior.iloc[0] <= row.with_release.iloc[0]
    # and per size band, like every built-in intruder
    assert set(t[t.intruder == "median"].band) == set(t[t.intruder == "own"].band)
    assert "median" in res.risk.variables.loc["SALES", "intruders"]
    # the built-in intruders' figures are those of a run without it
    sdccore.unregister_intruder("median")
    base = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)
    assert base.risk.ok
    assert base.risk.intruders.equals(t[t.intruder != "median"].reset_index(drop=True))
    assert base.data.equals(res.data)


def test_a_registered_intruder_is_held_to_the_floors_with_its_fix(registered, tarragona):
    registered(ORACLE)
    with pytest.raises(sdccore.UnsafeReleaseError) as e:
        sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)
    text = "\n".join(e.value.risk.violations)
    assert re.search(r"the oracle intruder gets SALES within 5% for \d+\.\d% of records more than the \d+\.\d% its "
                     r"public variables give", text)
    assert "fix: nothing helps against an oracle" in text
    # evaluate holds it too
    ev = sdccore.evaluate(tarragona, tarragona.assign(SALES=tarragona.SALES * 1.5), sensitive=["SALES"])
    assert not ev.risk.ok and "oracle" in ev.risk.variables.loc["SALES", "intruder"]


def test_where_an_intruder_applies(registered, tarragona):
    wild = TENFOLD.guess
    registered(sdccore.IntruderInfo("swapper", "the swap intruder", wild, methods=("rankswap",)))
    registered(sdccore.IntruderInfo("gen", "the general intruder", wild, selective=False))
    assert sdccore.intruders(selective=True, method="ipso")[-1] == "key_match"
    assert sdccore.intruders(selective=True, method="rankswap")[-1] == "swapper"
    assert sdccore.intruders(selective=False, method="fa")[-1] == "gen"
    sel = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2).risk.intruders
    assert not {"swapper", "gen"} & set(sel.intruder)
    gen = sdccore.protect(tarragona, "pca", rng=1, allow_unsafe="test").risk.intruders
    assert "gen" in set(gen.intruder) and "swapper" not in set(gen.intruder)


def test_compare_runs_a_registered_intruder_in_its_worker_processes(registered, tarragona):
    from sdccore._choose.compare import MIN_PARALLEL_TASKS

    reps = max(3, MIN_PARALLEL_TASKS)
    # (IPSO on SALES: the residual intruder takes 2 of the 9 largest firms in about 1 run in 6,
    # so the share of runs that meet the floors is compared, not taken to be 1)
    plain = sdccore.compare(tarragona, [{"method": "ipso"}], sensitive=["SALES"], reps=reps, rng=1, n_jobs=2)
    assert plain.safety().floors_met.iloc[0] > 0.5
    registered(ORACLE)
    for jobs in (1, 2):
        c = sdccore.compare(tarragona, [{"method": "ipso"}], sensitive=["SALES"], reps=reps, rng=1, n_jobs=jobs)
        assert c.safety().floors_met.iloc[0] == 0.0, jobs
        assert "oracle intruder" in c.safety().violation.iloc[0]
        assert set(c.risk_variables.intruder) == {"oracle"}
    # removed here, removed in the workers too (they keep running between comparisons)
    sdccore.unregister_intruder("oracle")
    again = sdccore.compare(tarragona, [{"method": "ipso"}], sensitive=["SALES"], reps=reps, rng=1, n_jobs=2)
    assert again.safety().floors_met.iloc[0] == plain.safety().floors_met.iloc[0]


def test_a_broken_intruder_is_one_error_naming_it(registered, tarragona):
    registered(sdccore.IntruderInfo("short", "the short intruder", lambda ctx: np.zeros(3)))
    with pytest.raises(ValueError, match=r"intruder 'short' returned \(3,\) values for 'SALES'; it must return one per"):
        sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)
    sdccore.unregister_intruder("short")
    registered(sdccore.IntruderInfo("boom", "the failing intruder", lambda ctx: 1 / 0))
    with pytest.raises(ValueError, match="intruder 'boom' failed on 'SALES': ZeroDivisionError"):
        sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)


def test_register_intruder_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match="built in"):
        sdccore.register_intruder(sdccore.IntruderInfo("own", "mine", _median))
    with pytest.raises(TypeError, match="IntruderInfo"):
        sdccore.register_intruder({"name": "x"})
    with pytest.raises(TypeError, match="function of an IntruderContext"):
        sdccore.register_intruder(sdccore.IntruderInfo("nofn", "x", 3))
    with pytest.raises(ValueError, match="word of letters"):
        sdccore.register_intruder(sdccore.IntruderInfo("two words", "x", _median))
    with pytest.raises(ValueError, match="not registered"):
        sdccore.unregister_intruder("nobody")
    with pytest.raises(ValueError, match="built in"):
        sdccore.unregister_intruder("linked")


def test_the_labels_are_the_registrys(registered):
    """The violations, the dashboard's headings and the report read the intruders' words from
    the registry: no second copy."""
    from ui import figures, report

    cols = figures.risk_columns()
    for n in sdccore.intruders():
        info = sdccore.intruder_info(n)
        if info.column:
            assert cols[info.column] == f"{info.heading} (beyond prior)"
    registered(MEDIAN)
    import pandas as pd
    long = pd.DataFrame({"variable": ["A", "A"], "band": ["all", "all"], "intruder": ["own", "median"],
                         "prior": [0.1, 0.1], "with_release": [0.3, 0.5], "beyond_prior": [0.2, 0.4],
                         "held": [True, False]})
    t = figures.intruder_table(long)
    assert list(t.columns) == ["own record", "released median (reported)"] and t.loc["A"].tolist() == ["20.0%", "40.0%"]
    assert report.intruder_words(long) == [sdccore.intruder_info("own").label + ", knowing "
                                           + sdccore.intruder_info("own").knows, MEDIAN.label + ", knowing the released median"]


def test_the_run_page_and_the_report_show_a_registered_intruder(registered, monkeypatch, tarragona):
    from streamlit.testing.v1 import AppTest

    from ui import report

    registered(TENFOLD)
    res = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)
    ev = sdccore.evaluate(tarragona, res.data, sensitive=["SALES"])
    html = report.build_report("internal", "t", tarragona.shape, {"SALES": "sensitive"}, "IPSO", res.options, ev,
                               risk=res.risk)
    assert "the tenfold intruder (guesses ten times the linked value)" in html
    assert "ten times linked" in html
    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(ROOT)
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    app.switch_page("pages/1_data.py").run()
    app.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    app.switch_page("pages/4_run.py").run()
    app.multiselect(key="run_methods").set_value(["IPSO"]).run()
    app.slider(key="run_reps").set_value(2).run()
    app.button(key="run_button").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("The release with IPSO" in h.value for h in app.subheader)
    tables = [d.value for d in app.dataframe if "ten times linked" in d.value.columns]
    assert tables and tables[0].index.tolist() == ["SALES"]
    share = tables[0]["ten times linked"].iloc[0]
    assert share.endswith("%") and float(share[:-1]) < 5  # a wild guess: a few coincidences at most


def test_the_readme_plugin_example_runs_and_says_what_it_finds(tarragona):
    """The documentation's intruder block (docs/library.md, moved there from the README), run
    as it stands, and the figures it quotes."""
    import re
    import textwrap

    text = (ROOT / "docs" / "library.md").read_text()
    section = text[text.index("### An intruder"):text.index("### An analysis")]
    code = textwrap.dedent(re.search(r"```python\n(.*?)```", section, re.S).group(1))
    ns = {"df": tarragona}
    try:
        exec(compile(code, "docs/library.md", "exec"), ns)
        res = sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=1, allow_unsafe="a toy")
        assert not any("median intruder" in v for v in res.risk.violations)
        band = res.risk.intruders.query("intruder == 'median' and variable == 'SALES' and band == '5'").iloc[0]
        assert f"{band.with_release:.1%}" == "47.0%" and f"{band.beyond_prior:.1%}" == "9.6%"
        assert "47.0 % of Tarragona's SALES size band 5 within 5 %, but 9.6 % beyond the prior" in " ".join(section.split())
    finally:
        if "median" in registry.REGISTRY:
            sdccore.unregister_intruder("median")


def test_what_a_plug_in_author_gets_wrong_is_refused_in_one_line(registered, tarragona):
    """After a plug-in author's review: a substring of a method name, a misspelt method, an
    intruder that never applies, an empty label, a list of numbers for a guess, a callable
    fix (called with keywords, as documented)."""
    with pytest.raises(TypeError, match=r"methods must be a tuple of method names such as \('rankswap',\)"):
        sdccore.register_intruder(sdccore.IntruderInfo("sub", "x", _median, methods="cfa"))
    with pytest.raises(ValueError, match=r"methods \['ipos'\] are not registered"):
        sdccore.register_intruder(sdccore.IntruderInfo("typo", "x", _median, methods=("ipos",)))
    with pytest.raises(ValueError, match="would never run"):
        sdccore.register_intruder(sdccore.IntruderInfo("never", "x", _median, selective=False, general=False))
    with pytest.raises(ValueError, match="needs a label"):
        sdccore.register_intruder(sdccore.IntruderInfo("nolabel", " ", _median))
    with pytest.raises(ValueError, match="does not start with a digit"):
        sdccore.register_intruder(sdccore.IntruderInfo("2d", "x", _median))
    registered(sdccore.IntruderInfo("floats", "the float intruder", lambda ctx: [1.0, 2.0]))
    with pytest.raises(ValueError, match="returned a list of 2 single numbers .* a list means alternative guesses"):
        sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)
    sdccore.unregister_intruder("floats")
    seen = {}

    def fix(**kw):
        if "SALES" in kw["names"]:  # (another test's protection still finishing in a thread may call it too)
            seen.update(kw)
        return f"protect {kw['names'][0]} harder"
    registered(sdccore.IntruderInfo("oracle2", "the oracle intruder", _oracle, fix=fix))
    with pytest.raises(sdccore.UnsafeReleaseError) as e:
        sdccore.protect(tarragona, "ipso", sensitive=["SALES"], rng=2)
    assert "fix: protect FIXED.ASSETS harder" in e.value.risk.violations[0] or "harder" in e.value.risk.violations[0]
    assert set(seen) == {"selective", "method", "names", "identity"} and seen["method"] == "ipso", seen


def test_a_plug_in_sees_unreleased_cells_as_missing(registered, tarragona):
    """A plug-in intruder knows no value nobody knows: cells missing from the original (and so
    from the release) are NaN in ctx.original and ctx.released (the built-in intruders use
    the completed files with the mask)."""
    df = tarragona.copy()
    df.loc[df.index[:30], "LABOR.COSTS"] = np.nan
    seen = {}

    def look(ctx):
        j = ctx.names.index("LABOR.COSTS")
        seen["original"] = np.isnan(ctx.original[:, j]).sum()
        seen["released"] = np.isnan(ctx.released[:, j]).sum()
        return np.full(len(ctx.rows), np.nan)
    registered(sdccore.IntruderInfo("look", "the looking intruder", look))
    res = sdccore.protect(df, "ipso", sensitive=["SALES"], rng=1, allow_unsafe="a test of what a plug-in sees")
    assert seen == {"original": 30, "released": 30}
    assert res.data["LABOR.COSTS"].isna().sum() == 30
    t = res.risk.intruders
    assert t[(t.intruder == "look") & (t.band == "all")].with_release.iloc[0] == 0.0  # NaN guesses hit nothing
