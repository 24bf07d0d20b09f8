"""Recipes downloaded before a change must still rebuild their files byte for byte.

tests/data/recipes holds recipes and their releases (gzip) as the tool wrote them at commit
742ab39, before the option schema (issue 11) renamed options, stamped versions and moved
the child random streams to SeedSequence.  See make_recipes.py for how each was made.
"""

import glob
import gzip
import json
import os

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


@pytest.mark.parametrize("name", RECIPES)
def test_old_recipe_rebuilds_its_file_byte_for_byte(name, tmp_path, capsysbinary):
    src = os.path.join(DATA, SOURCE[name.split("_")[0]])
    recipe = os.path.join(HERE, name + ".json")
    with open(recipe) as fh:
        unsafe = json.load(fh).get("unsafe_reason")
    out = tmp_path / "out.csv"
    args = ["protect", src, "--recipe", recipe, "--out", str(out)]
    if unsafe:
        args += ["--allow-unsafe", unsafe]
    assert main(args) == 0, capsysbinary.readouterr().err.decode()
    assert out.read_bytes() == _expected(name)
