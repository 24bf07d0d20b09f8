"""The command line's messages name its flags, not the library's keywords (issue "hostile
inputs"): ``exclude=['P1']`` is said ``--keep P1``, ``weights='w'`` ``--weights w``, a
method's option ``k=500`` ``--set k=500``; an option the user gave with --set stays
``--set key=value``.  One mapping, in ``sdccore._cli.report.cli_words``."""

import numpy as np
import pandas as pd
import pytest

from sdccore.__main__ import main
from sdccore._cli.report import cli_words


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("words")
    rng = np.random.default_rng(0)
    full = pd.DataFrame(rng.normal(size=(200, 4)).round(3) + 10, columns=["A", "B", "C", "S"])
    full.to_csv(d / "full.csv", index=False)
    full.assign(P1=np.nan).to_csv(d / "allmiss.csv", index=False)
    return d


def _run(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


def test_an_all_missing_public_column_is_told_keep_or_drop(files, capsys, tmp_path):
    err = _run(capsys, "protect", str(files / "allmiss.csv"), "--out", str(tmp_path / "o.csv"), "--sensitive", "S",
               "--seed", "1")
    assert err == ("error: empty column(s) P1 hold no value; exclude them (--keep P1, released as they are) or leave "
                   "them out of the release (--drop P1).")
    # what it says works: --drop P1 writes the release
    assert main(["protect", str(files / "allmiss.csv"), "--out", str(tmp_path / "o.csv"), "--sensitive", "S",
                 "--seed", "1", "--drop", "P1", "--allow-unsafe", "words test"]) == 0
    assert "P1" not in pd.read_csv(tmp_path / "o.csv").columns


def test_flags_and_set_options_are_named_as_typed(files, capsys, tmp_path):
    src, out = str(files / "full.csv"), str(tmp_path / "o.csv")
    assert _run(capsys, "protect", src, "--out", out, "--seed", "1", "--weights", "Z") == (
        "error: --weights Z must name a column of the data, e.g. --weights weight.")
    assert _run(capsys, "protect", src, "--out", out, "--seed", "1", "--set", "weights=Z") == (
        "error: --set weights=Z must name a column of the data, e.g. --set weights=weight.")
    err = _run(capsys, "protect", src, "--out", out, "--seed", "1", "--method", "ipso")
    assert err.startswith("error: --method ipso keeps the public variables") and "pass --sensitive COLUMNS" in err
    err = _run(capsys, "protect", src, "--out", out, "--seed", "1", "--method", "magg", "--set", "k=500")
    assert err.startswith("error: --set k=500 is larger than half the 200 records")
    err = _run(capsys, "protect", src, "--out", out, "--seed", "1", "--method", "rankswap", "--strata", "A")
    assert "--strata works with fa, pca, magg, ipso, shuffle, cfa, qexchange; --method rankswap does not take it" in err
    err = _run(capsys, "protect", src, "--out", out, "--seed", "1", "--set", 'floors={"max_abs_cor": 2}')
    assert "floors['max_abs_cor'] must lie in [0, 1]" in err  # the recipe's and --set's own word, kept
    for err in (err, _run(capsys, "evaluate", src, src, "--model", "A ~ B +")):
        assert not any(k in err for k in ("exclude=", "weights=", "strata=", "allow_unsafe", "sensitive=", "rng="))


@pytest.mark.parametrize("text, want", [
    ("pass exclude=['alpha', 'b c'] to release them unchanged", "pass --keep 'alpha,b c' to release them unchanged"),
    ("strata=['region'] must name columns", "--strata region must name columns"),
    ("use transform='none'.", "use --set transform=none."),
    ("or transform=['SALES']", "or --set transform='[\"SALES\"]'"),
    ("pass for example rng=12345.", "pass for example --seed 12345."),
    ("model='y ~ x' must be a formula", "--model 'y ~ x' must be a formula"),
    ("floors must be a dict such as {'max_close_share': 0.2} or a RiskFloors; got str.",
     "floors must be a JSON object such as --set floors='{\"max_close_share\": 0.2}'; got str."),
    ("pass allow_unsafe='reason' for a file that is not published.",
     'pass --allow-unsafe "reason" for a file that is not published.'),
    ("noise_sd=0.5 and --set n_factors=4 and SALES=3 stay", "--set noise_sd=0.5 and --set n_factors=4 and SALES=3 stay"),
])
def test_the_mapping(text, want):
    assert cli_words(text) == want


def test_a_keyword_given_with_set_stays_set():
    assert cli_words("exclude=['ZZ'] names no column", {"exclude"}) == "--set exclude='[\"ZZ\"]' names no column"
    assert cli_words("exclude=['ZZ'] names no column") == "--keep ZZ names no column"


def test_set_names_a_list_with_commas_and_evaluate_leaves_text_columns_out(tmp_path, capsys):
    """--set keys=region,sex names two keys (it was read as one column 'region,sex' and refused);
    evaluate of a file with text columns scores the numeric ones, says so, and its --analyses take
    the text region as a domain."""
    g = np.random.default_rng(5)
    n = 300
    region = g.choice(["North", "South", "East"], n)
    d = pd.DataFrame({"region": region, "sex": g.choice(["f", "m"], n), "age": g.integers(20, 70, n),
                      "rent": g.normal(500, 80, n).round(), "income": g.lognormal(10, 0.4, n).round()})
    src, out = tmp_path / "p.csv", tmp_path / "r.csv"
    d.to_csv(src, index=False)
    assert main(["protect", str(src), "--method", "ipso", "--sensitive", "income", "--seed", "2", "--set",
                 "keys=region,sex,age", "--set", "k_anonymity=2", "--out", str(out), "--allow-unsafe", "test"]) == 0
    err = capsys.readouterr().err
    assert "blanked for 2-anonymity on region, sex, age" in err
    assert main(["evaluate", str(src), str(out), "--sensitive", "income", "--analyses"]) == 0
    cap = capsys.readouterr()
    assert "note: region, sex left out of the scores (not numeric in both files)" in cap.err
    assert "gaps between domains" in cap.out and "Record linkage (DBRL)" in cap.out
