"""The documentation site (issue 41's guide): every public name of sdccore has its reference
page and no reference page names anything else, the committed reference is what
``docs/gen_reference.py`` writes, mkdocstrings can follow every re-export, and every page
under docs/ is in mkdocs.yml's nav.  (``mkdocs build --strict`` itself runs in .ci/run, after
the tests: it needs requirements-docs.txt.)"""

import ast
import importlib.util
import re
from pathlib import Path

import yaml

import sdccore

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REF = DOCS / "reference"


def _reference_pages():
    """{page under docs/reference/: the names its ``::: sdccore.NAME`` lines document}."""
    return {p.relative_to(REF).as_posix(): re.findall(r"^::: sdccore\.(\w+)\s*$", p.read_text(), re.M)
            for p in sorted(REF.rglob("*.md")) if p.name != "index.md"}


def _nav_pages(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _nav_pages(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _nav_pages(value)


def test_every_public_name_has_its_reference_page():
    documented = [n for names in _reference_pages().values() for n in names]
    missing = sorted(set(sdccore.__all__) - set(documented))
    assert not missing, f"public names without a page under docs/reference/ (run docs/gen_reference.py): {missing}"


def test_every_reference_page_names_one_public_name():
    public = set(sdccore.__all__)
    for page, names in _reference_pages().items():
        assert len(names) == 1, f"docs/reference/{page} documents {names or 'nothing'}, not one name"
        assert names[0] in public, f"docs/reference/{page} documents sdccore.{names[0]}, which is not public"
        assert Path(page).stem == names[0], f"docs/reference/{page} documents sdccore.{names[0]}"
    documented = [n for names in _reference_pages().values() for n in names]
    assert len(documented) == len(set(documented)), "a public name has two reference pages"


def test_the_reference_is_what_gen_reference_writes():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    pages, nav = gen.expected()
    stale = sorted(rel for rel, text in pages.items() if not (REF / rel).exists() or (REF / rel).read_text() != text)
    assert not stale, f"docs/reference/ is out of date (run docs/gen_reference.py): {stale}"
    lines = [ln for ln in (ROOT / "mkdocs.yml").read_text().splitlines()]
    b, e = lines.index("      " + gen.BEGIN), lines.index("      " + gen.END)
    assert lines[b + 1:e] == nav, "mkdocs.yml's reference nav is out of date (run docs/gen_reference.py)"


def test_mkdocstrings_can_follow_every_reexport():
    """griffe reads sdccore/__init__.py without running it: each public name must be imported
    there under ``if TYPE_CHECKING`` (the lazy ``__getattr__`` alone is invisible to it, and
    ``::: sdccore.NAME`` then fails to build)."""
    tree = ast.parse((ROOT / "sdccore" / "__init__.py").read_text())
    static = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom):
                    static |= {a.asname or a.name for a in stmt.names}
    missing = sorted(set(sdccore.__all__) - static)
    assert not missing, f"public names not imported under TYPE_CHECKING in sdccore/__init__.py: {missing}"


def test_every_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = set(_nav_pages(config["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert not pages - nav, f"pages under docs/ missing from mkdocs.yml's nav: {sorted(pages - nav)}"
    assert not nav - pages, f"nav entries without a page: {sorted(nav - pages)}"


def test_every_picture_a_page_shows_exists():
    for page in DOCS.rglob("*.md"):
        for src in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", page.read_text()):
            assert (page.parent / src).resolve().is_file(), f"{page.relative_to(ROOT)} shows missing {src}"
