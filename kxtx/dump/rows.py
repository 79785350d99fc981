"""Raw records -> output rows, a batch at a time (the hot loop of `kxtx dump`).

A row is built once, as the final dict: the common record kinds go through the decoders' straight-line
fast paths (`txn_log.fast_transaction`, `group_log.fast_offset_commit`: no `Record` in between);
everything else through `kxtx.records.decode`, whose notes, raw bytes and warnings the row carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from kxtx.fast import enabled as fast_enabled
from kxtx.log import warn_once
from kxtx.records import OFFSETS_TOPIC, TXN_TOPIC, Record, decode, group_log, txn_log
from kxtx.timefmt import ISO, iso_ms


class _Record(TypedDict):
    partition: int
    offset: int
    timestamp_ms: int
    time: str | None
    type: str
    type_id: int | None
    #: the record's key and value fields as the spec names them: which ones depends on the record
    #: type and the value's version (kxtx.records), so they stay dicts
    key: dict[str, Any] | None
    version: int | None
    value: dict[str, Any] | None
    tombstone: bool


class DumpRow(_Record, total=False):
    """One record of `dump txn-state` / `dump offsets` as written. A dict, not a
    `kxtx.results.Result`: one is built per record, in the hot loop, and written as it is. The keys
    below are there only when they say something."""

    txn: str  # the fate of the transaction that wrote it (--include-uncommitted)
    notes: list[str]  # what could not be decoded, and how it was
    raw_key: str  # the bytes (hex) of a key or value that could not be decoded
    raw_value: str


#: topic -> (type id, type name, fast decoder) of the record kind that dominates the topic
_FAST = {
    TXN_TOPIC: (0, "TransactionLog", txn_log.fast_transaction),
    OFFSETS_TOPIC: (1, "OffsetCommit", group_log.fast_offset_commit),
}


def _general(*_: object) -> None:
    """The fast decoder's stand-in when the switch is off: "not mine", so `decode` takes each."""
    return None


def builder(topic: str, keep: Callable[[DumpRow], bool] | None, with_keys: bool) -> Callable[[list], list]:
    """A function batch -> list of rows (or of (row, raw key) pairs with `with_keys`, for --latest).

    `keep` (key-only filters) sees each row before it is kept."""
    type_id, type_name, decoder = _FAST[topic]
    # KXTX_FAST=0: every record through the general decoders
    fast: Callable[[bytes | None, bytes | None], Any] = decoder if fast_enabled("records") else _general
    iso = ISO.get

    def build(batch: list) -> list:
        out: list = []
        append = out.append
        for p, o, ts, key, value, status in batch:
            found = fast(key, value)
            rec = None
            row: DumpRow
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


def _slow_row(rec: Record, p: int, o: int, ts: int, status: str | None) -> DumpRow:
    row: DumpRow = {
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
