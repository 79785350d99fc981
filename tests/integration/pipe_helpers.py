"""Producing inputs and reading read_committed outputs for the `kxtx pipe` tests."""

from __future__ import annotations

import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

UDFS = __file__.replace("pipe_helpers.py", "pipe_udfs.py")
#: A killed pipe's group membership ends in 6 s instead of librdkafka's 45 s: its restart (or the
#: other instance) gets the partitions sooner.
FAST_GROUP = ["-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=1000"]


def produce(bootstrap: str, topic: str, values, keys=None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, v, keys[i] if keys else None)
                break
            except BufferError:
                p.poll(0.1)
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def read_committed(bootstrap: str, topic: str, timeout: float = 60) -> list:
    """Every committed record of a topic (all partitions), read up to the end."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    try:
        md = c.list_topics(topic, timeout=30).topics[topic]
        parts = [TopicPartition(topic, p, 0) for p in md.partitions]
        c.assign(parts)
        pending, out = {p.partition for p in parts}, []
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for m in c.consume(10000, 1.0):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(m.partition())
                    continue
                out.append(m)
        assert not pending, f"{topic}: no end of partition(s) {pending} within {timeout}s"
        return out
    finally:
        c.close()


def values(msgs) -> Counter:
    return Counter(m.value() for m in msgs)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offsets; asked again while its coordinator moves or loads (on a
    fresh broker the first group's __consumer_offsets partition may still be loading)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
                return [tp.offset for tp in got]
            except KafkaException as exc:
                name = exc.args[0].name() if exc.args else ""
                if (
                    name
                    not in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")
                    or time.monotonic() > deadline
                ):
                    raise
                time.sleep(0.2)
    finally:
        c.close()
