"""Plug-in modules named by SDCCORE_PLUGINS (after a plug-in author's review: nothing said how
a plug-in reaches the command line or the dashboard): the command line imports them at start,
a module that cannot be imported is one line naming it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sdccore
from conftest import run_cli
from sdccore._risk import registry

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = '''
import numpy as np
import sdccore

sdccore.register_intruder(sdccore.IntruderInfo(
    "tenfold", "the tenfold intruder", lambda ctx: 10 * ctx.released[ctx.linked, ctx.target]), replace=True)
sdccore.register_analysis(sdccore.AnalysisInfo(
    "rows_kept", "Records kept (share)", lambda o, r: len(r) / len(o), direction="higher"), replace=True)
'''


def _run(args, tmp_path, plugins):
    env = dict(os.environ, SDCCORE_PLUGINS=plugins, PYTHONPATH=str(tmp_path))
    return subprocess.run([sys.executable, "-m", "sdccore"] + args, cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_command_line_imports_the_plugins_named_in_the_environment(tmp_path, monkeypatch):
    (tmp_path / "my_plugins.py").write_text(PLUGIN)
    sdccore.load_dataset("tarragona").to_csv(tmp_path / "t.csv", index=False)
    # evaluate and registered run the command line's main in this process (a new interpreter costs
    # about 2 CPU-s a run): it reads SDCCORE_PLUGINS when it starts, as `python -m sdccore` does,
    # which the last run below checks as a process; what the plug-in registered here is taken back
    monkeypatch.setenv("SDCCORE_PLUGINS", "my_plugins")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code, out, err = run_cli(["evaluate", str(tmp_path / "t.csv"), str(tmp_path / "t.csv")])
        assert code == 0, err
        assert "Records kept (share)" in out and "1.0000  (higher is better)" in out
        code, out, err = run_cli(["registered"])
        listed = out.splitlines()
    finally:
        if "tenfold" in registry.REGISTRY:
            sdccore.unregister_intruder("tenfold")
        if "rows_kept" in sdccore.analyses():
            sdccore.unregister_analysis("rows_kept")
        sys.modules.pop("my_plugins", None)
    assert "intruder  tenfold         the tenfold intruder  (plug-in)" in listed
    assert any(line.startswith("analysis  rows_kept") and line.endswith("(plug-in)") for line in listed)
    assert any(line.startswith("method    fa") and "plug-in" not in line for line in listed)
    bad = _run(["datasets"], tmp_path, "my_plugins, nope_mod")
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("error: plug-in module 'nope_mod' (named in SDCCORE_PLUGINS) could not be imported: "
                                  "ModuleNotFoundError: No module named 'nope_mod'; check its name and that its folder "
                                  "is on PYTHONPATH.")


def test_load_plugins_in_this_process(tmp_path, monkeypatch):
    (tmp_path / "my_plugins2.py").write_text(PLUGIN.replace("tenfold", "tenfold2").replace("rows_kept", "rows_kept2"))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert sdccore.load_plugins(["my_plugins2"]) == ("my_plugins2",)
        assert "tenfold2" in sdccore.intruders() and "rows_kept2" in sdccore.analyses()
    finally:
        for n in ("tenfold2",):
            if n in registry.REGISTRY:
                sdccore.unregister_intruder(n)
        if "rows_kept2" in sdccore.analyses():
            sdccore.unregister_analysis("rows_kept2")
    monkeypatch.setenv("SDCCORE_PLUGINS", "")
    assert sdccore.load_plugins() == ()
    with pytest.raises(ValueError, match="plug-in module 'x.y' could not be imported"):
        sdccore.load_plugins("x.y")


def test_the_dashboard_imports_the_plugins_or_says_which_one_failed(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("SDCCORE_PLUGINS", "nope_mod_for_the_dashboard")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "plug-in module 'nope_mod_for_the_dashboard' (named in SDCCORE_PLUGINS) could not be imported: "
        "ModuleNotFoundError: No module named 'nope_mod_for_the_dashboard'; check its name and that its folder is "
        "on PYTHONPATH."]
    (tmp_path / "dash_plugins.py").write_text(PLUGIN.replace("tenfold", "tenfold3").replace("rows_kept", "rows_kept3"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SDCCORE_PLUGINS", "dash_plugins")
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        assert not at.exception and not at.error
        assert "tenfold3" in sdccore.intruders() and "rows_kept3" in sdccore.analyses()
    finally:
        if "tenfold3" in registry.REGISTRY:
            sdccore.unregister_intruder("tenfold3")
        if "rows_kept3" in sdccore.analyses():
            sdccore.unregister_analysis("rows_kept3")
