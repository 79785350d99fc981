"""A column-wise Avro encoder and a generated decoder for the usual flat record: each field a
string, bytes, long, int, boolean, double, float or null, or a union of null and one of those
(pure; no I/O). `kxtx pipe` encodes and decodes its batches with them (kxtx.schemas.codecs).

fastavro's `schemaless_writer` costs several microseconds per record of a few fields, most of it
around the encoding itself, per call and per field. A batch encoded a column at a time does every
step (take the field, check its type, encode, look up the varint, join a record's parts) with
C-level `map`s over the batch, no Python frame per record (bench/README, "Schema Registry").

It takes only values of the exact built-in types (str, bytes, int, bool, float, None) and raises
`Slow` for anything else in the batch: a missing field, a subclass, a value out of range, text that
is not UTF-8-encodable. Callers then encode that batch with fastavro, which has the last word on
what fits (defaults, coercions) and names the field that does not. So a record gets either
fastavro's bytes or fastavro's treatment; the unit tests compare both on every supported type and
its boundaries. The decoder likewise gives fastavro's records or leaves the batch to fastavro
(`compile_decoder`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from itertools import repeat
from operator import add, and_, itemgetter, lshift, rshift, xor
from typing import Any

from kxtx.schemas.framing import uvarint


class Slow(Exception):
    """A batch the column encoder does not take: encode it with fastavro."""


_SMALL = 1 << 14
_MID = 1 << 28
_BIG = 1 << 42
#: zig-zag maps a long's range onto [0, 2**64) and an int's onto [0, 2**32); a value out of its
#: range zig-zags to 2**64 or more
_LIMIT = {"long": 1 << 64, "int": 1 << 32}


class _Tables:
    """Varint bytes looked up, not computed. Made by each ColumnEncoder on its first batch, not
    at import: every `kxtx produce` imports this module, and Spark's workers get it by value (a
    module-level table would travel with every task)."""

    def __init__(self) -> None:
        #: the varint bytes of 0 .. 2**14-1 (every one- and two-byte varint)
        self.v = [bytes((n,)) for n in range(0x80)] + [
            bytes(((n & 0x7F) | 0x80, n >> 7)) for n in range(0x80, _SMALL)
        ]
        #: the low 14 bits of a bigger varint: its first two bytes, both with the continuation bit
        self.low = [bytes(((x & 0x7F) | 0x80, (x >> 7) | 0x80)) for x in range(_SMALL)]
        #: the length prefix of 0 .. 8191 bytes (a zig-zag long: the varint of 2 * length)
        self.length = self.v[::2]

    def varint(self, z: int) -> bytes:
        v, low = self.v, self.low
        if z < _SMALL:
            return v[z]
        if z < _MID:
            return low[z & 0x3FFF] + v[z >> 14]
        if z < _BIG:  # e.g. a timestamp in milliseconds
            return low[z & 0x3FFF] + low[(z >> 14) & 0x3FFF] + v[z >> 28]
        return uvarint(z)

    def varints(self, zs: list[int], top: int) -> Any:
        """The varint bytes of each number (none negative), `top` the biggest."""
        v = self.v
        if top < _SMALL:
            return map(v.__getitem__, zs)
        if top < _MID and min(zs) >= _SMALL:  # all of three or four bytes: no Python call per number
            low = map(self.low.__getitem__, map(and_, zs, repeat(0x3FFF)))
            return map(add, low, map(v.__getitem__, map(rshift, zs, repeat(14))))
        return map(self.varint, zs)

    def lengths(self, data: Any) -> Any:
        lens = list(map(len, data))
        if max(lens) < len(self.length):
            return map(self.length.__getitem__, lens)
        return map(self.varint, map(lshift, lens, repeat(1)))


_PRIMITIVE = {"string", "bytes", "long", "int", "boolean", "double", "float", "null"}
_TYPE = {
    "string": str,
    "bytes": bytes,
    "long": int,
    "int": int,
    "boolean": bool,
    "double": float,
    "float": float,
}
#: struct formats, not Structs: this module is pickled by value for Spark's workers, and a Struct
#: does not pickle
_PACK = {"double": "<d", "float": "<f"}
_BOOL = (b"\x00", b"\x01")


def _plain(t: Any) -> str | None:
    """The primitive name of a field type the encoder takes, else None."""
    if isinstance(t, str) and t in _PRIMITIVE:
        return t
    if isinstance(t, dict) and "logicalType" not in t:  # other properties do not change the bytes
        return _plain(t.get("type"))
    return None


def _column(kind: str, col: Any, t: _Tables) -> list:
    """The parts (iterables, one item per value) that encode a column whose values are all of
    `kind`'s exact type (checked by the caller)."""
    if kind == "string":
        try:
            data = list(map(str.encode, col))
        except UnicodeEncodeError:  # a lone surrogate: fastavro says which
            raise Slow from None
        return [t.lengths(data), data]
    if kind == "bytes":
        return [t.lengths(col), col]
    if kind in ("long", "int"):
        zs = list(map(xor, map(lshift, col, repeat(1)), map(rshift, col, repeat(63))))
        top = max(zs)
        if top >= _LIMIT[kind]:
            raise Slow
        return [t.varints(zs, top)]
    if kind == "boolean":
        return [map(_BOOL.__getitem__, col)]
    if kind in ("double", "float"):
        try:
            return [list(map(struct.Struct(_PACK[kind]).pack, col))]
        except (OverflowError, struct.error):  # too big for a float: fastavro's call
            raise Slow from None
    return []  # null: no bytes


class ColumnEncoder:
    """`encode_many(records, head)`: head + the Avro bytes of each record (dicts), or Slow."""

    def __init__(self, fields: list[tuple[str, str, int | None]]) -> None:
        #: (name, primitive kind, the null branch's index in its union or None)
        self.fields = fields
        names = [name for name, _, _ in fields]
        self._take = itemgetter(*names) if len(names) > 1 else None
        self._names = names
        self._tables: _Tables | None = None

    def encode_many(self, records: list, head: bytes) -> list[bytes]:
        if not self.fields or not records:  # a record of no fields is no bytes
            return [head] * len(records)
        try:
            if self._take is None:
                cols: list = [list(map(itemgetter(self._names[0]), records))]
            else:
                cols = list(zip(*map(self._take, records)))
        except (KeyError, TypeError):  # a field missing (its default is fastavro's to write)
            raise Slow from None
        t = self._tables or self._made()
        parts: list = [[head] * len(records)]  # finite: it alone bounds the zip of a null-only record
        for (_, kind, null_index), col in zip(self.fields, cols):
            parts.extend(self._encoded(kind, null_index, col, t))
        return list(map(b"".join, zip(*parts)))

    def _made(self) -> _Tables:
        self._tables = _Tables()
        return self._tables

    def _encoded(self, kind: str, null_index: int | None, col: Any, t: _Tables) -> list:
        types = set(map(type, col))
        want = _TYPE.get(kind, type(None))
        if null_index is None:
            if types != {want}:
                raise Slow
            return _column(kind, col, t)
        # a union of null and `kind`: the branch's index (a zig-zag long, 0 or 2), then its bytes
        null_b, value_b = (b"\x00", b"\x02") if null_index == 0 else (b"\x02", b"\x00")
        if types == {want}:
            return [repeat(value_b), *_column(kind, col, t)]
        if types == {type(None)}:
            return [repeat(null_b)]
        if types != {want, type(None)}:
            raise Slow
        values = [v for v in col if v is not None]
        encoded = iter(map(b"".join, zip(repeat(value_b), *_column(kind, values, t))))
        return [[null_b if v is None else next(encoded) for v in col]]


def _flat_fields(schema: Any) -> list[tuple[str, str, int | None]] | None:
    """(name, primitive kind, the null branch's index in its union or None) of each field of a flat
    record schema (parsed by fastavro or plain), or None when the schema has anything else (nested
    records, arrays, maps, enums, fixed, logical types, unions of more than null and one type)."""
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    fields: list[tuple[str, str, int | None]] = []
    for f in schema.get("fields", ()):
        t, null_index = f.get("type"), None
        if isinstance(t, list):
            if len(t) != 2 or "null" not in t or t[0] == t[1]:
                return None
            null_index = t.index("null")
            t = t[1 - null_index]
        kind = _plain(t)
        if kind is None or (null_index is not None and kind == "null"):
            return None
        fields.append((f["name"], kind, null_index))
    return fields


def compile_encoder(schema: Any) -> ColumnEncoder | None:
    """The column encoder of a flat record schema, or None (`_flat_fields`)."""
    fields = _flat_fields(schema)
    return None if fields is None else ColumnEncoder(fields)


# --- decoding --------------------------------------------------------------------------------------
def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
    """(the varint at `pos`, the position after it); Slow past ten bytes (the callers check
    the value's range)."""
    z, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 70:  # no 64-bit varint is longer: bounds the work on a run of 0x80-0xff bytes
            raise Slow
    return z, pos


def _decode_lines(kind: str, target: str) -> list[str]:
    """Statements reading one value of `kind` at `p` of `d` into `target`, moving `p` past it."""
    varint = ["z = d[p]", "if z < 0x80: p += 1", "else: z, p = _varint_at(d, p)"]
    if kind in ("string", "bytes"):
        read = "d[p:e].decode()" if kind == "string" else "d[p:e]"
        # a negative length (odd zig-zag) is no record; a short slice leaves p past the end
        return [*varint, "if z & 1: raise Slow", "e = p + (z >> 1)", f"{target} = {read}", "p = e"]
    if kind in ("long", "int"):
        return [*varint, f"if z >= {_LIMIT[kind]}: raise Slow", f"{target} = (z >> 1) ^ -(z & 1)"]
    if kind == "boolean":
        return ["z = d[p]", "p += 1", "if z > 1: raise Slow", f"{target} = z == 1"]
    if kind in ("double", "float"):
        size = 8 if kind == "double" else 4
        return [f"{target}, = _unpack_{kind}(d, p)", f"p += {size}"]
    return [f"{target} = None"]  # null: no bytes


def compile_decoder(schema: Any) -> Callable[[bytes], dict] | None:
    """`decode(payload) -> dict` for a flat record schema (None otherwise: `_flat_fields`): one
    straight-line function of the schema, which reads a record in about two thirds of the time
    fastavro's block reader takes (bench/README, "Schema Registry"). It raises (Slow, IndexError,
    UnicodeDecodeError, struct.error) for bytes that are not exactly one record, and for values
    fastavro may read otherwise (a boolean byte other than 0 and 1, a long past 64 bits): callers
    then read the batch with fastavro."""
    fields = _flat_fields(schema)
    if fields is None:
        return None
    lines = ["p = 0"]
    for i, (_, kind, null_index) in enumerate(fields):
        if null_index is None:
            lines += _decode_lines(kind, f"f{i}")
            continue
        # a union's branch index: the zig-zag varint 0 or 2, one byte
        lines += ["z = d[p]", "p += 1", f"if z == {null_index << 1}: f{i} = None"]
        lines += [f"elif z == {(1 - null_index) << 1}:"]
        lines += [f"    {line}" for line in _decode_lines(kind, f"f{i}")]
        lines += ["else: raise Slow"]
    lines += ["if p != len(d): raise Slow"]
    record = ", ".join(f"{name!r}: f{i}" for i, (name, _, _) in enumerate(fields))
    src = "def decode(d):\n" + "".join(f"    {line}\n" for line in lines) + f"    return {{{record}}}\n"
    namespace: dict[str, Any] = {
        "Slow": Slow,
        "_varint_at": _varint_at,
        # made here: a Struct does not pickle, and this module is pickled by value for the workers
        "_unpack_double": struct.Struct("<d").unpack_from,
        "_unpack_float": struct.Struct("<f").unpack_from,
    }
    exec(compile(src, f"<kxtx avro decoder {schema.get('name')}>", "exec"), namespace)
    return namespace["decode"]
