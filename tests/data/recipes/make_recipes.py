"""Recipes and their releases as the tool wrote them at commit 742ab39 (before the option
schema, issue 11): tests/release/test_recipes.py checks that each still rebuilds its file byte for
byte.  Run from the repository root: ``PYTHONPATH=. python tests/data/recipes/make_recipes.py``.
Regenerating them with a later version defeats their purpose; add new ones instead."""

import gzip
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "..", "sdccore", "data")

# name: (data set, CLI arguments, recipe entries written before the run)
CASES = {
    "tarragona_rankswap_sales": ("tarragona", ["--method", "rankswap", "--sensitive", "SALES", "--set", "p=40",
                                               "--seed", "7"], {"release": {"shuffle": True}}),
    "casc_fa_general": ("casc", ["--method", "fa", "--seed", "11"], {"release": {"shuffle": True}}),
    "tarragona_pca_remove": ("tarragona", ["--method", "pca_remove", "--seed", "3", "--allow-unsafe",
                                           "fixture, not published"], {}),
    "eia_magg_exact": ("eia", ["--method", "magg", "--set", "k=5", "--set", "noise=exact", "--seed", "5",
                               "--allow-unsafe", "fixture, not published"],
                       {"release": {"drop": ["UTILITYID"], "keep": ["UTILNAME", "STATE", "YEAR", "MONTH"], "shuffle": True}}),
    "casc_pca_noise": ("casc", ["--method", "pca", "--set", "perturbation=noise", "--set", "noise=80",
                                "--set", "transform=auto", "--seed", "13", "--allow-unsafe", "fixture, not published"], {}),
    "tarragona_noise": ("tarragona", ["--method", "noise", "--set", "noise=60", "--sensitive", "SALES,NET.PROFIT",
                                      "--seed", "17", "--allow-unsafe", "fixture, not published"], {}),
}


def main():
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", ".."))
    for name, (ds, args, pre) in CASES.items():
        src = os.path.join(DATA, ds + ".csv")
        recipe = os.path.join(HERE, name + ".json")
        cmd = [sys.executable, "-m", "sdccore", "protect", src, *args, "--save-recipe", recipe, "--out", "-"]
        if pre:
            pre_path = os.path.join(HERE, name + ".pre.json")
            with open(pre_path, "w") as fh:
                json.dump(pre, fh)
            cmd += ["--recipe", pre_path]
        out = subprocess.run(cmd, env=env, capture_output=True, check=True).stdout
        if pre:
            os.unlink(pre_path)
        with gzip.GzipFile(os.path.join(HERE, name + ".csv.gz"), "wb", mtime=0) as fh:
            fh.write(out)
        print(name, len(out))
    # a recipe from before recipe versions (no stamp, no transform/bounds/rounding/floors):
    # its file as the tool of that time wrote it is what LEGACY_DEFAULTS rebuild
    with open(os.path.join(HERE, "tarragona_rankswap_sales.json")) as fh:
        r = json.load(fh)
    for key in ("recipe_version", "transform", "bounds", "rounding", "floors"):
        r.pop(key)
    r["seed"] = 21
    legacy = os.path.join(HERE, "legacy_rankswap.json")
    with open(legacy, "w") as fh:
        json.dump(r, fh, indent=2, sort_keys=True)
    out = subprocess.run([sys.executable, "-m", "sdccore", "protect", os.path.join(DATA, "tarragona.csv"),
                          "--recipe", legacy, "--out", "-"], env=env, capture_output=True, check=True).stdout
    with gzip.GzipFile(os.path.join(HERE, "legacy_rankswap.csv.gz"), "wb", mtime=0) as fh:
        fh.write(out)
    print("legacy_rankswap", len(out))


if __name__ == "__main__":
    main()
