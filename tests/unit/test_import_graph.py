"""kxtx/'s modules import on their own, keep to their tier, and import one another without a cycle.

A cycle hidden behind function-level imports works until someone imports the modules in another
order or moves an import to the top, and one under `if TYPE_CHECKING:` is a cycle the moment an
annotation is evaluated; so every `import` counts here, wherever it stands.

The tiers are the folders (the module map, docs/architecture.md):
- the base, the modules at the top of kxtx/, imports only the base;
- the client tier, kxtx/client/, imports only the base and itself;
- nothing outside kxtx/cli/ (and `python -m kxtx`'s __main__, which starts it) imports kxtx.cli,
  typer or rich;
- the packages do not import each other in a circle (collapsed to one node each, the base one).
"""

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


def _import_nodes(tree: ast.AST, lazy: bool):
    """The import statements of `tree`; those inside functions only when `lazy`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif lazy or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _import_nodes(node, lazy)


def all_imports(name: str, path: Path, known: set[str], lazy: bool = True) -> set[str]:
    """Every module that module `name` imports, wherever the import stands (in functions unless
    `lazy` is false, under `if TYPE_CHECKING:`): those of `known` by name, any other (typer, json)
    as written."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path)), lazy):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        found |= {t for t in targets if t != name}
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` imports."""
    return {t for t in all_imports(name, path, known) if t in known}


def graph(package_dir: Path) -> dict[str, set[str]]:
    found = modules(package_dir)
    return {name: imports(name, path, set(found)) for name, path in found.items()}


#: the tiers by folder: "" is the base (a module at the top of the package)
BASE, CLIENT, CLI = "", "client", "cli"
#: the folder name of the speed annex, in the base and in each package that has one
FAST = "fast"
#: what only the command line may import
CLI_ONLY = ("typer", "rich")


def tier(package_dir: Path, path: Path) -> str:
    """The folder below `package_dir` that holds `path` ("" at the top). __main__ starts the CLI:
    it counts as the CLI's."""
    parts = path.relative_to(package_dir).parts
    if parts == ("__main__.py",):
        return CLI
    # the base's wing of the speed annex (kxtx/fast/) is the base's
    return parts[0] if len(parts) > 1 and parts[0] != FAST else BASE


def layer_violations(package_dir: Path) -> list[str]:
    """Each import that breaks a tier rule (module docstring), as `module -> what it imports`."""
    found = modules(package_dir)
    known = set(found)
    tiers = {name: tier(package_dir, path) for name, path in found.items()}
    bad = []
    for name, path in found.items():
        mine = tiers[name]
        for target in sorted(all_imports(name, path, known)):
            if target not in known:
                if mine != CLI and target.split(".")[0] in CLI_ONLY:
                    bad.append(f"{name} -> {target} (only the CLI imports {', '.join(CLI_ONLY)})")
                continue
            theirs = tiers[target]
            if mine == BASE and theirs != BASE:
                bad.append(f"{name} -> {target} (the base imports only the base)")
            elif mine == CLIENT and theirs not in (BASE, CLIENT):
                bad.append(f"{name} -> {target} (the client tier imports only the base and itself)")
            elif mine != CLI and theirs == CLI:
                bad.append(f"{name} -> {target} (only the CLI imports the CLI)")
    return sorted(bad)


def package_graph(package_dir: Path) -> dict[str, set[str]]:
    """The module graph with each folder collapsed into one node (the base is "")."""
    found = modules(package_dir)
    tiers = {name: tier(package_dir, path) for name, path in found.items()}
    edges: dict[str, set[str]] = {t: set() for t in tiers.values()}
    for name, targets in graph(package_dir).items():
        edges[tiers[name]] |= {tiers[t] for t in targets} - {tiers[name]}
    return edges


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


def test_kxtx_packages_import_each_other_without_a_cycle():
    found = cycles(package_graph(ROOT / "kxtx"))
    assert found == [], "cycles between packages: " + "; ".join(" -> ".join(c) for c in found)


def test_kxtx_keeps_its_tiers():
    assert layer_violations(ROOT / "kxtx") == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_check_sees_a_cycle_hidden_in_functions(tmp_path):
    """The check can fail: engine and executors importing each other lazily, as they once did, and
    two modules whose cycle runs through an import under `if TYPE_CHECKING:`."""
    _write(
        tmp_path / "kx",
        {
            "__init__.py": "",
            "pipe/__init__.py": "",
            "pipe/engine.py": "def run():\n    from kx.pipe import executors\n",
            "pipe/executors.py": "def failed():\n    from kx.pipe.engine import run\n",
            "pipe/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kx.pipe import other\n",
            "pipe/other.py": "from . import typed\n",
        },
    )
    assert cycles(graph(tmp_path / "kx")) == [
        ["kx.pipe.engine", "kx.pipe.executors", "kx.pipe.engine"],
        ["kx.pipe.other", "kx.pipe.typed", "kx.pipe.other"],
    ]


def test_the_check_sees_each_broken_tier_rule(tmp_path):
    """The check can fail: a planted package breaking each rule once, lazily or for typing only
    where that is the harder case, beside imports that keep the rules."""
    _write(
        tmp_path / "kx",
        {
            "__init__.py": "",
            "__main__.py": "from kx.cli import app\n",
            "errors.py": "import json\n",
            "log.py": "def f():\n    from kx.client import settings\n",
            "client/__init__.py": "",
            "client/settings.py": "from kx import errors\nfrom kx.client import auth\n",
            "client/auth.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kx.ops import calls\n",
            "ops/__init__.py": "",
            "ops/calls.py": "from kx.client import settings\nfrom kx.dump import reader\n",
            "ops/show.py": "def f():\n    import rich\n    from kx.cli.output import emit\n",
            "dump/__init__.py": "",
            "dump/reader.py": "def f():\n    from kx.ops import show\n",
            "cli/__init__.py": "",
            "cli/output.py": "import typer\nfrom kx.ops import calls\n",
            "cli/app.py": "from kx.cli import output\n",
        },
    )
    assert layer_violations(tmp_path / "kx") == [
        "kx.client.auth -> kx.ops.calls (the client tier imports only the base and itself)",
        "kx.log -> kx.client.settings (the base imports only the base)",
        "kx.ops.show -> kx.cli.output (only the CLI imports the CLI)",
        "kx.ops.show -> rich (only the CLI imports typer, rich)",
    ]


def test_the_check_sees_packages_in_a_circle(tmp_path):
    """The check can fail: two packages whose modules import each other without a module cycle,
    as dump/partition.py and ops/ once did (partition -> ops.calls, ops.markers -> partition)."""
    _write(
        tmp_path / "kx",
        {
            "__init__.py": "",
            "errors.py": "",
            "ops/__init__.py": "",
            "ops/calls.py": "from kx import errors\n",
            "ops/markers.py": "from kx.dump.partition import OPEN\n",
            "dump/__init__.py": "",
            "dump/partition.py": "from kx import errors\ndef name():\n    from kx.ops.calls import Cluster\n",
        },
    )
    assert cycles(graph(tmp_path / "kx")) == []
    assert cycles(package_graph(tmp_path / "kx")) == [["dump", "ops", "dump"]]


@pytest.mark.parametrize(
    "source, want",
    [
        ("import kx.a", {"kx.a"}),
        ("from kx import a", {"kx.a"}),
        ("from kx.a import thing", {"kx.a"}),
        ("from . import a", {"kx.a"}),
        ("from .a import thing", {"kx.a"}),
        ("def f():\n    import kx.a", {"kx.a"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kx.a", {"kx.a"}),
        ("import json", set()),
    ],
)
def test_what_counts_as_an_import(tmp_path, source, want):
    (tmp_path / "kx").mkdir()
    (tmp_path / "kx" / "__init__.py").write_text("")
    (tmp_path / "kx" / "a.py").write_text("thing = 1\n")
    (tmp_path / "kx" / "b.py").write_text(source + "\n")
    assert graph(tmp_path / "kx")["kx.b"] == want


def private_imports(package_dir: Path) -> list[str]:
    """Each `from X import _name` of the package's own modules: a name another module uses is public."""
    prefix = package_dir.name
    found = []
    for name, path in modules(package_dir).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == prefix:
                found += [
                    f"{name} imports {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    return sorted(found)


def test_no_module_imports_another_modules_private_names(tmp_path):
    assert private_imports(ROOT / "kxtx") == []
    # the check can fail
    _write(tmp_path / "kx", {"__init__.py": "", "a.py": "_x = 1\n", "b.py": "from kx.a import _x\n"})
    assert private_imports(tmp_path / "kx") == ["kx.b imports kx.a._x"]


def shipping_violations(package_dir: Path, worker: str, shipped_with: tuple[str, ...]) -> list[str]:
    """What breaks "a worker module imports only what is shipped": the modules of package `worker`
    (its face, `__init__`, is not shipped) and `shipped_with` go to Spark's workers by value, so
    - a worker module imports (anywhere, lazily too) only shipped modules;
    - a module of `shipped_with` imports only shipped modules when it is loaded (its functions
      that import more run on the driver alone: a task never calls them);
    - `shipped_with` is exactly what the worker modules reach outside their package."""
    found = modules(package_dir)
    known = set(found)
    workers = {n for n in found if n.startswith(worker + ".")}
    shipped = workers | set(shipped_with)
    bad, reached, todo = [], set(), sorted(workers)
    while todo:
        name = todo.pop()
        if name in reached or name not in found:
            continue
        reached.add(name)
        targets = {t for t in all_imports(name, found[name], known, lazy=name in workers) if t in known}
        bad += [f"{name} -> {t} (not shipped to the workers)" for t in sorted(targets - shipped)]
        todo += sorted(targets & shipped)
    bad += [f"{n} is shipped but no worker module imports it" for n in sorted(set(shipped_with) - reached)]
    bad += [f"{n} is shipped but is no module" for n in sorted(set(shipped_with) - known)]
    return sorted(bad)


def test_the_worker_modules_import_only_what_is_shipped():
    from kxtx.pipe import worker

    assert shipping_violations(ROOT / "kxtx", "kxtx.pipe.worker", worker.SHIPPED_WITH) == []
    package = {n for n in modules(ROOT / "kxtx") if n.startswith("kxtx.pipe.worker.")}
    shipped = package | set(worker.SHIPPED_WITH) | set(worker.SHIPPED_FOR_SCHEMAS)
    assert sorted(m.__name__ for m in worker.modules()) == sorted(shipped)


def test_the_schema_modules_shipped_import_only_what_is_shipped_with_them():
    """The registry reader and encoder reach the workers as objects (kxtx.pipe.schemas): their
    modules, loaded there by value, import at load time only modules shipped with them."""
    from kxtx.pipe import worker

    found = modules(ROOT / "kxtx")
    known = set(found)
    shipped = set(worker.SHIPPED_FOR_SCHEMAS)
    bad = [
        f"{name} -> {t}"
        for name in sorted(shipped)
        for t in sorted(all_imports(name, found[name], known, lazy=False) & known)
        if t not in shipped
    ]
    assert bad == []


def test_the_shipping_check_sees_what_is_not_shipped(tmp_path):
    """The check can fail: a worker module importing the driver's errors lazily, a shipped module
    importing an unshipped one when loaded, and a shipped module nothing needs."""
    _write(
        tmp_path / "kx",
        {
            "__init__.py": "",
            "errors.py": "",
            "wording.py": "",
            "gcpause.py": "",
            "clients.py": "",
            "writer.py": "from kx import wording\ndef driver_only():\n    from kx import clients\n",
            "worker/__init__.py": "import importlib\n",
            "worker/task.py": "from kx import writer\nfrom kx.worker import udf\n",
            "worker/udf.py": "def load():\n    from kx.errors import UsageError\n",
        },
    )
    assert shipping_violations(tmp_path / "kx", "kx.worker", ("kx.writer", "kx.wording")) == [
        "kx.worker.udf -> kx.errors (not shipped to the workers)"
    ]
    assert shipping_violations(tmp_path / "kx", "kx.worker", ("kx.writer", "kx.gcpause")) == [
        "kx.gcpause is shipped but no worker module imports it",
        "kx.worker.udf -> kx.errors (not shipped to the workers)",
        "kx.writer -> kx.wording (not shipped to the workers)",
    ]


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
    assert "kxtx.pipe.driver" in names and "kxtx.pipe.executors" in names
    got = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, *names], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert got.returncode == 0, got.stderr[-3000:]
    assert "FAILED" not in got.stderr, got.stderr[-3000:]


#: Who may reach past another library's public API, and which of its private names: one adapter
#: per library, so a release that renames them breaks in one place that names the version
#: (each adapter's docstring says what it was written against).
ADAPTERS = {
    "kxtx.client.kafka_internals": {
        "_manager",
        "_async_get_leader_for_partitions",
        "_find_coordinator_id",
        "_maybe_uncompress",
        "_buffer",
        "_pos",
    },
    "kxtx.pipe.spark_internals": {
        "_lock",
        "_gateway",
        "_jvm",
        "_active_spark_context",
        "_temp_dir",
        "_accumulatorServer",
    },
    # the standard library's: an exit that runs the atexit handlers, then skips the interpreter's
    # wait for threads a native library left running (its docstring says why)
    "kxtx.cli.entry": {"_run_exitfuncs"},
}
#: Underscored names that are public API: os._exit, a namedtuple's _replace, confluent-kafka's
#: KafkaError._PARTITION_EOF and _FATAL (librdkafka's documented local error codes).
PUBLIC_UNDERSCORED = {"_exit", "_replace", "_asdict", "_fields", "_PARTITION_EOF", "_FATAL"}


def foreign_internals(package_dir: Path) -> list[str]:
    """`module: obj._name` for each private name a module reads off an object that is neither its
    own (self, cls) nor a module of the package, by attribute or getattr/hasattr/setattr, where
    ADAPTERS does not grant that module that name."""
    top = package_dir.name
    found = []
    for name, path in modules(package_dir).items():
        tree = ast.parse(path.read_text(), str(path))
        own = {"self", "cls"}
        for node in ast.walk(tree):  # names bound to the package's own modules
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == top:
                own |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                own |= {a.asname or a.name for a in node.names if a.name.split(".")[0] == top}
        allowed = ADAPTERS.get(name, set()) | PUBLIC_UNDERSCORED
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                attr, obj = node.attr, node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr", "setattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                attr, obj = node.args[1].value, node.args[0]
            else:
                continue
            if not attr.startswith("_") or attr.startswith("__") or attr in allowed:
                continue
            if isinstance(obj, ast.Name) and obj.id in own:
                continue
            found.append(f"{name}: {ast.unparse(obj)}.{attr}")
    return sorted(set(found))


def test_only_the_adapters_touch_other_libraries_internals():
    assert foreign_internals(ROOT / "kxtx") == []


def test_the_adapter_check_sees_internals_outside_their_adapter(tmp_path):
    """The check can fail: kafka-python's connection manager reached from an ops module, by
    attribute and by getattr, beside what stays allowed (own objects, own modules, the adapter,
    public underscored names)."""
    _write(
        tmp_path / "kxtx",
        {
            "__init__.py": "",
            "client/__init__.py": "",
            "client/kafka_internals.py": "def run(admin):\n    return admin._manager.run()\n",
            "ops/__init__.py": "",
            "ops/calls.py": (
                "import os\nfrom kxtx.client import kafka_internals\n"
                "class C:\n    def f(self, admin):\n        self._x = admin._manager\n"
                "        getattr(admin, '_async_get_leader_for_partitions')\n"
                "        kafka_internals._private()\n        os._exit(0)\n"
            ),
        },
    )
    assert foreign_internals(tmp_path / "kxtx") == [
        "kxtx.ops.calls: admin._async_get_leader_for_partitions",
        "kxtx.ops.calls: admin._manager",
    ]


#: The switch points of the speed annex (kxtx.fast): the general modules that reach a fast one, and
#: which. Each asks `kxtx.fast.enabled` first, or calls a fast module that asks it itself
#: (gcpause, speedups, jvmcds): KXTX_FAST=0 then runs the general code alone.
SWITCH_POINTS = {
    "kxtx.produce.loop": {"kxtx.fast", "kxtx.produce.fast.keyed"},  # produce's plain and keyed paths
    "kxtx.schemas.codecs": {"kxtx.fast", "kxtx.schemas.fast.avrogen"},  # column-wise Avro, else fastavro
    "kxtx.pipe.spark": {"kxtx.fast", "kxtx.pipe.fast.jvmcds"},  # Spark's daemon module, the driver's CDS
    "kxtx.sandbox.broker": {"kxtx.fast", "kxtx.fast.jvmcds"},  # the nodes' CDS
    "kxtx.dump.rows": {"kxtx.fast"},  # the records' straight-line decoders (kept beside the general ones)
    # the collector paused around a batch (kxtx.fast.gcpause asks the switch itself)
    "kxtx.cli.dump": {"kxtx.fast.gcpause"},
    "kxtx.pipe.driver": {"kxtx.fast.gcpause"},
    "kxtx.pipe.worker.task": {"kxtx.fast.gcpause"},
    "kxtx.pipe.worker.transform": {"kxtx.fast.gcpause"},
}


def _is_fast(name: str) -> bool:
    return FAST in name.split(".")[1:]


def annex_violations(package_dir: Path, switch_points: dict[str, set[str]]) -> list[str]:
    """Each import of a fast module (one in a `fast/` folder) by a general module that is not one
    of its switch points, and each switch point that no longer imports what it is listed with."""
    found = modules(package_dir)
    known = set(found)
    bad = []
    for name, path in sorted(found.items()):
        if _is_fast(name):
            continue
        reached = {t for t in all_imports(name, path, known) if t in known and _is_fast(t)}
        allowed = switch_points.get(name, set())
        bad += [
            f"{name} -> {t} (a general module reaches the annex only at a switch point)"
            for t in sorted(reached - allowed)
        ]
        bad += [
            f"{name}: listed as a switch point of {t}, which it no longer imports"
            for t in sorted(allowed - reached)
        ]
    bad += [f"{n}: a switch point that is no module" for n in sorted(set(switch_points) - known)]
    return bad


def test_general_modules_reach_the_annex_only_at_its_switch_points():
    assert annex_violations(ROOT / "kxtx", SWITCH_POINTS) == []


def test_the_annex_check_sees_a_fast_module_reached_elsewhere(tmp_path):
    """The check can fail: a general module importing a fast one lazily, a stale switch point,
    beside a fast module importing general ones (allowed) and the listed switch point."""
    _write(
        tmp_path / "kx",
        {
            "__init__.py": "",
            "fast/__init__.py": "",
            "produce/__init__.py": "",
            "produce/loop.py": "from kx.produce.fast import keyed\n",
            "produce/mapping.py": "def f():\n    from kx.produce.fast import columns\n",
            "produce/inputs.py": "",
            "produce/fast/__init__.py": "",
            "produce/fast/keyed.py": "from kx.produce import inputs, mapping\n",
            "produce/fast/columns.py": "from kx.produce import mapping\n",
        },
    )
    points = {"kx.produce.loop": {"kx.produce.fast.keyed"}, "kx.produce.inputs": {"kx.fast"}}
    assert annex_violations(tmp_path / "kx", points) == [
        "kx.produce.inputs: listed as a switch point of kx.fast, which it no longer imports",
        "kx.produce.mapping -> kx.produce.fast.columns (a general module reaches the annex only at a switch point)",
    ]
