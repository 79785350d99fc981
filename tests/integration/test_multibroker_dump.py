"""`kxtx dump` reads from whichever broker leads: with the broker that led the group's
`__consumer_offsets` partition just killed, both readers (librdkafka, and the raw Fetch reader of
--include-uncommitted) get the same rows as before, from the new leader."""

import json
import uuid

import pytest

from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import wait_until

pytestmark = [pytest.mark.multibroker, pytest.mark.timeout(600)]


def _commit_offsets(kafka, group: str, topic: str, n: int) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        for i in range(1, n + 1):
            # The first commits of a new cluster can meet a coordinator still loading.
            wait_until(
                lambda i=i: c.commit(offsets=[TopicPartition(topic, 0, i)], asynchronous=False) or True,
                60,
                "an offset commit",
                every=0.5,
                tolerate=ch.MOVING,
            )
    finally:
        c.close()


def _rows(kafka, group: str, *extra: str) -> list[dict]:
    r = ch.run(
        kafka,
        "dump",
        "offsets",
        "--group",
        group,
        "--from-beginning",
        *extra,
        "-o",
        "jsonl",
        timeout=240,
        expect=0,
    )
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def test_dump_follows_the_leader_of_consumer_offsets(cluster3):
    topic = cluster3.create_topic(replication=3)
    group = f"dump-fo-{uuid.uuid4().hex[:8]}"
    _commit_offsets(cluster3, group, topic, 5)
    before = _rows(cluster3, group)
    before_raw = _rows(cluster3, group, "--include-uncommitted")
    assert len(before) == 5 and len(before_raw) == 5
    leader = ch.coordinator(cluster3, group, "__consumer_offsets")
    cluster3.sandbox.kill_node(leader)
    try:
        # At once: the metadata still names the dead broker until the controller fences it.
        assert _rows(cluster3, group, "--include-uncommitted") == before_raw
        assert _rows(cluster3, group) == before
    finally:
        cluster3.sandbox.start_node(leader)
    ch.wait_healthy(cluster3, [topic, "__consumer_offsets"])
