"""Kafka's primitive wire encodings and a small schema language compiled into fast readers.

A schema is a `Struct` of `(name, type)` fields plus optional tagged fields. Types are the strings
below, `Array(T)`, `NullableArray(T)`, `Struct`, or `NullableStruct(S)`. `compile_reader(T, flexible)`
turns a type into a function `read(buf, pos) -> (value, new_pos)`; in a flexible version strings,
bytes and arrays use the compact forms and every struct ends with a tagged-field section
(spec section 1). Readers raise `DecodeError` on truncated or malformed input; callers turn that into
a row with raw bytes and a note, never a crash.
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kxtx.timefmt import iso_ms, time_name
from kxtx.wording import plural

Reader = Callable[[bytes, int], tuple[Any, int]]

_I8, _I16, _U16 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">H")
_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")
_U64X2 = struct.Struct(">QQ")

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


class DecodeError(ValueError):
    """Bytes that do not fit the layout (truncated, negative length, bad varint)."""


@dataclass(frozen=True)
class Array:
    of: Any


@dataclass(frozen=True)
class NullableArray:
    of: Any


@dataclass(frozen=True)
class Tagged:
    tag: int
    name: str
    type: Any
    default: Any = None


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple = ()
    tags: tuple = ()  # Tagged entries; only read in flexible versions


@dataclass(frozen=True)
class NullableStruct:
    of: Struct


# --- primitives --------------------------------------------------------------------------------------
def _fixed(st: struct.Struct) -> Reader:
    size, unpack = st.size, st.unpack_from

    def read(b: bytes, p: int) -> tuple[Any, int]:
        if p + size > len(b):
            raise DecodeError(f"truncated at byte {p}: need {size} more")
        return unpack(b, p)[0], p + size

    return read


read_int8, read_int16, read_uint16 = _fixed(_I8), _fixed(_I16), _fixed(_U16)
read_int32, read_int64 = _fixed(_I32), _fixed(_I64)


def read_bool(b: bytes, p: int) -> tuple[bool, int]:
    v, p = read_int8(b, p)
    return v != 0, p


def read_uvarint(b: bytes, p: int) -> tuple[int, int]:
    """Unsigned base-128 varint, least-significant group first (at most 5 bytes for 32 bits)."""
    result = shift = 0
    n = len(b)
    while True:
        if p >= n:
            raise DecodeError(f"truncated varint at byte {p}")
        c = b[p]
        p += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            return result, p
        shift += 7
        if shift > 63:
            raise DecodeError(f"varint too long at byte {p}")


def read_varint(b: bytes, p: int) -> tuple[int, int]:
    """Signed zig-zag varint (record fields, spec section 8). Unchecked: the caller bounds `b`."""
    result = shift = 0
    while True:
        c = b[p]
        p += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return (result >> 1) ^ -(result & 1), p
        shift += 7


def uuid_text(raw: bytes) -> str:
    """Kafka prints UUIDs as URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def read_uuid(b: bytes, p: int) -> tuple[str, int]:
    if p + 16 > len(b):
        raise DecodeError(f"truncated uuid at byte {p}")
    return uuid_text(b[p : p + 16]), p + 16


def _take(b: bytes, p: int, n: int, what: str) -> tuple[bytes, int]:
    if n < 0:
        raise DecodeError(f"negative {what} length {n} at byte {p}")
    end = p + n
    if end > len(b):
        raise DecodeError(f"truncated {what} at byte {p}: length {n}, {len(b) - p} left")
    return b[p:end], end


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def read_string(b: bytes, p: int) -> tuple[str, int]:
    n, p = read_int16(b, p)
    raw, p = _take(b, p, n, "string")
    return _text(raw), p


def read_nullable_string(b: bytes, p: int) -> tuple[str | None, int]:
    n, p = read_int16(b, p)
    if n == -1:
        return None, p
    raw, p = _take(b, p, n, "string")
    return _text(raw), p


def read_compact_string(b: bytes, p: int) -> tuple[str, int]:
    n, p = read_uvarint(b, p)
    raw, p = _take(b, p, n - 1, "compact string")
    return _text(raw), p


def read_compact_nullable_string(b: bytes, p: int) -> tuple[str | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    raw, p = _take(b, p, n - 1, "compact string")
    return _text(raw), p


def read_bytes(b: bytes, p: int) -> tuple[bytes, int]:
    n, p = read_int32(b, p)
    return _take(b, p, n, "bytes")


def read_nullable_bytes(b: bytes, p: int) -> tuple[bytes | None, int]:
    n, p = read_int32(b, p)
    if n == -1:
        return None, p
    return _take(b, p, n, "bytes")


def read_compact_bytes(b: bytes, p: int) -> tuple[bytes, int]:
    n, p = read_uvarint(b, p)
    return _take(b, p, n - 1, "compact bytes")


def read_compact_nullable_bytes(b: bytes, p: int) -> tuple[bytes | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    return _take(b, p, n - 1, "compact bytes")


_PRIMITIVES: dict[str, tuple[Reader, Reader]] = {
    # name: (non-flexible reader, flexible reader)
    "int8": (read_int8, read_int8),
    "int16": (read_int16, read_int16),
    "uint16": (read_uint16, read_uint16),
    "int32": (read_int32, read_int32),
    "int64": (read_int64, read_int64),
    "bool": (read_bool, read_bool),
    "uuid": (read_uuid, read_uuid),
    "string": (read_string, read_compact_string),
    "nstring": (read_nullable_string, read_compact_nullable_string),
    "bytes": (read_bytes, read_compact_bytes),
    "nbytes": (read_nullable_bytes, read_compact_nullable_bytes),
}


# --- composite types -----------------------------------------------------------------------------------
def array_reader(
    elem: Reader, flexible: bool = False, nullable: bool = False, *, null_as_empty: bool = False
) -> Reader:
    """Reader for an array of `elem`. A null array (negative count) reads as None when `nullable`, as []
    when `null_as_empty` (decoders that always show a list, e.g. the consumer protocol), else raises."""

    def read(b: bytes, p: int) -> tuple[Any, int]:
        if flexible:
            n, p = read_uvarint(b, p)
            n -= 1
        else:
            n, p = read_int32(b, p)
        if n < 0:
            if null_as_empty:
                return [], p  # a new list per call: callers may keep or change it
            if nullable:
                return None, p
            raise DecodeError(f"null array where one is required, at byte {p}")
        if n > len(b) - p:  # every element takes at least one byte
            raise DecodeError(f"array count {n} larger than the {plural(len(b) - p, 'byte')} left")
        out = []
        for _ in range(n):
            v, p = elem(b, p)
            out.append(v)
        return out, p

    return read


def read_tag_section(b: bytes, p: int) -> tuple[list[tuple[int, bytes]], int]:
    """Raw tagged fields: returns ([(tag, data_bytes), ...], new_pos)."""
    count, p = read_uvarint(b, p)
    found: list[tuple[int, bytes]] = []
    for _ in range(count):
        tag, p = read_uvarint(b, p)
        size, p = read_uvarint(b, p)
        data, p = _take(b, p, size, f"tagged field {tag}")
        found.append((tag, data))
    return found, p


def _tag_reader(t: Any) -> Reader:
    """A tagged field's data is its flexible encoding; a tagged nullable struct has a uvarint presence."""
    if isinstance(t, NullableStruct):
        inner = compile_reader(t.of, True)

        def read(b: bytes, p: int) -> tuple[Any, int]:
            present, p = read_uvarint(b, p)
            if present <= 0:
                return None, p
            return inner(b, p)

        return read
    return compile_reader(t, True)


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """Kafka's schema field name as kxtx shows it: `transactionalId` -> `transactional_id`."""
    return _CAMEL.sub(r"_\1", name).lower()


def _struct_reader(s: Struct, flexible: bool) -> Reader:
    # Schemas may keep Kafka's field names (to be read against Kafka's JSON schemas); rows use
    # snake_case like every kxtx command. Renamed here, once per layout, not per record. A time
    # (int64 ...Timestamp / ...TimestampMs) is followed by its ISO form, as everywhere in kxtx.
    fields = [(snake(name), compile_reader(t, flexible), _iso_name(name, t)) for name, t in s.fields]
    tags = {t.tag: (snake(t.name), _tag_reader(t.type), t.default) for t in s.tags} if flexible else {}
    defaults = [(name, default) for name, _, default in tags.values()]
    tag_times = [(snake(t.name), iso) for t in s.tags if flexible and (iso := _iso_name(t.name, t.type))]

    def read(b: bytes, p: int) -> tuple[Any, int]:
        out: dict[str, Any] = {}
        for name, r, iso_name in fields:
            out[name], p = r(b, p)
            if iso_name:
                out[iso_name] = iso_ms(out[name])
        if flexible:
            for name, default in defaults:
                out[name] = default
            raw, p = read_tag_section(b, p)
            for tag, data in raw:
                known = tags.get(tag)
                if known is None:
                    out.setdefault("_unknown_tags", {})[str(tag)] = data.hex()
                    continue
                value, used = known[1](data, 0)
                if used != len(data):
                    raise DecodeError(
                        f"tagged field {tag} ({known[0]}): {plural(len(data) - used, 'byte')} left over"
                    )
                out[known[0]] = value
            for name, iso_name in tag_times:
                out[iso_name] = iso_ms(out[name])
        return out, p

    return read


def _iso_name(name: str, t: Any) -> str | None:
    name = snake(name)
    if t == "int64" and (name.endswith("timestamp") or name.endswith("timestamp_ms")):
        return time_name(name)
    return None


def _nullable_struct_reader(s: Struct, flexible: bool) -> Reader:
    inner = compile_reader(s, flexible)

    def read(b: bytes, p: int) -> tuple[Any, int]:
        marker, p = read_int8(b, p)
        if marker < 0:
            return None, p
        return inner(b, p)

    return read


_CACHE: dict[tuple[int, bool], Reader] = {}


def compile_reader(t: Any, flexible: bool) -> Reader:
    """The reader for type `t` in a flexible or non-flexible version (memoised per type object)."""
    if isinstance(t, str):
        return _PRIMITIVES[t][1 if flexible else 0]
    key = (id(t), flexible)
    if key in _CACHE:
        return _CACHE[key]
    if isinstance(t, Struct):
        r = _struct_reader(t, flexible)
    elif isinstance(t, NullableStruct):
        r = _nullable_struct_reader(t.of, flexible)
    elif isinstance(t, (Array, NullableArray)):
        r = array_reader(compile_reader(t.of, flexible), flexible, isinstance(t, NullableArray))
    else:
        raise TypeError(f"not a schema type: {t!r}")
    _CACHE[key] = r
    _KEEP.append(t)  # keep the object alive so its id() stays unique
    return r


_KEEP: list = []


def decode_exact(t: Any, flexible: bool, b: bytes, p: int = 0) -> Any:
    """Decode `t` from b[p:] and require every byte to be used (trailing bytes = wrong layout)."""
    value, end = compile_reader(t, flexible)(b, p)
    if end != len(b):
        raise DecodeError(f"{len(b) - end} trailing bytes after {getattr(t, 'name', t)}")
    return value


@dataclass
class Layouts:
    """The value layouts of one record type: version -> candidate structs (newest layout first)."""

    versions: dict[int, list[tuple[Struct, str | None]]] = field(default_factory=dict)
    flexible_from: int = 0

    def add(self, version: int, s: Struct, era: str | None = None) -> Layouts:
        self.versions.setdefault(version, []).append((s, era))
        return self
