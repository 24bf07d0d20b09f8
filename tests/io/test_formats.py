"""SPSS, Stata and SAS files: read with their variable and value labels, released in the
format they came in (labels kept) or as CSV, Parquet and Excel; fixtures made from the
bundled samples with missing cells at random and in blocks."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

import sdccore
from conftest import run_cli
from sdccore import write_table

ROOT = Path(__file__).resolve().parents[2]
LABELS = {"SALES": "Sales (thousand EUR)", "NET_PROFIT": "Net profit (thousand EUR)"}


def sample_with_codes():
    """Tarragona with Stata-valid names, a labelled region code, missing cells at random and a
    block of 30 records missing three columns."""
    df = sdccore.load_dataset("tarragona").copy()
    df.columns = [c.replace(".", "_") for c in df.columns]
    rng = np.random.default_rng(0)
    num = list(df.columns)
    for c in num:
        df[c] = df[c].astype(float)
        df.loc[rng.random(len(df)) < 0.03, c] = np.nan
    df.loc[df.index[200:230], num[-3:]] = np.nan
    df["REGION"] = rng.integers(1, 5, len(df)).astype(float)
    return df


VALUE_LABELS = {"REGION": {1: "North", 2: "East", 3: "South", 4: "West"}}


def sav_bytes(df, tmp_path):
    path = tmp_path / "f.sav"
    pyreadstat.write_sav(df, str(path), column_labels=LABELS,
                         variable_value_labels={"REGION": {float(k): v for k, v in VALUE_LABELS["REGION"].items()}})
    return path.read_bytes()


def dta_bytes(df):
    """Stata through pandas' own writer (independent of pyreadstat, which reads it)."""
    buf = io.BytesIO()
    d = df.copy()
    d["REGION"] = d["REGION"].astype("int16")
    d.to_stata(buf, write_index=False, variable_labels=LABELS, value_labels=VALUE_LABELS, version=118)
    return buf.getvalue()


@pytest.fixture(scope="module")
def df():
    return sample_with_codes()


@pytest.mark.parametrize("fmt", ["sav", "dta", "xpt", "parquet", "xlsx", "csv"])
def test_read_each_format_with_labels_and_missing_cells(fmt, df, tmp_path):
    if fmt == "sav":
        raw = sav_bytes(df, tmp_path)
    elif fmt == "dta":
        raw = dta_bytes(df)
    else:
        raw = write_table(df, fmt, labels=LABELS)
    r = sdccore.read_table(raw, f"upload.{fmt}")
    assert r.format == fmt
    got = r.data[df.columns].astype(float)
    np.testing.assert_array_equal(got.isna().to_numpy(), df.isna().to_numpy())
    np.testing.assert_allclose(got.to_numpy(), df.to_numpy(), rtol=1e-12, equal_nan=True)
    if fmt in ("sav", "dta", "xpt"):
        assert r.labels == LABELS
    if fmt in ("sav", "dta"):
        assert {int(k): v for k, v in r.value_labels["REGION"].items()} == VALUE_LABELS["REGION"]
        sug = sdccore.suggest_roles(r.data, value_labels=r.value_labels)
        assert sug.flags["REGION"] == "code" and "value labels" in sug.reasons["REGION"]


def test_value_labels_flag_a_column_with_many_codes():
    """20 labelled codes: above the 15-value rule of thumb, still a category because labelled."""
    d = pd.DataFrame({"x": np.arange(200.0) * 1.5, "occ": np.tile(np.arange(1.0, 21.0), 10)})
    assert "occ" not in sdccore.suggest_roles(d).flags
    sug = sdccore.suggest_roles(d, value_labels={"occ": {float(i): f"job {i}" for i in range(1, 21)}})
    assert sug.roles["occ"] == "excluded" and sug.flags["occ"] == "code"


@pytest.mark.parametrize("fmt", ["sav", "dta", "xpt"])
def test_release_round_trip_keeps_labels_and_missing_cells(fmt, df, tmp_path):
    raw = sav_bytes(df, tmp_path) if fmt == "sav" else dta_bytes(df) if fmt == "dta" else write_table(df, "xpt", labels=LABELS)
    src = sdccore.read_table(raw, f"in.{fmt}")
    # general PCA is refused since issue 38 (intruders who know the method); the release is
    # only the vehicle of the round trip
    rel = sdccore.make_release(src.data, sdccore.Recipe({"method": "pca", "seed": 3, "exclude": ["REGION"]}, shuffle=False),
                               allow_unsafe="test of the file formats, not published")
    out = sdccore.read_table(rel.to_bytes(fmt, labels=src.labels, value_labels=src.value_labels), f"out.{fmt}")
    assert out.labels == src.labels and out.value_labels == src.value_labels
    num = [c for c in df.columns if c != "REGION"]
    np.testing.assert_array_equal(out.data[num].isna().to_numpy(), df[num].isna().to_numpy())
    np.testing.assert_allclose(out.data[num].to_numpy(float), rel.data[num].to_numpy(float), rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(out.data["REGION"].to_numpy(float), df["REGION"].to_numpy(float))


def test_invalid_names_for_stata_are_a_clear_error():
    d = sdccore.load_dataset("tarragona")
    with pytest.raises(ValueError, match="FIXED.ASSETS.*not valid Stata names"):
        write_table(d, "dta")
    with pytest.raises(ValueError, match="format='sas7bdat' is not supported"):
        write_table(d, "sas7bdat")


def test_a_damaged_spss_file_is_a_plain_error(df, tmp_path):
    raw = sav_bytes(df, tmp_path)[:300]
    with pytest.raises(ValueError, match="SPSS file could not be read"):
        sdccore.read_table(raw, "broken.sav")


def _cli(*args, cwd, monkeypatch):
    """``python -m sdccore ARGS`` run in this process (the command line's main, as
    tests/conftest.py's run_cli) from the folder ``cwd``: (exit code, standard error).  The
    formats are tested here, not the process: a fresh process (its imports, 3-4 CPU-s) for
    each call was most of these tests' cost."""
    monkeypatch.chdir(cwd)
    code, _, err = run_cli(list(args))
    return code, err


@pytest.mark.parametrize("fmt,out", [("sav", "sav"), ("dta", "dta"), ("sav", "csv"), ("dta", "parquet"),
                                     ("xpt", "xpt"), ("sav", "xlsx")])
def test_cli_writes_the_release_in_the_format_asked(fmt, out, df, tmp_path, monkeypatch):
    raw = sav_bytes(df, tmp_path) if fmt == "sav" else dta_bytes(df) if fmt == "dta" else write_table(df, "xpt", labels=LABELS)
    (tmp_path / f"in.{fmt}").write_bytes(raw)
    # general PCA is refused since issue 38; the release is only the vehicle of the format
    code, err = _cli("protect", f"in.{fmt}", "--method", "pca", "--seed", "5", "--keep", "REGION", "--out",
                     f"rel.{out}", "--allow-unsafe", "test of the file formats, not published", cwd=tmp_path,
                     monkeypatch=monkeypatch)
    assert code == 0, err
    got = sdccore.read_table(str(tmp_path / f"rel.{out}"))
    assert got.format == out
    if out in ("sav", "dta", "xpt"):
        assert got.labels == LABELS
    assert got.data.shape == df.shape
    num = [c for c in df.columns if c != "REGION"]
    np.testing.assert_array_equal(got.data[num].isna().to_numpy(), df[num].isna().to_numpy())


def test_cli_refuses_sas7bdat_output_in_one_line(df, tmp_path, monkeypatch):
    (tmp_path / "in.xpt").write_bytes(write_table(df, "xpt", labels=LABELS))
    code, err = _cli("protect", "in.xpt", "--method", "pca", "--out", "rel.sas7bdat", cwd=tmp_path,
                     monkeypatch=monkeypatch)
    assert code == 2 and err.startswith("error: --out: .sas7bdat cannot be written")
    assert err.count("\n") == 1 and not (tmp_path / "rel.sas7bdat").exists()


def test_dashboard_reads_spss_and_offers_it_back(monkeypatch, df, tmp_path):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(ROOT)
    raw = sav_bytes(df, tmp_path)

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()

    def script():
        import streamlit as st
        from ui import loading
        loading.init()
        err = loading.handle_upload(st.session_state["raw"], "survey.sav")
        st.write(err or "ok")

    up = AppTest.from_function(script, default_timeout=60)
    up.session_state["raw"] = raw
    up.run()
    assert up.markdown[0].value == "ok"
    for k in ("data", "data_name", "data_token", "file_format", "labels", "value_labels", "roles", "role_flags"):
        at.session_state[k] = up.session_state[k]
    assert at.session_state["file_format"] == "sav" and at.session_state["roles"]["REGION"] == "excluded"
    # since issue 38 general protection of this file is refused (no method meets the floors, so
    # the page offers no download); SALES sensitive: the recommended selective method (IPSO)
    # meets them and the file can be offered back
    at.session_state["roles"] = {**at.session_state["roles"], "REGION": "excluded", "SALES": "sensitive"}
    at.session_state["passthrough_confirmed"] = True
    # IPSO conditioned on the labelled REGION (issue 39) meets the floors on this file in 20 of
    # 30 runs (seeds 100-129): the other 10 break its 9 largest SALES, where one record decides,
    # and the app's seed 12345 is among them (the page then refuses the release; tested in
    # tests/dashboard); seed 2, used here before, breaks the band of highest leverage since it is
    # held. This test is about the SPSS round trip: a seed whose release passes
    at.session_state["seed"] = at.session_state["seed_input"] = 3
    at.switch_page("pages/5_download.py").run()
    at.button(key="prepare_release").click().run()  # nothing is protected until asked (issue 41)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="release_format").value == "sav"
    labels = [b.label for b in at.get("download_button")]
    assert labels[0] == "Download the protected data"
