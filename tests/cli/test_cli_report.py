"""Issue 41: the command line writes the dashboard's reports (``--report``, internal, with the
seed; ``--external-report``, without it) from the one source, ``sdccore.report``: words, not
Python reprs or internal column names, and small enough to e-mail."""
import re

import pandas as pd
import pytest

import sdccore
from conftest import run_cli

INTERNAL = ["close_own", "close_linked", "close_reconstructed", "beyond_prior", "with_release", "reported_only",
            "median_rel_error", "r2_kept", "release_fit", "residual_size", "key_match", "in 1 classes"]


def _text(h):
    return re.sub(r"<script.*?</script>", "", h, flags=re.S)  # plotly.js itself is code


def _body(h):
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "", h)  # the report's time stamp


def test_protect_writes_the_internal_and_external_reports(tmp_path):
    d = sdccore.load_dataset("tarragona")
    d.insert(0, "firm", [f"F{i:04d}" for i in range(len(d))])
    d.to_csv(tmp_path / "t.csv", index=False)
    code, _, err = run_cli(["protect", str(tmp_path / "t.csv"), "--method", "ipso", "--sensitive", "SALES",
                            "--seed", "2", "--drop", "firm", "--out", str(tmp_path / "o.csv"),
                            "--report", str(tmp_path / "int.html"), "--external-report", str(tmp_path / "ext.html")])
    assert code == 0, err
    internal, external = (tmp_path / "int.html").read_text(), (tmp_path / "ext.html").read_text()
    for kind, h in (("internal", internal), ("external", external)):
        t = _text(h)
        assert "{'" not in t and "['" not in t, kind
        assert not [w for w in INTERNAL if w in t], kind
        assert len(h.encode()) < 1.5e6, (kind, len(h.encode()))  # plotly.js's basic bundle once: about 1.24 MB
        assert "<h2>What analysts keep</h2>" in t and "<h2>Codebook</h2>" in t and "Risk floors" in t
        assert "<td>firm</td><td>identifier (dropped)</td>" in t and "<td>SALES</td><td>sensitive</td>" in t
    assert "<td>Seed</td><td>2</td>" in _text(internal) and "<td>Seed</td>" not in _text(external)
    assert "INTERNAL - contains the seed" in internal and "INTERNAL" not in _text(external)
    # the same document the library builds for this release (what the dashboard writes too)
    rel = sdccore.make_release(pd.read_csv(tmp_path / "t.csv"), sdccore.Recipe(
        {"method": "ipso", "sensitive": ["SALES"], "seed": 2}, drop=("firm",)))
    again = sdccore.report.release_report(rel, pd.read_csv(tmp_path / "t.csv"), "external", "t.csv")
    assert _body(again) == _body(external)


@pytest.mark.parametrize("extra, says", [
    (["--report", "-"], "--report - is not supported"),
    (["--external-report", "SAME"], "are the same file"),
])
def test_report_paths_are_checked_before_any_work(tmp_path, extra, says):
    sdccore.load_dataset("tarragona").to_csv(tmp_path / "t.csv", index=False)
    extra = [str(tmp_path / "o.csv") if a == "SAME" else a for a in extra]
    code, _, err = run_cli(["protect", str(tmp_path / "t.csv"), "--method", "rankswap", "--seed", "1",
                            "--out", str(tmp_path / "o.csv"), *extra])
    assert code == 2 and says in err and not (tmp_path / "o.csv").exists()


def test_the_dask_engine_refuses_a_report_with_the_way_round(tmp_path):
    sdccore.load_dataset("tarragona").to_parquet(tmp_path / "t.parquet")
    code, _, err = run_cli(["protect", str(tmp_path / "t.parquet"), "--method", "fa", "--seed", "1", "--engine",
                            "dask", "--out", str(tmp_path / "out"), "--report", str(tmp_path / "r.html")])
    assert code == 2 and "--report and --external-report work with --engine memory" in err
    assert not (tmp_path / "r.html").exists()
