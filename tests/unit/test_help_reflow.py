"""`--help` reflows at any width: no paragraph of a command's help, and no help cell of a command
list, is broken before the line is full (a docstring's source line break showing mid-sentence)."""

from __future__ import annotations

import itertools

import pytest
import typer.main
from typer.testing import CliRunner

from kxtx.cli import docs
from kxtx.cli.app import app, reflow
from tests.unit.helptext import render_help

COMMANDS = list(docs._leaves(docs.tree()))
PATHS = [c.path[1:] for c in COMMANDS]
GROUPS = [c.path[1:] for c in COMMANDS if c.children]
BOX = "│"


def _early_breaks(lines: list[str], width: int) -> list[str]:
    """Pairs of consecutive lines of one paragraph where the next line's first word would have fit
    on the line before (width: the longest line the text may take there)."""
    out = []
    for line, nxt in itertools.pairwise(lines):
        if line.strip() and nxt.strip() and len(line.rstrip()) + 1 + len(nxt.split()[0]) <= width:
            out.append(f"{line.rstrip()!r} / {nxt.strip()!r}")
    return out


def _description(text: str) -> list[str]:
    """The help text between the usage line and the first panel, as rendered (1-space margins)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    end = next((i for i, line in enumerate(lines) if line.startswith("╭")), len(lines))
    return [line.strip() for line in lines[start:end]]


def _command_cells(text: str) -> list[list[str]]:
    """Each command row's help cell (its lines) of a group's command-list panels (its only other
    panel is Options)."""
    cells: list[list[str]] = []
    panel: str | None = None
    for line in text.splitlines():
        if line.startswith("╭"):
            panel = line
            continue
        if line.startswith("╰"):
            panel = None
            continue
        if panel is None or "Options" in panel or not line.startswith(BOX):
            continue
        inner = line.strip(BOX)[1:]  # past the left padding
        name, _, rest = inner.partition("  ")
        if name.strip():
            cells.append([rest.strip()])
        elif cells:
            cells[-1].append(inner.strip())
    return cells


def _help(path: list[str], columns: int) -> str:
    return render_help(path, columns)


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) or "kxtx" for p in PATHS])
def test_help_paragraphs_are_not_broken_mid_sentence(path, columns):
    text = _help(path, columns)
    assert not _early_breaks(_description(text), columns - 2), text
    for cell in _command_cells(text) if path in GROUPS else []:
        longest = max(len(line) for line in cell)  # the column is at least this wide
        assert not _early_breaks(cell, longest), text


def test_the_check_finds_a_source_line_break():
    """What the test above looks for: a help text with a hard break, rendered by typer as it is."""
    broken = typer.Typer()

    @broken.command()
    def cmd() -> None:
        """Title.

        A first sentence that ends here
        and goes on after a hard line break in the source of the text.
        """

    r = CliRunner().invoke(broken, ["--help"], env={"COLUMNS": "100"})
    assert _early_breaks(_description(r.output), 98)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("One line.", "One line."),
        ("Title.\n\nA sentence\nbroken in two.", "Title.\n\nA sentence broken in two."),
        ("  Indented\n  docstring\n\n  second  para\n", "Indented docstring\n\nsecond para"),
        ("Title.\n\n\b\nkept\n  as is", "Title.\n\n\b\nkept\n  as is"),
        ("Title.\n\nExample: kxtx produce a.jsonl -t t", "Title.\n\nExample: kxtx produce a.jsonl -t t"),
    ],
)
def test_reflow(text, expected):
    assert reflow(text) == expected


def test_every_command_help_is_reflowed():
    def walk(cmd, path):
        for paragraph in (cmd.help or "").split("\n\n"):
            assert "\n" not in paragraph or paragraph.startswith("\b"), (path, paragraph)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), ["kxtx"])
