"""Public functions of kxtx/ (module level, or methods of public classes; names without a leading
underscore) annotate every parameter and their return: mypy then checks their callers. Neither
mypy's nor ruff's flags say "public only" (they cover private helpers and closures too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT


def missing_annotations(source: str) -> list[str]:
    """`name: what is missing` for each public function of `source` that lacks an annotation."""
    found = []

    def check(fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str) -> None:
        if fn.name.startswith("_"):
            return
        args = fn.args
        params = args.posonlyargs + args.args + args.kwonlyargs
        if owner and params and params[0].arg in ("self", "cls"):
            params = params[1:]
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        missing = [a.arg for a in params if a.annotation is None]
        if fn.returns is None:
            missing.append("return")
        if missing:
            found.append(f"{owner}{fn.name}: {', '.join(missing)}")

    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            check(node, "")
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    check(item, f"{node.name}.")
    return found


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f(a: int) -> int: ...", []),
        ("def f(a) -> int: ...", ["f: a"]),
        ("def f(a: int): ...", ["f: return"]),
        ("def f(*args, **kw: int) -> None: ...", ["f: args"]),
        ("def _private(a): ...", []),
        ("class C:\n    def m(self, x) -> None: ...", ["C.m: x"]),
        ("class C:\n    def _m(self, x): ...", []),
        ("class _Hidden:\n    def m(self, x): ...", []),
        ("def f() -> None:\n    def inner(x): ...", []),
    ],
)
def test_missing_annotations(source, expected):
    assert missing_annotations(source) == expected


def test_public_functions_are_annotated():
    problems = []
    for path in sorted((ROOT / "kxtx").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        problems += [f"{rel}: {p}" for p in missing_annotations(Path(path).read_text())]
    assert not problems, "\n".join(problems)
