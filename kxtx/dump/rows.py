"""Raw records -> output rows, a batch at a time (the hot loop of `kxtx dump`).

A row is built once, as the final dict: the common record kinds go through the decoders' straight-line
fast paths (`txn_log.fast_transaction`, `group_log.fast_offset_commit`: no `Record` in between);
everything else through `kxtx.records.decode`, whose notes, raw bytes and warnings the row carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kxtx.log import warn_once
from kxtx.records import OFFSETS_TOPIC, TXN_TOPIC, Record, decode, group_log, txn_log
from kxtx.timefmt import ISO, iso_ms

#: topic -> (type id, type name, fast decoder) of the record kind that dominates the topic
_FAST = {
    TXN_TOPIC: (0, "TransactionLog", txn_log.fast_transaction),
    OFFSETS_TOPIC: (1, "OffsetCommit", group_log.fast_offset_commit),
}


def builder(topic: str, keep: Callable[[dict], bool] | None, with_keys: bool) -> Callable[[list], list]:
    """A function batch -> list of rows (or of (row, raw key) pairs with `with_keys`, for --latest).

    `keep` (key-only filters) sees each row before it is kept."""
    type_id, type_name, fast = _FAST[topic]
    iso = ISO.get

    def build(batch: list) -> list:
        out: list = []
        append = out.append
        for p, o, ts, key, value, status in batch:
            found = fast(key, value)
            rec = None
            if found is not None:
                k, version, v = found
                row = {
                    "partition": p,
                    "offset": o,
                    "timestamp_ms": ts,
                    "time": iso(ts) or iso_ms(ts),
                    "type": type_name,
                    "type_id": type_id,
                    "key": k,
                    "version": version,
                    "value": v,
                    "tombstone": value is None,
                }
                if status is not None:
                    row["txn"] = status
            else:
                rec = decode(topic, key, value)
                row = _slow_row(rec, p, o, ts, status)
            if keep is not None and not keep(row):
                continue
            if rec is not None and rec.problem:
                warn_once(
                    rec.problem,
                    f"{topic}[{p}]@{o}: {rec.notes[-1]}; shown with raw bytes (warned once per kind)",
                )
            append((row, key) if with_keys else row)
        return out

    return build


def _slow_row(rec: Record, p: int, o: int, ts: int, status: str | None) -> dict:
    row: dict[str, Any] = {
        "partition": p,
        "offset": o,
        "timestamp_ms": ts,
        "time": iso_ms(ts),
        "type": rec.type,
        "type_id": rec.type_id,
        "key": rec.key,
        "version": rec.version,
        "value": rec.value,
        "tombstone": rec.tombstone,
    }
    if status is not None:
        row["txn"] = status
    if rec.notes:
        row["notes"] = rec.notes
    if rec.raw_key is not None:
        row["raw_key"] = rec.raw_key
    if rec.raw_value is not None:
        row["raw_value"] = rec.raw_value
    return row
