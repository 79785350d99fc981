"""The input offsets a pipe transaction commits: past every record it read, and past the aborted
records and transaction markers the read_committed consumer skipped.

A batch's highest offset + 1 stops short of a tail of aborted records (and of every transaction's
marker): the group then shows lag that does not exist (e.g. committed 852444 while the LSO and the
high watermark were 858816), though nothing is left to read. The consumer's position is past
what it skipped; with no record read and not yet processed, everything below the position is
either in the batch or skipped, so the position is what the group should commit.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from kxtx.log import logger

if TYPE_CHECKING:
    from confluent_kafka import Consumer, TopicPartition


def batch_offsets(batch: list, consumer: Consumer) -> list:
    """Per partition of the batch: its highest offset + 1, or the consumer's position if further
    (the batch holds every record read so far: see `DriverPipe._loop`)."""
    from confluent_kafka import TopicPartition

    nxt: dict[tuple[str, int], int] = {}
    get = nxt.get
    for m in batch:  # the highest offset per partition + 1 (~0.1 us a record)
        tp, offset = (m.topic(), m.partition()), m.offset()
        if offset >= get(tp, -1):
            nxt[tp] = offset
    tps = [TopicPartition(t, p, o + 1) for (t, p), o in nxt.items()]
    try:
        positions = consumer.position([TopicPartition(tp.topic, tp.partition) for tp in tps])
    except Exception:  # noqa: BLE001 - e.g. a partition revoked meanwhile: the batch's own offsets
        return tps
    for part, pos in zip(tps, positions):
        if pos.error is None and pos.offset > part.offset:
            part.offset = pos.offset
    return tps


class Committed:
    """What the group has committed for the assigned partitions, as far as this instance knows,
    to find partitions whose position moved past skipped records only (no batch commits those)."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, int], int] = {}

    def note(self, offsets: list) -> None:
        for tp in offsets:
            self.known[(tp.topic, tp.partition)] = tp.offset

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.known.pop((tp.topic, tp.partition), None)

    def behind(self, consumer: Consumer, assignment: Collection[tuple[str, int]], timeout: float) -> list:
        """Assigned partitions whose position is past the committed offset (call only when no
        record read is still unprocessed): the offsets to commit."""
        from confluent_kafka import TopicPartition

        if not assignment:
            return []
        positions = consumer.position([TopicPartition(t, p) for t, p in assignment])
        pos = {(tp.topic, tp.partition): tp.offset for tp in positions if tp.error is None and tp.offset >= 0}
        unknown = [TopicPartition(t, p) for t, p in pos if (t, p) not in self.known]
        if unknown:
            try:
                got = consumer.committed(unknown, timeout=timeout)
            except Exception as exc:  # noqa: BLE001 - best effort: the next idle moment asks again
                logger.info("reading the group's committed offsets: %s", exc)
                got = []
            for tp in got:
                if tp.error is None:
                    self.known[(tp.topic, tp.partition)] = tp.offset
        out = []
        for (topic, part), offset in pos.items():
            committed = self.known.get((topic, part))
            if committed is None:
                continue
            if committed < 0:
                # Nothing committed yet: only a position past the partition's first offset means
                # records were skipped (a new group on an empty partition commits nothing).
                low, _ = consumer.get_watermark_offsets(TopicPartition(topic, part), cached=True)
                committed = max(low, 0)
            if offset > committed:
                out.append(TopicPartition(topic, part, offset))
        return out
