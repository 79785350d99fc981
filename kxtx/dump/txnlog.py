"""The transaction-log lookups: a transactional id's history in `__transaction_state`, and producer
id -> transactional id (what the coordinators hold now, then the log).

The log is read through the dump library (`kxtx.dump.runner`, which decodes with
`kxtx.records.txn_log`); the transaction tools, `dump partition` and `inspect` name producers here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kxtx.client.admin import Cluster
from kxtx.client.settings import Settings
from kxtx.errors import KxtxError
from kxtx.log import logger

if TYPE_CHECKING:
    from kxtx.dump.rows import DumpRow


def histories(settings: Settings, transactional_ids: list[str]) -> dict[str, list[dict]]:
    """Every `__transaction_state` record of each id, oldest first: one pass over the partitions that
    hold them (each id's own; a pipe has an id per input partition)."""
    out: dict[str, list[dict]] = {tid: [] for tid in transactional_ids}
    for row in _rows(settings, ids=list(out)):
        key = row.get("key") or {}
        if key.get("transactional_id") in out:
            out[key["transactional_id"]].append(_item(row))
    return out


def _item(row: DumpRow) -> dict:
    item: dict[str, Any] = {
        "partition": row["partition"],
        "offset": row["offset"],
        "timestamp_ms": row["timestamp_ms"],
        "time": row["time"],
    }
    v = row.get("value")
    if row.get("tombstone"):
        item["state"] = "(deleted)"
    elif v is not None:
        item.update(
            {
                "state": v.get("transaction_status"),
                "producer_id": v.get("producer_id"),
                "producer_epoch": v.get("producer_epoch"),
                "timeout_ms": v.get("transaction_timeout_ms"),
                "partitions": _partitions(v.get("transaction_partitions")),
                "txn_start_timestamp_ms": v.get("transaction_start_timestamp_ms"),
                "txn_start_time": v.get("transaction_start_time"),
                "last_update_timestamp_ms": v.get("transaction_last_update_timestamp_ms"),
                "last_update_time": v.get("transaction_last_update_time"),
            }
        )
        for tag in ("previous_producer_id", "next_producer_id", "next_producer_epoch"):
            if v.get(tag, -1) not in (-1, None):
                item[tag] = v[tag]
    return item


def ids_for_producers(settings: Settings, pids: set[int]) -> dict[int, str] | None:
    """Scan the whole log for the ids that used these producer ids (current, previous or next one:
    producer ids rotate under transactions v2). The newest record wins."""
    if not pids:
        return {}
    found: dict[int, tuple[int, str]] = {}
    for row in _rows(settings):
        key, v = row.get("key"), row.get("value")
        if key is None or v is None or "transactional_id" not in key:
            continue
        for pid in (v.get("producer_id"), v.get("previous_producer_id"), v.get("next_producer_id")):
            if pid in pids and (pid not in found or found[pid][0] <= row["timestamp_ms"]):
                found[pid] = (row["timestamp_ms"], key["transactional_id"])
    return {pid: tid for pid, (_ts, tid) in found.items()}


def _partitions(value: list[dict] | None) -> list[str]:
    return [f"{p['topic']}:{i}" for p in (value or []) for i in p.get("partition_ids", [])]


def _rows(settings: Settings, ids: list[str] | None = None) -> Iterator[DumpRow]:
    from kxtx.dump.runner import TXN_TOPIC, DumpRequest, run

    yield from run(settings, DumpRequest(topic=TXN_TOPIC, ids=list(ids or [])))


def lookup_in_log(cluster: Cluster, pids: set[int], warnings: list[str]) -> dict[int, str]:
    """producer id -> transactional id from `__transaction_state`; a failure (e.g. no READ on that
    topic) costs only this lookup, with a warning."""
    try:
        return ids_for_producers(cluster.settings, pids) or {}
    except KxtxError as exc:
        warnings.append(
            f"cannot search __transaction_state for producer "
            f"{'id' if len(pids) == 1 else 'ids'} {', '.join(map(str, sorted(pids)))} "
            f"that ListTransactions did not map: {exc}"
        )
        return {}


def transactional_ids(
    cluster: Cluster, pids: set[int], warnings: list[str], in_log: set[int] | None = None
) -> dict[int, tuple[str, str]]:
    """producer id -> (transactional id, where it was found), where it can be found:
    ListTransactions (what the coordinators hold now), then `__transaction_state` for the producer
    ids it did not map (ids rotate under transactions v2; an expired id is only in the log), or only
    for those of them in `in_log`: the log is read whole. A failed log search adds a warning."""
    ids = {pid: (tid, "ListTransactions") for pid, (tid, _state) in cluster.ids_for_producers(pids).items()}
    missing = (pids if in_log is None else pids & in_log) - set(ids)
    if missing:
        from_log = lookup_in_log(cluster, missing, warnings)
        ids.update({pid: (tid, "__transaction_state") for pid, tid in from_log.items()})
    return ids


def named_producers(cluster: Cluster, pids: set[int], in_log: set[int] | None = None) -> dict[int, str]:
    """`transactional_ids` without the source, its warnings logged."""
    warnings: list[str] = []
    ids = {pid: tid for pid, (tid, _src) in transactional_ids(cluster, pids, warnings, in_log).items()}
    for w in warnings:
        logger.warning(w)
    return ids
