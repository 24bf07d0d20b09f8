"""The hostile input corpus (tests/data/bad/) through the library/CLI and the dashboard's
upload path: every file gets its message, nothing crashes, and nothing wrong is released."""

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import sdccore
from sdccore._io import read as _io
from conftest import prefetch_held, raw_protect
from sdccore.__main__ import main as cli_main

BAD = Path(__file__).resolve().parents[1] / "data" / "bad"
CASES = json.loads((BAD / "expected.json").read_text())


# streamlit's scan for custom components made once (conftest.component_manifests_scanned_once)
pytestmark = pytest.mark.usefixtures("component_manifests_scanned_once")


def library_path(path):
    """read_table then protect with FA; returns ('ok', result) or ('error', message)."""
    try:
        data = sdccore.read_table(path).data
        res = raw_protect(data, method="fa", rng=0)
    except ValueError as exc:
        return "error", str(exc), None
    return "ok", "", (data, res)


@pytest.mark.parametrize("name", sorted(CASES))
def test_library_path(name):
    expect = CASES[name]["library"]
    status, msg, out = library_path(BAD / name)
    if expect == "ok":
        assert status == "ok", msg
        data, res = out
        num = sdccore._core.validation.numeric_columns(data)
        Y = res.data[num].to_numpy(float)
        X = data[num].to_numpy(float)
        # a missing cell stays missing, in place; every other cell is finite
        assert np.array_equal(np.isnan(Y), np.isnan(X)) and np.isfinite(Y[~np.isnan(X)]).all()
        assert list(res.data.columns) == list(data.columns) and res.data.shape == data.shape
        # observed means kept to rounding, relative to each column's own scale
        gap = np.abs(np.nanmean(Y, 0) - np.nanmean(X, 0))
        assert np.all(gap <= 1e-8 * np.nanstd(X, 0) + 1e-12 * np.nanmax(np.abs(X), 0))
    else:
        assert status == "error", f"{name} should be refused"
        assert expect in msg, msg
        assert "Traceback" not in msg


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_path(name, tmp_path):
    err = io.StringIO()
    args = ["protect", str(BAD / name), "--out", str(tmp_path / "out.csv"), "--seed", "1"]
    if CASES[name]["library"] == "ok":
        # the corpus tests reading and the engine on odd files, not the floors (tiny files break
        # them) nor the role decisions the CLI asks for (tested in test_safety.py)
        flags = sdccore.suggest_roles(sdccore.read_table(BAD / name).data).flags
        keep = [c for c, f in flags.items() if f in ("text", "identifier")]
        args += ["--allow-unsafe", "hostile-corpus test"] + (["--keep", ",".join(keep)] if keep else [])
    with redirect_stderr(err):
        code = cli_main(args)
    text = err.getvalue()
    assert "Traceback" not in text
    if CASES[name]["library"] == "ok":
        assert code == 0, text
        assert (tmp_path / "out.csv").exists()
    else:
        assert code == 2
        assert CASES[name]["library"] in text
        assert not (tmp_path / "out.csv").exists()


def _dashboard(raw, name):
    def script():
        import streamlit as st
        from ui import compute, loading
        loading.init()
        err = loading.handle_upload(st.session_state["raw"], st.session_state["name"])
        st.write(err or "ok")
        for n in st.session_state.get("read_notes", []):
            st.write(n)
        if err is None:
            for p in compute.problems():
                st.write(("BLOCKING " if p.blocking else "") + f"{p.message}. Fix: {p.fix}")
    at = AppTest.from_function(script, default_timeout=60)
    at.session_state["raw"] = raw
    at.session_state["name"] = name
    with prefetch_held():
        at.run()
    assert not at.exception, at.exception
    return [m.value for m in at.markdown]


@pytest.mark.parametrize("name", sorted(CASES))
def test_dashboard_upload_path(name):
    out = _dashboard((BAD / name).read_bytes(), name)
    expect = CASES[name]["dashboard"]
    if expect == "ok":
        assert out[0] == "ok", out
        assert not any(m.startswith("BLOCKING") for m in out), out
    else:
        assert any(expect in m for m in out), out


def test_ten_thousand_columns_refused():
    header = ",".join(f"c{i}" for i in range(10_000))
    row = ",".join("1" for _ in range(10_000))
    raw = (header + "\n" + row + "\n" + row + "\n").encode()
    with pytest.raises(ValueError, match="10000 columns; at most 2000"):
        sdccore.read_table(raw, "wide.csv")
    out = _dashboard(raw, "wide.csv")
    assert "at most 2000" in out[0]


def test_300_mb_file_refused_cleanly():
    raw = b"a,b\n" + b"1.0,2.0\n" * (300 * 2**20 // 8)
    with pytest.raises(ValueError, match="300 MB; the limit is 200 MB"):
        sdccore.read_table(raw, "big.csv")
    cfg = (Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text()
    assert "maxUploadSize = 200" in cfg


def test_release_neutralises_injection():
    data = sdccore.read_table(BAD / "22_csv_injection.csv").data
    res = raw_protect(data, method="pca", rng=0)
    out = _io.prepare_release(res.data)
    text = out.to_csv(index=False)
    assert "\n=cmd" not in text and "\n+1+1" not in text and "\n@SUM" not in text
    assert "'=cmd|/C calc!A0" in text


def test_collinear_identity_survives():
    data = sdccore.read_table(BAD / "19_exactly_collinear.csv").data
    res = raw_protect(data, method="fa", rng=0)
    d = res.data
    assert np.allclose(d.delta, d.alpha + 2 * d.beta, rtol=1e-9, atol=1e-9 * d.delta.abs().max())
    assert len(res.dependencies) == 1  # the largest-sd variable of the relation is rebuilt


def test_html_names_are_text_in_the_dashboard():
    """Column names with tags reach the page as text, never as HTML."""
    raw = (BAD / "24_names_html_script.csv").read_bytes()

    def script():
        import streamlit as st
        from ui import loading
        loading.init()
        loading.handle_upload(st.session_state["raw"], "names.csv")
    with prefetch_held():  # (the upload only: the dashboard below computes what its page shows)
        at = AppTest.from_function(script).run()
        at.session_state["raw"] = raw
        at.run()
    app = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    app.session_state["data"] = at.session_state["data"]
    app.session_state["data_name"] = "names.csv"
    app.session_state["data_token"] = "t"
    app.session_state["roles"] = {c: "public" for c in at.session_state["data"].columns}
    app.session_state["read_notes"] = []
    app.run()
    assert not app.exception
    for el in app.markdown:
        assert "<script>" not in el.value or not getattr(el.proto, "allow_html", False)
