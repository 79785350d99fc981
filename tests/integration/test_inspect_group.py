"""`kxtx inspect group`: a consumer group's lag on a transactional topic, held against what a
read_committed consumer really receives (kafka-consumer-groups.sh counts markers and aborted records
as lag, and cannot say why a read_committed consumer waits)."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import json_doc
from tests.integration.kafka_io import commit_offset

pytestmark = [pytest.mark.kafka, pytest.mark.versioned]


def received_from(bootstrap: str, topic: str, offset: int) -> int:
    """How many records a read_committed consumer receives from `offset` to the end it can read."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"count-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, offset)])
        n = 0
        for _ in range(120):
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    n += 1
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    return n
        raise AssertionError("no end of the partition within 60 s")
    finally:
        c.close()


def test_the_group_lag_is_what_a_read_committed_consumer_receives_and_names_what_holds_it(kafka, run_kxtx):
    from confluent_kafka import Producer

    topic = kafka.create_topic(f"grp-{uuid.uuid4().hex[:6]}")
    group = f"g-{topic}"
    conf = {"bootstrap.servers": kafka.bootstrap, "transaction.timeout.ms": 300_000}
    p = Producer({**conf, "transactional.id": f"{topic}-writer"})
    p.init_transactions(30)
    for commit, n in ((True, 5), (False, 3)):  # offsets 0-4 + marker 5; 6-8 aborted + marker 9
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, f"r{i}".encode(), partition=0)
        assert p.flush(30) == 0  # written before the abort (which would purge what waits)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    commit_offset(kafka.bootstrap, group, topic, 0, 2)
    tid = f"{topic}-open"
    left_open = Producer({**conf, "transactional.id": tid})
    left_open.init_transactions(30)
    left_open.begin_transaction()
    for i in range(2):  # offsets 10-11, open: the LSO stays at 10
        left_open.produce(topic, f"o{i}".encode(), partition=0)
    assert left_open.flush(30) == 0
    try:
        out = json_doc(run_kxtx("inspect", "group", group, "-o", "json"))
        (row,) = out["partitions"]
        assert (row["committed"], row["lso"], row["high_watermark"]) == (2, 10, 12)
        # the independent read: what a read_committed consumer gets from the committed offset
        assert row["lag"] == received_from(kafka.bootstrap, topic, 2) == 3 and row["lag_exact"] is True
        assert row["naive_lag"] == 10  # what kafka-consumer-groups.sh calls lag
        assert row["markers_and_aborted"] == 5  # two markers, three aborted records
        held = row["held_by"]
        assert (held["transactional_id"], held["class"], held["start_offset"]) == (tid, "in-progress", 10)
        assert out["unseen"] is None
        table = run_kxtx("inspect", "group", group, "-o", "table", expect=0).stdout
        assert f"in-progress {tid}" in table
        r = run_kxtx("inspect", "group", f"nobody-{uuid.uuid4().hex[:6]}", expect=1)
        assert r.stderr.count("\n") == 1 and "has no committed offset" in r.stderr
    finally:
        left_open.abort_transaction(30)
