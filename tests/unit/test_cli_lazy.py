"""A run builds only the command it runs (kxtx.cli.app): the same command, the same help, fewer
imports."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer.main

from kxtx.cli import app as appmod
from kxtx.cli import docs
from tests.conftest import ROOT
from tests.unit.helptext import render_help


@pytest.mark.parametrize(
    "args, env, expected",
    [
        (["produce", "f.jsonl", "-t", "t"], {}, ("produce",)),
        (["--debug", "topic", "create", "x"], {}, ("topic",)),
        (["--debug", "--debug", "dump", "txn-state"], {}, ("dump",)),
        (["find-hanging", "--help"], {}, ("find-hanging",)),
        ([], {}, None),  # the root's help
        (["--help"], {}, None),
        (["--version"], {}, ()),  # eager: it prints before any command would run
        (["--debug", "--version", "produce"], {}, ()),
        (["-h", "produce"], {}, None),
        (["--debug"], {}, None),
        (["prodcue"], {}, None),  # not a command: click lists them all
        (["f.jsonl", "produce"], {}, None),
        (["produce"], {"_KXTX_COMPLETE": "complete_bash"}, None),  # completion needs the tree
    ],
)
def test_which_command_a_run_builds(args, env, expected):
    assert appmod.invoked(args, env) == expected


def test_every_command_is_in_the_table_of_contents():
    assert [c.path[1] for c in docs.tree().children] == sorted(name for name, _p, _w in appmod.COMMANDS)


def test_a_command_built_alone_has_the_help_it_has_in_the_whole_tree():
    whole = typer.main.get_command(appmod.build())
    for name, _panel, _where in appmod.COMMANDS:
        alone = typer.main.get_command(appmod.build((name,)))
        top = next(c for c in docs.tree().children if c.path[1] == name)
        for leaf in docs._leaves(top):
            path = leaf.path[1:]
            assert render_help(path, 100, alone) == render_help(path, 100, whole), path


def modules_after(argv: list[str], prefix: str) -> str:
    """The kxtx modules starting with `prefix` that a run of `argv` imported (their sorted list's
    repr)."""
    code = (
        "import sys, runpy\n"
        f"sys.argv = {['kxtx', *argv]!r}\n"
        "try:\n"
        "    runpy.run_module('kxtx', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.startswith({prefix!r})), file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.stderr


def test_a_run_imports_only_its_own_command_module():
    loaded = modules_after(["topic", "--help"], "kxtx.cli.")
    assert "'kxtx.cli.topic'" in loaded, loaded
    for other in ("pipe", "produce", "dump", "monitor", "hanging", "sandbox", "markers"):
        assert f"'kxtx.cli.{other}'" not in loaded, loaded


def test_a_produce_run_without_schemas_imports_no_registry_code(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text('{"id": 1}\n')
    assert modules_after(["produce", str(data), "-t", "t", "--dry-run"], "kxtx.schemas") == "[]"
