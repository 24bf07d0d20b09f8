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

import pandas as pd
import pytest

import sdccore
from conftest import CLI_IN_PROCESS

from sdccore.__main__ import main

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "recipes")
DATA = os.path.join(os.path.dirname(__file__), "..", "..", "sdccore", "data")
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


# each recipe as ``python -m sdccore ARGS`` would run it, one after the other in one process
REBUILD = CLI_IN_PROCESS + r"""
done = {}
for name, args in json.loads(sys.argv[1]).items():
    code, _, err = cli(args)
    done[name] = [code, err]
print(json.dumps(done))
"""


# session, not module: pytest-xdist may run another module's test between two of the group's
# on their worker, which tore a module fixture down and built it again (twice 16 s)
@pytest.fixture(scope="session")
def rebuilt(tmp_path_factory):
    """Every recipe rebuilt by the CLI in one fresh process with OpenBLAS's Haswell kernels,
    the ones the fixtures' last bits came from: BLAS kernels are chosen per CPU and differ in
    the last bits (on an AMD EPYC with AVX-512 OpenBLAS picks its SkylakeX kernels, and the
    unrounded fixtures casc_fa_general and eia_magg_exact then differ by up to 1.3e-10
    relative), which is not a change of the code.  One process for all of them (its start
    and imports were most of each run's cost): the command line run again in a process
    gives the same file as in a fresh one (the test below).  {name: (exit code, standard
    error, output file)}."""
    tmp = tmp_path_factory.mktemp("rebuilt")
    calls = {}
    for name in RECIPES:
        src = os.path.join(DATA, SOURCE[name.split("_")[0]])
        recipe = os.path.join(HERE, name + ".json")
        with open(recipe) as fh:
            unsafe = json.load(fh).get("unsafe_reason")
        args = ["protect", src, "--recipe", recipe, "--out", str(tmp / f"{name}.csv")]
        if unsafe:
            args += ["--allow-unsafe", unsafe]
        calls[name] = args
    env = dict(os.environ, **({"OPENBLAS_CORETYPE": "Haswell"} if _avx2() else {}))
    run = subprocess.run([sys.executable, "-c", REBUILD, json.dumps(calls)], env=env, capture_output=True,
                         cwd=os.path.join(os.path.dirname(__file__), "..", ".."))
    assert run.returncode == 0, run.stderr.decode()
    done = json.loads(run.stdout)
    return {name: (code, err, tmp / f"{name}.csv") for name, (code, err) in done.items()}


@pytest.mark.xdist_group("recipes_rebuilt")  # one pytest-xdist worker, so that the fixture runs once
@pytest.mark.parametrize("name", RECIPES)
def test_old_recipe_rebuilds_its_file_byte_for_byte(name, rebuilt):
    """The CLI with OpenBLAS's Haswell kernels (the fixture above) gives the file the tool
    wrote at commit 742ab39, byte for byte."""
    code, err, out = rebuilt[name]
    assert code == 0, err
    assert out.read_bytes() == _expected(name)


def test_the_cli_in_process_gives_the_same_file_as_in_a_fresh_process(tmp_path, capsysbinary):
    """The in-process CLI (main) and the fresh process agree on this machine, byte for byte."""
    recipe = os.path.join(HERE, "eia_magg_exact.json")  # unrounded: the last bits show
    with open(recipe) as fh:
        unsafe = json.load(fh)["unsafe_reason"]
    args = ["protect", os.path.join(DATA, "eia.csv"), "--recipe", recipe, "--allow-unsafe", unsafe]
    assert main(args + ["--out", str(tmp_path / "a.csv")]) == 0, capsysbinary.readouterr().err.decode()
    subprocess.run([sys.executable, "-m", "sdccore", *args, "--out", str(tmp_path / "b.csv")], check=True,
                   capture_output=True, cwd=os.path.join(os.path.dirname(__file__), "..", ".."))
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_make_release_assembles_a_given_protection_without_protecting_again():
    # issue 30, point 4: the Download page evaluated this protection already; the file is
    # assembled from it, byte for byte the file protect-from-the-recipe gives
    # since issue 38 general PCA breaks the floors on Tarragona (intruders who know the method): the
    # protections are made with a reason, outside pytest.raises (their refusal is a ValueError too)
    why = "test: a release assembled from a given protection"
    df = sdccore.load_dataset("tarragona")
    recipe = sdccore.Recipe({"method": "pca", "seed": 11, "exclude": None}, shuffle=True)
    res = sdccore.protect(df, "pca", rng=11, allow_unsafe=why)
    a = sdccore.make_release(df, recipe, allow_unsafe=why)
    b = sdccore.make_release(df, recipe, result=res, allow_unsafe=why)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert b.result is res and a.recipe.to_json() == b.recipe.to_json()
    # a protection with another seed or method is refused, not silently used
    other_seed = sdccore.protect(df, "pca", rng=12, allow_unsafe=why)
    other_method = sdccore.protect(df, "fa", rng=11, allow_unsafe=why)
    with pytest.raises(ValueError, match="other options than the recipe's \\(seed\\)"):
        sdccore.make_release(df, recipe, result=other_seed, allow_unsafe=why)
    with pytest.raises(ValueError, match="other options than the recipe's \\(method\\)"):
        sdccore.make_release(df, recipe, result=other_method, allow_unsafe=why)
    with pytest.raises(TypeError, match="ProtectionResult"):
        sdccore.make_release(df, recipe, result=a)
    # a broken floor still needs a reason: this given protection's (general PCA sets 16-25 % of
    # Tarragona's skewed amounts to 0: a heap at the bound, issue 39), and a selective one's
    assert not res.risk.ok
    with pytest.raises(sdccore.UnsafeReleaseError):
        sdccore.make_release(df, recipe, result=res)
    rs = sdccore.Recipe({"method": "rankswap", "sensitive": ["SALES", "NET.PROFIT"], "seed": 1})
    broken = sdccore.protect(df, "rankswap", sensitive=["SALES", "NET.PROFIT"], rng=1, allow_unsafe="test")
    with pytest.raises(sdccore.UnsafeReleaseError):
        sdccore.make_release(df, rs, result=broken)


def test_a_given_protection_on_the_log_scale_matches_its_recipe():
    # since issue 38 general PCA breaks the floors on Tarragona: made and assembled with a reason
    why = "test: a given protection on the log scale"
    df = sdccore.load_dataset("tarragona")
    res = sdccore.protect(df, "pca", rng=3, transform=["SALES"], allow_unsafe=why)
    rel = sdccore.make_release(df, sdccore.Recipe({"method": "pca", "seed": 3, "transform": ["SALES"]}), result=res,
                               allow_unsafe=why)
    assert rel.result is res
    with pytest.raises(ValueError, match="other options than the recipe's \\(transform\\)"):
        sdccore.make_release(df, sdccore.Recipe({"method": "pca", "seed": 3, "transform": "none"}), result=res,
                             allow_unsafe=why)
