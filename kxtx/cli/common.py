"""Shared options (declared once, as Annotated aliases), the error boundary, and run state."""

from __future__ import annotations

import functools
import logging
import os
import sys
import traceback
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Annotated, NoReturn, ParamSpec, TextIO, TypeVar

import typer

from kxtx.errors import Interrupted, KxtxError
from kxtx.exitcodes import ExitCode

if TYPE_CHECKING:
    from kxtx.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


class _State:
    debug: bool = False


STATE = _State()


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


# --- connection options, one definition for every command -----------------------------------------
BootstrapOpt = Annotated[
    list[str] | None,
    typer.Option(
        "-b",
        "--bootstrap-servers",
        metavar="HOST:PORT",
        help="Broker(s); repeatable or comma-separated. Env: KXTX_BOOTSTRAP_SERVERS.",
        rich_help_panel="Connection",
    ),
]
ConfigOpt = Annotated[
    list[str] | None,
    typer.Option(
        "-X",
        "--config",
        metavar="KEY=VALUE",
        help="librdkafka client property, as in kcat (repeatable); wins over file and env.",
        rich_help_panel="Connection",
    ),
]
CommandConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--command-config",
        metavar="FILE",
        help="Java client .properties file (as for Kafka's tools). Env: KXTX_COMMAND_CONFIG.",
        rich_help_panel="Connection",
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Bound for each network operation (default 30). Env: KXTX_TIMEOUT.",
        rich_help_panel="Connection",
    ),
]
FormatOpt = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        "-o",
        help="Output format (default: table on a terminal, jsonl otherwise).",
        rich_help_panel="Output",
    ),
]
YesOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Act without asking (required when not on a terminal).")
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show the plan and change nothing.")]


def complete_words(metavar: str) -> Callable[[str], list[str]]:
    """Shell completion (`kxtx --install-completion`) of an option whose metavar lists its values,
    `fail|skip|dlq:TOPIC` -> fail, skip, dlq: (the static completions derive the same in docs.py)."""
    words = [w.split(":")[0] + ":" if ":" in w else w for w in metavar.split("|")]

    def complete(incomplete: str) -> list[str]:
        return [w for w in words if w.startswith(incomplete)]

    return complete


def connection(
    bootstrap: list[str] | None = None,
    config: list[str] | None = None,
    command_config: str | None = None,
    timeout: float | None = None,
) -> Settings:
    """Build the one Settings object from the shared connection options."""
    from kxtx.parsers import parse_kv_list
    from kxtx.settings import resolve

    return resolve(bootstrap, parse_kv_list(config), command_config, timeout)


# --- the error boundary -----------------------------------------------------------------------------
def fail(message: str, code: int) -> NoReturn:
    from kxtx.security import scrub

    typer.echo(f"kxtx: error: {scrub(message)}", err=True)
    raise typer.Exit(int(code))


def stopped(message: str, code: int) -> NoReturn:
    """A stop by a signal (Ctrl-C, SIGTERM) after cleaning up: one line on stderr saying so and
    what was done, not an "error", and exit 130 / 143 (see `kxtx.errors.Interrupted`)."""
    from kxtx.security import scrub
    from kxtx.signals import ignore_stop_signals

    ignore_stop_signals()  # an impatient second Ctrl-C must not turn 130 into -2 at exit
    typer.echo(f"kxtx: {scrub(message)}", err=True)
    raise typer.Exit(int(code))


def boundary(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command: library exceptions become one stderr line and an exit code.

    Tracebacks only with --debug; never with locals (they may hold SASL passwords)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from kxtx import signals

        signals.install()
        _setup_logging()
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except Interrupted as exc:  # a command that stopped cleanly and says what it did
            _debug_traceback()
            stopped(str(exc), exc.exit_code)
        except KxtxError as exc:
            _debug_traceback()
            fail(str(exc), exc.exit_code)
        except (KeyboardInterrupt, signals.Stopped) as exc:
            _debug_traceback()
            signum = signals.signal_number(exc)
            stopped(signals.WORDS[signum], signals.exit_status(signum))
        except BrokenPipeError:
            # The reader is gone (`kxtx dump ... | head`): stop quietly, as cat does.
            _stdout_to_devnull()
            raise typer.Exit(int(ExitCode.BROKEN_PIPE)) from None
        except Exception as exc:  # noqa: BLE001 - the one boundary
            from kxtx.clients import translate

            _debug_traceback()
            err = translate(exc)
            hint = "" if STATE.debug else " (run with --debug for the traceback)"
            fail(f"{err}{hint if type(exc).__module__.startswith('kxtx') else ''}", err.exit_code)

    return wrapper


def exit_code_of(fn: Callable[..., object], *args: object, **kwargs: object) -> int:
    """Run `fn` as a command body under the boundary (its errors reported the same way); the exit
    code it ends with, 0 when it returns. For commands that must act after a failure (wait for
    their worker processes)."""
    try:
        boundary(fn)(*args, **kwargs)
    except typer.Exit as exc:
        return int(exc.exit_code)
    return 0


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null: the interpreter flushes it once more at exit, which would
    raise again on the closed pipe."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(null)


def _debug_traceback() -> None:
    if STATE.debug:
        from kxtx.security import scrub

        sys.stderr.write(scrub(traceback.format_exc()))


class _StderrHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        level = "warning" if record.levelno >= logging.WARNING else "info"
        from kxtx.security import scrub

        sys.stderr.write(f"kxtx: {level}: {scrub(record.getMessage())}\n")
        sys.stderr.flush()


def _setup_logging() -> None:
    log = logging.getLogger("kxtx")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
    log.setLevel(logging.DEBUG if STATE.debug else logging.WARNING)
    log.propagate = False
    # Client-library chatter (librdkafka, kafka-python) only with --debug.
    for name in ("kxtx.librdkafka", "kafka"):
        logging.getLogger(name).setLevel(logging.DEBUG if STATE.debug else logging.CRITICAL)
    if STATE.debug and not logging.getLogger("kafka").handlers:
        logging.getLogger("kafka").addHandler(_StderrHandler())


def is_tty(stream: TextIO | None = None) -> bool:
    out = stream or sys.stdout
    return hasattr(out, "isatty") and out.isatty()


def confirm_or_refuse(yes: bool, question: str) -> None:
    """Destructive actions: --yes acts; a TTY asks; otherwise refuse with exit 2."""
    from kxtx.errors import Refused

    if yes:
        return
    if not (is_tty(sys.stdin) and is_tty(sys.stderr)):
        raise Refused("refusing to act without --yes when not on a terminal; nothing was changed")
    if not typer.confirm(question, default=False, err=True):
        raise Refused("not confirmed; nothing was changed")
