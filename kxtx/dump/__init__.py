"""`kxtx dump`: read `__transaction_state` / `__consumer_offsets` and decode every record.

`run(settings, request)` yields one row (a dict) per record, or with `latest=True` one row per key as a
coordinator would load it (tombstones applied). Rows: partition, offset, timestamp (epoch ms), type,
typeId, key (dict), version, value (dict, None for a tombstone), tombstone, and when relevant `txn`
(committed / pending / aborted), `notes`, `rawKey` / `rawValue` (hex of what could not be decoded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

from kxtx import clients
from kxtx.dump.source import ConfluentSource, Start
from kxtx.errors import UsageError
from kxtx.log import logger, warn_once
from kxtx.records import OFFSETS_TOPIC, TXN_TOPIC, decode, group_log, txn_log
from kxtx.records.partition import partition_for
from kxtx.settings import Settings

__all__ = ["DumpRequest", "Start", "run", "TXN_TOPIC", "OFFSETS_TOPIC"]


@dataclass
class DumpRequest:
    topic: str
    partitions: list[int] | None = None
    #: transactional ids (txn-state) or group ids (offsets): only their partition is read
    ids: list[str] = field(default_factory=list)
    start: Start = field(default_factory=Start)
    follow: bool = False
    limit: int | None = None
    latest: bool = False
    states: list[str] = field(default_factory=list)  # txn-state: state names
    producer_ids: list[int] = field(default_factory=list)  # txn-state
    topics: list[str] = field(default_factory=list)  # offsets: offset commits of these topics
    types: list[str] = field(default_factory=list)  # offsets: categories, see group_log.CATEGORIES
    include_uncommitted: bool = False  # offsets: also records of open / aborted transactions


def validate(req: DumpRequest) -> None:
    if req.topic not in (TXN_TOPIC, OFFSETS_TOPIC):
        raise UsageError(f"cannot dump {req.topic!r}")
    if req.latest and req.follow:
        raise UsageError("--latest folds the log up to its current end; it cannot --follow")
    if req.latest and req.include_uncommitted:
        raise UsageError("--latest shows what the coordinator loads (committed records only); "
                         "drop --include-uncommitted")
    if req.limit is not None and req.limit < 0:
        raise UsageError("--limit must be zero or more")
    unknown = [s for s in req.states if s.lower() not in txn_log.STATE_CODES]
    if unknown:
        raise UsageError(f"--state {unknown[0]!r}: expected one of {', '.join(txn_log.STATES.values())}")
    bad = [t for t in req.types if t not in group_log.CATEGORIES]
    if bad:
        raise UsageError(f"--type {bad[0]!r}: expected one of {', '.join(group_log.CATEGORIES)}")


def choose_partitions(req: DumpRequest, count: int) -> list[int]:
    """Partitions to read: those holding the given ids (Kafka's formula), narrowed by --partition."""
    chosen = set(range(count))
    if req.ids:
        chosen = {partition_for(i, count) for i in req.ids}
    if req.partitions is not None:
        outside = [p for p in req.partitions if not 0 <= p < count]
        if outside:
            raise UsageError(f"--partition {outside[0]}: {req.topic} has partitions 0-{count - 1}")
        wanted = set(req.partitions)
        if req.ids and not chosen & wanted:
            where = ", ".join(f"{i} -> {partition_for(i, count)}" for i in req.ids)
            raise UsageError(f"--partition {sorted(wanted)} holds none of the ids ({where})")
        chosen &= wanted
    return sorted(chosen)


def partition_count(settings: Settings, topic: str) -> int | None:
    admin = clients.admin(settings)
    try:
        md = admin.list_topics(topic, timeout=settings.timeout)
    except Exception as exc:  # noqa: BLE001 - translated
        raise clients.translate(exc, f"reading metadata of {topic}") from exc
    t = md.topics.get(topic)
    if t is not None and t.error is not None and t.error.name() == "TOPIC_AUTHORIZATION_FAILED":
        # The broker hides a topic the principal may not DESCRIBE: not the same as "missing".
        from kxtx.authz import Need, explain

        raise explain(t.error.name(), f"reading {topic}",
                      [Need("DESCRIBE", "Topic", topic), Need("READ", "Topic", topic)])
    if t is None or t.error is not None or not t.partitions:
        return None
    return len(t.partitions)


def run(settings: Settings, req: DumpRequest,
        progress: Callable[[int], None] | None = None) -> Iterator[dict]:
    """Yield decoded rows. Ends at the end offsets that existed at start, unless `req.follow`."""
    validate(req)
    count = partition_count(settings, req.topic)
    if count is None:
        logger.warning(f"{req.topic} does not exist on this cluster yet: nothing to dump")
        return
    partitions = choose_partitions(req, count)
    if req.include_uncommitted:
        from kxtx.dump.rawfetch import RawFetchSource

        source = RawFetchSource(settings, req.topic)
    else:
        source = ConfluentSource(settings, req.topic)
    try:
        pairs = _rows(req, source.records(partitions, req.start, req.follow), progress)
        rows = iter(_fold(pairs)) if req.latest else (row for row, _ in pairs)
        yield from _limited(_value_filtered(req, rows), req.limit)
    finally:
        source.close()


def _limited(rows: Iterator[dict], limit: int | None) -> Iterator[dict]:
    if limit is None:
        yield from rows
        return
    if limit == 0:
        return
    for n, row in enumerate(rows, 1):
        yield row
        if n >= limit:
            return


def _key_filter(req: DumpRequest):
    """Filters that depend only on the key (safe to apply before --latest folding)."""
    ids = set(req.ids)
    topics = set(req.topics)
    cats = set(req.types)
    if topics:
        cats = (cats or {"offset-commit"}) & {"offset-commit"}
    txn = req.topic == TXN_TOPIC

    def keep(rec) -> bool:
        key = rec.key
        if ids:
            if key is None:
                return False
            owner = key.get("transactionalId") if txn else key.get("group", key.get("groupId"))
            if owner not in ids:
                return False
        if cats and group_log.category(rec.type_id if rec.key is not None else None) not in cats:
            return False
        if topics and key.get("topic") not in topics:
            return False
        return True

    return keep if (ids or cats or topics) else None


def _value_filtered(req: DumpRequest, rows: Iterator[dict]) -> Iterator[dict]:
    states = {s.lower() for s in req.states}
    pids = set(req.producer_ids)
    if not (states or pids):
        yield from rows
        return
    for row in rows:
        value = row["value"]
        if value is None or row["type"] != "TransactionLog":
            continue
        if states and value["transactionStatus"].lower() not in states:
            continue
        if pids and value["producerId"] not in pids:
            continue
        yield row


def _rows(req: DumpRequest, raw, progress) -> Iterator[dict]:
    keep = _key_filter(req)
    topic = req.topic
    seen = 0
    for p, o, ts, key, value, status in raw:
        seen += 1
        if progress is not None and seen % 50000 == 0:
            progress(seen)
        rec = decode(topic, key, value)
        if keep is not None and not keep(rec):
            continue
        row = {"partition": p, "offset": o, "timestamp": ts, "type": rec.type, "typeId": rec.type_id,
               "key": rec.key, "version": rec.version, "value": rec.value, "tombstone": rec.tombstone}
        if status is not None:
            row["txn"] = status
        if rec.notes:
            row["notes"] = rec.notes
        if rec.raw_key is not None:
            row["rawKey"] = rec.raw_key
        if rec.raw_value is not None:
            row["rawValue"] = rec.raw_value
        if rec.problem:
            warn_once(rec.problem, f"{topic}[{p}]@{o}: {rec.notes[-1]}; shown with raw bytes "
                      "(warned once per kind)")
        yield row, key


def _fold(pairs) -> list[dict]:
    """The current value per key, tombstones applied: memory grows with keys, not records."""
    current: dict[tuple[int, bytes], dict] = {}
    for row, key in pairs:
        ident = (row["partition"], key if key is not None else b"")
        if row["tombstone"]:
            current.pop(ident, None)
        else:
            current[ident] = row
    return sorted(current.values(), key=lambda r: (r["partition"], r["offset"]))
