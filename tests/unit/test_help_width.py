"""`--help` at 80 columns cuts nothing: no option name, default, env var or word of an option's help
is shortened (`--max-transaction-tim…`) or split over two lines, for any command. The defaults and env
vars shown are typer's own (its renderer, run on the same command at 400 columns)."""

from __future__ import annotations

import enum
import re

import pytest
import typer.main
from typer.core import TyperCommand
from typer.testing import CliRunner

from kxtx.cli import docs
from tests.unit.helptext import CLI, render_help, render_with


class Mode(str, enum.Enum):
    fast = "fast"


PATHS = [c.path[1:] for c in docs._leaves(docs.tree())]
EXTRAS = re.compile(r"\[(?:default|env var): [^\]]*\]")


def _render(path: list[str], columns: int, own: bool = False) -> str:
    """`kxtx PATH --help` at `columns`; `own`: typer's renderer on the same command."""
    if not own:
        return render_help(path, columns)
    cmd, ctx = _command(path)
    return render_with(lambda: TyperCommand.format_help(cmd, ctx, None), columns)


def _command(path: list[str]):
    cmd = CLI
    ctx = cmd.make_context("kxtx", [*path, "--help"], resilient_parsing=True)
    for name in path:
        cmd = cmd.get_command(ctx, name)
        ctx = cmd.make_context(name, ["--help"], parent=ctx, resilient_parsing=True)
    return cmd, ctx


def _options(path: list[str]) -> list:
    cmd, ctx = _command(path)
    return [p for p in cmd.get_params(ctx) if p.param_type_name == "option" and not p.hidden]


def _lines(text: str) -> list[str]:
    return [line.strip("│ ") for line in text.splitlines()]


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) or "kxtx" for p in PATHS])
def test_nothing_is_cut_at_80_columns(path):
    text = _render(path, 80)
    assert "…" not in text, text
    assert max(map(len, text.splitlines())) <= 80, text
    lines = _lines(text)
    for opt in _options(path):
        for name in [*opt.opts, *opt.secondary_opts]:
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), (name, text)
        # every word of its help on one line: none shortened, none folded in two
        for word in " ".join((opt.help or "").split()).split():
            assert any(word in line for line in lines), (opt.opts, word, text)
    if isinstance(_command(path)[0], TyperCommand):
        for extra in set(EXTRAS.findall(_render(path, 400, own=True))):
            assert any(extra in line for line in lines), (extra, text)


def test_a_long_option_name_and_type_fit_beside_a_long_word():
    """The check above on a command of its own making: a 25-character option name, a long type and
    a 32-character word, each whole at 80 columns; typer's layout cut the name there."""
    demo = typer.Typer()

    @demo.command()
    def cmd(
        max_transaction_timeout: str = typer.Option(
            "15", "--max-transaction-timeout", help="See KXTX_BOOTSTRAP_SERVERS=HOST:PORT and more."
        ),
        port: int = typer.Option(9464, "--port", min=0, max=65535, help="HTTP port."),
    ) -> None:
        pass

    # typer's own layout, the one kxtx's commands had: the name is cut
    r = CliRunner().invoke(demo, ["--help"], env={"COLUMNS": "80"})
    assert "--max-transaction-timeout" not in r.output
    from kxtx.cli.app import _reflow_help

    _reflow_help(demo)
    r = CliRunner().invoke(demo, ["--help"], env={"COLUMNS": "80"})
    assert "--max-transaction-timeout" in r.output and "KXTX_BOOTSTRAP_SERVERS=HOST:PORT" in r.output
    assert "[default: 9464]" in r.output and "[default: 15]" in r.output and "…" not in r.output


@pytest.mark.parametrize("columns", [40, 60, 80, 120, 200])
def test_monitor_serve_at_any_width(columns):
    text = _render(["monitor", "serve"], columns)
    assert "…" not in text and "--max-transaction-timeout" in text


def test_defaults_are_worded_as_typer_words_them():
    """Each kind of default typer shows, in a command of its own: kxtx's panel shows the same
    `[default: ...]` as typer's renderer."""
    demo = typer.Typer()

    @demo.command()
    def cmd(
        number: int = typer.Option(3, "--number"),
        ratio: float = typer.Option(0.5, "--ratio"),
        mode: Mode = typer.Option(Mode.fast, "--mode"),
        names: list[str] = typer.Option(["a", "b"], "--name"),
        none: str | None = typer.Option(None, "--none"),
        flag_on: bool = typer.Option(True, "--on"),
        flag_off: bool = typer.Option(False, "--off"),
        pair: bool = typer.Option(False, "--pair/--no-pair"),
        told: str = typer.Option("x", "--told", show_default="as you like"),
        computed: str = typer.Option(lambda: "now", "--computed"),
        hidden_default: str = typer.Option("y", "--quiet-default", show_default=False),
    ) -> None:
        pass

    typers = CliRunner().invoke(demo, ["--help"], env={"COLUMNS": "300"}).output
    from kxtx.cli.app import _reflow_help

    _reflow_help(demo)
    ours = CliRunner().invoke(demo, ["--help"], env={"COLUMNS": "300"}).output
    assert sorted(EXTRAS.findall(ours)) == sorted(EXTRAS.findall(typers)), (typers, ours)
    assert len(EXTRAS.findall(ours)) >= 8, ours
