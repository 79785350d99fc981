"""The Confluent Schema Registry wire format (pure; no registry, no I/O).

A framed record is: magic byte 0, the schema id as a 4-byte big-endian integer, then the payload.
Protobuf payloads start with the message indexes (which message of the schema's file): a zig-zag
varint count then the indexes, with the common `[0]` written as one 0 byte.
"""

from __future__ import annotations

MAGIC = 0
HEADER = 5


class NotFramed(ValueError):
    """Bytes that do not start with the wire format's header."""


def frame(schema_id: int, payload: bytes) -> bytes:
    if not 0 <= schema_id < 1 << 31:
        raise ValueError(f"schema id {schema_id} out of range")
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def header(schema_id: int) -> bytes:
    """The 5 bytes a record of this schema starts with (joined to each payload by the encoders)."""
    return frame(schema_id, b"")


def schema_id(data: bytes) -> int:
    """The schema id of a framed record; NotFramed when `data` is not one."""
    if len(data) < HEADER:
        raise NotFramed(f"{len(data)} bytes: too short for the schema registry's 5-byte header")
    if data[0] != MAGIC:
        raise NotFramed(f"first byte {data[0]}: not the schema registry's magic byte 0")
    return int.from_bytes(data[1:HEADER], "big")


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _unzigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def varint(n: int) -> bytes:
    """A zig-zag varint (as Protobuf's sint64 and the wire format's message indexes)."""
    return uvarint(_zigzag(n) & ((1 << 64) - 1))


def uvarint(z: int) -> bytes:
    """The varint of a number that is not negative (seven bits a byte, the lowest first)."""
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the zig-zag varint at `pos`."""
    shift = result = 0
    while True:
        if pos >= len(data):
            raise NotFramed("message indexes: the varint runs past the end of the record")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return _unzigzag(result), pos
        shift += 7
        if shift > 63:
            raise NotFramed("message indexes: a varint longer than 10 bytes")


def message_indexes(indexes: list[int]) -> bytes:
    """The Protobuf message-index prefix: `[0]` (the file's first message) is the single byte 0."""
    if indexes == [0]:
        return b"\x00"
    return varint(len(indexes)) + b"".join(varint(i) for i in indexes)


def read_message_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """(indexes, position of the Protobuf message) from the prefix at `pos`."""
    count, pos = read_varint(data, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > 100:
        raise NotFramed(f"message indexes: count {count} is not a plausible nesting depth")
    out = []
    for _ in range(count):
        i, pos = read_varint(data, pos)
        if i < 0:
            raise NotFramed(f"message indexes: negative index {i}")
        out.append(i)
    return out, pos
