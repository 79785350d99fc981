"""The one output layer: commands hand over data, this renders table / json / jsonl on stdout.

Rows and results are dicts or typed results of the library (kxtx.results.Result), written as their
`to_dict()`: their fields' keys in their order. `columns` picks and orders the table columns
(json keeps every field). Streaming commands pass an iterator: jsonl rows are written and flushed
one by one.

json is one document per run, whatever the outcome: what a command emits is kept in its `Document`
and written by the command's boundary (kxtx.cli.common) once the exit code is known, as one object
with "status", "exit_code" and "error" next to the command's own keys (rows go under the command's
one key). A failure or stop renders what its exception carries (`kxtx.errors.carry`).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as _dt
import enum
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import IO, TYPE_CHECKING, Any, TextIO

from kxtx.errors import carry
from kxtx.exitcodes import status
from kxtx.results import Result

if TYPE_CHECKING:
    from rich.console import Console


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


def is_tty(stream: TextIO | None = None) -> bool:
    out = stream or sys.stdout
    return hasattr(out, "isatty") and out.isatty()


class StatusLine:
    """A progress line rewritten in place on a terminal: a carriage return takes the cursor back to
    the start of the line but erases nothing, so a shorter text is padded with blanks over what the
    longer one before it left (`lag 0   ,024`)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream, self.width = stream, 0

    def show(self, text: str) -> None:
        out = self.stream or sys.stderr
        out.write(f"\r{text}{' ' * (self.width - len(text))}")
        out.flush()
        self.width = len(text)  # what is past it is blank now

    def clear(self) -> None:
        """Erase the line and leave the cursor at its start (nothing when nothing was shown)."""
        if self.width:
            out = self.stream or sys.stderr
            out.write(f"\r{' ' * self.width}\r")
            out.flush()
            self.width = 0

    def end(self) -> None:
        """Leave the line as it is and move below it (nothing when nothing was shown)."""
        if self.width:
            out = self.stream or sys.stderr
            out.write("\n")
            out.flush()
            self.width = 0


def choose(fmt: OutputFormat | None) -> OutputFormat:
    if fmt is not None:
        return fmt
    return OutputFormat.table if is_tty(sys.stdout) else OutputFormat.jsonl


def jsonable(value: Any) -> Any:
    """Convert library values to JSON types: bytes -> base64 string, enums -> names, times -> ISO."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, Result):
        return jsonable(value.to_dict())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    return value


def _default(value: Any) -> Any:
    """Only values the encoder cannot handle itself reach this: far cheaper than walking every row
    (a streamed dump writes hundreds of thousands of rows). Enums are written as their value, as
    orjson does natively; library rows carry plain values anyway."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Streamed):
        return list(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, Result):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def _dumps(obj: Any, indent: int | None = None) -> str:
    try:
        import orjson
    except ImportError:  # optional speed-up; the standard library gives the same JSON
        return json.dumps(obj, ensure_ascii=False, indent=indent, default=_default)
    opts = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
    if indent:
        opts |= orjson.OPT_INDENT_2
    return orjson.dumps(obj, default=_default, option=opts).decode("utf-8")


#: Where a command's rows go in its json document when it names no key (a command that emits rows
#: names its key in `@command(rows=...)`; tests/integration/test_json_documents.py checks).
ROWS_KEY = "rows"
#: The keys every json document has, whatever the command.
STATUS_KEYS = ("status", "exit_code", "error")


class Streamed:
    """A list in a json document whose items are made one by one (`emit` an object holding one): a
    long result (`dump partition -o json --records`) is never held whole as objects. The bytes
    are those of the whole document rendered at once.

    The boundary makes the items (`drain`) before it knows the run's exit code, so a failure or
    stop while they are made is the command's, reported as any other; their text is kept
    meanwhile (in memory, then a temporary file), since the document's head, which holds the
    status, is written first."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items
        #: the items made so far, as `_write_streamed` writes them (None: not made yet)
        self.spool: IO[str] | None = None
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def drain(self) -> None:
        """Make every item and keep its text; raises what making one raised, keeping those before."""
        if self.spool is not None:
            return
        import tempfile

        # closed by _write_streamed once written
        self.spool = spool = tempfile.SpooledTemporaryFile(SPOOL_BYTES, "w+", encoding="utf-8")  # noqa: SIM115 - outlives this call
        for item in self.items:
            text = _dumps(item, indent=2).replace("\n", "\n    ")  # whole before kept: no half item
            spool.write(("," if self.count else "[") + "\n    " + text)
            self.count += 1


#: a streamed list's text is kept in memory up to this, then in a temporary file
SPOOL_BYTES = 8 << 20


class Document:
    """The one json document of a command run (`-o json`): the result it emitted (an object, or
    rows), the message of its failure or stop, and what its exception carried. `write` renders it
    once the exit code is known."""

    def __init__(self, rows_key: str | None = None) -> None:
        self.rows_key = rows_key or ROWS_KEY
        self.body: Mapping | list | None = None
        self.error: str | None = None
        self.partial: object = None
        #: keys beside the result (`annotate`), after it
        self.extra: dict[str, Any] = {}

    def render(self, code: int) -> dict:
        """The document for exit `code`: what the exception carried, else what was emitted (both
        the same shape), with the status keys first."""
        body: Any = self.partial if self.partial is not None else self.body
        if isinstance(body, Result):
            body = body.to_dict()
        if body is None:
            body = {}
        elif not isinstance(body, Mapping):
            body = {self.rows_key: list(body)}
        doc: dict[str, Any] = {"status": status(code), "exit_code": int(code), "error": self.error}
        doc.update((k, v) for k, v in body.items() if k not in doc)
        doc.update((k, v) for k, v in self.extra.items() if k not in doc)
        return doc

    def drain(self) -> None:
        """Make the items of the streamed lists emitted (`Streamed.drain`): the boundary calls it
        inside the command, so a failure there decides the exit code as any other."""
        if isinstance(self.body, Mapping):
            for value in self.body.values():
                if isinstance(value, Streamed):
                    value.drain()

    def write(self, code: int) -> None:
        doc = self.render(code)
        if not any(isinstance(v, Streamed) for v in doc.values()):
            sys.stdout.write(_dumps(doc, indent=2) + "\n")
        else:
            _write_streamed(doc)
        sys.stdout.flush()


def _write_streamed(doc: dict) -> None:
    """`doc` as `_dumps(doc, indent=2)` would write it, its `Streamed` lists as their items were
    rendered (each alone, indented to its depth: JSON strings hold no raw newline, so every line
    of an item is indented alike)."""
    import shutil

    out = sys.stdout
    out.write("{")
    for i, (key, value) in enumerate(doc.items()):
        out.write(("," if i else "") + "\n  " + _dumps(key) + ": ")
        if not isinstance(value, Streamed):
            out.write(_dumps(value, indent=2).replace("\n", "\n  "))
            continue
        if value.spool is None:  # not drained: the command exited or failed first, the status is decided
            with contextlib.suppress(Exception):  # an item that fails now ends the list
                value.drain()
        assert value.spool is not None
        value.spool.seek(0)
        shutil.copyfileobj(value.spool, out, 1 << 20)
        value.spool.close()
        out.write("\n  ]" if value.count else "[]")
    out.write("\n}\n" if doc else "}\n")


_open: Document | None = None


@contextlib.contextmanager
def document(fmt: object, rows_key: str | None = None) -> Iterator[Document | None]:
    """While a command runs: its json `Document` (None for table and jsonl, and inside a command
    run by another, whose document it is). The caller writes it (`Document.write`)."""
    global _open
    # by value: a command with formats of its own (`monitor collect`'s prometheus) has its own enum
    if _open is not None or getattr(fmt, "value", None) != OutputFormat.json.value:
        yield None
        return
    _open = Document(rows_key)
    try:
        yield _open
    finally:
        _open = None


def note_error(message: str) -> None:
    """The one line a failure or stop wrote on stderr: the document's "error"."""
    if _open is not None:
        _open.error = message


def annotate(key: str, value: Any) -> None:
    """A key of the json document beside a command's rows (find-hanging's `lso_held` next to its
    `hanging`); nothing in the other formats, which say it on stderr."""
    if _open is not None:
        _open.extra[key] = value


def _keep(body: Mapping | list) -> None:
    """json output is written once, by the boundary: keep the result (a later one replaces it:
    a plan, then the outcome)."""
    if _open is None:
        raise RuntimeError("json output is written by a command's boundary (kxtx.cli.common.boundary)")
    _open.body = body


def emit(
    data: Any, fmt: OutputFormat | None, columns: list[str] | None = None, title: str | None = None
) -> None:
    """Render a whole result: a list of rows, one object (a dict or a typed result), or an iterator
    of rows (streamed)."""
    fmt = choose(fmt)
    if isinstance(data, Result):
        data = data.to_dict()
    if isinstance(data, Mapping):
        _emit_object(data, fmt, title)
    else:
        emit_rows(data, fmt, columns, title)


def emit_rows(
    rows: Iterable[Mapping | Result],
    fmt: OutputFormat | None,
    columns: list[str] | None = None,
    title: str | None = None,
) -> int:
    fmt = choose(fmt)
    count = 0
    out = sys.stdout
    if fmt is OutputFormat.jsonl:
        for row in rows:
            out.write(_dumps(row) + "\n")
            out.flush()
            count += 1
        return count
    if fmt is OutputFormat.json:
        got: list[Mapping | Result] = []
        try:
            got.extend(rows)
        except BaseException as exc:  # a failure or stop mid-stream: the document has the rows so far
            carry(exc, got)
            raise
        _keep(got)
        return len(got)
    shown = [r.to_dict() if isinstance(r, Result) else r for r in rows]
    _print_table(shown, columns, title)
    return len(shown)


def emit_row_batches(
    batches: Iterable[list[Mapping]],
    fmt: OutputFormat | None,
    columns: list[str] | None = None,
    title: str | None = None,
    writing: Callable[[], AbstractContextManager[object]] | None = None,
) -> int:
    """`emit_rows` for rows that arrive in batches: jsonl writes each batch with one write and one
    flush (a per-row flush is a system call per row, most of the cost of a fast stream), so rows still
    appear as soon as their batch is read. Other formats collect every row, as `emit_rows` does.

    `writing`: a context manager factory held around each batch's write and flush, when several
    processes share stdout."""
    fmt = choose(fmt)
    if fmt is not OutputFormat.jsonl:
        return emit_rows((row for batch in batches for row in batch), fmt, columns, title)
    encode, out = _jsonl_encoder()
    count = 0
    hold = writing or contextlib.nullcontext
    for batch in batches:
        data = encode(batch)
        with hold():
            out.write(data)
            out.flush()
        count += len(batch)
    return count


def _jsonl_encoder() -> tuple[Callable[[list], Any], IO[Any]]:
    """(encode rows -> jsonl chunk, stream to write it to): bytes onto stdout's binary buffer with
    orjson, text with the standard library. Same JSON as `_dumps`."""
    sys.stdout.flush()  # anything already written as text goes first
    buffer = getattr(sys.stdout, "buffer", None)
    try:
        import orjson
    except ImportError:
        buffer = None  # no orjson: text with the standard library
    if buffer is None:
        return (lambda rows: "".join([_dumps(r) + "\n" for r in rows])), sys.stdout
    dumps = orjson.dumps
    opts = (
        orjson.OPT_NON_STR_KEYS
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_APPEND_NEWLINE
    )
    return (lambda rows: b"".join([dumps(r, default=_default, option=opts) for r in rows])), buffer


def _emit_object(obj: Mapping, fmt: OutputFormat, title: str | None) -> None:
    if fmt is OutputFormat.json:
        _keep(obj)
        return
    if fmt is OutputFormat.jsonl:
        sys.stdout.write(_dumps(obj) + "\n")
    else:
        _print_object(obj, title)
    sys.stdout.flush()


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(jsonable(value), ensure_ascii=False, default=str)
    if isinstance(value, enum.Enum):
        return value.name
    return str(jsonable(value))


#: A column is never narrowed below its widest value or this many characters, whichever is less:
#: ids, numbers and states stay on one line; only long text (partition lists, JSON) is folded.
MIN_CELL = 24
#: Width of a table written to a file or pipe when COLUMNS does not say: as wide as it needs.
UNLIMITED = 100_000


def _width() -> int | None:
    """The terminal's width on a terminal (rich asks it, COLUMNS wins); elsewhere COLUMNS when set,
    else no limit: a table in a file is never folded to an imaginary 80-column screen."""
    if is_tty(sys.stdout):
        return None
    import os

    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else UNLIMITED


def _console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=False, width=_width())


def _print_table(rows: list[Mapping], columns: list[str] | None, title: str | None) -> None:
    """A table when every column fits at a readable width; otherwise one `key value` block per row
    (as psql's expanded display), where every value is shown in full."""
    from rich.table import Table

    console = _console()
    if not rows:
        console.print(f"[dim]{title + ': ' if title else ''}no rows[/dim]")
        return
    cols = columns or list(dict.fromkeys(k for r in rows for k in r))
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    narrowest = [
        min(MIN_CELL, max([len(c)] + [_longest_line(row[i]) for row in cells])) for i, c in enumerate(cols)
    ]
    # each cell is padded by a space on both sides; a border before each column and after the last
    if sum(narrowest) + 3 * len(cols) + 1 > console.width:
        _print_records(console, cols, cells, title)
        return
    from kxtx.cli.cellwrap import Cell

    table = Table(title=title, show_lines=False, header_style="bold")
    for c, width in zip(cols, narrowest):
        table.add_column(c, overflow="fold", min_width=width)
    for row in cells:  # ids wrap at their separators (`.`, `-`, `:`), not mid-word
        table.add_row(*map(Cell, row))
    console.print(table)


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _print_records(console: Console, cols: list[str], cells: list[list[str]], title: str | None) -> None:
    """Rows too wide for the screen: a block per row, a line per column."""
    from rich.rule import Rule
    from rich.table import Table

    from kxtx.cli.cellwrap import Cell

    if title:
        console.print(f"[bold]{title}[/bold]")
    for n, row in enumerate(cells, 1):
        console.print(Rule(f"[dim]{n} of {len(cells)}[/dim]", align="left", style="dim"))
        block = Table(show_header=False, box=None, pad_edge=False)
        block.add_column(style="bold", no_wrap=True)
        block.add_column(overflow="fold")
        for c, value in zip(cols, row):
            block.add_row(c, Cell(value))
        console.print(block)


def _print_object(obj: Mapping, title: str | None) -> None:
    """A key/value table for scalars; lists of rows become their own tables below it."""
    from rich.table import Table

    console = _console()
    table = Table(title=title, show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    nested: list[tuple[str, list]] = []
    for key, value in obj.items():
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            nested.append((key, value))
        elif isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
            nested.append((key, [{"name": k, **v} for k, v in value.items()]))
        else:
            table.add_row(key, _cell(value))
    console.print(table)
    for key, rows in nested:
        console.print()
        _print_table(rows, None, key)
