"""The records of one record batch for `dump partition`: read (decompressed) once, counted in a range,
and shown as rows (`--records`) with keys, values and headers as kcat shows them.

kafka-python's batch reader decompresses gzip itself, and snappy, lz4 and zstd with the packages
its extras name (python-snappy, lz4, zstandard: kxtx's dependencies). When one is missing the
message names the codec and the package, instead of kafka-python's "Libraries ... not found".
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, TypedDict

from kxtx.client.kafka_internals import batch_records
from kxtx.errors import KxtxError
from kxtx.log import logger
from kxtx.records.wire import read_varint
from kxtx.timefmt import ISO, iso_ms

RAW, STRING, JSON = "raw", "string", "json"
#: The Python package that decompresses each codec for kafka-python's batch reader.
PACKAGES = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}
_CODECS = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class BatchRecords:
    """A batch's records as (offset, timestamp, key, value, headers) tuples, read at most once and
    only when needed (kafka-python's batch can be iterated only once)."""

    def __init__(self, raw: Any, where: str = "") -> None:  # raw: a kafka-python batch (untyped)
        self.raw, self.where = raw, where
        self.records: list[tuple] | None = None

    def read(self) -> list[tuple]:
        if self.records is None:
            try:
                self.records = _decode(self.raw)
            except Exception as exc:
                raise _codec_error(self.raw, self.where, exc) from exc
        return self.records

    def first_key_value(self) -> tuple[bytes | None, bytes | None]:
        records = self.read()
        return (records[0][2], records[0][3]) if records else (None, None)

    def count(self, lo: int, hi: int) -> int:
        """Records in [lo, hi): from the header (`span_count`), else (a compacted batch across a
        bound) read record by record."""
        raw = self.raw
        base, last, n = raw.base_offset, raw.last_offset, raw.records_count
        counted = span_count(base, last, n, lo, hi)
        if counted is not None:
            return counted
        overlap = min(last, hi - 1) - max(base, lo) + 1
        try:
            return sum(1 for r in self.read() if lo <= r[0] < hi)
        except KxtxError as exc:  # a codec package missing: estimate, say so
            logger.warning(f"{exc}; counted by its offset span")
            return min(n, overlap)


def span_count(base: int, last: int, n: int, lo: int, hi: int) -> int | None:
    """A batch's records in [lo, hi) from its header: without compaction its offsets are
    contiguous, so nothing is decompressed. None when only its records can tell (a compacted
    batch across a bound)."""
    if last < lo or base >= hi:
        return 0
    if base >= lo and last < hi:
        return n
    if n == last - base + 1:
        return min(last, hi - 1) - max(base, lo) + 1
    return None


def _decode(raw: Any) -> list[tuple]:
    """The records of a kafka-python batch: its decompressed bytes (decompressed by kafka-python)
    decoded here, because its record iterator made --records the slower half of the dump
    (bench/README.md, "dump partition"). Other batch kinds (message format v0/v1) through
    kafka-python's iterator."""
    inside = batch_records(raw)
    if inside is None:
        return [(r.offset, r.timestamp, r.key, r.value, list(r.headers or ())) for r in raw]
    log_append_time = raw.timestamp_type == 1  # every record has the batch's max timestamp
    return _records(
        *inside,
        raw.records_count,
        raw.base_offset,
        raw.first_timestamp,
        raw.max_timestamp if log_append_time else None,
    )


# One loop per record with its varints decoded inline (see the docstring): splitting it puts
# a call on every record.
def _records(buf: bytes, pos: int, n: int, base: int, first_ts: int, fixed_ts: int | None) -> list[tuple]:  # noqa: C901
    """Record format v2 (KIP-98): length, attributes, timestamp delta, offset delta, key, value,
    headers; every number a zigzag varint. One- and two-byte varints (lengths of keys and values,
    offset deltas) are decoded inline, the same few lines per field on purpose: a call per varint
    costs more than the decoding itself (bench/README.md, "dump partition")."""
    out: list[tuple] = []
    append = out.append
    varint = read_varint
    for _ in range(n):
        # length: skip it (the record ends where its fields end)
        if buf[pos] < 0x80:
            pos += 2
        elif buf[pos + 1] < 0x80:
            pos += 3
        else:
            _l, pos = varint(buf, pos)
            pos += 1
        # timestamp delta
        b = buf[pos]
        if b < 0x80:
            ts = first_ts + ((b >> 1) ^ -(b & 1))
            pos += 1
        else:
            b2 = buf[pos + 1]
            if b2 < 0x80:
                v = (b & 0x7F) | (b2 << 7)
                ts = first_ts + ((v >> 1) ^ -(v & 1))
                pos += 2
            else:
                ts, pos = varint(buf, pos)
                ts += first_ts
        b = buf[pos]
        if b < 0x80:
            o = base + ((b >> 1) ^ -(b & 1))
            pos += 1
        else:
            b2 = buf[pos + 1]
            if b2 < 0x80:
                v = (b & 0x7F) | (b2 << 7)
                o = base + ((v >> 1) ^ -(v & 1))
                pos += 2
            else:
                o, pos = varint(buf, pos)
                o += base
        b = buf[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            klen, pos = varint(buf, pos)
        if klen >= 0:
            key = buf[pos : pos + klen]
            pos += klen
        else:
            key = None
        b = buf[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = buf[pos + 1]
            if b2 < 0x80:
                vlen = (b & 0x7F) | (b2 << 7)
                vlen = (vlen >> 1) ^ -(vlen & 1)
                pos += 2
            else:
                vlen, pos = varint(buf, pos)
        if vlen >= 0:
            value = buf[pos : pos + vlen]
            pos += vlen
        else:
            value = None
        b = buf[pos]
        if b:  # a header count other than zero: one-byte lengths inline
            if b < 0x80:
                count, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                count, pos = varint(buf, pos)
            headers: list[tuple[str, bytes | None]] = []
            for _h in range(count):
                b = buf[pos]
                if b < 0x80:
                    hk, pos = (b >> 1) ^ -(b & 1), pos + 1
                else:
                    hk, pos = varint(buf, pos)
                name = buf[pos : pos + hk].decode("utf-8", errors="replace")
                pos += hk
                b = buf[pos]
                if b < 0x80:
                    hv, pos = (b >> 1) ^ -(b & 1), pos + 1
                else:
                    hv, pos = varint(buf, pos)
                if hv >= 0:
                    headers.append((name, buf[pos : pos + hv]))
                    pos += hv
                else:
                    headers.append((name, None))
        else:
            headers = []
            pos += 1
        append((o, ts if fixed_ts is None else fixed_ts, key, value, headers))
    return out


def _codec_error(raw: Any, where: str, exc: Exception) -> KxtxError:
    codec = _CODECS.get(getattr(raw, "compression_type", 0))
    at = f"{where} batch at offset {raw.base_offset}".strip()
    if type(exc).__name__ == "UnsupportedCodecError" and codec in PACKAGES:
        pkg = PACKAGES[codec]
        return KxtxError(f"{at} is {codec}-compressed: reading its records needs the Python package {pkg}")
    return KxtxError(f"{at}: its records cannot be read ({codec or 'uncompressed'}): {exc}")


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "backslashreplace")


def _json(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return _loads(data)
    except ValueError:
        return data.decode("utf-8", "backslashreplace")


def _raw(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


_SHOW = {STRING: _text, JSON: _json, RAW: _raw}


def show(data: bytes | None, how: str) -> Any:
    """A key, value or header value as `--value-format` asks: `string` (UTF-8, undecodable bytes as
    \\xNN), `json` (parsed; what is not JSON stays a string), `raw` (the exact bytes: base64)."""
    return _SHOW[how](data)


def _loads(data: bytes) -> Any:
    try:
        import orjson
    except ImportError:  # optional speed-up
        import json

        return json.loads(data)
    return orjson.loads(data)


def _decoded_rows(
    records: BatchRecords,
    partition: int,
    fate: str | None,
    lo: int,
    hi: int,
    lso: int,
    decode: Callable[[bytes | None, str], tuple[Any, dict]],
) -> list[RecordRow]:
    visible_fate = fate != "aborted"
    iso = ISO.get
    rows: list[RecordRow] = []
    for o, ts, key, value, headers in records.read():
        if not lo <= o < hi:
            continue
        k, k_extra = decode(key, "key")
        v, v_extra = decode(value, "value")
        row: Any = {
            "kind": "record",
            "partition": partition,
            "offset": o,
            "timestamp": ts,
            "time": iso(ts) or iso_ms(ts),
            "key": k,
            "headers": [[hk, _text(hv)] for hk, hv in headers] if headers else [],
            "value": v,
            **k_extra,
            **v_extra,
            "fate": fate,
            "read_committed": visible_fate and o < lso,
        }
        rows.append(row)
    return rows


class RecordRow(TypedDict):
    """A record's row in `dump partition --records`. A dict, not a `kxtx.results.Result`: one is
    built per record and written as it is (bench/README.md, "dump partition")."""

    kind: str
    partition: int
    offset: int
    timestamp: int
    time: str | None
    key: Any
    headers: list[list[Any]]
    value: Any
    fate: str | None
    read_committed: bool


def record_rows(
    records: BatchRecords,
    partition: int,
    fate: str | None,
    how: str,
    lo: int,
    hi: int,
    lso: int,
    decode: Callable[[bytes | None, str], tuple[Any, dict]] | None = None,
) -> list[RecordRow]:
    """The rows of a data batch's records in [lo, hi), each with its batch's fate and whether a
    read_committed consumer reads it now (below the LSO, not aborted). `decode(bytes, "key" or
    "value")` -> (shown, extra keys of the row), for keys and values framed for a schema registry
    (kxtx.schemas.rows); header values are then shown as text."""
    visible_fate = fate != "aborted"
    iso = ISO.get
    if decode is not None:
        return _decoded_rows(records, partition, fate, lo, hi, lso, decode)
    shown = _SHOW[how]
    return [
        {
            "kind": "record",
            "partition": partition,
            "offset": o,
            "timestamp": ts,
            "time": iso(ts) or iso_ms(ts),
            "key": shown(key),
            "headers": [[k, shown(v)] for k, v in headers] if headers else [],
            "value": shown(value),
            "fate": fate,
            "read_committed": visible_fate and o < lso,
        }
        for o, ts, key, value, headers in records.read()
        if lo <= o < hi
    ]
