"""`dump partition`'s run: the range of each partition read (`kxtx.dump.partition`), from a group's
committed offsets where `--from committed:GROUP` says so, and each transactional batch and producer
named by its transactional id where it can be found (`kxtx.ops.hanging.named_producers`, which
`inspect partition` uses too)."""

from __future__ import annotations

from kxtx.client.admin import Cluster
from kxtx.client.settings import Settings
from kxtx.dump.partition import COMMITTED_PREFIX, OPEN, PartitionDump, read_ranges
from kxtx.dump.runner import partition_count
from kxtx.dump.txnlog import named_producers
from kxtx.errors import KafkaOperationError, KxtxError, NoSuchTopic, Unavailable, UsageError
from kxtx.log import logger


def dump_partitions(
    settings: Settings,
    topic: str,
    partitions: list[int] | None,
    start: int | str,
    end: int | str,
    records: bool = False,
    name: bool = True,
    unseen: dict[int, str] | None = None,
) -> list[PartitionDump]:
    """`records`: keep each data batch's records in the range for `batchrecords.record_rows`.
    `name`: look up the producers' transactional ids (counting needs none). A partition without a
    leader cannot be read: with `unseen` it is left out and named there with why, else the run
    stops at once with exit 75 naming it (a read would wait out three --timeouts for nothing)."""
    count = partition_count(settings, topic)
    if count is None:
        raise NoSuchTopic(topic)
    chosen = partitions if partitions is not None else list(range(count))
    missing = [p for p in chosen if p >= count]
    if missing:
        raise UsageError(f"{topic} has {count} partitions (0..{count - 1}): no partition {missing[0]}")
    dark = leaderless(settings, topic, chosen)
    if dark and unseen is None:
        raise Unavailable("; ".join(f"{topic}:{p}: {why}" for p, why in sorted(dark.items())))
    if dark and unseen is not None:
        unseen.update(dark)
        chosen = [p for p in chosen if p not in dark]
    starts = _committed(settings, topic, chosen, start) if isinstance(start, str) else {}
    dumps = read_ranges(settings, topic, {p: starts.get(p, start) for p in chosen}, end, records)
    if name:
        name_producers(settings, dumps)
    return dumps


def leaderless(settings: Settings, topic: str, partitions: list[int]) -> dict[int, str]:
    """{partition: why it cannot be read} for those of `partitions` without a leader in fresh
    metadata (its replicas down): not read, and named as unseen, never counted as empty."""
    with Cluster(settings) as cluster:
        meta = cluster.topics(topic).get(topic, {})
    return {p: no_leader(meta[p][1]) for p in partitions if p in meta and meta[p][0] < 0}


def no_leader(replicas: list[int]) -> str:
    return (
        f"no leader (its {'replica' if len(replicas) == 1 else 'replicas'} "
        f"{', '.join(map(str, replicas))} down): not read; run the same command again once it has one"
    )


def name_producers(settings: Settings, dumps: list[PartitionDump]) -> None:
    """Each transactional batch and producer of the summaries named by its transactional id where it
    can be found: ListTransactions, and for open transactions `__transaction_state` too, as
    `inspect partition` names them. Not finding it (no DESCRIBE on the ids, say) leaves it unnamed,
    with a warning."""
    pids = {b.producer_id for d in dumps for b in d.batches if b.transactional}
    if not pids:
        return
    # __transaction_state is read whole: only for what holds an LSO, as inspect partition does
    holding = {b.producer_id for d in dumps for b in d.batches if b.fate == OPEN}
    try:
        with Cluster(settings) as cluster:
            ids = named_producers(cluster, pids, in_log=holding)
    except KxtxError as exc:
        logger.warning(f"transactional ids of producer ids {', '.join(map(str, sorted(pids)))}: {exc}")
        return
    for d in dumps:
        d.name(ids)


def _committed(settings: Settings, topic: str, partitions: list[int], start: str) -> dict[int, int]:
    """`committed:GROUP`: the group's committed offset of each partition (where it would read on)."""
    if not start.startswith(COMMITTED_PREFIX):
        return {}
    group = start[len(COMMITTED_PREFIX) :]
    with Cluster(settings) as cluster:
        found = cluster.committed([(topic, p) for p in partitions], groups=[group])
    offsets = {p: found[(topic, p)][group] for p in partitions if group in found.get((topic, p), {})}
    missing = [p for p in partitions if p not in offsets]
    if missing:
        raise KafkaOperationError(
            f"group {group!r} has no committed offset for {topic}:{','.join(map(str, missing))}"
        )
    return offsets
