"""Reading `__transaction_state`: a transactional id's history, and producer id -> transactional id.

The record decoder is `kxtx.records.txn_log`. This module is the one seam between the transaction
tools and it (so a later dump library can replace `_records` without touching the callers). When the
decoder is missing, both functions return None and the callers say the history is unavailable.
"""

from __future__ import annotations

import time
from typing import Iterator

from kxtx.log import logger
from kxtx.settings import Settings

TOPIC = "__transaction_state"


def _decoder():
    try:
        from kxtx.records import txn_log
    except ImportError:
        return None
    return txn_log.decode


def _partition_for(transactional_id: str, partitions: int) -> int:
    from kxtx.records.partition import partition_for

    return partition_for(transactional_id, partitions)


def history(settings: Settings, transactional_id: str) -> list[dict] | None:
    """Every `__transaction_state` record of one id, oldest first; None when it cannot be read."""
    decode = _decoder()
    if decode is None:
        return None
    out = []
    for part, offset, ts, rec in _records(settings, decode, lambda n: [_partition_for(transactional_id, n)]):
        if rec.key is None or rec.key.get("transactionalId") != transactional_id:
            continue
        row = {"partition": part, "offset": offset, "timestamp_ms": ts}
        if rec.tombstone:
            row["state"] = "(deleted)"
        elif rec.value is not None:
            v = rec.value
            row.update({
                "state": v.get("transactionStatus"),
                "producer_id": v.get("producerId"),
                "producer_epoch": v.get("producerEpoch"),
                "timeout_ms": v.get("transactionTimeoutMs"),
                "partitions": _partitions(v.get("transactionPartitions")),
                "start_ms": v.get("transactionStartTimestampMs"),
                "last_update_ms": v.get("transactionLastUpdateTimestampMs"),
            })
            for tag in ("previousProducerId", "nextProducerId", "nextProducerEpoch"):
                if v.get(tag, -1) not in (-1, None):
                    row[tag] = v[tag]
        out.append(row)
    return out


def ids_for_producers(settings: Settings, pids: set[int]) -> dict[int, str] | None:
    """Scan the whole log for the ids that used these producer ids (current, previous or next one:
    producer ids rotate under transactions v2). The newest record wins. None when unreadable."""
    decode = _decoder()
    if decode is None or not pids:
        return None if decode is None else {}
    found: dict[int, tuple[int, str]] = {}
    for _part, _off, ts, rec in _records(settings, decode, lambda n: list(range(n))):
        if rec.key is None or rec.value is None:
            continue
        v = rec.value
        for pid in (v.get("producerId"), v.get("previousProducerId"), v.get("nextProducerId")):
            if pid in pids and (pid not in found or found[pid][0] <= ts):
                found[pid] = (ts, rec.key["transactionalId"])
    return {pid: tid for pid, (_ts, tid) in found.items()}


def _partitions(value) -> list[str]:
    return [f"{p['topic']}:{i}" for p in (value or []) for i in p.get("partitionIds", [])]


def _records(settings: Settings, decode, choose) -> Iterator[tuple[int, int, int, object]]:
    """(partition, offset, timestamp, Record) from the chosen partitions up to their current end,
    bounded by the settings' timeout."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    from kxtx.clients import consumer, translate

    c = consumer(settings, **{"group.id": "kxtx-txn-history", "enable.auto.commit": False,
                              "enable.partition.eof": True, "isolation.level": "read_uncommitted",
                              "fetch.wait.max.ms": 50})
    try:
        md = c.list_topics(TOPIC, timeout=settings.timeout).topics.get(TOPIC)
        if md is None or md.error is not None or not md.partitions:
            logger.warning(f"cannot read {TOPIC}: {md.error.str() if md and md.error else 'no partitions'}")
            return
        parts = choose(len(md.partitions))
        ends = {}
        for p in parts:
            lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=settings.timeout)
            if hi > lo:
                ends[p] = hi
        if not ends:
            return
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in ends])
        deadline = time.monotonic() + settings.timeout
        while ends and time.monotonic() < deadline:
            # consume() waits the whole timeout unless 500 messages come: keep it short.
            for m in c.consume(500, timeout=0.05):
                p = m.partition()
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF
                        ends.pop(p, None)
                        continue
                    raise translate(Exception(m.error()), f"reading {TOPIC}")
                if p in ends and m.offset() >= ends[p] - 1:
                    ends.pop(p, None)
                yield p, m.offset(), m.timestamp()[1], decode(m.key(), m.value())
        if ends:
            logger.warning(f"{TOPIC}: stopped after {settings.timeout:g}s before the end of "
                           f"partition(s) {sorted(ends)}; the history may be incomplete")
    finally:
        c.close()
