"""Writes the API reference: one page per public name of ``sdccore.__all__``.

    .venv/bin/python docs/gen_reference.py

Each name gets ``docs/reference/<kind>/<NAME>.md`` holding ``::: sdccore.NAME`` (mkdocstrings
reads the docstring from the source through the re-export in ``sdccore/__init__.py``); the
kind (``functions``, ``classes``, ``constants``, ``modules``: a public namespace) keeps ``pram`` and ``Pram``, ``methods`` and
``METHODS`` apart on file systems that ignore case.  ``docs/reference/index.md`` lists the
names grouped by the step of the work they belong to (the comments of ``__all__`` in
``sdccore/__init__.py``), and the reference part of ``mkdocs.yml``'s nav, between its
``# reference: begin`` and ``# reference: end`` lines, is rewritten to match.  Pages of names
no longer public are removed.  ``tests/package/test_docs.py`` fails when the committed pages
and the public names disagree: run this script after changing ``__all__``.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "docs" / "reference"
MKDOCS = ROOT / "mkdocs.yml"
BEGIN, END = "# reference: begin", "# reference: end"


def groups() -> list[tuple[str, list[str]]]:
    """(group title, names) in the order of ``__all__``, titled by its comments."""
    src = (ROOT / "sdccore" / "__init__.py").read_text()
    body = src[src.index("\n__all__ = ["):]
    body = body[:body.index("\n]") + 2]
    out: list[tuple[str, list[str]]] = []
    for line in body.splitlines()[1:]:
        comment = re.match(r"\s*#\s*(.+)", line)
        if comment:
            out.append((comment.group(1).strip(), []))
            continue
        names = re.findall(r'"(\w+)"', line)
        if names:
            if not out:
                out.append(("other", []))
            out[-1][1].extend(names)
    return out


def kind(obj) -> str:
    if inspect.ismodule(obj):
        return "modules"
    if inspect.isclass(obj):
        return "classes"
    if callable(obj):
        return "functions"
    return "constants"


def summary(obj) -> str:
    """The docstring's first sentence (a constant's own type and value where it has none of its own)."""
    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj)) else None
    if not doc:
        return f"`{type(obj).__name__}`"
    first = " ".join(doc.split("\n\n")[0].split())
    return first.replace("|", "\\|")


def page(name: str, title: str) -> str:
    return (f"<!-- written by docs/gen_reference.py: run it again instead of editing -->\n\n"
            f"::: sdccore.{name}\n\n"
            f"Part of [{title}](../index.md#{anchor(title)}).\n")


def anchor(title: str) -> str:
    return re.sub(r"[^\w]+", "-", title.lower()).strip("-")


def expected() -> tuple[dict[str, str], list[str]]:
    """The reference as it should be: {path under docs/reference/: text} and the nav's lines."""
    sys.path.insert(0, str(ROOT))
    import sdccore

    grouped = groups()
    listed = [n for _, names in grouped for n in names]
    if sorted(listed) != sorted(sdccore.__all__):
        raise SystemExit("the names under the comments of __all__ are not sdccore.__all__")
    pages: dict[str, str] = {}
    index = ["<!-- written by docs/gen_reference.py: run it again instead of editing -->", "",
             "# API reference", "",
             f"Every public name of `sdccore` ({len(listed)}), one page each, grouped by the step of the work it "
             "belongs to (as in `sdccore/__init__.py`). Every function and class has a numpydoc docstring with an "
             "example (`help(sdccore.protect)` shows the same text); `tests/package/test_api.py` runs the examples. "
             "Options after `data` (and `method`) are keyword-only. The private modules (`sdccore._...`) are not part "
             "of the API; [the code layout](../design.md) says where each name lives.", ""]
    nav = []
    for title, names in grouped:
        title = title[0].upper() + title[1:]
        index += [f"## {title}", "", "| name | what it is |", "| --- | --- |"]
        nav.append(f"      - {title}:")
        for name in names:
            obj = getattr(sdccore, name)
            rel = f"{kind(obj)}/{name}.md"
            pages[rel] = page(name, title)
            index.append(f"| [`{name}`]({rel}) | {summary(obj)} |")
            nav.append(f"        - {name}: reference/{rel}")
        index.append("")
    pages["index.md"] = "\n".join(index)
    return pages, nav


def main() -> int:
    pages, nav = expected()
    for rel, text in pages.items():
        path = REF / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for old in REF.glob("*/*.md"):
        if old.relative_to(REF).as_posix() not in pages:
            old.unlink()
    lines = MKDOCS.read_text().splitlines()
    b = next(i for i, ln in enumerate(lines) if ln.strip() == BEGIN)
    e = next(i for i, ln in enumerate(lines) if ln.strip() == END)
    MKDOCS.write_text("\n".join(lines[:b + 1] + nav + lines[e:]) + "\n")
    print(f"{len(pages) - 1} reference pages, docs/reference/index.md and mkdocs.yml's nav written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
