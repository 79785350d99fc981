"""Helpers for the `kxtx produce` integration tests: bounded consumes and input files."""

from __future__ import annotations

import json
import time
import uuid


def consume(bootstrap: str, topic: str, committed: bool = True, timeout: float = 60) -> list[tuple]:
    """Every record of `topic` up to its end (the LSO for read_committed), as
    (partition, key, value, headers, timestamp) in offset order per partition. Bounded in time."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
        }
    )
    try:
        parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        pending, out = set(parts), []
        deadline = time.monotonic() + timeout
        while pending:
            assert time.monotonic() < deadline, f"consuming {topic} did not reach the end in {timeout}s"
            for msg in c.consume(10000, timeout=0.5):
                if msg.error():
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    pending.discard(msg.partition())
                    continue
                out.append((msg.partition(), msg.key(), msg.value(), msg.headers(), msg.timestamp()[1]))
        return out
    finally:
        c.close()


def values(records) -> list[bytes]:
    return [r[2] for r in records]


def write_jsonl(path, n: int, start: int = 0) -> list[bytes]:
    lines = [
        json.dumps({"id": i, "c": {"k": f"k{i % 5}"}, "pad": "x" * 40}, separators=(",", ":")).encode()
        for i in range(start, start + n)
    ]
    with open(path, "ab") as f:
        f.write(b"\n".join(lines) + b"\n")
    return lines


def summary(proc) -> dict:
    """The jsonl summary a run prints on stdout (stdout is not a TTY in tests)."""
    assert proc.stdout.strip(), f"no summary; exit {proc.returncode}; stderr: {proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
