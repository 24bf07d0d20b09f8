"""Formulas that cannot run code (issue 25, point 1).

patsy evaluates the parts of a formula as Python, so ``SALES ~ __import__('os').system(...)``
typed into the Run page ran a command on the server.  ``sdccore._measures.formula`` reads the model
language itself; these tests send payloads through every path a formula takes (library,
compare, CLI, the dashboard's model box, a restored session setting) and check that a
sentinel file is never created, and that the formulas people write still fit the same
coefficients as patsy gives (patsy is the independent computation, fed only benign
formulas)."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sdccore
from conftest import run_cli as _cli
from sdccore._measures.formula import design_matrices

ROOT = Path(__file__).resolve().parents[2]


def payloads(sentinel):
    """At least 30 ways a formula could reach Python: calls, attributes, dunders, strings,
    subscripts, lambdas, comprehensions, f-strings, builtins in I(...) and in Q()/C()."""
    s = str(sentinel)
    cmd = f"touch {s}"
    return [
        f"SALES ~ __import__('os').system('{cmd}')",
        f"SALES ~ I(__import__('os').system('{cmd}'))",
        f"__import__('os').system('{cmd}') ~ LABOR.COSTS",
        f"SALES ~ np.os.system('{cmd}')",
        f"SALES ~ numpy.os.system('{cmd}')",
        f"SALES ~ np.log(__import__('os').system('{cmd}'))",
        f"SALES ~ I(np.os.system('{cmd}'))",
        f"SALES ~ eval(\"__import__('os').system('{cmd}')\")",
        f"SALES ~ exec(\"import os; os.system('{cmd}')\")",
        f"SALES ~ I(exec(\"import os; os.system('{cmd}')\"))",
        f"SALES ~ open('{s}', 'w')",
        f"SALES ~ I(open('{s}', 'w').write('x'))",
        f"SALES ~ (lambda: __import__('os').system('{cmd}'))()",
        f"SALES ~ [__import__('os').system('{cmd}') for _ in [1]]",
        f"SALES ~ C(__import__('os').system('{cmd}'))",
        f"SALES ~ Q(__import__('os').system('{cmd}'))",
        f"SALES ~ Q(\"SALES\") + __import__('os').system('{cmd}')",
        f"SALES ~ LABOR.COSTS + getattr(__import__('os'), 'system')('{cmd}')",
        f"SALES ~ np.log.__class__.__base__.__subclasses__()",
        f"SALES ~ ().__class__.__bases__[0].__subclasses__()",
        f"SALES ~ I(globals()['__builtins__'].__import__('os').system('{cmd}'))",
        f"SALES ~ np.lib.utils.os.system('{cmd}')",
        f"SALES ~ np.log(SALES).__class__",
        f"SALES ~ I(LABOR.COSTS if __import__('os').system('{cmd}') else 1)",
        f"SALES ~ I((__import__('os').system('{cmd}'), 1)[1])",
        f"SALES ~ I(f\"{{__import__('os').system('{cmd}')}}\")",
        f"SALES ~ compile('x', 'y', 'exec')",
        f"SALES ~ breakpoint()",
        f"SALES ~ I(SALES := __import__('os').system('{cmd}'))",
        f"SALES ~ LABOR.COSTS; __import__('os').system('{cmd}')",
        f"SALES ~ LABOR.COSTS\n__import__('os').system('{cmd}')",
        f"SALES ~ np.load('{s}', allow_pickle=True)",
        f"SALES ~ np.fromfile('{s}')",
        f"SALES ~ np.savetxt('{s}', [1])",
        f"SALES ~ sys.modules['os'].system('{cmd}')",
        f"SALES ~ center(__import__('os').system('{cmd}'))",
        f"SALES ~ bs(LABOR.COSTS, df=__import__('os').system('{cmd}'))",
        f"SALES ~ log(LABOR.COSTS, __import__('os').system('{cmd}'))",
    ]


@pytest.fixture(scope="module")
def tarr():
    return sdccore.load_dataset("tarragona")




def test_there_are_enough_payloads(tmp_path):
    assert len(payloads(tmp_path / "x")) >= 30


def test_every_payload_is_refused_by_the_library_and_runs_nothing(tarr, tmp_path):
    sentinel = tmp_path / "pwned"
    for model in payloads(sentinel):
        with pytest.raises(ValueError) as info:
            sdccore.regression_check(tarr, tarr, model)
        msg = str(info.value)
        assert "\n" not in msg.strip() or model.count("\n"), msg
        assert "could not be read" in msg or "must be a formula" in msg, msg
        assert not sentinel.exists(), model


def test_the_refusal_names_the_offending_part(tarr):
    with pytest.raises(ValueError, match=r"'np\.os\.system' is not an allowed transformation"):
        sdccore.regression_check(tarr, tarr, "SALES ~ np.os.system('id')")
    with pytest.raises(ValueError, match=r"'exec' is not an allowed transformation"):
        sdccore.regression_check(tarr, tarr, "SALES ~ LABOR.COSTS + exec('x')")
    with pytest.raises(ValueError, match="Nothing in a formula is run as code"):
        sdccore.regression_check(tarr, tarr, "SALES ~ I(open('x'))")


def test_compare_refuses_payloads_before_any_run(tarr, tmp_path):
    sentinel = tmp_path / "pwned"
    for model in payloads(sentinel)[:8]:
        with pytest.raises(ValueError, match="could not be read"):
            sdccore.compare(tarr, {"PCA": {"method": "pca"}}, reps=1, rng=1, models=[model])
    assert not sentinel.exists()


def test_cli_evaluate_and_compare_refuse_payloads_in_one_line(tarr, tmp_path):
    sentinel = tmp_path / "pwned"
    tarr.to_csv(tmp_path / "o.csv", index=False)
    tarr.to_csv(tmp_path / "p.csv", index=False)
    for model in payloads(sentinel)[:12]:
        code, out, err = _cli(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "p.csv"), "--model", model])
        assert code == 2 and out == "" and "could not be read" in err, (model, err)
        assert "Traceback" not in err
    code, out, err = _cli(["compare", str(tmp_path / "o.csv"), "--reps", "1", "--model", payloads(sentinel)[0]])
    assert code == 2 and "could not be read" in err
    assert not sentinel.exists()


def test_dashboard_model_box_and_restored_settings_run_nothing(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest
    sentinel = tmp_path / "pwned"
    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("pages/4_run.py").run()
    box = "\n".join(p for p in payloads(sentinel) if "\n" not in p)
    at.text_area(key="run_models").input(box + "\nSALES ~ LABOR.COSTS").run()
    assert not at.exception
    assert at.session_state["models"] == ["SALES ~ LABOR.COSTS"]
    assert sum("is left out" in e.value for e in at.error) >= 30
    assert not sentinel.exists()


# ------------------------------------------------------------------ the same fits as patsy

# the model formulas the documentation quotes (moved there from the README): the regression
# check's page and the command line's
DOC_PAGES = [ROOT / "docs" / "utility.md", ROOT / "docs" / "cli.md"]
README_MODELS = sorted(set(m.strip() for m in re.findall(r'"([^"~]+~[^"]+)"', "\n".join(p.read_text() for p in DOC_PAGES))
                           if "Q(" not in m))

BENIGN = [
    "SALES ~ LABOR.COSTS + FIXED.ASSETS",
    "np.log(SALES) ~ np.log(LABOR.COSTS) + FIXED.ASSETS",
    "SALES ~ LABOR.COSTS * FIXED.ASSETS",
    "SALES ~ LABOR.COSTS + I(LABOR.COSTS ** 2) - 1",
    "SALES ~ 0 + LABOR.COSTS:FIXED.ASSETS + np.sqrt(FIXED.ASSETS)",
    "np.log1p(SALES) ~ (LABOR.COSTS + FIXED.ASSETS) * np.log1p(WAGES)",
    "I(SALES / 1000) ~ I(LABOR.COSTS + FIXED.ASSETS) + I(-FIXED.ASSETS)",
    'SALES ~ Q("LABOR.COSTS") + np.log(Q("FIXED.ASSETS"))',
]


def _patsy(model, df):
    """patsy's design, names with dots quoted (patsy needs Q for them)."""
    import patsy
    odd = sorted((c for c in df.columns if "." in c), key=len, reverse=True)
    pat = re.compile(r'(?<![\w."])(' + "|".join(map(re.escape, odd)) + r')(?![\w."])')
    quoted = pat.sub(lambda m: f'Q("{m.group(1)}")', model) if odd and "Q(" not in model else model
    y, X = patsy.dmatrices(quoted, df, NA_action="drop", return_type="dataframe")
    X.columns = [re.sub(r'Q\("([^"]*)"\)', r"\1", c).replace(" ", "") for c in X.columns]
    return y, X


@pytest.mark.parametrize("model", BENIGN + README_MODELS)
def test_design_matrices_equal_patsys(tarr, model):
    if "WAGES" in model and "WAGES" not in tarr.columns:
        model = model.replace("WAGES", "EMPLOYEES" if "EMPLOYEES" in tarr.columns else tarr.columns[3])
    d = tarr.copy()
    d.loc[:4, "FIXED.ASSETS"] = np.nan
    y, X = design_matrices(model, d)
    py, pX = _patsy(model, d)
    assert [c.replace(" ", "") for c in X.columns] == list(pX.columns)
    np.testing.assert_array_equal(X.index, pX.index)
    np.testing.assert_allclose(X.to_numpy(), pX.to_numpy(), rtol=1e-13)
    np.testing.assert_allclose(y.to_numpy(), py.to_numpy(), rtol=1e-13)


def test_categorical_treatment_coding_equals_patsys():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"y": rng.normal(size=40), "x": rng.normal(size=40),
                       "region": rng.choice(["north", "south", "west"], 40)})
    for model in ["y ~ C(region) + x", "y ~ region", "y ~ x:C(region)", "y ~ x * region"]:
        X = design_matrices(model, df)[1]
        pX = _patsy(model, df)[1]
        assert list(X.columns) == list(pX.columns), model
        np.testing.assert_allclose(X.to_numpy(), pX.to_numpy())


def test_readme_models_are_found():
    assert "SALES ~ LABOR.COSTS + FIXED.ASSETS" in README_MODELS


def test_a_restored_setting_holding_payloads_runs_nothing(monkeypatch, tmp_path):
    """Settings restored from the session's history (undo, History page) go back through the
    Run page's box and the same parser: nothing runs, and they are not kept."""
    from streamlit.testing.v1 import AppTest
    sentinel = tmp_path / "pwned"
    monkeypatch.setenv("SDC_DEBUG", "0")
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.multiselect(key="sensitive_select").set_value(["SALES", "NET.PROFIT"]).run()
    at.switch_page("pages/4_run.py").run()
    at.session_state["models"] = [p for p in payloads(sentinel) if "\n" not in p][:10]
    at.multiselect(key="run_methods").set_value(["Rank swap"]).run()
    at.slider(key="run_reps").set_value(2).run()
    at.button(key="run_button").click().run()
    assert not sentinel.exists()
    assert not at.exception and at.session_state["models"] == []
    # and the library path behind the button, fed them directly
    with pytest.raises(ValueError, match="could not be read"):
        sdccore.compare(sdccore.load_dataset("tarragona"), {"RS": {"method": "rankswap"}}, sensitive=["SALES"],
                        reps=1, rng=1, models=payloads(sentinel)[:1])
    assert not sentinel.exists()
