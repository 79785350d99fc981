"""A tiny test-side encoder for Kafka's primitive types, written from the spec (section 1).

Deliberately separate from kxtx.records.wire: tests build record bytes field by field from the spec's
layouts with these helpers, then check that kxtx decodes them back to the same values.
"""

from __future__ import annotations

import base64
import struct


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def uuid(raw16: bytes) -> bytes:
    assert len(raw16) == 16
    return raw16


def uuid_text(raw16: bytes) -> str:
    return base64.urlsafe_b64encode(raw16).decode().rstrip("=")


# non-flexible
def string(s: str) -> bytes:
    b = s.encode()
    return i16(len(b)) + b


def nstring(s: str | None) -> bytes:
    return i16(-1) if s is None else string(s)


def bytes_(b: bytes) -> bytes:
    return i32(len(b)) + b


def nbytes(b: bytes | None) -> bytes:
    return i32(-1) if b is None else bytes_(b)


def array(items: list[bytes]) -> bytes:
    return i32(len(items)) + b"".join(items)


def narray(items: list[bytes] | None) -> bytes:
    return i32(-1) if items is None else array(items)


# flexible (compact)
def cstring(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def cnstring(s: str | None) -> bytes:
    return uvarint(0) if s is None else cstring(s)


def cbytes(b: bytes) -> bytes:
    return uvarint(len(b) + 1) + b


def carray(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def cnarray(items: list[bytes] | None) -> bytes:
    return uvarint(0) if items is None else carray(items)


def tags(fields: dict[int, bytes] | None = None) -> bytes:
    """A tagged-field section: count, then (tag, size, data) in ascending tag order."""
    fields = fields or {}
    out = uvarint(len(fields))
    for tag in sorted(fields):
        out += uvarint(tag) + uvarint(len(fields[tag])) + fields[tag]
    return out


def tagged_struct(struct_bytes: bytes) -> bytes:
    """Data of a tagged nullable struct: uvarint presence 1, then the struct."""
    return uvarint(1) + struct_bytes


def key(prefix: int, *parts: bytes) -> bytes:
    return i16(prefix) + b"".join(parts)


def value(version: int, *parts: bytes) -> bytes:
    return i16(version) + b"".join(parts)


def iso(ms: int) -> str | None:
    """The ISO form kxtx shows next to a time in ms, computed independently with datetime."""
    import datetime

    if ms <= 0:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(
        timespec="milliseconds"
    )
