"""Checkpoints for `kxtx produce`: where each input stands, written in the same transaction as its
records, to a compacted topic keyed by the transactional id.

A file is recognised by its path and a hash of its committed part: the (uncompressed) bytes before
the checkpoint's offset, the lines whose records are in the topic. A file whose committed part is
unchanged continues after it, whatever else changed (a fixed bad line after it, appended lines, a
new inode or mtime); a change inside the committed part is refused unless the caller asks to start
over, which writes those records again.

A checkpoint also records how the lines became records (`mapping`: each file's input format, the
key and value fields): a run that would continue a file with another mapping is refused, since
the records already produced would not match the rest. Checkpoints written before it have none and
are not checked; the next commit records it (older kxtx releases ignore the field).

A bad line that `--on-error skip` left out is recorded with its file's position, in the same
transaction (`SkippedLine`): the committed part's hash leaves out its bytes, so the line may be
fixed in place (another length too, as long as it keeps its line breaks) and a later run of the
same command finds it by its place among the unchanged lines and loads just it, exactly once. A
checkpoint with skipped lines is version 3 (older kxtx releases refuse it, naming the version);
one without is written as version 2, as before.

Version 1 checkpoints (before the committed part was hashed) kept the size, a hash of the first
64 KiB and of the last committed record: they are still read and judged by those, and the next
commit writes version 2.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import BinaryIO

from kxtx.derived import derived_name
from kxtx.errors import InputError, UsageError
from kxtx.wording import plural

VERSION = 2
#: the version of a checkpoint that records skipped lines (`FilePosition.skipped`)
SKIPPED_VERSION = 3
#: versions this kxtx reads (1: no hash of the committed part)
READABLE = (1, 2, 3)
PREFIX_BYTES = 64 * 1024
DEFAULT_TOPIC = "kxtx-checkpoints"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileIdentity:
    path: str  # absolute
    size: int  # bytes on disk (compressed size for .gz)
    prefix_len: int
    prefix_sha256: str


def identify(path: str, prefix_len: int | None = None) -> FileIdentity:
    """Identity of the file as it is now; `prefix_len` to hash the same prefix as an older identity."""
    full = os.path.abspath(path)
    try:
        size = os.path.getsize(full)
        n = min(size, PREFIX_BYTES if prefix_len is None else prefix_len)
        with open(full, "rb") as f:
            prefix = f.read(n)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return FileIdentity(full, size, len(prefix), sha256(prefix))


@dataclass
class SkippedLine:
    """A bad line `--on-error skip` left out of a file's committed part: its (first) line number,
    its bytes [start, end) (uncompressed, terminator included) and how many line breaks they hold
    (1 for a line; more for a CSV row with quoted line breaks; 0 for a last line without one)."""

    line: int
    start: int
    end: int
    breaks: int = 1


def skipped_line(lineno: int, start: int, end: int, raw: bytes) -> SkippedLine:
    """The SkippedLine of a bad record `raw` (terminator stripped) that spans bytes [start, end)."""
    return SkippedLine(lineno, start, end, raw.count(b"\n") + (end - start > len(raw)))


@dataclass
class FilePosition:
    """How far one input got: the next run starts at `offset` (uncompressed), after line `line`."""

    identity: FileIdentity
    offset: int = 0
    line: int = 0
    eof: bool = False
    #: the last record before `offset`, line terminator included (to verify the seek target)
    last_len: int = 0
    last_sha256: str = ""
    #: SHA-256 of the uncompressed bytes [0, offset): the committed part (None: a version 1 checkpoint)
    committed_sha256: str | None = None
    #: bad lines before `offset` that were skipped, in file order: their bytes are not hashed
    skipped: list[SkippedLine] = field(default_factory=list)

    def advance(self, lineno: int, start: int, end: int, raw: bytes) -> None:
        """After the record `raw` (terminator stripped) that spans bytes [start, end)."""
        term = end - start - len(raw)  # 0, 1 (\n) or 2 (\r\n): what the reader stripped
        self.offset, self.line = end, lineno
        self.last_len = end - start
        self.last_sha256 = sha256(raw + b"\r\n"[2 - term :] if term else raw)


@dataclass
class Checkpoint:
    transactional_id: str
    topic: str
    files: dict[str, FilePosition] = field(default_factory=dict)
    records: int = 0  # committed so far under this transactional id (all runs)
    transactions: int = 0
    updated_ms: int = 0
    #: how the records were made (`mapping_of`); None in a checkpoint written before it was kept
    mapping: dict | None = None

    def to_bytes(self) -> bytes:
        doc = {"version": VERSION, **asdict(self)}
        files = doc["files"] = list(doc["files"].values())
        for f in files:
            if not f["skipped"]:
                del f["skipped"]  # as version 2 checkpoints always were
            else:
                doc["version"] = SKIPPED_VERSION
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Checkpoint:
        try:
            doc = json.loads(data)
            if doc.get("version") not in READABLE:
                raise InputError(
                    f"{where}: checkpoint version {doc.get('version')!r} is not "
                    f"{' or '.join(map(str, READABLE))}; was it written by a newer kxtx?"
                )
            files = {}
            for f in doc["files"]:
                skipped = [SkippedLine(**x) for x in f.pop("skipped", [])]
                pos = FilePosition(FileIdentity(**f.pop("identity")), **f, skipped=skipped)
                files[pos.identity.path] = pos
            return cls(
                doc["transactional_id"],
                doc["topic"],
                files,
                doc["records"],
                doc["transactions"],
                doc["updated_ms"],
                doc.get("mapping"),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{where}: unreadable checkpoint ({exc})") from None


def default_transactional_id(topic: str, paths: list[str]) -> str:
    """Stable across runs of the same command: the topic plus a hash of the absolute input paths."""
    return derived_name(f"kxtx-produce-{topic}", ["-" if p == "-" else os.path.abspath(p) for p in paths])


@dataclass(frozen=True)
class Resume:
    """Where to start one input: `done` means it was produced completely and has not grown."""

    offset: int = 0
    line: int = 0
    done: bool = False
    note: str = "new"
    #: the committed part's hash, read up to `offset`, for the next commit to extend
    prefix: CommittedPrefix | None = field(default=None, compare=False, repr=False)
    #: lines an earlier run skipped, where they are now (`offset` counts their new lengths): this
    #: run tries them again before the rest
    retry: tuple[SkippedLine, ...] = ()


class CommittedPrefix:
    """The SHA-256 of a file's first bytes (uncompressed), extended forward as commits move the
    offset: each byte is read once per run, on a handle of its own opened when the run plans the
    file. It also keeps the bytes of the last record, to check them against what the producer read.
    The bytes of skipped lines are read but not hashed (`excluded`: their ranges so far)."""

    CHUNK = 1 << 20

    def __init__(self, path: str, gz: bool) -> None:
        self.path, self.gz = path, gz
        self._stream: BinaryIO | None = None
        self._start()

    def _start(self) -> None:
        self.close()
        self.offset, self.last_byte, self.window = 0, b"", b""
        self._hash = hashlib.sha256()
        self._ahead = b""  # read past `offset` by `more()`, not hashed yet
        self.excluded: tuple[tuple[int, int], ...] = ()

    def restart(self) -> None:
        """Hash from the first byte again (the lines left out changed: one skipped was loaded)."""
        self._start()

    def _read(self, n: int) -> bytes:
        """The next `n` bytes after `offset` (`_ahead` is empty when this is called)."""
        if self._stream is None:
            raw = open(self.path, "rb")  # noqa: SIM115 - closed by close()
            stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if self.gz else raw  # type: ignore[assignment]
            if self.offset:  # opened again after close(): on from where it was
                stream.seek(self.offset)
            self._stream = stream
        return self._stream.read(n)

    def advance(self, offset: int, keep: int = 0, skip: tuple[tuple[int, int], ...] = ()) -> int:
        """Hash up to `offset` (or the end of the file, if sooner), but not the byte ranges of
        `skip` (sorted [start, end) of skipped lines), keeping the last `keep` bytes read in
        `window`; the offset reached."""
        if offset < self.offset:  # started over (--restart): hash from the beginning again
            self._start()
        skip = tuple(r for r in skip if r[0] >= self.offset and r[0] < offset)
        self.excluded += skip
        tail = self.window if keep else b""
        while self.offset < offset:
            want = min(self.CHUNK, offset - self.offset)
            if self._ahead:
                chunk, self._ahead = self._ahead[:want], self._ahead[want:]
            else:
                chunk = self._read(want)
            if not chunk:
                break
            if skip:
                self._update_outside(chunk, skip)
            else:
                self._hash.update(chunk)
            self.offset += len(chunk)
            self.last_byte = chunk[-1:]
            if keep:  # copies at most `keep` bytes of the chunk
                tail = (tail + chunk[-keep:])[-keep:]
        self.window = tail[-keep:] if keep else b""
        return self.offset

    def _update_outside(self, chunk: bytes, skip: tuple[tuple[int, int], ...]) -> None:
        """Hash `chunk` (at `offset`) but the bytes in the ranges of `skip`."""
        at, end = self.offset, self.offset + len(chunk)
        pos = at
        for s, e in skip:
            if e <= pos or s >= end:
                continue
            if s > pos:
                self._hash.update(chunk[pos - at : s - at])
            pos = min(e, end)
        if pos < end:
            self._hash.update(chunk[pos - at :])

    def take(self, breaks: int) -> bytes:
        """Read past a skipped line without hashing it: the bytes after `offset` up to its
        `breaks`-th line break (0: to the end of the file), or fewer at the end of the file."""
        start, out, found = self.offset, bytearray(), 0
        while True:
            if self._ahead:
                chunk, self._ahead = self._ahead, b""
            else:
                chunk = self._read(1 << 16)
            if not chunk:
                break
            i = -1
            while breaks and found < breaks:
                i = chunk.find(b"\n", i + 1)
                if i < 0:
                    break
                found += 1
            if breaks and found == breaks:
                out += chunk[: i + 1]
                self._ahead = chunk[i + 1 :]
                break
            out += chunk
        self.offset += len(out)
        if out:
            self.last_byte = bytes(out[-1:])
        self.excluded += ((start, self.offset),)
        return bytes(out)

    def more(self) -> bool:
        """Whether the file has bytes after `offset`."""
        if not self._ahead:
            self._ahead = self._read(1)
        return bool(self._ahead)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def close(self) -> None:
        """Close the file (a later `advance` opens it again where it was): a run over many
        inputs keeps no more of them open than it reads."""
        self._ahead = b""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def _changed(path: str, prev: FilePosition, why: str) -> InputError:
    lines = f"lines 1-{prev.line}" if prev.line > 1 else "line 1"
    return InputError(
        f"{path}: changed since the last committed checkpoint in the part already produced ({why}); "
        f"re-run with --restart to produce it again from line 1, which writes the records of {lines} "
        "a second time (duplicates), or use another --transactional-id"
    )


def plan(
    prev: FilePosition | None, path: str, gz: bool, read_range: Callable[[str, bool, int, int], bytes]
) -> Resume:
    """Compare a file with its checkpoint. `read_range(path, gz, start, end)` reads uncompressed
    bytes (for version 1 checkpoints; injected so the rules are testable without files). Raises
    InputError if the committed part changed."""
    if prev is None:
        return Resume(prefix=CommittedPrefix(path, gz))
    if prev.committed_sha256 is None:
        resume = _plan_v1(prev, path, gz, read_range)
        return Resume(resume.offset, resume.line, resume.done, resume.note, CommittedPrefix(path, gz))
    prefix = CommittedPrefix(path, gz)
    try:
        offset, retry = _read_committed_part(prefix, prev, path)
        more = prefix.more()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    finally:
        prefix.close()
    if prefix.offset < offset or prefix.hexdigest() != prev.committed_sha256:
        if prefix.offset < offset:
            raise _changed(
                path, prev, f"it now ends at byte {prefix.offset}, line {prev.line} ended at {offset}"
            )
        raise _changed(path, prev, "its bytes differ" + _outside(prev.skipped))
    if more and prev.offset and prefix.last_byte != b"\n":
        raise _changed(path, prev, f"its last line {prev.line} had no line break and now goes on")
    note = "appended" if prev.eof else "resumed"
    if prev.eof and not more:
        if not retry:
            return Resume(offset, prev.line, True, "done", prefix)
        note = "resumed"
    return Resume(offset, prev.line, False, note, prefix, retry)


def _outside(skipped: tuple[SkippedLine, ...] | list[SkippedLine]) -> str:
    if not skipped:
        return ""
    lines = ", ".join(str(s.line) for s in skipped[:10]) + (", ..." if len(skipped) > 10 else "")
    return f" outside the {plural(len(skipped), 'line')} skipped earlier ({lines}), which may change"


def _read_committed_part(
    prefix: CommittedPrefix, prev: FilePosition, path: str
) -> tuple[int, tuple[SkippedLine, ...]]:
    """Hash the file's committed part as `prev` knew it into `prefix`, reading past the lines it
    skipped: each one is where the unchanged bytes before it end, and as long as its line breaks
    (its bytes may be another length: all that follows moves by the difference). The committed
    part's end now, and the skipped lines where they are now."""
    delta, now = 0, []
    for s in prev.skipped:
        start = s.start + delta
        reached = prefix.advance(start)
        if reached < start:
            raise _changed(
                path, prev, f"it now ends at byte {reached}, before line {s.line}, skipped earlier"
            )
        if start and prefix.last_byte != b"\n":  # the bytes before it moved: changed
            raise _changed(path, prev, "its bytes differ" + _outside(prev.skipped))
        raw = prefix.take(s.breaks)
        if raw.count(b"\n") < s.breaks:
            raise _changed(path, prev, f"the file now ends inside line {s.line}, skipped earlier")
        now.append(SkippedLine(s.line, start, start + len(raw), s.breaks))
        delta += len(raw) - (s.end - s.start)
    prefix.advance(prev.offset + delta)
    return prev.offset + delta, tuple(now)


def _plan_v1(
    prev: FilePosition, path: str, gz: bool, read_range: Callable[[str, bool, int, int], bytes]
) -> Resume:
    """A version 1 checkpoint: its size, first bytes and last record."""
    old = prev.identity
    now = identify(path, old.prefix_len)
    if now.size < old.size:
        raise _changed(path, prev, f"now {now.size} bytes, was {old.size}")
    if now.prefix_sha256 != old.prefix_sha256:
        raise _changed(
            path,
            prev,
            f"the first {old.prefix_len} bytes differ; the checkpoint, written by an earlier kxtx, "
            "has no hash of the produced part to tell whether the change is in it",
        )
    if prev.last_len:
        try:
            last = read_range(path, gz, prev.offset - prev.last_len, prev.offset)
        except (OSError, EOFError) as exc:
            raise _changed(path, prev, f"cannot read at byte {prev.offset}: {exc}") from None
        if sha256(last) != prev.last_sha256:
            raise _changed(path, prev, f"line {prev.line} differs")
        grew = now.size > old.size
        if grew and prev.eof and not last.endswith(b"\n"):
            raise _changed(path, prev, f"it grew, but its last line {prev.line} had no line break then")
    if prev.eof and now.size == old.size:
        return Resume(prev.offset, prev.line, True, "done")
    note = "appended" if prev.eof else "resumed"
    return Resume(prev.offset, prev.line, False, note)


def check_topic(cp: Checkpoint, topic: str) -> None:
    if cp.topic != topic:
        raise UsageError(
            f"transactional id {cp.transactional_id!r} was used to produce to topic {cp.topic!r}, "
            f"not {topic!r}; pass another --transactional-id"
        )


#: the parts of a mapping a run may not change while continuing a file: (key, how to say it)
MAPPING_PARTS = (
    ("key_field", lambda v: f"-k {v}" if v else "no -k"),
    ("value_field", lambda v: f"--value-field {v}" if v else "no --value-field"),
    ("value_as_json", lambda v: "--value-as-json" if v else "no --value-as-json"),
)


def mapping_of(
    formats: dict[str, str], key_field: str | None, value_field: str | None, value_as_json: bool
) -> dict:
    """What a checkpoint records of a run's mapping: each file's (absolute path) input format, and
    the fields the key and value come from."""
    return {
        "formats": formats,
        "key_field": key_field,
        "value_field": value_field,
        "value_as_json": value_as_json,
    }


def check_mapping(cp: Checkpoint, now: dict) -> None:
    """Refuse to continue a file of the checkpoint with another format, key or value mapping than
    the records it has in the topic were made with (`now`: `mapping_of` this run). A checkpoint
    without a mapping (written before it was kept) is not checked."""
    was = cp.mapping
    resumed = [p for p in now["formats"] if p in cp.files]
    if was is None or not resumed:
        return
    changes = [
        f"{p}: -I {was['formats'][p]}, now -I {now['formats'][p]}"
        for p in resumed
        if was.get("formats", {}).get(p) not in (None, now["formats"][p])
    ]
    changes += [f"{say(was.get(k))}, now {say(now[k])}" for k, say in MAPPING_PARTS if was.get(k) != now[k]]
    if changes:
        raise UsageError(
            f"transactional id {cp.transactional_id!r} produced its inputs with another mapping "
            f"({'; '.join(changes)}): its records would not match the rest; re-run with --restart to "
            "produce the files again from line 1 with this mapping (duplicates), or use another "
            "--transactional-id"
        )


def with_mapping(cp: Checkpoint, now: dict) -> None:
    """Record `now` in `cp` (for its next commit), keeping the formats of files this run leaves out."""
    formats = {**((cp.mapping or {}).get("formats") or {}), **now["formats"]}
    cp.mapping = {**now, "formats": formats}
