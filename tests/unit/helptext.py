"""`kxtx ... --help` as text at a given width, from the app's click command built once (a
CliRunner run of the typer app builds every command again: 0.1 CPU s a run, most of a help test)."""

from __future__ import annotations

import contextlib
import io
import os

import typer.main

from kxtx.cli.app import app

CLI = typer.main.get_command(app)


@contextlib.contextmanager
def _columns(columns: int):
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def render_help(path: list[str], columns: int, cli=CLI) -> str:
    """`kxtx PATH --help` at `columns`, from the whole command tree or from another build of it."""
    out = io.StringIO()
    with _columns(columns), contextlib.redirect_stdout(out):
        code = cli.main([*path, "--help"], prog_name="kxtx", standalone_mode=False)
    assert code == 0, out.getvalue()
    return out.getvalue()


def render_with(fn, columns: int) -> str:
    """What `fn()` prints at `columns` (typer's own renderer called on a command, for one)."""
    out = io.StringIO()
    with _columns(columns), contextlib.redirect_stdout(out):
        fn()
    return out.getvalue()
