"""The records of one record batch for `dump partition`: read (decompressed) once, counted in a range,
and shown as rows (`--records`) with keys, values and headers as kcat shows them.

kafka-python's batch reader decompresses gzip itself, and snappy, lz4 and zstd with the packages
its extras name (python-snappy, lz4, zstandard: kxtx's dependencies). When one is missing the
message names the codec and the package, instead of kafka-python's "Libraries ... not found".
"""

from __future__ import annotations

import base64
from typing import Any

from kxtx.errors import KxtxError
from kxtx.log import logger
from kxtx.timefmt import ISO, iso_ms

RAW, STRING, JSON = "raw", "string", "json"
#: The Python package that decompresses each codec for kafka-python's batch reader.
PACKAGES = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}
_CODECS = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class BatchRecords:
    """A batch's records, read at most once and only when needed: kafka-python's batch can be
    iterated only once."""

    def __init__(self, raw, where: str = ""):
        self.raw, self.where = raw, where
        self.records: list | None = None

    def read(self) -> list:
        if self.records is None:
            try:
                self.records = list(self.raw)
            except Exception as exc:
                raise _codec_error(self.raw, self.where, exc) from exc
        return self.records

    def first_key_value(self) -> tuple[bytes | None, bytes | None]:
        records = self.read()
        return (records[0].key, records[0].value) if records else (None, None)

    def count(self, lo: int, hi: int) -> int:
        """Records in [lo, hi). Without compaction a batch's offsets are contiguous: counted from
        the header, nothing decompressed. A compacted batch across a bound is read record by
        record."""
        raw = self.raw
        base, last, n = raw.base_offset, raw.last_offset, raw.records_count
        if last < lo or base >= hi:
            return 0
        if base >= lo and last < hi:
            return n
        overlap = min(last, hi - 1) - max(base, lo) + 1
        if n == last - base + 1:
            return overlap
        try:
            return sum(1 for r in self.read() if lo <= r.offset < hi)
        except KxtxError as exc:  # a codec package missing: estimate, say so
            logger.warning(f"{exc}; counted by its offset span")
            return min(n, overlap)


def _codec_error(raw, where: str, exc: Exception) -> KxtxError:
    codec = _CODECS.get(getattr(raw, "compression_type", 0))
    at = f"{where} batch at offset {raw.base_offset}".strip()
    if type(exc).__name__ == "UnsupportedCodecError" and codec in PACKAGES:
        pkg = PACKAGES[codec]
        return KxtxError(f"{at} is {codec}-compressed: reading its records needs the Python package {pkg}")
    return KxtxError(f"{at}: its records cannot be read ({codec or 'uncompressed'}): {exc}")


def show(data: bytes | None, how: str) -> Any:
    """A key, value or header value as `--value-format` asks: `string` (UTF-8, undecodable bytes as
    \\xNN), `json` (parsed; what is not JSON stays a string), `raw` (the exact bytes: base64)."""
    if data is None:
        return None
    if how == RAW:
        return base64.b64encode(data).decode("ascii")
    if how == JSON:
        try:
            return _loads(data)
        except ValueError:
            pass
    return data.decode("utf-8", errors="backslashreplace")


def _loads(data: bytes) -> Any:
    try:
        import orjson
    except ImportError:  # optional speed-up
        import json

        return json.loads(data)
    return orjson.loads(data)


def record_rows(
    records: BatchRecords, partition: int, fate: str | None, how: str, lo: int, hi: int, lso: int
) -> list[dict[str, Any]]:
    """The rows of a data batch's records in [lo, hi), each with its batch's fate and whether a
    read_committed consumer reads it now (below the LSO, not aborted)."""
    rows = []
    visible_fate = fate != "aborted"
    for r in records.read():
        o = r.offset
        if o < lo or o >= hi:
            continue
        ts = r.timestamp
        rows.append(
            {
                "kind": "record",
                "partition": partition,
                "offset": o,
                "timestamp": ts,
                "time": ISO.get(ts) or iso_ms(ts),
                "key": show(r.key, how),
                "headers": [[k, show(v, how)] for k, v in r.headers] if r.headers else [],
                "value": show(r.value, how),
                "fate": fate,
                "read_committed": visible_fate and o < lso,
            }
        )
    return rows
