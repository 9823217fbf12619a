"""The layering holds: the core and the sources never pull in Textual or Rich, each adapter
library has one owner, and no module of `dash` imports itself back through another."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import dash.core
import dash.sources


def _modules(pkg) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]


def test_core_and_sources_do_not_import_textual_or_rich() -> None:
    mods = _modules(dash.core) + _modules(dash.sources) + ["dash.commands.cli"]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"imported: {out.stdout.strip()}"


def test_only_one_module_imports_each_adapter_library() -> None:
    from pathlib import Path

    root = Path(dash.core.__file__).resolve().parent.parent
    owners = {"pynvml": {"sources/nvml.py"}, "watchfiles": {"sources/watch.py"},
              "httpx": {"sources/http.py"}}
    for lib, allowed in owners.items():
        users = {
            str(p.relative_to(root))
            for p in root.rglob("*.py")
            if f"import {lib}" in p.read_text() or f"from {lib}" in p.read_text()
        }
        assert users <= allowed, f"{lib} imported by {sorted(users - allowed)}"


def _cycles(graph: object, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v) & modules:  # type: ignore[attr-defined]
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_in_dash() -> None:
    """Imports inside functions and under TYPE_CHECKING count too: a cycle is a tangle either way."""
    import grimp  # import-linter's graph builder

    graph = grimp.build_graph("dash")
    modules = set(graph.modules)
    assert _cycles(graph, modules) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    class Graph:
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, v: str) -> set[str]:
            return self.edges.get(v, set())

    assert _cycles(Graph(), {"a", "b", "c", "d"}) == [["a", "b", "c"]]
