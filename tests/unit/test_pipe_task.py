"""The executor-side task's client settings (kxtx/pipe/task.py), without a broker."""

from __future__ import annotations

import pytest

from kxtx.pipe import task


def job(conf: dict) -> task.Job:
    return task.Job(conf=conf, group="g", pipe_id="p", out="o", dlq=None, start="earliest",
                    record_mode=False, mapper=None, chunk=100, udf_name="u", timeout=5.0)


@pytest.mark.parametrize("conf, key, want", [
    # no long poll at the end of a partition: the next task's assign would wait for it
    ({"bootstrap.servers": "b:1"}, "fetch.wait.max.ms", 10),
    ({}, "fetch.queue.backoff.ms", 10),
    ({"fetch.wait.max.ms": 200}, "fetch.wait.max.ms", 200),  # the user's value wins
    # what exactly once rests on cannot be overridden
    ({"isolation.level": "read_uncommitted"}, "isolation.level", "read_committed"),
    ({"enable.auto.commit": True}, "enable.auto.commit", False),
    ({"group.id": "other"}, "group.id", "g"),
    ({}, "auto.offset.reset", "earliest"),
])
def test_consumer_conf(conf, key, want):
    assert task.consumer_conf(job(conf))[key] == want


@pytest.mark.parametrize("conf, key, want", [
    # a new producer's init_transactions: no 500 ms wait for librdkafka's coordinator timer
    ({"bootstrap.servers": "b:1"}, "enable.sparse.connections", False),
    ({}, "retry.backoff.ms", 10),
    ({"enable.sparse.connections": True}, "enable.sparse.connections", True),  # the user's wins
    ({"retry.backoff.ms": 100}, "retry.backoff.ms", 100),
    ({"transactional.id": "mine"}, "transactional.id", "p.t.3"),  # fencing rests on it
])
def test_producer_conf(conf, key, want):
    assert task.producer_conf(job(conf), task.transactional_id("p", "t", 3))[key] == want


def test_a_jobs_repr_hides_the_connection_settings():
    assert "s3cret" not in repr(job({"sasl.password": "s3cret"}))


def test_transactional_id_is_a_function_of_pipe_topic_and_partition():
    assert task.transactional_id("p", "t", 3) == task.transactional_id("p", "t", 3) == "p.t.3"
    assert task.transactional_id("p", "t", 3) != task.transactional_id("p", "t", 4)
