"""kxtx/'s modules import on their own and import one another without a cycle.

A cycle hidden behind function-level imports works until someone imports the modules in another
order or moves an import to the top; so every `import` counts here, wherever it stands, except
those under `if TYPE_CHECKING:` (they never run)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module below `package_dir` (a package)."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _runtime_imports(tree: ast.AST):
    """Import nodes anywhere in `tree` (functions included) but under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in _runtime_imports(child))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _runtime_imports(node)


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        found |= {t for t in targets if t in known and t != name}
    return found


def graph(package_dir: Path) -> dict[str, set[str]]:
    found = modules(package_dir)
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path a -> ... -> a) per strongly connected group of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_path(edges, sorted(group)) for group in groups]


def _path(edges: dict[str, set[str]], group: list[str]) -> list[str]:
    """A cycle through the group's first module, for the failure message (breadth first)."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    return group


def test_kxtx_has_no_import_cycle():
    found = cycles(graph(ROOT / "kxtx"))
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_check_sees_a_cycle_hidden_in_functions(tmp_path):
    """The check can fail: engine and executors importing each other lazily, as they once did."""
    pkg = tmp_path / "kx" / "pipe"
    pkg.mkdir(parents=True)
    (tmp_path / "kx" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text("def run():\n    from kx.pipe import executors\n")
    (pkg / "executors.py").write_text("def failed():\n    from kx.pipe.engine import run\n")
    (pkg / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kx.pipe import other\n"
    )
    (pkg / "other.py").write_text("from . import typed\n")
    assert cycles(graph(tmp_path / "kx")) == [["kx.pipe.engine", "kx.pipe.executors", "kx.pipe.engine"]]


@pytest.mark.parametrize(
    "source, want",
    [
        ("import kx.a", {"kx.a"}),
        ("from kx import a", {"kx.a"}),
        ("from kx.a import thing", {"kx.a"}),
        ("from . import a", {"kx.a"}),
        ("from .a import thing", {"kx.a"}),
        ("def f():\n    import kx.a", {"kx.a"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kx.a", set()),
        ("import json", set()),
    ],
)
def test_what_counts_as_an_import(tmp_path, source, want):
    (tmp_path / "kx").mkdir()
    (tmp_path / "kx" / "__init__.py").write_text("")
    (tmp_path / "kx" / "a.py").write_text("thing = 1\n")
    (tmp_path / "kx" / "b.py").write_text(source + "\n")
    assert graph(tmp_path / "kx")["kx.b"] == want


#: Imports each module named on its command line in a child forked from an interpreter that has
#: not imported kxtx: as fresh as a new interpreter, without starting one per module. What kxtx's
#: modules import from outside kxtx (the standard library, typer, rich, the Kafka clients), found by
#: a first child that imports them all, is imported in the parent first, so that each child imports
#: only kxtx modules (it was most of each child's time); two children run at a time.
IMPORT_EACH = """
import importlib, os, sys, tempfile, traceback

names = sys.argv[1:]
with tempfile.TemporaryFile("w+") as found:
    pid = os.fork()
    if pid == 0:
        for name in names:
            try:
                importlib.import_module(name)
            except BaseException:
                pass  # reported by the fresh child below
        found.write("\\n".join(m for m in sys.modules if m.split(".")[0] not in ("kxtx", "__main__")))
        found.flush()
        os._exit(0)
    os.waitpid(pid, 0)
    found.seek(0)
    outside = found.read().split()
for name in outside:
    try:
        importlib.import_module(name)
    except BaseException:
        pass  # a private module of a package: loaded by its package as needed
assert not [m for m in sys.modules if m.split(".")[0] == "kxtx"], "the parent must not import kxtx"

def child(name):
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            traceback.print_exc()
            print("FAILED", name, file=sys.stderr)
            os._exit(1)
        os._exit(0)
    return pid

running = []
for name in names:
    running.append(child(name))
    if len(running) == 2:
        os.waitpid(running.pop(0), 0)
for pid in running:
    os.waitpid(pid, 0)
"""


def test_every_module_imports_in_a_fresh_interpreter():
    """Each module first, with no other kxtx module loaded: an import cycle that breaks only
    when a given module is imported first shows here. (kxtx.__main__ runs the CLI: left out.)"""
    names = sorted(n for n in modules(ROOT / "kxtx") if n != "kxtx.__main__")
    assert "kxtx.pipe.engine" in names and "kxtx.pipe.executors" in names
    got = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, *names], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert got.returncode == 0, got.stderr[-3000:]
    assert "FAILED" not in got.stderr, got.stderr[-3000:]
