"""Checkpoints for `kxtx produce`: where each input stands, written in the same transaction as its
records, to a compacted topic keyed by the transactional id.

A file is recognised by its path, size and a hash of its first bytes; the last record before the
checkpoint is hashed too, so a file edited in the middle is noticed where the next run would seek. A
file that only grew (appended lines) continues; any other change is refused unless the caller asks
to start over.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field

from kxtx.derived import derived_name
from kxtx.errors import InputError, UsageError

VERSION = 1
PREFIX_BYTES = 64 * 1024
DEFAULT_TOPIC = "kxtx-checkpoints"


def _sha256(data: bytes) -> str:
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
    return FileIdentity(full, size, len(prefix), _sha256(prefix))


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

    def advance(self, lineno: int, start: int, end: int, raw: bytes) -> None:
        """After the record `raw` (terminator stripped) that spans bytes [start, end)."""
        term = end - start - len(raw)  # 0, 1 (\n) or 2 (\r\n): what the reader stripped
        self.offset, self.line = end, lineno
        self.last_len = end - start
        self.last_sha256 = _sha256(raw + b"\r\n"[2 - term :] if term else raw)


@dataclass
class Checkpoint:
    transactional_id: str
    topic: str
    files: dict[str, FilePosition] = field(default_factory=dict)
    records: int = 0  # committed so far under this transactional id (all runs)
    transactions: int = 0
    updated_ms: int = 0

    def to_bytes(self) -> bytes:
        doc = {"version": VERSION, **asdict(self)}
        doc["files"] = list(doc["files"].values())
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Checkpoint:
        try:
            doc = json.loads(data)
            if doc.get("version") != VERSION:
                raise InputError(
                    f"{where}: checkpoint version {doc.get('version')!r} is not "
                    f"{VERSION}; was it written by a newer kxtx?"
                )
            files = {}
            for f in doc["files"]:
                pos = FilePosition(FileIdentity(**f.pop("identity")), **f)
                files[pos.identity.path] = pos
            return cls(
                doc["transactional_id"],
                doc["topic"],
                files,
                doc["records"],
                doc["transactions"],
                doc["updated_ms"],
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


def plan(prev: FilePosition | None, path: str, gz: bool, read_range) -> Resume:
    """Compare a file with its checkpoint. `read_range(path, gz, start, end)` reads uncompressed
    bytes (injected so the rules are testable without files). Raises InputError if it changed."""
    if prev is None:
        return Resume()
    old = prev.identity
    now = identify(path, old.prefix_len)

    def changed(why: str) -> InputError:
        return InputError(
            f"{path}: changed since the last committed checkpoint ({why}); re-run with --restart "
            "to produce it again from the beginning, or use another --transactional-id"
        )

    if now.size < old.size:
        raise changed(f"now {now.size} bytes, was {old.size}")
    if now.prefix_sha256 != old.prefix_sha256:
        raise changed(f"the first {old.prefix_len} bytes differ")
    if prev.last_len:
        try:
            last = read_range(path, gz, prev.offset - prev.last_len, prev.offset)
        except (OSError, EOFError) as exc:
            raise changed(f"cannot read at byte {prev.offset}: {exc}") from None
        if _sha256(last) != prev.last_sha256:
            raise changed(f"line {prev.line} differs")
        grew = now.size > old.size
        if grew and prev.eof and not last.endswith(b"\n"):
            raise changed(f"it grew, but its last line {prev.line} had no line break then")
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
