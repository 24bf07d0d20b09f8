"""A model formula is bounded before it is expanded (issue "hostile inputs"): the terms a
formula makes are counted combinatorially (a*b*...*k of k variables makes 2**k - 1 terms,
a categorical variable multiplies its terms by its levels) and a formula with more than
``MAX_TERMS`` terms or design columns is refused in one line, at once, by every place that
reads formulas (regression_check, compare(models=...), the command line's --model)."""

import time

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._measures.formula import MAX_TERMS, design_matrices, parse_model

COLS = [f"x{i}" for i in range(41)]
WIDE = "x0 ~ " + " * ".join(COLS[1:21])  # 2**20 - 1 terms


@pytest.fixture(scope="module")
def wide():
    rng = np.random.default_rng(0)
    return pd.DataFrame(rng.normal(size=(500, 21)).round(4), columns=COLS[:21])


def _terms(model):
    return parse_model(model, COLS)[2]


def test_the_limit_is_a_few_hundred():
    assert MAX_TERMS == 300


@pytest.mark.parametrize("model, n", [
    ("x0 ~ x1 * x2 * x3", 7),                        # 2**3 - 1
    ("x0 ~ " + "*".join(COLS[1:9]), 255),            # 2**8 - 1: under the limit, built
    ("x0 ~ (x1 + x2 + x3) * (x4 + x5 + x6)", 15),    # 3 + 3 + 9
    ("x0 ~ (x1 + x2 + x3) * (x1 + x2 + x3)", 6),     # 3 main effects + 3 pairs (x1:x1 is x1)
    ("x0 ~ (x1 + x2) : (x3 + x4) - x1:x3", 3),
])
def test_formulas_under_the_limit_expand_as_before(model, n):
    assert len(_terms(model)) == n


@pytest.mark.parametrize("model, text", [
    ("x0 ~ " + "*".join(COLS[1:10]), "would make 511 terms"),           # 2**9 - 1, counted exactly
    (WIDE, "would make 1048575 terms"),                                 # 2**20 - 1
    ("x0 ~ (" + "+".join(COLS[1:21]) + "):(" + "+".join(COLS[21:41]) + ")", "would make 400 terms"),  # 20 x 20
    ("x0 ~ (1 + x1) * " + "*".join(COLS[2:11]), "would make 1023 terms"),  # (1+x1)*... = 2**10 - 1
    ("x0 ~ " + "*".join(COLS[1:10]) + " - " + "*".join(COLS[1:10]), "has a part that would make 511 terms"),
])
def test_formulas_over_the_limit_are_counted_not_built(model, text):
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as info:
        _terms(model)
    assert time.perf_counter() - t0 < 0.5
    msg = str(info.value)
    assert text in msg and f"more than the {MAX_TERMS} a model may have" in msg and repr(model) in msg
    assert "\n" not in msg


def test_two_to_the_twenty_terms_are_refused_at_once(wide):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"x0 ~ x1 \* x2.*would make 1048575 terms.*300"):
        sdccore.regression_check(wide, wide, WIDE)
    assert time.perf_counter() - t0 < 2.0  # measured 0.01 s (statsmodels is imported only for a readable model)


def test_a_twelve_way_interaction_on_tarragona_is_refused_at_once():
    df = sdccore.load_dataset("tarragona")
    model = "SALES ~ " + " * ".join(c for c in df.columns if c != "SALES")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="would make 4095 terms"):
        sdccore.regression_check(df, df, model)
    assert time.perf_counter() - t0 < 2.0  # was 17 s before the refusal


def test_a_categorical_variable_counts_its_levels():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"y": rng.normal(size=300), "x1": rng.normal(size=300), "x2": rng.normal(size=300),
                       "x3": rng.normal(size=300), "g": np.arange(300) % 60})
    # C(g) (59 contrasts) + 3 + 3 + 1 numeric terms + 7 interactions x 59 = 479 columns, the intercept aside
    with pytest.raises(ValueError, match=r"would make 479 design columns, more than the 300 .*C\(g\) has 60 levels"):
        design_matrices("y ~ C(g) * x1 * x2 * x3", df)
    y, X = design_matrices("y ~ C(g) * x1", df)  # 1 + 59 + 1 + 59 = 120 columns
    assert X.shape == (300, 120) and list(X.columns[:2]) == ["Intercept", "C(g)[T.1]"]
    # a text column is categorical: one column a level but the first
    ids = df.assign(t=[f"id{i}" for i in range(300)])
    with pytest.raises(ValueError, match="would make 301 design columns.*t has 300 levels"):
        design_matrices("y ~ t + x1 + x2", ids)  # 299 + 2 = 301 > 300
    y, X = design_matrices("y ~ t", ids.iloc[:250])  # 249 contrasts: under the limit
    assert X.shape[1] == 250


def test_compare_and_the_command_line_refuse_in_one_line(wide, tmp_path, capsys):
    from sdccore.__main__ import main

    compare = sdccore.compare  # its import (scipy, scikit-learn: seconds) apart
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="would make 1048575 terms"):
        compare(wide, {"FA": {"method": "fa"}}, reps=2, rng=1, n_jobs=1, models=[WIDE])
    assert time.perf_counter() - t0 < 2.0  # before any run
    src = tmp_path / "wide.csv"
    wide.to_csv(src, index=False)
    code = main(["evaluate", str(src), str(src), "--model", WIDE])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: ")
    assert "would make 1048575 terms" in err and "more than the 300" in err
