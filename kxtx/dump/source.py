"""Reading an internal topic with confluent-kafka: assigned partitions, bounded by the end at start.

Yields batches (lists) of `(partition, offset, timestamp_ms, key, value, txn_status)` tuples, one per
consume call, so the layers above pay their per-call costs (flush, generator hops) once per batch;
`txn_status` is always None here. The default isolation is read_committed, which is what the coordinators materialize: records
of aborted transactions are filtered by librdkafka and open transactions are not read past (the last
stable offset). librdkafka never returns control records (spec section 7), so the bound is checked with
partition-EOF events and the consumer position, not with the offset of the last record seen.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import ge, is_, itemgetter, sub
from typing import TYPE_CHECKING, cast

from kxtx.client import clients
from kxtx.client.kafkaerrors import ASK_AGAIN, classify
from kxtx.client.settings import Settings
from kxtx.errors import KafkaOperationError
from kxtx.log import logger
from kxtx.wording import partitions as _partitions

if TYPE_CHECKING:
    from confluent_kafka import TopicPartition

_second = itemgetter(1)  # of Message.timestamp(): (type, ms)

RawRecord = tuple  # (partition, offset, timestamp_ms, key, value, txn_status)
#: Messages per consume call: big enough that the per-call overhead vanishes, small enough that a
#: batch of decoded rows stays a few MiB.
BATCH = 10000
#: consume() waits this long for a batch to fill. Short, so the tail of each partition and --follow
#: hand over what is there without idling (a batch rarely fills at the end of a log).
WAIT_S = 0.05
#: librdkafka's queued.min.messages in a dump (see CONSUMER_CONFIG).
QUEUED_MIN_MESSAGES = 350000
#: The consumer settings of a dump (besides group and isolation); the benchmark's raw consume uses them
#: too, so it measures the same client doing everything but decoding.
CONSUMER_CONFIG: dict[str, str | int | float | bool] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
    # Prefetch enough to keep decoding busy, bounded so memory stays flat on any log size. librdkafka
    # stops fetching at queued.min.messages queued (all partitions together): with small internal
    # records that, not the byte bound, limits the rate; past this, more memory buys little rate
    # (bench/README.md, "dump").
    "fetch.max.bytes": 16777216,
    "max.partition.fetch.bytes": 4194304,
    "queued.min.messages": QUEUED_MIN_MESSAGES,
    "queued.max.messages.kbytes": 16384,
}


@dataclass(frozen=True)
class Start:
    """Where to start reading: every partition's beginning, one offset, or the first record at/after a time."""

    kind: str = "beginning"  # "beginning" | "offset" | "time"
    value: int | None = None


class ConfluentSource:
    def __init__(
        self, settings: Settings, topic: str, isolation: str = "read_committed", share: int = 1
    ) -> None:
        self.settings, self.topic = settings, topic
        conf = {
            # A throw-away group that never commits: dumping must not leave traces in the log it reads.
            "group.id": f"kxtx-dump-{uuid.uuid4().hex[:12]}",
            "isolation.level": isolation,
            **CONSUMER_CONFIG,
        }
        if share > 1:  # one of `share` processes: prefetch its part, memory stays that of one
            conf["queued.min.messages"] = max(50000, QUEUED_MIN_MESSAGES // share)
        self.consumer = clients.consumer(settings, **conf)

    def end_offsets(self, partitions: list[int]) -> dict[int, int]:
        """High watermark (read_uncommitted) or last stable offset (read_committed) per partition."""
        from confluent_kafka import TopicPartition

        t = self.settings.timeout
        ends = {}
        for p in partitions:
            tp = TopicPartition(self.topic, p)

            def ask(tp: TopicPartition = tp) -> tuple[int, int]:
                return self.consumer.get_watermark_offsets(tp, timeout=t, cached=False)

            _, ends[p] = clients.ride_out(ask, f"reading the end offset of {self.topic}[{p}]", t)
        return ends

    def start_offsets(self, partitions: list[int], start: Start) -> dict[int, int]:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        if start.kind == "beginning":
            return {p: OFFSET_BEGINNING for p in partitions}
        value = start.value
        if value is None:
            raise ValueError(f"a start by {start.kind} needs a value")
        if start.kind == "offset":
            return {p: value for p in partitions}
        query = [TopicPartition(self.topic, p, value) for p in partitions]
        t = self.settings.timeout
        found = clients.ride_out(
            lambda: self.consumer.offsets_for_times(query, timeout=t),
            f"looking up offsets by time in {self.topic}",
            t,
        )
        # -1: no record at or after the time -> start at the end (nothing to show unless following).
        return {tp.partition: tp.offset for tp in found}

    def batches(self, partitions: list[int], start: Start, follow: bool) -> Iterator[list[RawRecord]]:
        from confluent_kafka import OFFSET_END, TopicPartition

        ends = self.end_offsets(partitions)
        starts = self.start_offsets(partitions, start)
        assign, remaining = [], set()
        for p in partitions:
            first = starts[p] if starts[p] >= 0 or starts[p] == -2 else OFFSET_END
            if not follow and (ends[p] == 0 or (first >= 0 and first >= ends[p]) or first == OFFSET_END):
                continue  # nothing between the start and the end that existed when we started
            assign.append(TopicPartition(self.topic, p, first))
            remaining.add(p)
        if not assign:
            return
        c = self.consumer
        c.assign(assign)
        idle_since = time.monotonic()
        while follow or remaining:
            msgs = c.consume(BATCH, WAIT_S)
            if msgs:
                idle_since = time.monotonic()
                batch = self._batch(msgs, None if follow else ends, remaining)
                if batch:
                    yield batch
            elif not follow and remaining:
                self._check_positions(ends, remaining, idle_since)

    def _batch(self, msgs: list, ends: dict[int, int] | None, remaining: set[int]) -> list[RawRecord]:
        """The records of one consume call; with `ends` (not following) those past the end are dropped
        and a partition is done (paused) once its last record before the end is seen.

        Each field is read for the whole batch by `map` over the Message method (a loop in C): a
        Python loop calling five methods per message costs as much as decoding an offset commit
        (bench/README.md, "dump")."""
        from confluent_kafka import KafkaError, KafkaException, Message

        errors = list(map(Message.error, msgs))
        # which messages are records; by identity: KafkaError's == with None raises
        records = list(map(is_, errors, repeat(None)))
        if not all(records):  # partition ends (and errors) among the messages
            for m, err in zip(msgs, errors):
                if err is None:
                    continue
                if err.code() != KafkaError._PARTITION_EOF:
                    if classify(err) in ASK_AGAIN:
                        # a leader moving or a broker down: the consumer asks again by itself,
                        # bounded by the no-progress check (_check_positions)
                        logger.info(f"reading {self.topic}: {err.str()}")
                        continue
                    raise clients.translate(KafkaException(err), f"reading {self.topic}")
                if ends is not None:
                    self._done(m.partition(), remaining)
            msgs = list(compress(msgs, records))
        # A consumed record's partition and offset are always set (None only before a produce).
        parts = cast("list[int]", list(map(Message.partition, msgs)))
        offsets = cast("list[int]", list(map(Message.offset, msgs)))
        out = list(
            zip(
                parts,
                offsets,
                map(_second, map(Message.timestamp, msgs)),
                map(Message.key, msgs),
                map(Message.value, msgs),
                repeat(None),
            )
        )
        if ends is None:
            return out
        # the last record before a partition's end, and any after it (written since we started)
        lasts = map(sub, map(ends.__getitem__, parts), repeat(1))
        past = []
        for i in compress(count(), map(ge, offsets, lasts)):
            p = parts[i]
            self._done(p, remaining)
            if offsets[i] >= ends[p]:
                past.append(i)
        for i in reversed(past):
            del out[i]
        return out

    def _done(self, p: int, remaining: set[int]) -> None:
        from confluent_kafka import TopicPartition

        if p in remaining:
            remaining.discard(p)
            self.consumer.pause([TopicPartition(self.topic, p)])

    def _check_positions(self, ends: dict[int, int], remaining: set[int], idle_since: float) -> None:
        """Control records and aborted batches leave gaps: the position tells when the end is passed."""
        from confluent_kafka import TopicPartition

        positions = self.consumer.position([TopicPartition(self.topic, p) for p in remaining])
        for tp in positions:
            if tp.offset >= 0 and tp.offset >= ends[tp.partition]:
                self._done(tp.partition, remaining)
        if remaining and time.monotonic() - idle_since > self.settings.timeout:
            raise KafkaOperationError(
                f"reading {self.topic}: no progress on {_partitions(remaining)} for "
                f"{self.settings.timeout:g}s before reaching the end offsets (raise --timeout?)"
            )

    def close(self) -> None:
        self.consumer.close()
