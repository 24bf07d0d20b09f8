"""The package installs like one (issue 30, point 6): pyproject.toml names every third-party
module the library imports, its version is the library's, and its console script exists.
(`pip install .` in a fresh virtual environment is run by .ci/run.)"""

import ast
import sys
import tomllib
from pathlib import Path

import sdccore

ROOT = Path(__file__).resolve().parents[2]
# import name -> distribution name, where they differ
DIST = {"sklearn": "scikit-learn", "skimage": "scikit-image", "distributed": "distributed", "yaml": "pyyaml"}


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _imported_modules():
    found = set()
    for path in (ROOT / "sdccore").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in ("sdccore", "__future__")}


def _names(reqs):
    out = set()
    for r in reqs:
        name = r.split(";")[0].split("[")[0]
        for sep in "<>=!~ ":
            name = name.split(sep)[0]
        out.add(name.strip().lower().replace("_", "-"))
    return out


def test_every_imported_third_party_module_is_a_declared_dependency():
    proj = _project()
    declared = _names(proj["dependencies"]) | set().union(*(_names(v) for v in proj["optional-dependencies"].values()))
    declared |= {"psutil"}  # distributed's, imported only with it
    missing = sorted(m for m in _imported_modules() if DIST.get(m, m).lower().replace("_", "-") not in declared)
    assert not missing, f"imported by sdccore but not in pyproject.toml: {missing}"


def test_version_and_console_script():
    proj = _project()
    assert proj["version"] == sdccore.__version__
    target = proj["scripts"]["sdccore"]
    module, func = target.split(":")
    mod = __import__(module, fromlist=[func])
    assert callable(getattr(mod, func))
    # the README's requirements pin a version inside every declared range of the core
    pins = {line.split("==")[0].strip().lower().replace("_", "-"): line.split("==")[1].split()[0]
            for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line}
    for dep in proj["dependencies"]:
        name = next(iter(_names([dep])))
        assert name in pins, f"{name} is a dependency but requirements.txt does not pin it"


def test_every_subpackage_is_in_the_distribution():
    """`pip install .` ships every package of sdccore (a subpackage missing from the build
    config gave an installed `sdccore` command that failed on `import sdccore._methods`)."""
    import tomllib

    from setuptools import find_packages

    root = Path(__file__).resolve().parents[2]
    cfg = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    shipped = set(find_packages(str(root), include=cfg["include"]))
    present = {".".join(p.parent.relative_to(root).parts) for p in (root / "sdccore").rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert present <= shipped, sorted(present - shipped)
    assert "sdccore._methods" in present


def test_ci_runs_the_readmes_test_command():
    """`.ci/run` times exactly the README's test command (install included)."""
    readme = [ln for ln in (ROOT / "README.md").read_text().splitlines()
              if ln.startswith("python3 -m venv") and ln.endswith("python -m pytest -q")]
    assert len(readme) == 1
    assert readme[0] in (ROOT / ".ci" / "run").read_text().splitlines()
