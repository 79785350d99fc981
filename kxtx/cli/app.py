"""The root command: a table of contents. Each command lives in its own module under kxtx.cli.

A run imports and builds only the command it runs (`kxtx produce ...` never imports the modules of
`pipe` or `monitor`): the whole tree is built for the root's help, for shell completion and for
anything that is not a known command name (click's "no such command" error then lists them all).
`app` is the whole tree, built when first used (the docs and the tests read it).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from kxtx import __version__
from kxtx.cli.common import STATE
from kxtx.cli.helpfmt import KxtxCommand
from kxtx.exitcodes import ExitCode

DATA, LOOK, HANG, SETUP = "Exactly-once data", "Look inside", "Hanging transactions", "Setup"

#: name, help panel, and where it lives in kxtx.cli: "module:function" for a command,
#: "module:app" for a group of subcommands (a typer.Typer). In the order of the root's help.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("produce", DATA, "produce:produce"),
    ("pipe", DATA, "pipe:pipe"),
    ("dump", LOOK, "dump:app"),
    ("inspect", LOOK, "inspection:app"),
    ("find-hanging", HANG, "hanging:find_hanging"),
    ("abort-hanging", HANG, "hanging:abort_hanging"),
    ("abort", HANG, "hanging:abort_cmd"),
    ("fence", HANG, "fence:fence"),
    ("complete", HANG, "complete:complete"),
    ("audit-markers", HANG, "markers:audit_markers"),
    ("repair-markers", HANG, "markers:repair_markers"),
    ("monitor", HANG, "monitor:app"),
    ("cluster", SETUP, "cluster:cluster"),
    ("topic", SETUP, "topic:app"),
    ("sandbox", SETUP, "sandbox:app"),
)

#: the root's own options (`kxtx --debug produce ...`): none takes a value
ROOT_FLAGS = ("--debug",)
#: set by the shell when it asks for completions (typer's `_{PROG}_COMPLETE`)
COMPLETE_ENV = "_KXTX_COMPLETE"


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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kxtx {__version__}")
        raise typer.Exit()


def root(
    debug: Annotated[
        bool, typer.Option("--debug", envvar="KXTX_DEBUG", help="Show tracebacks and debug logs.")
    ] = False,
    version: Annotated[  # noqa: ARG001 - acted on by its eager callback
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    STATE.debug = debug


def build(names: tuple[str, ...] | None = None) -> typer.Typer:
    """The root app with the commands `names` (all of them when None), their modules imported now."""
    root_app = typer.Typer(
        name="kxtx",
        help="Operate Apache Kafka transactions: exactly-once produce and pipe, decode the internal "
        "topics, find and abort hanging transactions.",
        no_args_is_help=True,
        # Locals can hold SASL passwords: never print them in tracebacks.
        pretty_exceptions_show_locals=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    root_app.callback()(root)
    for name, panel, where in COMMANDS:
        if names is None or name in names:
            module, attr = where.split(":")
            target = getattr(importlib.import_module(f"kxtx.cli.{module}"), attr)
            if isinstance(target, typer.Typer):
                root_app.add_typer(target, name=name, rich_help_panel=panel)
            else:
                root_app.command(name, rich_help_panel=panel)(target)
    _reflow_help(root_app)
    return root_app


def invoked(args: list[str], env: Any = os.environ) -> tuple[str, ...] | None:
    """The one command these arguments run; none for `--version` (an eager option: it prints and
    exits before any command); None when the whole tree is needed (the root's help, completion, no
    command, or a name that is not a command)."""
    if env.get(COMPLETE_ENV):
        return None
    names = {name for name, _panel, _where in COMMANDS}
    for arg in args:
        if arg in ROOT_FLAGS:
            continue
        if arg == "--version":
            return ()
        return (arg,) if arg in names else None
    return None


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole tree, once (module attribute on first use)
        globals()["app"] = whole = build()
        return whole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def usage_line(exc: typer.TyperException) -> str:
    """A usage error of the command line (click's, which typer vendors: a bad choice or number, a
    missing argument, an unknown option or command) as kxtx's one error line, naming the command's
    help, instead of typer's usage box."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    message = message[:1].lower() + message[1:] if message[1:2].islower() else message
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.help_option_names:
        message += f" ({ctx.command_path} {ctx.help_option_names[-1]})"
    return f"kxtx: error: {message}"


def main() -> None:
    """Run the command; click's own errors (usage errors: exit 2) are one line on stderr."""
    try:
        code = build(invoked(sys.argv[1:]))(prog_name="kxtx", standalone_mode=False)
    except typer.Abort:  # a prompt ended by Ctrl-D
        typer.echo("kxtx: aborted", err=True)
        code = 1
    except typer.TyperException as exc:  # click's ClickException and its UsageErrors
        if type(exc).__name__ != "NoArgsIsHelpError":  # (the help, already printed)
            typer.echo(usage_line(exc), err=True)
        code = getattr(exc, "exit_code", ExitCode.USAGE)
    # without standalone_mode a command's return value comes back too: only an exit's int is a code
    sys.exit(code if isinstance(code, int) else 0)
