"""`kxtx dump`: read `__transaction_state` / `__consumer_offsets` and decode every record.

`run(settings, request)` yields one row (a `kxtx.dump.rows.DumpRow`) per record, or with `latest=True`
one row per key as a coordinator would load it (tombstones applied); `run_batches` yields the same
rows in batches.
Rows: partition, offset, timestamp_ms (epoch ms) and time (ISO-8601), type, type_id, key (dict),
version, value (dict, None for a tombstone), tombstone, and when relevant `txn` (committed / pending
/ aborted), `notes`, `raw_key` / `raw_value` (hex of what could not be decoded). Field names are
Kafka's schema names in snake_case; a time field in ms is followed by its ISO form (`..._time`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kxtx.client import clients
from kxtx.client.settings import Settings
from kxtx.dump.rows import DumpRow, builder
from kxtx.dump.source import ConfluentSource, Start
from kxtx.errors import NoSuchTopic, UsageError
from kxtx.log import logger
from kxtx.records import OFFSETS_TOPIC, TXN_TOPIC, group_log, txn_log
from kxtx.records.partitioner import partition_for

if TYPE_CHECKING:
    from kxtx.dump.rawfetch import RawFetchSource

__all__ = ["OFFSETS_TOPIC", "TXN_TOPIC", "DumpRequest", "Start", "run", "run_batches"]


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
    #: (index, count): read only the partitions p with p % count == index (see `shards`)
    shard: tuple[int, int] | None = None
    #: the topic's partition count when the caller asked already (before forking the shards)
    partition_count: int | None = None


def validate(req: DumpRequest) -> None:
    if req.topic not in (TXN_TOPIC, OFFSETS_TOPIC):
        raise UsageError(f"cannot dump {req.topic!r}")
    if req.latest and req.follow:
        raise UsageError("--latest folds the log up to its current end; it cannot --follow")
    if req.latest and req.include_uncommitted:
        raise UsageError(
            "--latest shows what the coordinator loads (committed records only); drop --include-uncommitted"
        )
    if req.limit is not None and req.limit < 0:
        raise UsageError("--limit must be zero or more")
    if req.shard is not None and not shardable(req):
        raise UsageError(
            "several processes can only stream every record: not with --latest, "
            "--limit, --follow or --include-uncommitted"
        )
    unknown = [s for s in req.states if s.lower() not in txn_log.STATE_CODES]
    if unknown:
        raise UsageError(f"--state {unknown[0]!r}: expected one of {', '.join(txn_log.STATES.values())}")
    bad = [t for t in req.types if t not in group_log.CATEGORIES]
    if bad:
        raise UsageError(f"--type {bad[0]!r}: expected one of {', '.join(group_log.CATEGORIES)}")


def shardable(req: DumpRequest) -> bool:
    """Whether processes reading disjoint partitions can each stream their share: rows of every
    record, bounded, nothing that needs all partitions in one place (folding, a row count), and
    more than one partition to read (ids name one partition each)."""
    few = req.ids or (req.partitions is not None and len(set(req.partitions)) < 2)
    return not (req.latest or req.limit is not None or req.follow or req.include_uncommitted or few)


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
    if req.shard is not None:
        index, of = req.shard
        chosen = {p for p in chosen if p % of == index}
    return sorted(chosen)


def partition_count(settings: Settings, topic: str) -> int | None:
    admin = clients.admin(settings)
    wait = settings.timeout
    md = clients.ride_out(
        lambda: admin.list_topics(topic, timeout=wait), f"reading metadata of {topic}", wait
    )
    t = md.topics.get(topic)
    if t is not None and t.error is not None and t.error.name() == "TOPIC_AUTHORIZATION_FAILED":
        # The broker hides a topic the principal may not DESCRIBE: not the same as "missing".
        from kxtx.client.authz import Need, explain

        raise explain(
            t.error.name(),
            f"reading {topic}",
            [Need("DESCRIBE", "Topic", topic), Need("READ", "Topic", topic)],
        )
    if t is None or t.error is not None or not t.partitions:
        return None
    return len(t.partitions)


def run(
    settings: Settings, req: DumpRequest, progress: Callable[[int], None] | None = None
) -> Iterator[DumpRow]:
    """Yield decoded rows. Ends at the end offsets that existed at start, unless `req.follow`."""
    for batch in run_batches(settings, req, progress):
        yield from batch


def run_batches(
    settings: Settings, req: DumpRequest, progress: Callable[[int], None] | None = None
) -> Iterator[list[DumpRow]]:
    """The rows of `run` in batches, one per read from the source (non-empty, in order): a consumer
    can write and flush a batch at once and still stream, since a batch comes as soon as it is read."""
    validate(req)
    for name in dict.fromkeys(req.topics):
        if partition_count(settings, name) is None:
            # a deleted topic's offset commits stay in __consumer_offsets: still read, but said
            logger.warning(f"{NoSuchTopic.fact(name)}: showing the offset commits kept for it, if any")
    count = req.partition_count or partition_count(settings, req.topic)
    if count is None:
        logger.warning(f"{req.topic} does not exist on this cluster yet: nothing to dump")
        return
    partitions = choose_partitions(req, count)
    source: RawFetchSource | ConfluentSource
    if req.include_uncommitted:
        from kxtx.dump.rawfetch import RawFetchSource

        source = RawFetchSource(settings, req.topic)
    else:
        # each of n processes prefetches a share: together they hold what one would
        source = ConfluentSource(settings, req.topic, share=req.shard[1] if req.shard else 1)
    try:
        raw = _counted(source.batches(partitions, req.start, req.follow), progress)
        build = builder(req.topic, _key_filter(req), with_keys=req.latest)
        built: Iterator[list] = (build(batch) for batch in raw)
        if req.latest:
            built = _chunks(_fold(built))
        yield from _limited(_value_filtered(req, built), req.limit)
    finally:
        source.close()


def _counted(batches: Iterable[list], progress: Callable[[int], None] | None) -> Iterator[list]:
    """Report progress every 50,000 records read."""
    if progress is None:
        yield from batches
        return
    seen = 0
    for batch in batches:
        before, seen = seen, seen + len(batch)
        if seen // 50000 != before // 50000:
            progress(seen)
        yield batch


def _chunks(rows: list[DumpRow], size: int = 10000) -> Iterator[list[DumpRow]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def _limited(batches: Iterator[list[DumpRow]], limit: int | None) -> Iterator[list[DumpRow]]:
    if limit is None:
        yield from batches
        return
    left = limit
    if left <= 0:
        return
    for batch in batches:
        if len(batch) >= left:
            yield batch[:left]
            return
        left -= len(batch)
        yield batch


def _key_filter(req: DumpRequest) -> Callable[[DumpRow], bool] | None:
    """Filters that depend only on the key (safe to apply before --latest folding); on rows."""
    ids = set(req.ids)
    topics = set(req.topics)
    cats = set(req.types)
    if topics:
        cats = (cats or {"offset-commit"}) & {"offset-commit"}
    txn = req.topic == TXN_TOPIC

    def keep(row: DumpRow) -> bool:
        key = row["key"]
        if ids:
            if key is None:
                return False
            owner = key.get("transactional_id") if txn else key.get("group", key.get("group_id"))
            if owner not in ids:
                return False
        if cats and group_log.category(row["type_id"] if key is not None else None) not in cats:
            return False
        return not topics or (key is not None and key.get("topic") in topics)

    return keep if (ids or cats or topics) else None


def _value_filtered(req: DumpRequest, batches: Iterator[list[DumpRow]]) -> Iterator[list[DumpRow]]:
    states = {s.lower() for s in req.states}
    pids = set(req.producer_ids)
    if not (states or pids):
        yield from batches
        return

    def keep(row: DumpRow) -> bool:
        value = row["value"]
        if value is None or row["type"] != "TransactionLog":
            return False
        if states and value["transaction_status"].lower() not in states:
            return False
        return not pids or value["producer_id"] in pids

    for batch in batches:
        kept = [row for row in batch if keep(row)]
        if kept:
            yield kept


def _fold(batches: Iterable[list[tuple[DumpRow, bytes | None]]]) -> list[DumpRow]:
    """The current value per key, tombstones applied: memory grows with keys, not records."""
    current: dict[tuple[int, bytes], DumpRow] = {}
    for batch in batches:
        for row, key in batch:
            ident = (row["partition"], key if key is not None else b"")
            if row["tombstone"]:
                current.pop(ident, None)
            else:
                current[ident] = row
    return sorted(current.values(), key=lambda r: (r["partition"], r["offset"]))
