"""Kafka I/O for the integration tests: read a topic up to its end, count, compare, wait.

One read loop for every test: it assigns all partitions from offset 0 and stops as soon as each
partition reported its end (librdkafka's partition EOF: the high watermark, or the last stable
offset for read_committed), never after a fixed sleep; a deadline bounds it. One `wait_until`
for every polled condition."""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict
from typing import Any, NamedTuple


class Record(NamedTuple):
    """One record as the tests compare it (a tuple: `(part, key, value, headers, ts)` unpacks)."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: list | None
    timestamp: int


def read(
    bootstrap: str | None,
    topic: str,
    *,
    committed: bool = True,
    timeout: float = 60,
    conf: dict | None = None,
    offsets: bool = False,
) -> list:
    """Every record of `topic` (all partitions) up to its end, in offset order per partition.
    `conf` adds to or replaces the consumer settings (a secured broker's client settings).
    `offsets`: (offset, Record) pairs instead of Records."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
            **(conf or {}),
        }
    )
    try:
        parts = sorted(c.list_topics(topic, timeout=30).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        pending, out = set(parts), []
        deadline = time.monotonic() + timeout
        while pending:
            assert time.monotonic() < deadline, f"{topic}: no end of partition(s) {pending} within {timeout}s"
            for m in c.consume(10000, 0.5):
                err = m.error()
                if err is None:
                    r = Record(m.partition(), m.key(), m.value(), m.headers(), m.timestamp()[1])
                    out.append((m.offset(), r) if offsets else r)
                elif err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(m.partition())
                else:  # a leader moving is asked again by librdkafka; anything else is a finding
                    assert err.retriable(), f"{topic}: {err}"
        return out
    finally:
        c.close()


def read_committed(
    bootstrap: str | None, topic: str, timeout: float = 60, conf: dict | None = None
) -> list[Record]:
    """What a read_committed consumer sees: every committed record up to the last stable offset."""
    return read(bootstrap, topic, committed=True, timeout=timeout, conf=conf)


def read_uncommitted(
    bootstrap: str | None, topic: str, timeout: float = 60, conf: dict | None = None
) -> list[Record]:
    """Every record written, aborted or open transactions' included, up to the high watermark."""
    return read(bootstrap, topic, committed=False, timeout=timeout, conf=conf)


def end_offsets(bootstrap: str, topic: str, committed: bool = True) -> dict[int, int]:
    """{partition: end offset}: the last stable offset (committed) or the high watermark. Offsets
    count transaction markers too, so their sum is an upper bound of the records below them."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    parts = admin.list_topics(topic, timeout=10).topics[topic].partitions
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    futs = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in parts},
        isolation_level=level,
        request_timeout=10,
    )
    return {tp.partition: fut.result(timeout=15).offset for tp, fut in futs.items()}


def values(records) -> list[bytes]:
    """The values in order (per partition: offset order)."""
    return [r.value for r in records]


def multiset(records) -> Counter:
    """The values as a multiset: equal to the input's Counter exactly when each came once."""
    return Counter(r.value for r in records)


def by_partition(records) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    """{partition: [(key, value), ...]} in offset order."""
    out: dict[int, list] = defaultdict(list)
    for r in records:
        out[r.partition].append((r.key, r.value))
    return out


def commit_offset(bootstrap: str, group: str, topic: str, partition: int, offset: int) -> None:
    """Commit `offset` on topic:partition for `group` (a consumer group that never ran)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        commit_retrying(c, [TopicPartition(topic, partition, offset)])
    finally:
        c.close()


def commit_retrying(consumer, offsets, timeout: float = 60) -> None:
    """The first commit on a fresh broker may meet a group coordinator still loading the newly
    created __consumer_offsets (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS): retriable errors."""
    from confluent_kafka import KafkaError, KafkaException

    loading = {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
    deadline = time.monotonic() + timeout
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as e:
            if e.args[0].code() not in loading or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def wait_until(
    condition,
    timeout: float,
    what: str,
    *,
    every: float = 0.2,
    procs=(),
    stderr=None,
    tolerate: tuple[type[BaseException], ...] = (),
) -> Any:
    """Poll `condition()` until it returns something true (returned) or `timeout` seconds pass
    (AssertionError naming `what`). `procs`: processes that must not end while the condition is
    still false; `stderr()` adds their output to the failure. `tolerate`: exceptions meaning "not yet" (a cluster that is moving)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except AssertionError:
            raise
        except tolerate:
            value = None
        if value:
            return value
        ended = [p.returncode for p in procs if p.poll() is not None]
        assert not ended, f"ended (exit {ended}) before {what}: {stderr() if stderr else ''}"
        assert time.monotonic() < deadline, (
            f"timed out after {timeout:g}s waiting for {what}: {stderr() if stderr else ''}"
        )
        time.sleep(every)


class HighWatermarks:
    """Sum of a topic's end offsets: grows whenever anyone writes to it (committed or not), so a
    test can wait until a background run is writing before it signals the run."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        from confluent_kafka import Consumer, TopicPartition

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw"})
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]

    def __call__(self) -> int:
        return sum(self.c.get_watermark_offsets(tp, timeout=10)[1] for tp in self.tps)

    def wait_growth(self, proc: Any, timeout: float = 180) -> bool:
        """Until the sum grows (True), or `proc` (a Popen) ends or `timeout` passes (False)."""
        base, deadline = self(), time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if self() > base:
                return True
            time.sleep(0.2)
        return False

    def close(self) -> None:
        self.c.close()
