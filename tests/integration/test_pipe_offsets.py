"""After `kxtx pipe` the group's committed offset is the end of the input, also when the input
ends with aborted transactions (their records and markers are skipped by read_committed): lag
monitors must see the 0 lag the pipe reports. The engine runs in-process on the shared SparkSession
(what is tested is its offsets, not the process).
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.kafka_io import multiset, read_committed
from tests.integration.pipe_helpers import committed_offsets, produce, run_in_process

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def transaction(bootstrap: str, topic: str, vals: list[bytes], commit: bool, partition: int = 0):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"t-{uuid.uuid4().hex}"})
    p.init_transactions(30)
    p.begin_transaction()
    for v in vals:
        p.produce(topic, v, partition=partition)
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)]
    finally:
        c.close()


def pipe(kafka, session, src, out, group):
    summary = run_in_process(kafka, session, [src], out, "identity", group=group)
    assert summary.stopped == "idle", summary
    return summary


def test_committed_offset_passes_an_aborted_tail(kafka, spark_session):
    src, out = kafka.create_topic(), kafka.create_topic()
    good = [b"ok-%d" % i for i in range(300)]
    transaction(kafka.bootstrap, src, good, commit=True)
    transaction(kafka.bootstrap, src, [b"aborted-%d" % i for i in range(200)], commit=False)
    group = f"g-{uuid.uuid4().hex[:8]}"
    pipe(kafka, spark_session, src, out, group)
    assert multiset(read_committed(kafka.bootstrap, out)) == multiset(read_committed(kafka.bootstrap, src))
    # 300 records + commit marker + 200 aborted records + abort marker
    assert high_watermarks(kafka.bootstrap, src, 1) == [502]
    assert committed_offsets(kafka.bootstrap, group, src, 1) == [502]


def test_a_later_run_that_only_skips_commits_past_the_skipped(kafka, spark_session):
    """Partition 0 gets new records, partition 1 only an aborted transaction: both end at the
    high watermark (the second through a transaction of offsets only)."""
    src, out = kafka.create_topic(partitions=2), kafka.create_topic()
    group = f"g-{uuid.uuid4().hex[:8]}"
    for part in (0, 1):
        transaction(
            kafka.bootstrap, src, [b"first-%d-%d" % (part, i) for i in range(50)], commit=True, partition=part
        )
    pipe(kafka, spark_session, src, out, group)
    assert committed_offsets(kafka.bootstrap, group, src, 2) == [51, 51]
    transaction(kafka.bootstrap, src, [b"second-%d" % i for i in range(50)], commit=True)
    transaction(kafka.bootstrap, src, [b"aborted-%d" % i for i in range(80)], commit=False, partition=1)
    pipe(kafka, spark_session, src, out, group)
    assert high_watermarks(kafka.bootstrap, src, 2) == [102, 132]
    assert committed_offsets(kafka.bootstrap, group, src, 2) == [102, 132]
    assert len(read_committed(kafka.bootstrap, out)) == 150


def test_new_group_on_empty_partitions_commits_nothing(kafka, spark_session):
    src, out = kafka.create_topic(partitions=2), kafka.create_topic()
    produce(kafka.bootstrap, src, [b"only-one"])
    group = f"g-{uuid.uuid4().hex[:8]}"
    pipe(kafka, spark_session, src, out, group)
    offsets = committed_offsets(kafka.bootstrap, group, src, 2)
    assert sorted(offsets) == [-1001, 1]
