"""No kxtx command creates a topic as a side effect of looking for it.

The test broker allows auto-creation (auto.create.topics.enable=true, Kafka's default), so a client
whose metadata request asks for a missing topic by name would create it: these tests then fail."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.integration.pipe_helpers import pipe_args

pytestmark = [pytest.mark.kafka]


def topic_names(kafka) -> set[str]:
    """All topics, from a full metadata listing (asking for one by name could create it)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "allow.auto.create.topics": False})
    return set(admin.list_topics(timeout=30).topics)


def assert_never_created(kafka, name: str) -> None:
    # librdkafka's request that creates a topic can follow its first metadata answer by a moment.
    time.sleep(2)
    assert name not in topic_names(kafka), f"{name} was created as a side effect"


def test_broker_under_test_auto_creates(kafka):
    """The premise: a default producer asking for a missing topic creates it on this broker."""
    from confluent_kafka import Producer

    name = f"auto-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": kafka.bootstrap})
    p.list_topics(name, timeout=10)
    deadline = time.monotonic() + 10
    while name not in topic_names(kafka) and time.monotonic() < deadline:
        p.poll(0.2)
    assert name in topic_names(kafka)


@pytest.mark.spark
def test_pipe_missing_output_topic_is_not_created(kafka, topic, run_kxtx):
    missing = f"missing-out-{uuid.uuid4().hex[:8]}"
    r = run_kxtx(
        "pipe",
        "--mode",
        "driver",
        *pipe_args(topic, missing, until_idle="2"),
        timeout=180,
        expect=2,
    )
    assert f"topic {missing!r} does not exist" in r.stderr
    assert_never_created(kafka, missing)


@pytest.mark.spark
def test_pipe_missing_dlq_topic_is_not_created(kafka, run_kxtx):
    src, out = kafka.create_topic(), kafka.create_topic()
    missing = f"missing-dlq-{uuid.uuid4().hex[:8]}"
    r = run_kxtx(
        "pipe",
        "--mode",
        "driver",
        *pipe_args(src, out, on_udf_error=f"dlq:{missing}", until_idle="2"),
        timeout=180,
        expect=2,
    )
    assert missing in r.stderr and "does not exist" in r.stderr
    assert_never_created(kafka, missing)


def test_produce_missing_topic_is_not_created(kafka, run_kxtx, tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text('{"a": 1}\n')
    missing = f"missing-produce-{uuid.uuid4().hex[:8]}"
    r = run_kxtx("produce", str(data), "-t", missing, timeout=120, expect=2)
    assert missing in r.stderr and "does not exist" in r.stderr
    assert_never_created(kafka, missing)


def test_produce_missing_dlq_topic_is_not_created(kafka, topic, run_kxtx, tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text('{"a": 1}\n')
    missing = f"missing-pdlq-{uuid.uuid4().hex[:8]}"
    r = run_kxtx("produce", str(data), "-t", topic, "--on-error", f"dlq:{missing}", timeout=120, expect=2)
    assert missing in r.stderr and "does not exist" in r.stderr
    assert_never_created(kafka, missing)
