"""Shared options (declared once: Annotated aliases, and `@command`, which gives every command its
shared ones), the error boundary, and run state."""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar, overload

import typer

from kxtx.cli import output
from kxtx.cli.output import Document, OutputFormat, is_tty
from kxtx.errors import Interrupted, KxtxError, partial_of
from kxtx.exitcodes import ExitCode

if TYPE_CHECKING:
    from kxtx.client.admin import Cluster
    from kxtx.client.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


class _State:
    debug: bool = False
    #: the command finished and released everything it opened (clients flushed and committed,
    #: files closed): the process may end without the interpreter's finalisation (kxtx.cli.entry)
    released: bool = False


STATE = _State()


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
RegistryOpt = Annotated[
    str | None,
    typer.Option(
        "--schema-registry",
        metavar="URL",
        help="Schema Registry URL (Confluent API); credentials and TLS as -X schema.registry.* "
        "(README). Env: KXTX_SCHEMA_REGISTRY_URL.",
        rich_help_panel="Connection",
    ),
]
FormatOpt = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        "-o",
        help="Output format (default: table on a terminal, jsonl otherwise). json: one object "
        'whatever the outcome, with "status", "exit_code" and "error"; jsonl: rows only.',
        rich_help_panel="Output",
    ),
]


class ValueFormat(str, enum.Enum):
    """How record bytes are handed over or shown: as they are, UTF-8 text, parsed JSON, or
    decoded through a schema registry."""

    raw = "raw"
    string = "string"
    json = "json"
    #: framed for a schema registry (Confluent wire format), decoded with the record's schema
    avro = "avro"
    protobuf = "protobuf"
    jsonschema = "jsonschema"
    #: any of the three, whatever each record's schema is; what is not framed, as text
    auto = "auto"


# --- scope options of the transaction commands -------------------------------------------------
TopicOpt = Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.")]
PartitionOpt = Annotated[
    int | None, typer.Option("--partition", "-p", help="Only this partition (needs --topic).")
]
MaxTimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--max-transaction-timeout",
        metavar="MINUTES",
        help="Open transactions idle longer than this are checked: minutes, or a duration "
        "such as 90s (default: the broker's transaction.max.timeout.ms, else 15).",
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


#: the panel of the Schema Registry options of produce and pipe
REGISTRY_PANEL = "Schema Registry"
SubjectStrategyOpt = Annotated[
    str,
    typer.Option(
        "--subject-strategy",
        metavar="topic|record|topic-record",
        autocompletion=complete_words("topic|record|topic-record"),
        rich_help_panel=REGISTRY_PANEL,
        help="Subject naming of the schemas written with: TOPIC-value (TOPIC-key), the record's full "
        "name, or TOPIC-RECORD.",
    ),
]


@dataclasses.dataclass(frozen=True)
class Shared:
    """The shared options of one command run, as `@command` hands them over: the output format,
    --dry-run and --yes of a destructive command, and the connection options, which become the one
    Settings object on `settings()` (not before: a usage error in the command's own options is
    reported first, and a command that needs no cluster never reads a client.properties)."""

    fmt: OutputFormat | None = None
    dry_run: bool = False
    yes: bool = False
    bootstrap: list[str] | None = None
    config: list[str] | None = None
    command_config: str | None = None
    timeout: float | None = None
    schema_registry: str | None = None

    def settings(self) -> Settings:
        """The one Settings object these connection options make (kxtx.client.settings.resolve)."""
        from kxtx.client.settings import resolve
        from kxtx.parsers import parse_kv_list

        return resolve(
            self.bootstrap,
            parse_kv_list(self.config),
            self.command_config,
            self.timeout,
            registry_url=self.schema_registry,
        )

    def cluster(self) -> Cluster:
        """The admin client of these settings (a context manager)."""
        from kxtx.client.admin import Cluster

        return Cluster(self.settings())


class Options:
    """Options that several commands share, declared once: a frozen dataclass whose fields are
    annotated with the options' Annotated aliases and carry their defaults. A command parameter
    annotated with such a class stands for its fields, in their order, in --help (`@command`
    expands it) and arrives as one instance.

        @dataclasses.dataclass(frozen=True)
        class Scope(Options):
            topic: TopicOpt = None
            partition: PartitionOpt = None

        @command()
        def find(*, scope: Scope, shared: Shared) -> None: ...
    """

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]

    @classmethod
    def parameters(cls) -> list[inspect.Parameter]:
        import typing

        hints = typing.get_type_hints(cls, include_extras=True)
        return [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name]
            )
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        ]


#: the options `@command` appends, in this order (the order --help lists them in), by the flag that
#: asks for each: (parameter name, its Annotated alias, default)
_SHARED_OPTIONS: tuple[tuple[str, str, object, object], ...] = (
    ("dry_run", "dry_run", DryRunOpt, False),
    ("yes", "yes", YesOpt, False),
    ("connect", "bootstrap", BootstrapOpt, None),
    ("connect", "config", ConfigOpt, None),
    ("connect", "command_config", CommandConfigOpt, None),
    ("connect", "timeout", TimeoutOpt, None),
    ("registry", "schema_registry", RegistryOpt, None),
)


def command(
    *,
    rows: str | None = None,
    connect: bool = True,
    registry: bool = False,
    dry_run: bool = False,
    yes: bool = False,
    fmt: object = FormatOpt,
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Declare a command's shared options once: the decorated function takes its own options and a
    keyword `shared: Shared`; the command typer sees has the shared options appended (-b, -X,
    --command-config, --timeout with `connect`; --schema-registry with `registry`; --dry-run and
    --yes for a destructive command; --format, or the Annotated alias given as `fmt`, or none with
    `fmt=None`), in that order. It is the error boundary too (`boundary`, with `rows`).

    A parameter annotated with an `Options` class stands for that group of options.
    Refused at import: a function without `shared`, or an option declared twice (by the function,
    a group, or `@command`)."""
    flags = {"connect": connect, "registry": registry, "dry_run": dry_run, "yes": yes}
    wanted = [(name, alias, default) for flag, name, alias, default in _SHARED_OPTIONS if flags[flag]]
    if fmt is not None:
        wanted.append(("fmt", fmt, None))

    def decorate(fn: Callable[..., R]) -> Callable[..., R]:
        # typer reads the signature as given: the annotations evaluated here, once (the modules
        # use `from __future__ import annotations`; `Shared` may be imported for type checking only)
        sig = inspect.signature(fn, eval_str=True, globals={**fn.__globals__, "Shared": Shared})
        if "shared" not in sig.parameters:
            raise TypeError(f"{fn.__qualname__}: a @command takes `shared: Shared`")
        params: list[inspect.Parameter] = []
        groups: dict[str, type[Options]] = {}
        for param in sig.parameters.values():
            if param.name == "shared":
                continue
            if isinstance(param.annotation, type) and issubclass(param.annotation, Options):
                groups[param.name] = param.annotation
                params += param.annotation.parameters()
            else:
                params.append(param)
        params += [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=alias)
            for name, alias, default in wanted
        ]
        seen = [p.name for p in params]
        twice = sorted({name for name in seen if seen.count(name) > 1})
        if twice:
            raise TypeError(
                f"{fn.__qualname__}: declares option(s) {twice} twice (the function, an Options group, @command)"
            )
        names = [name for name, _alias, _default in wanted]

        @functools.wraps(fn)
        def with_shared(*args: object, **kwargs: Any) -> R:
            given = {name: kwargs.pop(name) for name in names if name in kwargs}
            for name, cls in groups.items():
                kwargs[name] = cls(**{f: kwargs.pop(f) for f in cls.names() if f in kwargs})
            return fn(*args, shared=Shared(**given), **kwargs)

        # after a keyword-only parameter, every later one is keyword-only too (typer passes all by name)
        kinds = [p.kind for p in params]
        if inspect.Parameter.KEYWORD_ONLY in kinds:
            first = kinds.index(inspect.Parameter.KEYWORD_ONLY)
            params = params[:first] + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params[first:]]
        with_shared.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        with_shared.__annotations__ = {p.name: p.annotation for p in params}
        return _bounded(with_shared, rows)

    return decorate


# --- the error boundary -----------------------------------------------------------------------------
def fail(message: str, code: int) -> NoReturn:
    from kxtx.client.properties import scrub

    message = scrub(message)
    output.note_error(message)
    typer.echo(f"kxtx: error: {message}", err=True)
    raise typer.Exit(int(code))


def stopped(message: str, code: int) -> NoReturn:
    """A stop by a signal (Ctrl-C, SIGTERM) after cleaning up: one line on stderr saying so and
    what was done, not an "error", and exit 130 / 143 (see `kxtx.errors.Interrupted`)."""
    from kxtx.client.properties import scrub
    from kxtx.signals import ignore_stop_signals

    ignore_stop_signals()  # an impatient second Ctrl-C must not turn 130 into -2 at exit
    message = scrub(message)
    output.note_error(message)
    typer.echo(f"kxtx: {message}", err=True)
    raise typer.Exit(int(code))


@overload
def boundary(fn: Callable[P, R]) -> Callable[P, R]: ...
@overload
def boundary(*, rows: str) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
def boundary(fn: Callable[P, R] | None = None, *, rows: str | None = None) -> Callable:
    """Wrap a command: library exceptions become one stderr line and an exit code, and with
    `-o json` stdout gets one document whatever the outcome (kxtx.cli.output.Document), written
    here once the exit code is known. `rows`: the document's key for the rows of a command that
    emits rows (`@boundary(rows="hanging")`). The command's output format is its `fmt` parameter.
    Commands get it through `@command`; `boundary` itself is for bodies run as a command
    (`exit_code_of`).

    Tracebacks only with --debug; never with locals (they may hold SASL passwords)."""
    if fn is None:
        return functools.partial(_bounded, rows=rows)
    return _bounded(fn)


def _bounded(fn: Callable[P, R], rows: str | None = None) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from kxtx import signals

        signals.install()
        _setup_logging()
        with output.document(kwargs.get("fmt"), rows) as doc:
            code: int = ExitCode.OK
            try:
                try:
                    result = fn(*args, **kwargs)
                    if doc is not None:  # a streamed list fails here, not once the status is written
                        doc.drain()
                    return result
                except typer.Exit:
                    raise
                except (Exception, KeyboardInterrupt, signals.Stopped) as exc:  # noqa: BLE001 - the one boundary
                    if doc is not None:
                        doc.partial = partial_of(exc)
                    _report(exc)
            except typer.Exit as exc:
                code = exc.exit_code
                raise
            except BaseException:
                code = ExitCode.ERROR
                raise
            finally:
                _log_repeats()
                if doc is not None and code != ExitCode.BROKEN_PIPE:
                    _write(doc, code)

    return wrapper


def _report(exc: BaseException) -> NoReturn:
    """`exc` as one line on stderr and its exit code (typer.Exit)."""
    from kxtx import signals

    if isinstance(exc, Interrupted):  # a command that stopped cleanly and says what it did
        _debug_traceback()
        stopped(str(exc), exc.exit_code)
    if isinstance(exc, KxtxError):
        _debug_traceback()
        fail(str(exc), exc.exit_code)
    stop = signals.stop_of(exc)
    if stop is not None:
        _debug_traceback()
        signum = signals.signal_number(stop)
        stopped(signals.WORDS[signum], signals.exit_status(signum))
    if isinstance(exc, BrokenPipeError):
        # The reader is gone (`kxtx dump ... | head`): stop quietly, as cat does.
        _stdout_to_devnull()
        raise typer.Exit(int(ExitCode.BROKEN_PIPE)) from None
    from kxtx.client.clients import translate

    _debug_traceback()
    err = translate(exc)
    hint = "" if STATE.debug else " (run with --debug for the traceback)"
    fail(f"{err}{hint if type(exc).__module__.startswith('kxtx') else ''}", err.exit_code)


def _write(doc: Document, code: int) -> None:
    """The json document, last: stop signals cannot cut it in half (the run is over by then)."""
    from kxtx.signals import held

    try:
        with held():
            doc.write(code)
    except BrokenPipeError:
        _stdout_to_devnull()
        raise typer.Exit(int(ExitCode.BROKEN_PIPE)) from None


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
        from kxtx.client.properties import scrub

        sys.stderr.write(scrub(traceback.format_exc()))


class _StderrHandler(logging.Handler):
    """One line per message. The same message again within `QUIET_S` of its last line is counted,
    not written: a command that asks a leaderless partition again and again (fence's wait for the
    LSO) printed the same line 6 times. A long run (a pipe, `monitor serve`) still hears of a
    problem that comes back later, with the count since; `repeats()` ends the run with the rest."""

    QUIET_S = 60.0

    def __init__(self) -> None:
        super().__init__()
        #: line -> (when it was last written, how many times it came since)
        self.seen: dict[str, tuple[float, int]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        import time

        level = "warning" if record.levelno >= logging.WARNING else "info"
        from kxtx.client.properties import scrub

        line = f"kxtx: {level}: {scrub(record.getMessage())}"
        now = time.monotonic()
        last, held = self.seen.get(line, (None, 0))
        if last is not None and now - last < self.QUIET_S:
            self.seen[line] = (last, held + 1)
            return
        self.seen[line] = (now, 0)
        sys.stderr.write(f"{line} ({held + 1} times)\n" if held else line + "\n")
        sys.stderr.flush()

    def repeats(self) -> None:
        """A line for each message held back since it was last written, with its count."""
        for line, (_last, held) in self.seen.items():
            if held:
                sys.stderr.write(f"{line} ({held} more {'time' if held == 1 else 'times'})\n")
        self.seen.clear()
        sys.stderr.flush()


def _log_repeats() -> None:
    for h in logging.getLogger("kxtx").handlers:
        if isinstance(h, _StderrHandler):
            try:
                h.repeats()
            except (OSError, ValueError):  # stderr closed: nothing more can be said
                pass


def _setup_logging() -> None:
    log = logging.getLogger("kxtx")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
    for h in log.handlers:  # a command starts with no warning held back (one process, several runs)
        if isinstance(h, _StderrHandler):
            h.seen.clear()
    log.setLevel(logging.DEBUG if STATE.debug else logging.WARNING)
    log.propagate = False
    # Client-library chatter (librdkafka, kafka-python) only with --debug.
    for name in ("kxtx.librdkafka", "kafka"):
        logging.getLogger(name).setLevel(logging.DEBUG if STATE.debug else logging.CRITICAL)
    if STATE.debug and not logging.getLogger("kafka").handlers:
        logging.getLogger("kafka").addHandler(_StderrHandler())


def exit_unseen(said: list[str], reasons: list[str]) -> None:
    """End a command that could not read all it reports on: each of `said` as a warning on stderr,
    then exit 75 (1 when a reason is a missing permission: `kxtx.errors.unseen_exit`). Nothing
    when `said` is empty."""
    if not said:
        return
    from kxtx.errors import unseen_exit

    for line in said:
        logging.getLogger("kxtx").warning(line)
    raise typer.Exit(unseen_exit(reasons))


def confirm_or_refuse(yes: bool, question: str) -> None:
    """Destructive actions: --yes acts; a TTY asks; otherwise refuse with exit 2."""
    from kxtx.errors import Refused

    if yes:
        return
    if not (is_tty(sys.stdin) and is_tty(sys.stderr)):
        raise Refused("refusing to act without --yes when not on a terminal; nothing was changed")
    if not typer.confirm(question, default=False, err=True):
        raise Refused("not confirmed; nothing was changed")
