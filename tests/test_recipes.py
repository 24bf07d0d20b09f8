"""Recipes downloaded before a change must still rebuild their files byte for byte.

tests/data/recipes holds recipes and their releases (gzip) as the tool wrote them at commit
742ab39, before the option schema (issue 11) renamed options, stamped versions and moved
the child random streams to SeedSequence.  See make_recipes.py for how each was made.
"""

import glob
import gzip
import json
import os
import subprocess
import sys

import pytest

from sdccore.__main__ import main

HERE = os.path.join(os.path.dirname(__file__), "data", "recipes")
DATA = os.path.join(os.path.dirname(__file__), "..", "sdccore", "data")
RECIPES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(HERE, "*.json")))
SOURCE = {"tarragona": "tarragona.csv", "casc": "casc.csv", "eia": "eia.csv", "legacy": "tarragona.csv"}


def _expected(name):
    with gzip.open(os.path.join(HERE, name + ".csv.gz"), "rb") as fh:
        return fh.read()


def test_fixtures_are_there():
    assert len(RECIPES) >= 7
    with open(os.path.join(HERE, "eia_magg_exact.json")) as fh:
        assert json.load(fh)["noise"] == "exact"  # an old spelling the fixtures must keep covering


def _avx2():
    try:
        with open("/proc/cpuinfo") as fh:
            return " avx2" in fh.read()
    except OSError:
        return False


@pytest.mark.parametrize("name", RECIPES)
def test_old_recipe_rebuilds_its_file_byte_for_byte(name, tmp_path):
    """The CLI in a fresh process with OpenBLAS's Haswell kernels, the ones the fixtures'
    last bits came from: BLAS kernels are chosen per CPU and differ in the last bits (on an
    AMD EPYC with AVX-512 OpenBLAS picks its SkylakeX kernels, and the unrounded fixtures
    casc_fa_general and eia_magg_exact then differ by up to 1.3e-10 relative), which is not a
    change of the code."""
    src = os.path.join(DATA, SOURCE[name.split("_")[0]])
    recipe = os.path.join(HERE, name + ".json")
    with open(recipe) as fh:
        unsafe = json.load(fh).get("unsafe_reason")
    out = tmp_path / "out.csv"
    args = ["protect", src, "--recipe", recipe, "--out", str(out)]
    if unsafe:
        args += ["--allow-unsafe", unsafe]
    env = dict(os.environ, **({"OPENBLAS_CORETYPE": "Haswell"} if _avx2() else {}))
    run = subprocess.run([sys.executable, "-m", "sdccore", *args], env=env, capture_output=True,
                         cwd=os.path.join(os.path.dirname(__file__), ".."))
    assert run.returncode == 0, run.stderr.decode()
    assert out.read_bytes() == _expected(name)


def test_the_cli_in_process_gives_the_same_file_as_in_a_fresh_process(tmp_path, capsysbinary):
    """The in-process CLI (main) and the fresh process agree on this machine, byte for byte."""
    recipe = os.path.join(HERE, "eia_magg_exact.json")  # unrounded: the last bits show
    with open(recipe) as fh:
        unsafe = json.load(fh)["unsafe_reason"]
    args = ["protect", os.path.join(DATA, "eia.csv"), "--recipe", recipe, "--allow-unsafe", unsafe]
    assert main(args + ["--out", str(tmp_path / "a.csv")]) == 0, capsysbinary.readouterr().err.decode()
    subprocess.run([sys.executable, "-m", "sdccore", *args, "--out", str(tmp_path / "b.csv")], check=True,
                   capture_output=True, cwd=os.path.join(os.path.dirname(__file__), ".."))
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
