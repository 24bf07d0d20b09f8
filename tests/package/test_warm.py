"""The numerical kernels compiled once, ahead of the first run (issue 42: the first comparison
after an install waited about 30 s for numba).

Each step runs in a fresh interpreter with an empty numba cache of its own (NUMBA_CACHE_DIR), as
on a fresh install: the warm-up must compile every kernel of the package, and a real workload
afterwards (every method of the dashboard on Tarragona, selective and general, and weighted
M-AGG on a survey file) must find each kernel it calls in the cache, with the argument types real
files give (a kernel compiled for other types is compiled again: a cache miss)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_COMPILED = """
import json, sdccore
from sdccore._choose import warm
sdccore.compile_kernels()
print(json.dumps({k: len(d.signatures) for k, d in warm.kernels().items()}))
"""

_WORKLOAD = """
import json, warnings, sdccore
from sdccore._choose import warm
warnings.simplefilter("ignore")
d = sdccore.load_dataset("tarragona")
for m in sdccore.methods(dashboard=True):
    res = sdccore.protect(d, m, sensitive=["SALES"], rng=3, allow_unsafe="test")
    sdccore.evaluate(d, res.data, sensitive=["SALES"])
for m in ("fa", "pca", "magg", "rankswap"):
    res = sdccore.protect(d, m, rng=3, allow_unsafe="test")
    sdccore.evaluate(d, res.data)
# rank swapping in pairs (sdcMicro's rankSwap; recipes before format 8): its own kernel
sdccore.protect(d, "rankswap", sensitive=["SALES"], exchange="pairs", rng=3, allow_unsafe="test")
t = sdccore.load_dataset("testdata")
res = sdccore.protect(t[["income", "expend", "savings", "sampling_weight"]].dropna(), "magg", sensitive=["income"],
                      weights="sampling_weight", rng=3, allow_unsafe="test")
from sdccore._methods.mdav import mdav_file_weighted  # a block of M-AGG on the Dask engine
mdav_file_weighted(d.iloc[:400, :13].to_numpy()[:, ::2], 3)
print(json.dumps({k: [sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())]
                  for k, d in warm.kernels().items()}))
"""


def _run(args, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_the_warm_up_compiles_every_kernel_and_real_files_then_find_them_cached(tmp_path):
    compiled = json.loads(_run(["-c", _COMPILED], tmp_path).strip().splitlines()[-1])
    assert len(compiled) >= 20
    assert {k for k, n in compiled.items() if n == 0} == set()
    # the command line's warm-up now loads them from the cache, naming each step
    said = _run(["-m", "sdccore", "warm"], tmp_path).splitlines()
    assert said[-1].startswith("every kernel ready in ")
    assert "M-AGG, selective, weighted" in " ".join(said) and "IPSO, selective, missing cells" in " ".join(said)
    used = json.loads(_run(["-c", _WORKLOAD], tmp_path).strip().splitlines()[-1])
    missed = {k: m for k, (h, m) in used.items() if m}
    assert missed == {}
    # the kernels the workload calls from Python were loaded from the cache (MDAV, rank swap,
    # IPSO's repair, the nearest-record search and the leave-one-out neighbours among them)
    hit = {k.rsplit(".", 1)[1] for k, (h, m) in used.items() if h}
    assert {"_mdav_kernel", "_mdav_weighted", "_rankswap_order", "_repair_kernel", "_nearest_kernel",
            "_knn_without_self"} <= hit


def test_kernels_lists_every_compiled_function_of_the_package():
    """No module outside ``warm.KERNEL_MODULES`` defines a kernel (a new one must be listed, so
    that the warm-up test above sees it)."""
    import re

    from sdccore._choose import warm

    found = set()
    for path in (ROOT / "sdccore").rglob("*.py"):
        if re.search(r"^@(numba\.)?n?jit\b", path.read_text(), re.M):
            found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    assert found == set(warm.KERNEL_MODULES)
