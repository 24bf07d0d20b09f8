"""The package's layering (issue 30, point 2): no import cycle among sdccore's modules,
counting imports inside functions (an import inside a function that reaches upward is a
cycle that only shows at run time)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "sdccore"


def _graph():
    mods = {p.stem: p for p in ROOT.glob("*.py")}
    graph = {m: set() for m in mods}
    for m, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("sdccore."):
                targets = [node.module.split(".")[1]]
            else:
                continue
            graph[m] |= {t for t in targets if t in mods and t != m}
    return graph


def _cycle(graph):
    """One import cycle as a list of modules, or None (depth-first search)."""
    state, stack = {}, []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        state[v] = 2
        stack.pop()
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_no_import_cycle_counting_imports_inside_functions():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_ground_floors_import_no_higher_module():
    g = _graph()
    assert g["_streams"] == set()
    assert g["_missing"] <= {"_streams"}
    assert g["_prepare"] <= {"_decomp", "_plausible", "_missing", "_validation", "_io", "_streams"}
    assert "_dask" not in g["_dask_base"] and not any(m.startswith("_dask") for m in g["_dask_base"])
