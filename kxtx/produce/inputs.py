"""Input readers for `kxtx produce`: JSON lines, CSV with a header row, plain lines; gzip by extension.

Every record comes with its line number and the byte offset just after it (in the uncompressed
stream), so a later run can seek straight to the first record that was not committed. Readers yield
`Line` tuples and never parse more than they must: the mapping decides what a line means.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import select
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from kxtx.errors import InputError, UsageError

FORMATS = ("jsonl", "csv", "lines")

#: extension (after stripping .gz) -> format
_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".txt": "lines",
    ".log": "lines",
}


class Line(NamedTuple):
    """One input record. `row` is the parsed CSV row (list of str) or None for other formats; `error`
    is set instead when the reader itself could not decode the record (e.g. bad UTF-8 in CSV)."""

    lineno: int
    start: int  # byte offset of this record (uncompressed stream)
    end: int  # byte offset just after it, line terminator included
    raw: bytes  # the record without its line terminator
    row: list | None = None
    error: str | None = None


@dataclass(frozen=True)
class Source:
    """One input: a path (or `-` for stdin), its format, and whether it is gzip-compressed."""

    path: str
    fmt: str
    gz: bool = False

    @property
    def is_stdin(self) -> bool:
        return self.path == "-"

    @property
    def name(self) -> str:
        return "<stdin>" if self.is_stdin else self.path


def detect(path: str, explicit: str | None = None) -> Source:
    """Choose the format: the explicit option wins, else the extension (`.jsonl.gz` is gzip JSONL).
    Unknown extensions and stdin are plain lines."""
    if explicit is not None and explicit not in FORMATS:
        raise UsageError(f"--input-format {explicit!r}: expected one of {', '.join(FORMATS)}")
    lower = path.lower()
    gz = lower.endswith(".gz")
    if gz:
        lower = lower[:-3]
    fmt = explicit or _EXTENSIONS.get(os.path.splitext(lower)[1], "lines")
    return Source(path, fmt, gz)


def _open(source: Source) -> BinaryIO:
    if source.is_stdin:
        stream: BinaryIO = sys.stdin.buffer
    else:
        try:
            stream = open(source.path, "rb")  # noqa: SIM115 - closed by read()
        except OSError as exc:
            raise InputError(f"{source.path}: {exc.strerror or exc}") from None
    if source.gz:
        return gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[return-value]
    return stream


def head(source: Source, size: int) -> bytes | None:
    """The first `size` bytes of a file input (decompressed), for the checks before a run; None for
    stdin and what is not a regular file (a pipe's bytes would be gone) or cannot be read (the
    reading itself reports that, as it always has)."""
    if source.is_stdin:
        return None
    try:
        if not stat.S_ISREG(os.stat(source.path).st_mode):
            return None
        stream = _open(source)
    except (OSError, InputError):
        return None
    try:
        return stream.read(size)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    finally:
        stream.close()


def csv_error(exc: csv.Error) -> str:
    """csv's complaint in kxtx's words: a lone carriage return is 'new-line character seen in
    unquoted field - do you need to open the file in universal-newline mode?', advice for Python
    code that is none for a file."""
    text = str(exc)
    if text.startswith("new-line character seen in unquoted field"):
        return "a carriage return inside an unquoted field (quote the field; or is this not a CSV text file?)"
    return text


def _strip(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
    return line


def read(source: Source, offset: int = 0, lineno: int = 0) -> Iterator[Line]:
    """Yield the records of `source` starting at byte `offset`, which is line `lineno` + 1.

    `offset` must be a record boundary written by an earlier run (a checkpoint)."""
    stream = _open(source)
    try:
        yield from _READERS[source.fmt](source, stream, offset, lineno)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{source.name}: cannot read: {exc}") from None
    finally:
        if not source.is_stdin:
            stream.close()


def _seek(source: Source, stream: BinaryIO, offset: int) -> None:
    if offset == 0:
        return
    if source.is_stdin:
        raise UsageError("stdin cannot be resumed from a checkpoint")
    # GzipFile.seek decompresses forward; for plain files this is a real seek.
    stream.seek(offset)


def _read_lines(source: Source, stream: BinaryIO, offset: int, lineno: int) -> Iterator[Line]:
    _seek(source, stream, offset)
    end = offset
    for line in stream:
        lineno += 1
        start, end = end, end + len(line)
        yield _new(Line, (lineno, start, end, _strip(line), None, None))


def _read_jsonl(source: Source, stream: BinaryIO, offset: int, lineno: int) -> Iterator[Line]:
    # Blank lines carry no JSON value: they are skipped (counted in the line numbers). The loop is
    # _read_lines again, inlined: this is the per-record hot path.
    _seek(source, stream, offset)
    end = offset
    for line in stream:
        lineno += 1
        start, end = end, end + len(line)
        if line[-1:] == b"\n":
            line = line[:-2] if line[-2:-1] == b"\r" else line[:-1]
        if line and not line.isspace():
            yield _new(Line, (lineno, start, end, line, None, None))


class _Counted:
    """Feeds csv.reader one decoded physical line at a time while remembering the raw bytes, so a
    row that spans lines (quoted newlines) gets its exact byte range and first line number."""

    def __init__(self, stream: BinaryIO, end: int, lineno: int) -> None:
        self.stream, self.end, self.lineno = stream, end, lineno
        self.raw: list[bytes] = []
        self.bad: str | None = None

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> str:
        line = self.stream.readline()
        if not line:
            raise StopIteration
        self.end += len(line)
        self.lineno += 1
        self.raw.append(line)
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad = f"not UTF-8 ({exc.reason} at byte {exc.start})"
            return line.decode("utf-8", "replace")


def read_csv_header(source: Source, stream: BinaryIO) -> tuple[list[str], int, int]:
    """The header row, the byte offset after it and its last line number."""
    counted = _Counted(stream, 0, 0)
    try:
        header = next(csv.reader(counted))
    except StopIteration:
        return [], counted.end, counted.lineno
    except csv.Error as exc:
        raise InputError(f"{source.name}:{counted.lineno}: bad CSV header: {csv_error(exc)}") from None
    if counted.bad:
        raise InputError(f"{source.name}:1: bad CSV header: {counted.bad}")
    if len(set(header)) != len(header):
        raise InputError(f"{source.name}:1: CSV header has duplicate column names: {header}")
    return header, counted.end, counted.lineno


def _read_csv(source: Source, stream: BinaryIO, offset: int, lineno: int) -> Iterator[Line]:
    header, header_end, header_lines = read_csv_header(source, stream)
    if not header:
        return
    # The first row yielded is the header itself (lineno 0 marks it), so the mapping learns the
    # column names even when a resumed run starts in the middle of the file.
    yield Line(0, 0, header_end, b"", header)
    if offset > header_end:
        _seek(source, stream, offset)
        end = offset
    else:
        end, lineno = header_end, header_lines
    counted = _Counted(stream, end, lineno)
    reader = csv.reader(counted)
    while True:
        first, start = counted.lineno + 1, counted.end
        counted.raw.clear()
        counted.bad = None
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raw = _strip(b"".join(counted.raw))
            yield Line(first, start, counted.end, raw, None, f"bad CSV: {csv_error(exc)}")
            continue
        raw = _strip(b"".join(counted.raw))
        if not row:  # an empty physical line
            continue
        yield Line(first, start, counted.end, raw, row, counted.bad and f"bad CSV: {counted.bad}")


class Block:
    """Whole lines from one read of the input, split in C: the fast path's unit instead of one
    `Line` per record. Positions are computed only when asked for (at commits and bad lines)."""

    __slots__ = ("good", "lineno", "offset", "raws", "span", "tail", "utf8", "values")

    def __init__(
        self,
        lineno: int,
        offset: int,
        raws: list[bytes],
        tail: bool,
        cr: bool = False,
        utf8: bool = False,
        span: int | None = None,
    ) -> None:
        self.lineno = lineno  # line number of raws[0], minus 1
        self.offset = offset  # byte offset of raws[0]
        self.raws = raws  # the lines without "\n" (a "\r" before it is still there)
        # `tail`: the one line of the input's end without a line break (nothing is stripped then)
        self.tail = tail
        self.utf8 = utf8  # every line is known to be valid UTF-8
        # bytes the lines take in the input: no line is longer (spares a size check per line)
        self.span = span if span is not None else sum(map(len, raws)) + len(raws)
        self.values = raws
        #: where a check of the whole block found its first line that is not a record (len(values):
        #: none), once the fast path checked it ahead (kxtx.produce.fast.plain); -1: not checked
        self.good = -1
        if cr and not tail:  # rare: some "\r" in the block, maybe CRLF lines
            self.values = [r[:-1] if r[-1:] == b"\r" else r for r in raws]

    def line(self, i: int) -> Line:
        """The `Line` of record i, as `read` would have yielded it."""
        start = self.offset + sum(map(len, self.raws[:i])) + i
        end = start + len(self.raws[i]) + (0 if self.tail else 1)
        return _new(Line, (self.lineno + i + 1, start, end, self.values[i], None, None))


#: Bytes per read of the fast path: thousands of lines, so per-read costs vanish; below the default
#: record size limit, so a block's size alone shows that no line is too large.
BLOCK_BYTES = 1 << 19


def read_blocks(
    source: Source, offset: int = 0, lineno: int = 0, idle: float | None = None
) -> Iterator[Block]:
    """Like `read` for plain lines (JSON lines: blank ones included; the caller skips them), in
    `Block`s of whole lines. `idle`: from stdin that is not a file (a pipe, a terminal), an empty
    block whenever nothing came for that many seconds, so that the caller can act meanwhile."""
    stream = _open(source)
    try:
        _seek(source, stream, offset)
        # read1: what is there now (at most one system read), so stdin from a pipe is not held
        # back until a whole block has arrived
        read = getattr(stream, "read1", stream.read)
        if idle is not None and source.is_stdin and not source.gz:
            read = _waiting(stream, idle) or read
        rest = b""
        while True:
            data = read(BLOCK_BYTES)
            if data is None:  # nothing for `idle` seconds
                yield Block(lineno, offset, [], False, span=0)
                continue
            if not data:
                break
            # Split what was read; the last piece is the start of the next line, and the piece
            # left from the previous read joins the first line only (joining it to the whole read
            # copied every block once more; bench/README.md, "Behind produce's constants"). A "\r"
            # or non-ASCII byte in the pieces only costs the checks below.
            raws = data.split(b"\n")
            if len(raws) == 1:  # a line longer than what was read so far
                rest += data
                continue
            head, rest = rest, raws.pop()
            span = len(head) + len(data) - len(rest)
            if head:
                raws[0] = head + raws[0]
            cr = b"\r" in data or b"\r" in head
            yield Block(lineno, offset, raws, False, cr, _utf8_pieces(head, data, span), span)
            lineno += len(raws)
            offset += span
        if rest:
            yield Block(lineno, offset, [rest], True, False, _utf8(rest), len(rest))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{source.name}: cannot read: {exc}") from None
    finally:
        if not source.is_stdin:
            stream.close()


class ReadAhead:
    """The items of `blocks` (the fast path's blocks: each with its input bytes as `span`), which
    `step` reads ahead of the loop that takes them. Called while a commit waits for the broker's
    acknowledgements, the reading, splitting and checking of the next blocks is done in time
    otherwise spent waiting (bench/README.md, "Reading ahead while a commit waits"). Blocks of at
    most `limit` input bytes wait (one more may pass it). An error raised by a block read ahead is
    raised where that block would have been read, so everything before it goes as without."""

    def __init__(self, blocks: Iterator, limit: int) -> None:
        self._blocks, self._limit = blocks, limit
        self._queue: deque = deque()
        self._bytes = 0  # input bytes of the blocks in the queue
        self._end = False  # the blocks are all read (or one raised: last in the queue)

    def __iter__(self) -> Iterator:
        queue = self._queue
        while queue or self._pull():
            item = queue.popleft()
            if isinstance(item, _Raised):
                raise item.exc
            self._bytes -= item.span
            yield item

    def step(self) -> bool:
        """Read one block ahead; False when none was (the end, or `limit` bytes wait)."""
        return self._bytes < self._limit and self._pull() and not self._end

    def _pull(self) -> bool:
        """Queue the next block (or the error reading it raised); False at the end."""
        if self._end:
            return False
        try:
            item = next(self._blocks)
        except StopIteration:
            self._end = True
            return False
        except Exception as exc:  # noqa: BLE001 - raised in its place by __iter__
            self._queue.append(_Raised(exc))
            self._end = True
            return True
        self._queue.append(item)
        self._bytes += item.span
        return True

    def close(self) -> None:
        """Close the underlying generator (its file) now, not when it is collected."""
        self._queue.clear()
        self._bytes, self._end = 0, True
        close = getattr(self._blocks, "close", None)
        if close is not None:
            close()


class _Raised(NamedTuple):
    exc: BaseException


def _waiting(stream: BinaryIO, idle: float) -> Callable[[int], bytes | None] | None:
    """A read of at most n bytes of `stream`'s file descriptor that gives None after `idle`
    seconds without input; None for a regular file (never idle). Reads the descriptor itself:
    nothing was read through `stream` before (stdin cannot be resumed), so its buffer is empty."""
    try:
        fd = stream.fileno()
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return None
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None

    def read(n: int) -> bytes | None:
        ready, _, _ = select.select([fd], [], [], idle)
        return os.read(fd, n) if ready else None

    return read


def _utf8(data: bytes, end: int | None = None) -> bool:
    """Whether data[:end] is valid UTF-8: one C pass for a whole block (ASCII: no decoding at all).
    Lines split at "\n" of valid UTF-8 are valid too ("\n" is never part of a longer sequence)."""
    if data.isascii():
        return True
    try:
        str(memoryview(data)[:end], "utf-8")  # decodes in place, no copy of the block
    except UnicodeDecodeError:
        return False
    return True


def _utf8_pieces(head: bytes, data: bytes, span: int) -> bool:
    """`_utf8` of (head + data)[:span] without joining them when both are ASCII."""
    if head.isascii() and data.isascii():
        return True
    return _utf8(head + data, span)


#: NamedTuple's own __new__ is a Python function; calling tuple.__new__ saves a frame per record.
_new = tuple.__new__

_READERS = {"lines": _read_lines, "jsonl": _read_jsonl, "csv": _read_csv}


def read_range(path: str, gz: bool, start: int, end: int) -> bytes:
    """Bytes [start, end) of the (uncompressed) file: used to verify a checkpoint's last record."""
    with open(path, "rb") as raw:
        stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore
        stream.seek(start)
        return stream.read(end - start)
