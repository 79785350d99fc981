"""Record-batch headers (magic v2, spec section 8) read straight from a Fetch response's bytes.

What a reader of batch headers needs of every batch (offsets, producer id and epoch, flags,
timestamps, and a control batch's marker type and coordinator epoch) without building kafka-python's
batch objects or touching the records, except a control batch's single record, which is never
compressed. Attribute names are kafka-python's, so code written for its batches reads these too.
`headers` stops at the first batch of an older message format (or a truncated one): the caller
reads the rest, from `Header.end` of the last one, another way.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kxtx.records.control import decode_control
from kxtx.records.wire import read_varint

#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
#: baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
_LOG_OVERHEAD = 12  # baseOffset + batchLength: batchLength counts the bytes after them
_MAGIC_AT = 16


@dataclass(slots=True)
class Header:
    base_offset: int
    last_offset: int
    records_count: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    attributes: int
    first_timestamp: int
    max_timestamp: int
    size_in_bytes: int
    #: where the next batch starts in the buffer read
    end: int
    control_type: str | None = None
    coordinator_epoch: int | None = None

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression_type(self) -> int:
        return self.attributes & 0x07

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & 0x20)


def headers(buf: bytes, pos: int = 0) -> Iterator[Header]:
    """The v2 batches of `buf` from `pos`, in order, up to the first that is not v2 or not whole."""
    n = len(buf)
    unpack = _HEADER.unpack_from
    while pos + HEADER_SIZE <= n:
        if buf[pos + _MAGIC_AT] != 2:
            return
        base, length, _epoch, _magic, _crc, attrs, delta, first_ts, max_ts, pid, pepoch, seq, count = unpack(
            buf, pos
        )
        end = pos + _LOG_OVERHEAD + length
        if end > n:
            return  # the fetch cut it: the next fetch starts with it
        kind, coordinator_epoch = (None, None)
        if attrs & 0x20:  # a control batch always has a kind: an empty one is no marker
            kind, coordinator_epoch = _marker(buf, pos + HEADER_SIZE) if count else ("INVALID", None)
        yield Header(
            base,
            base + delta,
            count,
            pid,
            pepoch,
            seq,
            attrs,
            first_ts,
            max_ts,
            end - pos,
            end,
            kind,
            coordinator_epoch,
        )
        pos = end


_MARKER = struct.Struct(">hhbhi")  # key version, type; value length (zig-zag 6); version, coordinator epoch
_MARKER_TYPES = {0: "ABORT", 1: "COMMIT"}


def _marker(buf: bytes, p: int) -> tuple[str, int | None]:
    """A control batch's record (length, attributes, timestamp delta, offset delta, key, value):
    its type and coordinator epoch. A transaction marker as brokers write it (one-byte length and
    deltas, a 4-byte key and a 6-byte value) is read in one unpack; anything else field by field."""
    if buf[p] < 0x80 and buf[p + 2] < 0x80 and buf[p + 3] == 0 and buf[p + 4] == 8:
        version, code, vlen, _vversion, epoch = _MARKER.unpack_from(buf, p + 5)
        if version == 0 and vlen == 12 and code in _MARKER_TYPES:
            return _MARKER_TYPES[code], epoch
    _length, p = read_varint(buf, p)
    p += 1  # attributes
    _ts, p = read_varint(buf, p)
    _off, p = read_varint(buf, p)
    klen, p = read_varint(buf, p)
    key = bytes(buf[p : p + klen]) if klen >= 0 else None
    p += max(klen, 0)
    vlen, p = read_varint(buf, p)
    value = bytes(buf[p : p + vlen]) if vlen >= 0 else None
    marker = decode_control(key, value)
    return marker["type"], marker.get("coordinator_epoch")
