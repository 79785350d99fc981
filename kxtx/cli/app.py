"""The root command: a table of contents. Each command lives in its own module under kxtx.cli."""

from __future__ import annotations

import inspect
from typing import Annotated

import typer
from typer.core import TyperCommand

from kxtx import __version__
from kxtx.cli import (
    cluster,
    dump,
    fence,
    hanging,
    inspection,
    markers,
    monitor,
    pipe,
    produce,
    sandbox,
    topic,
)
from kxtx.cli.common import STATE
from kxtx.cli.helpfmt import KxtxCommand

app = typer.Typer(
    name="kxtx",
    help="Operate Apache Kafka transactions: exactly-once produce and pipe, decode the internal "
    "topics, find and abort hanging transactions.",
    no_args_is_help=True,
    # Locals can hold SASL passwords: never print them in tracebacks.
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

DATA, LOOK, HANG, SETUP = "Exactly-once data", "Look inside", "Hanging transactions", "Setup"

app.command("produce", rich_help_panel=DATA)(produce.produce)
app.command("pipe", rich_help_panel=DATA)(pipe.pipe)

app.add_typer(dump.app, name="dump", rich_help_panel=LOOK)
app.add_typer(inspection.app, name="inspect", rich_help_panel=LOOK)

app.command("find-hanging", rich_help_panel=HANG)(hanging.find_hanging)
app.command("abort-hanging", rich_help_panel=HANG)(hanging.abort_hanging)
app.command("abort", rich_help_panel=HANG)(hanging.abort_cmd)
app.command("fence", rich_help_panel=HANG)(fence.fence)
app.command("audit-markers", rich_help_panel=HANG)(markers.audit_markers)
app.command("repair-markers", rich_help_panel=HANG)(markers.repair_markers)
app.add_typer(monitor.app, name="monitor", rich_help_panel=HANG)

app.command("cluster", rich_help_panel=SETUP)(cluster.cluster)
app.add_typer(topic.app, name="topic", rich_help_panel=SETUP)
app.add_typer(sandbox.app, name="sandbox", rich_help_panel=SETUP)


def reflow(text: str) -> str:
    """Each paragraph of a help text on one line. rich (typer's help) wraps text to the terminal's
    width but keeps the line breaks it is given, so a docstring's source line breaks would show as
    breaks mid-sentence at any other width. Click's no-rewrap marker (a paragraph starting with
    \\b) is kept as it is."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def _reflow_help(typer_app: typer.Typer) -> None:
    """Every command's help (given, or its docstring) reflowed before typer builds the commands,
    and its option panels laid out by kxtx (kxtx.cli.helpfmt: nothing cut at any width)."""
    for info in typer_app.registered_commands:
        text = info.help if info.help is not None else inspect.getdoc(info.callback)
        info.help = reflow(text) if text else text
        if info.cls in (None, TyperCommand):  # typer's default: no command class of its own
            info.cls = KxtxCommand
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            if isinstance(group.typer_instance.info.help, str):
                group.typer_instance.info.help = reflow(group.typer_instance.info.help)
            _reflow_help(group.typer_instance)


_reflow_help(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kxtx {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: Annotated[
        bool, typer.Option("--debug", envvar="KXTX_DEBUG", help="Show tracebacks and debug logs.")
    ] = False,
    version: Annotated[  # noqa: ARG001 - acted on by its eager callback
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    STATE.debug = debug


def main() -> None:
    app(prog_name="kxtx")
