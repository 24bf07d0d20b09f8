"""Hostile files and faults, round two (issue 15): what each case must do beyond the
corpus-wide checks in test_hostile.py (which run every file of tests/data/bad/ through the
library, the CLI and the dashboard's upload path)."""

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import sdccore
from sdccore.__main__ import main as cli_main
from conftest import prefetch_held

# streamlit's scan for custom components made once (conftest.component_manifests_scanned_once)
pytestmark = pytest.mark.usefixtures("component_manifests_scanned_once")

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "data" / "bad"
CASES = json.loads((BAD / "expected.json").read_text())
OK_FILES = sorted(n for n, c in CASES.items() if c["library"] == "ok")
METHODS = ["fa", "pca", "magg", "rankswap", "noise"]


def _cli(*args, stdin=None):
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        code = cli_main(list(args))
    return code, err.getvalue(), out.getvalue()


def _notes(name):
    return " | ".join(sdccore.read_table(BAD / name).notes)


# ------------------------------------------------------------------ 1, 2, 9: text numbers, missing marks

def test_text_numbers_are_read_as_numbers_and_said(tarragona=None):
    cur = sdccore.read_table(BAD / "34_currency.csv")
    assert cur.data.alpha.dtype == float and "currency signs" in " ".join(cur.notes)
    plain = pd.read_csv(BAD / "34_currency.csv", dtype=str).alpha.str.replace("[$,]", "", regex=True).astype(float)
    np.testing.assert_array_equal(cur.data.alpha.to_numpy(), plain.to_numpy())
    pct = sdccore.read_table(BAD / "35_percent.csv")
    assert pct.data.alpha.dtype == float and "percent" in " ".join(pct.notes)
    raw = pd.read_csv(BAD / "35_percent.csv", dtype=str).alpha.str.rstrip("%").astype(float)
    np.testing.assert_array_equal(pct.data.alpha.to_numpy(), raw.to_numpy())  # 12% is 12
    acc = sdccore.read_table(BAD / "36_accounting_negatives.csv")
    txt = pd.read_csv(BAD / "36_accounting_negatives.csv", dtype=str).alpha
    neg = txt.str.startswith("(")
    assert neg.any() and (acc.data.alpha[neg] < 0).all() and (acc.data.alpha[~neg] > 0).all()
    fr = sdccore.read_table(BAD / "37_narrow_and_nbsp_thousands.csv")
    assert fr.sep == ";" and fr.decimal == "," and fr.data.alpha.dtype == float and fr.data.beta.dtype == float
    assert fr.data.alpha.min() > 1000  # 12 345,67 is 12345.67, not 12 or NaN
    dec = sdccore.read_table(BAD / "38_parquet_decimal128.parquet")
    assert dec.data.alpha.dtype == float and "exact decimals" in " ".join(dec.notes)


def test_the_data_page_no_longer_says_no_problems_for_text_numbers():
    for name in ("34_currency.csv", "35_percent.csv", "36_accounting_negatives.csv"):
        res = sdccore.read_table(BAD / name)
        assert sdccore.inspect_data(res.data) == []  # converted: nothing left to pass through
        assert sdccore._core.validation.numeric_columns(res.data) == ["alpha", "beta", "gamma"]


@pytest.mark.parametrize("name,mark", [("39_dash_missing.csv", "-"), ("40_dot_missing.csv", "."),
                                       ("41_na_marks.csv", "n/a")])
def test_missing_marks_are_missing_not_text(name, mark):
    res = sdccore.read_table(BAD / name)
    assert res.data.alpha.dtype == float and int(res.data.alpha.isna().sum()) == 2
    if mark != "n/a":  # pandas reads 'n/a' as missing itself; '-' and '.' are ours, with a note
        assert "missing-value mark" in " ".join(res.notes)
    # the marks are missing cells: kept missing in the release, in place (issue 14, part 1)
    rel = sdccore.protect(res.data, method="fa", rng=1, allow_unsafe="a 20-record test file").data
    assert rel.alpha.isna().tolist() == res.data.alpha.isna().tolist()


def test_a_quoted_decimal_comma_is_never_read_as_a_thousands_separator():
    res = sdccore.read_table(BAD / "42_quoted_decimal_comma.csv")
    assert res.data.alpha.dtype == object  # not 9206
    assert "could be read two ways" in " ".join(res.notes)
    with pytest.raises(ValueError, match="'alpha' hold numbers stored as text"):
        sdccore.protect(res.data, method="fa", rng=1)
    # read with the decimal mark chosen by hand it is 920.6
    text = (BAD / "42_quoted_decimal_comma.csv").read_text()
    first = text.splitlines()[1].split('"')[1]
    assert float(first.replace(",", ".")) == pytest.approx(
        sdccore._io.read._to_number(pd.Series([first]), ",").iloc[0])


def test_a_mostly_numeric_text_column_is_an_error_or_a_choice(tmp_path):
    d = sdccore.read_table(BAD / "56_mostly_numeric_text.csv").data
    with pytest.raises(ValueError, match=r"'alpha' hold numbers stored as text.*exclude=\['alpha'\]"):
        sdccore.protect(d, method="pca", rng=1)
    res = sdccore.protect(d, method="pca", rng=1, exclude=["alpha"], allow_unsafe="test")  # the clear choice
    assert res.data.alpha.equals(d.alpha)
    # the CLI: refused without --keep/--drop, written with --keep
    code, err, _ = _cli("protect", str(BAD / "56_mostly_numeric_text.csv"), "--out", str(tmp_path / "o.csv"),
                        "--method", "pca", "--seed", "1")
    assert code == 2 and "alpha" in err and not (tmp_path / "o.csv").exists()
    code, err, _ = _cli("protect", str(BAD / "56_mostly_numeric_text.csv"), "--out", str(tmp_path / "o.csv"),
                        "--method", "pca", "--seed", "1", "--keep", "alpha", "--allow-unsafe", "test")
    assert code == 0, err


# ------------------------------------------------------------------ 3, 4: nothing released unchanged

def test_rank_swap_window_below_one_rank_is_refused(tarragona):
    d = tarragona.iloc[:500]
    with pytest.raises(ValueError, match=r"p=0.1 on 500 records gives a rank-swap window of 0.5.*at least 0.2"):
        sdccore.protect(d, method="rankswap", p=0.1, rng=1)
    with pytest.raises(ValueError, match="rank-swap window"):
        sdccore.protect(d, method="fa", perturbation="rankswap", p=0.1, rng=1)
    with pytest.raises(ValueError, match=r"p=4 on 20 records gives a rank-swap window of 0.8"):
        sdccore.protect(pd.DataFrame(np.random.default_rng(0).standard_normal((20, 3)), columns=list("abc")),
                        method="rankswap", p=4, rng=1)
    assert sdccore.min_swap_percent(500) == pytest.approx(0.2)
    # one rank: every value may move to a neighbour; the release differs from the original
    r = sdccore.protect(d, method="rankswap", p=0.2, rng=1, allow_unsafe="test")
    assert not r.data.equals(d)


def test_fa_swapping_on_three_records_is_refused_for_every_seed():
    # FA on 3 records released an original record intact in 4 of 8 seeds (issue 25): refused now
    d = sdccore.read_table(BAD / "57_three_records.csv").data
    for seed in range(5):
        with pytest.raises(ValueError, match="data has 3 records; protection needs at least 10"):
            sdccore.protect(d, method="fa", rng=seed, allow_unsafe="test")


def test_an_unchanged_column_is_refused_even_with_a_reason(tarragona, monkeypatch):
    from sdccore._methods import factor as _factor
    monkeypatch.setattr(_factor, "perturb_columns", lambda F, *a: F.copy())
    with pytest.raises(sdccore.UnsafeReleaseError, match="released unchanged in every record.*no allow_unsafe"):
        sdccore.protect(tarragona, method="fa", rng=1, allow_unsafe="internal", residuals="keep")


@pytest.mark.parametrize("name", ["43_near_2_pow_63.csv", "44_one_ulp_apart.csv"])
def test_float_resolution_columns_are_refused_with_a_fix(name):
    d = sdccore.read_table(BAD / name).data
    for method in METHODS:
        with pytest.raises(ValueError, match="vary only in their last digits.*subtract a reference value"):
            sdccore.protect(d, method=method, rng=1)
    shifted = d.copy()
    col = "alpha" if name.startswith("43") else "beta"
    if name.startswith("43"):
        shifted[col] = (d[col] - 2.0 ** 63)  # the fix the message gives
        r = sdccore.protect(shifted, method="pca", rng=1, allow_unsafe="test")
        assert not np.array_equal(r.data[col], shifted[col])


@pytest.mark.parametrize("name", OK_FILES)
def test_no_protected_column_equals_its_original_any_method(name):
    """The general rule for both corpora: every method either refuses or releases each checked
    variable changed; a gated release meets the floors (so no near-copy either)."""
    data = sdccore.read_table(BAD / name).data
    flags = sdccore.suggest_roles(data).flags
    keep = [c for c in data.columns if flags.get(c) in ("text", "identifier") or
            not pd.api.types.is_numeric_dtype(data[c])]
    for method in METHODS:
        try:
            res = sdccore.protect(data, method=method, rng=3, exclude=keep or None)
        except ValueError:
            res = None  # refused, with its message (the corpus tests check the messages)
        if res is not None:
            assert res.risk.ok
            for v in res.risk.variables.index:
                assert res.risk.variables.loc[v, "abs_cor"] <= 0.9
        try:
            forced = sdccore.protect(data, method=method, rng=3, exclude=keep or None, allow_unsafe="corpus test")
        except ValueError:
            continue
        for v in forced.risk.variables.index:
            assert not np.array_equal(forced.data[v].to_numpy(), data[v].to_numpy()), (name, method, v)


# ------------------------------------------------------------------ 12, 13, 14: messages

@pytest.mark.parametrize("recipe,expect", [
    ('{"method": "magg", "k": Infinity}', "k (group size, records) must be a finite number"),
    ('{"method": "magg", "k": 1e400}', "k (group size, records) must be a finite number"),
    ('{"method": "fa", "n_factors": 1e400}', "n_factors (number of factors) must be a finite number"),
    ('{"method": "magg", "k": 1e23}', "is larger than half the 834 records"),
    ('{"method": "magg", "k": NaN}', "not a number (NaN)"),
    ('{"method": "fa", "release": 5}', "'release' entry must be an object"),
    ('{"method": "fa", "release": {"drop": 5}}', "error:"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ('{"method": "fa", "seed": 1, "rng": 2}', "holds both 'seed' and 'rng'"),
])
def test_recipe_faults_get_one_line_errors(tmp_path, tarragona, recipe, expect):
    tarragona.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "r.json").write_text(recipe)
    code, err, _ = _cli("protect", str(tmp_path / "t.csv"), "--recipe", str(tmp_path / "r.json"),
                        "--out", str(tmp_path / "o.csv"))
    assert code == 2 and err.startswith("error:") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and expect in err, err
    assert not (tmp_path / "o.csv").exists()


def test_recipe_with_a_bom_is_read(tmp_path, tarragona):
    tarragona.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "r.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"method": "pca", "seed": 4}).encode())
    # (general PCA is refused on this file since issue 38; reading the recipe is tested here)
    code, err, _ = _cli("protect", str(tmp_path / "t.csv"), "--recipe", str(tmp_path / "r.json"),
                        "--out", str(tmp_path / "o.csv"), "--allow-unsafe", "test: a recipe with a BOM")
    assert code == 0, err


def test_magg_on_three_records_says_what_it_needs():
    d = sdccore.read_table(BAD / "57_three_records.csv").data
    with pytest.raises(ValueError, match="data has 3 records; protection needs at least 10"):
        sdccore.protect(d, method="magg", rng=1)


def test_recommend_refuses_tiny_and_extreme_data():
    with pytest.raises(ValueError, match="3 records; a recommendation needs at least 20"):
        sdccore.recommend(sdccore.read_table(BAD / "57_three_records.csv").data)
    with pytest.raises(ValueError, match="1e150 or more"):
        sdccore.recommend(sdccore.read_table(BAD / "45_values_1e200.csv").data)


@pytest.mark.parametrize("exc,code,expect", [(MemoryError, 2, "out of memory"), (KeyboardInterrupt, 130, "interrupted"),
                                             (RecursionError, 2, "nested too deeply")])
def test_the_cli_catches_everything_at_its_boundary(monkeypatch, tmp_path, tarragona, exc, code, expect):
    import sdccore._release.release as release  # the CLI imports make_release from there when it runs
    tarragona.to_csv(tmp_path / "t.csv", index=False)

    def boom(*a, **k):
        raise exc()
    monkeypatch.setattr(release, "make_release", boom)
    c, err, _ = _cli("protect", str(tmp_path / "t.csv"), "--out", str(tmp_path / "o.csv"))
    assert c == code and err.startswith("error:") and expect in err and len(err.strip().splitlines()) == 1


def test_argparse_errors_are_one_line():
    c, err, _ = _cli("protect")
    assert c == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1 and "--help" in err
    c, err, _ = _cli("protect", "x.csv", "--out", "o.csv", "--method", "magic")
    assert c == 2 and "invalid choice" in err and len(err.strip().splitlines()) == 1


def test_a_line_break_in_a_column_name_does_not_cut_the_message(tmp_path):
    d = sdccore.read_table(BAD / "53_newline_in_name.csv").data
    assert "al pha" in d.columns
    bad = pd.DataFrame({"a\nb": [1] * 12, "c": np.arange(12.0)})
    bad.to_csv(tmp_path / "n.csv", index=False)
    c, err, _ = _cli("protect", str(tmp_path / "n.csv"), "--out", str(tmp_path / "o.csv"))
    assert c == 2 and len(err.strip().splitlines()) <= 2 and "a b" in err  # name and fix on the error line


def test_cli_writes_formulas_neutralised(tmp_path):
    c, err, _ = _cli("protect", str(BAD / "54_formula_cells.csv"), "--out", str(tmp_path / "o.csv"), "--seed", "1",
                     "--keep", '=HYPERLINK("x")', "--allow-unsafe", "test", "--method", "pca")
    assert c == 0, err
    text = (tmp_path / "o.csv").read_text()
    assert "\n=1+1" not in text and "'=1+1" in text and text.startswith("\"'=HYPERLINK")


def test_release_is_checked_finite_before_writing(monkeypatch, tarragona):
    from sdccore._protect import pipeline as _protect
    real = _protect._finish

    def nan_finish(*a, **k):
        Xp, *rest = real(*a, **k)
        Xp[0, 0] = np.nan
        return (Xp, *rest)
    monkeypatch.setattr(_protect, "_finish", nan_finish)
    with pytest.raises(ValueError, match="not finite in FIXED.ASSETS; nothing is released"):
        sdccore.protect(tarragona, method="pca", rng=1, allow_unsafe="test", rounding="none")


# ------------------------------------------------------------------ 5, 6, 7, 19: files

def _write_input(tmp_path, tarragona):
    p = tmp_path / "in.csv"
    tarragona.to_csv(p, index=False)
    return p


@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink"])
def test_out_never_overwrites_the_input(tmp_path, tarragona, spelling):
    src = _write_input(tmp_path, tarragona)
    before = src.read_bytes()
    (tmp_path / "sub").mkdir()
    if spelling == "same":
        out = str(src)
    elif spelling == "dotdot":
        out = str(tmp_path / "sub" / ".." / "." / "in.csv")
    else:
        (tmp_path / "link.csv").symlink_to(src)
        out = str(tmp_path / "link.csv")
    c, err, _ = _cli("protect", str(src), "--out", out, "--seed", "1", "--method", "pca")
    assert c == 2 and "is the same file as the input" in err and str(src) in err
    assert src.read_bytes() == before


def test_recipe_and_outputs_never_overwrite_each_other(tmp_path, tarragona):
    src = _write_input(tmp_path, tarragona)
    before = src.read_bytes()
    c, err, _ = _cli("protect", str(src), "--out", str(tmp_path / "o.csv"), "--save-recipe", str(src))
    assert c == 2 and "--save-recipe" in err and src.read_bytes() == before
    (tmp_path / "r.json").write_text('{"method": "pca", "seed": 2}')
    c, err, _ = _cli("protect", str(src), "--recipe", str(tmp_path / "r.json"), "--out", str(tmp_path / "r.json"))
    assert c == 2 and "same file as --recipe" in err and json.loads((tmp_path / "r.json").read_text())["seed"] == 2
    c, err, _ = _cli("protect", str(src), "--out", str(tmp_path / "o.csv"), "--save-recipe", str(tmp_path / "o.csv"))
    assert c == 2 and "same file" in err


def test_missing_recipe_folder_writes_nothing(tmp_path, tarragona):
    src = _write_input(tmp_path, tarragona)
    c, err, _ = _cli("protect", str(src), "--out", str(tmp_path / "o.csv"), "--method", "pca", "--seed", "1",
                     "--save-recipe", str(tmp_path / "nofolder" / "r.json"))
    assert c == 2 and "does not exist" in err and not (tmp_path / "o.csv").exists()


def test_a_failure_between_write_and_rename_keeps_the_previous_file(tmp_path, tarragona, monkeypatch):
    src = _write_input(tmp_path, tarragona)
    out = tmp_path / "o.csv"
    out.write_text("previous release\n")

    def killed(*a):
        raise KeyboardInterrupt()
    monkeypatch.setattr(os, "replace", killed)
    # (general PCA is refused on this file since issue 38: the write is tested, not the floors)
    c, err, _ = _cli("protect", str(src), "--out", str(out), "--method", "pca", "--seed", "1",
                     "--allow-unsafe", "test: an interrupted write")
    assert c == 130 and out.read_text() == "previous release\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "o.csv"]  # no temporary file left


def _cmd(*args):
    return [sys.executable, "-m", "sdccore", *args]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_killing_the_cli_mid_write_leaves_the_previous_file_whole(tmp_path):
    # 200,000 records (23 MB): the temporary file lives about 40 ms (written, then synced to
    # disk) before its rename, time enough to see it and kill the run before the rename
    # (50,000 records gave 10 ms)
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    rng = np.random.default_rng(0)
    big = pd.DataFrame(rng.standard_normal((200_000, 6)) @ rng.standard_normal((6, 6)), columns=list("abcdef"))
    src = tmp_path / "big.csv"
    pa_csv.write_csv(pa.Table.from_pandas(big, preserve_index=False), src)  # (pandas' to_csv: 8 times the CPU)
    out = tmp_path / "o.csv"
    # the previous file at --out: a copy of the 200,000 records (what the file held does not
    # matter to its surviving the kill; a whole protect run made it before, 10 CPU-s)
    shutil.copyfile(src, out)
    before = out.read_bytes()
    # the killed run: selective noise of one variable, the cheapest protection of the file
    # (the risk floors' linkage over 200,000 records is most of a run); the write is the same
    p = subprocess.Popen(_cmd("protect", str(src), "--out", str(out), "--method", "noise", "--sensitive", "a",
                              "--seed", "2", "--allow-unsafe", "test"), env=_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    seen = False
    deadline = time.time() + 600
    while p.poll() is None and time.time() < deadline:
        if any(f.name.endswith(".part") for f in tmp_path.iterdir()):
            p.send_signal(signal.SIGKILL)
            seen = True
            break
        time.sleep(0.002)
    p.wait()
    if not seen:
        pytest.skip("the run finished before its temporary file was seen; nothing to kill")
    assert out.read_bytes() == before  # the previous release, whole
    assert len(pd.read_csv(out)) == 200_000


def test_two_runs_writing_one_file_leave_one_whole_file(tmp_path, tarragona):
    src = _write_input(tmp_path, tarragona)
    out = tmp_path / "o.csv"
    # (general PCA is refused on this file since issue 38: the writes are tested, not the floors)
    procs = [subprocess.Popen(_cmd("protect", str(src), "--out", str(out), "--method", "pca", "--seed", str(s),
                                   "--allow-unsafe", "test: two runs writing one file"),
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in (1, 2)]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    digest = hashlib.sha256(out.read_bytes()).hexdigest()[:12]
    assert sum(f"sha256 {digest}" in e for e in errs) == 1  # the file there is exactly one run's
    assert len(pd.read_csv(out)) == len(tarragona)


def test_stdin_and_stdout(tmp_path, tarragona):
    csv = tarragona.to_csv(index=False).encode()
    # (general PCA is refused on this file since issue 38: the streams are tested, not the floors)
    why = "test: standard input and output"
    p = subprocess.run(_cmd("protect", "-", "--out", "-", "--method", "pca", "--seed", "3", "--allow-unsafe", why),
                       input=csv, capture_output=True, env=_env(), timeout=600)
    assert p.returncode == 0, p.stderr
    assert not (Path.cwd() / "-").exists()
    back = pd.read_csv(io.BytesIO(p.stdout))
    expect = sdccore.protect(tarragona, method="pca", rng=3, allow_unsafe=why).data
    np.testing.assert_array_equal(back.to_numpy(), expect.to_numpy())


# ------------------------------------------------------------------ 8, 10, 17: the dashboard

def _app_with(name):
    """The dashboard with a corpus file loaded through its upload path."""
    def loader():
        import streamlit as st
        from ui import loading
        loading.init()
        st.session_state["_err"] = loading.handle_upload(st.session_state["raw"], st.session_state["name"])
    pre = AppTest.from_function(loader, default_timeout=60)
    pre.session_state["raw"] = (BAD / name).read_bytes()
    pre.session_state["name"] = name
    with prefetch_held():  # (the upload only: the dashboard below computes what its pages show)
        pre.run()
    assert pre.session_state["_err"] is None
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for k in ("data", "data_name", "data_token", "read_notes", "read_format", "role_reasons", "role_flags",
              "role_table", "roles", "passthrough_confirmed"):
        at.session_state[k] = pre.session_state[k]
    return at.run()


def test_an_empty_column_is_excluded_never_every_record_dropped():
    at = _app_with("55_all_empty_column.csv")
    assert not at.exception
    assert not [b for b in at.button if b.key and b.key.startswith("drop_rows")]
    # excluded by its suggested role (a constant: nothing to protect), with the reason; nothing to click
    assert not [b for b in at.button if b.key == "exclude_empty"]
    assert at.session_state["roles"]["empty"] == "excluded" and len(at.session_state["data"]) == 60
    assert not at.error, [e.value for e in at.error]


def test_dropping_records_is_only_offered_when_enough_remain():
    d = pd.DataFrame({"a": [1.0, np.nan, 3, 4, 5], "b": [1.0, 2, np.nan, 4, 5], "c": [3.0, 1, 2, np.nan, 5]})
    probs = sdccore.inspect_data(d)
    miss = [p for p in probs if p.kind == "missing"][0]
    # missing cells no longer block: they are kept missing; dropping is one of the offered choices
    assert miss.rows == 3 and not miss.blocking and "3 missing cell(s) in 3 record(s)" in miss.message
    # complete, but 4 records: only the size problem, which blocks
    assert [p.kind for p in sdccore.inspect_data(d.iloc[:4].assign(a=[1.0, 2, 3, 4]).fillna(1.0))] == ["size"]


@pytest.mark.parametrize("name", ["57_three_records.csv", "58_two_variables.csv"])
def test_small_data_every_page(name):
    at = _app_with(name)
    for page in ["pages/2_explore.py", "pages/3_configure.py", "pages/4_run.py", "pages/5_download.py"]:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not any("Something went wrong" in e.value for e in at.error), (page, [e.value for e in at.error])
    at.switch_page("pages/3_configure.py").run()
    if name.startswith("57"):
        # 3 records: too few to protect at all (issue 25); the pages say so instead of offering methods
        for page in ("pages/3_configure.py", "pages/4_run.py"):
            at.switch_page(page).run()
            text = " ".join(str(e.value) for e in at.info)
            assert "Fix the problems listed on the Data page first: 3 record(s)" in text, text
            assert "run_button" not in [b.key for b in at.button]
        return
    at.radio(key="config_method").set_value("M-AGG").run()
    assert not at.exception
    at.switch_page("pages/4_run.py").run()
    at.slider(key="run_reps").set_value(2).run()
    at.button(key="run_button").click().run()
    assert not at.exception
    assert not any("Something went wrong" in e.value for e in at.error), [e.value for e in at.error]


def test_sizes_are_checked_from_metadata_before_reading():
    t = time.perf_counter()
    with pytest.raises(ValueError, match=r"21,000,000 records x 1 columns \(21.0 million values\)"):
        sdccore.read_table(BAD / "59_parquet_bomb.parquet")
    # a sheet whose <dimension> claims 300,000 x 26 while it holds 60 x 3: its cells are
    # counted before openpyxl reads it, the claim is not believed (writers leave it stale)
    assert sdccore.read_table(BAD / "60_xlsx_claims_300k_rows.xlsx").data.shape == (60, 3)
    assert time.perf_counter() - t < 5  # nothing was materialised


def test_excel_other_sheets_are_named():
    assert "sheet 'Data' was read (the sheets before it are empty)" in _notes("49_data_on_second_sheet.xlsx")
    assert "other sheets with data ('2025')" in _notes("50_two_sheets.xlsx")
    assert "Excel workbook" in _notes("48_xlsx_named_csv.csv")
    assert "UTF-16" in _notes("47_utf16.csv")
    assert "2 comment or blank line(s)" in _notes("51_comment_lines.csv")


def test_numba_cache_is_documented():
    # the dashboard's privacy section (docs/dashboard/index.md, moved there from the README)
    readme = (ROOT / "docs" / "dashboard" / "index.md").read_text()
    assert "No user data are written to disk" in readme
    # every folder numba caches a kernel in is named (sdccore/_methods/__pycache__/ ...)
    cached = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "sdccore").rglob("*.py")
              if "cache=True" in p.read_text()}
    assert cached and all(f"{c}/__pycache__/" in readme for c in cached), cached
    assert "Nothing is written to disk" not in readme
    assert "Nothing is written to disk" not in (ROOT / "README.md").read_text()
