"""The executor-side task's client settings (kxtx/pipe/worker/task.py), without a broker."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from kxtx.pipe.worker import task
from tests.conftest import fast_only


def job(conf: dict) -> task.Job:
    return task.Job(
        conf=conf,
        group="g",
        pipe_id="p",
        out="o",
        dlq=None,
        start="earliest",
        record_mode=False,
        mapper=None,
        chunk=100,
        udf_name="u",
        timeout=5.0,
    )


@pytest.mark.parametrize(
    "conf, key, want",
    [
        # no long poll at the end of a partition: the next task's assign would wait for it
        ({"bootstrap.servers": "b:1"}, "fetch.wait.max.ms", 10),
        ({}, "fetch.queue.backoff.ms", 10),
        ({"fetch.wait.max.ms": 200}, "fetch.wait.max.ms", 200),  # the user's value wins
        # prefetch no more than a consume() batch: what waits at the unassign is dropped
        ({}, "queued.min.messages", task.CONSUME_BATCH),
        ({"queued.min.messages": 100000}, "queued.min.messages", 100000),
        # what exactly once rests on cannot be overridden
        ({"isolation.level": "read_uncommitted"}, "isolation.level", "read_committed"),
        ({"enable.auto.commit": True}, "enable.auto.commit", False),
        ({"group.id": "other"}, "group.id", "g"),
        ({}, "auto.offset.reset", "earliest"),
    ],
)
def test_consumer_conf(conf, key, want):
    assert task.consumer_conf(job(conf))[key] == want


@pytest.mark.parametrize(
    "conf, key, want",
    [
        # a new producer's init_transactions: no 500 ms wait for librdkafka's coordinator timer
        ({"bootstrap.servers": "b:1"}, "enable.sparse.connections", False),
        ({}, "retry.backoff.ms", 10),
        # keyed outputs land where the Java client (and Kafka Streams) puts them
        ({}, "partitioner", "murmur2_random"),
        ({"partitioner": "consistent_random"}, "partitioner", "consistent_random"),
        ({"enable.sparse.connections": True}, "enable.sparse.connections", True),  # the user's wins
        ({"retry.backoff.ms": 100}, "retry.backoff.ms", 100),
        ({"transactional.id": "mine"}, "transactional.id", "p.t.3"),  # fencing rests on it
    ],
)
def test_producer_conf(conf, key, want):
    assert task.producer_conf(job(conf), task.transactional_id("p", "t", 3))[key] == want


def test_a_jobs_repr_hides_the_connection_settings():
    assert "s3cret" not in repr(job({"sasl.password": "s3cret"}))


def test_transactional_id_is_a_function_of_pipe_topic_and_partition():
    assert task.transactional_id("p", "t", 3) == task.transactional_id("p", "t", 3) == "p.t.3"
    assert task.transactional_id("p", "t", 3) != task.transactional_id("p", "t", 4)


@pytest.mark.parametrize(
    "left, nxt, end, want",
    [
        (100_000, -1001, 50, task.CONSUME_BATCH),  # start not known yet: a whole batch
        (100_000, 0, 1 << 62, task.CONSUME_BATCH),  # no planned end in sight
        (100_000, 40, 50, 10),  # the planned range holds 10: ask for 10, not a batch
        (5, 40, 50, 5),  # the limit is closer than the end
        (100_000, 50, 50, 1),  # at the planned end (markers past it): one, never 0
        (100_000, 60, 50, 1),  # a start already past the planned end
        (0, 40, 50, 1),
    ],
)
def test_consume_count(left, nxt, end, want):
    assert task.consume_count(left, nxt, end) == want


@pytest.mark.parametrize(
    "start, committed, want",
    [
        ("earliest", 17, 17),
        ("latest", 17, 17),  # a committed offset always wins
        ("earliest", 0, 0),
        ("earliest", -1001, -2),  # librdkafka OFFSET_BEGINNING, not INVALID (100 ms backoff)
        ("latest", -1001, -1),  # OFFSET_END
    ],
)
def test_start_offset(start, committed, want):
    assert task._start_offset(dataclasses.replace(job({}), start=start), committed) == want


class _Consumer:
    """Stands in for a worker's cached consumer: counts metadata requests, may fail them."""

    def __init__(self, fail: bool = False):
        self.asked, self.fail = [], fail

    def list_topics(self, topic, timeout):
        self.asked.append(topic)
        if self.fail:
            raise RuntimeError("broker not reachable")


@pytest.fixture
def worker_state(monkeypatch):
    import sys
    import types

    state = types.ModuleType(task._STATE)
    state.producers, state.consumers, state.topics_known = {}, {}, set()
    state.run = ""  # the run of `job()`
    monkeypatch.setitem(sys.modules, task._STATE, state)
    return state


def _cache(state, j: task.Job, consumer) -> None:
    state.consumers[task._consumer_key(j)] = consumer


def test_a_worker_loads_a_topics_metadata_once(worker_state):
    j, c = job({"bootstrap.servers": "b:1"}), _Consumer()
    _cache(worker_state, j, c)
    assert task._consumer(j, "t1") is c
    assert task._consumer(j, "t1") is c
    assert task._consumer(j, "t2") is c
    assert c.asked == ["t1", "t2"]


def test_a_failed_metadata_request_is_asked_again_and_fails_no_task(worker_state):
    j, c = job({"bootstrap.servers": "b:1"}), _Consumer(fail=True)
    _cache(worker_state, j, c)
    assert task._consumer(j, "t1") is c
    assert task._consumer(j, "t1") is c
    assert c.asked == ["t1", "t1"]


@pytest.mark.timeout(30)  # without the watchdog the round would hang
def test_a_stuck_send_offsets_fails_the_round_for_retry_and_drops_the_producer(worker_state, monkeypatch):
    """A producer whose send_offsets_to_transaction hangs (librdkafka #5456/#5511): the round is a
    retriable failure ('aborted', unavailable, no token) and the worker's cache no longer holds the
    producer, so the next round for the partition starts a new one (init_transactions fences it)."""
    from kxtx.client import txwriter as tw

    release = threading.Event()

    class Hanging:
        calls: list = []

        def send_offsets_to_transaction(self, *_):
            self.calls.append("offsets")
            release.wait()

        def begin_transaction(self):
            self.calls.append("begin")

    monkeypatch.setattr(tw, "WATCHDOG_MARGIN_S", 0.05)
    j = dataclasses.replace(job({}), timeout=0.05)
    tid = task.transactional_id(j.pipe_id, "in", 0)
    cached = task._Producer.__new__(task._Producer)
    cached.writer = tw.TxWriter(tid, j.timeout, raw=True, retry_s=j.timeout)
    cached.writer.producer, cached.tid, cached.token = Hanging(), tid, "tok"
    worker_state.producers[tid] = cached

    def process(_job, _plan, prod, _attempt):  # a round that reaches send_offsets
        prod.writer.begin()
        prod.writer.send_offsets([], None)

    monkeypatch.setattr(task, "_process", process)
    try:
        result = task.run_plan(j, task.Plan("in", 0, limit=10, end=5, token="tok"))
    finally:
        release.set()
    assert (result.status, result.unavailable, result.token) == ("aborted", True, None)
    assert "#5456" in result.error
    assert tid not in worker_state.producers
    assert Hanging.calls == ["begin", "offsets"]


@fast_only
def test_a_task_runs_with_the_cyclic_collector_paused_and_puts_it_back(worker_state, monkeypatch):
    """A round keeps a batch of Messages, values and output tuples alive (kxtx.fast.gcpause): the
    attempt runs with the collector off, the worker gets it back on after a round that fails."""
    import gc

    from confluent_kafka import KafkaError, KafkaException

    from kxtx.client import txwriter as tw

    j = job({})
    tid = task.transactional_id(j.pipe_id, "in", 0)
    cached = task._Producer.__new__(task._Producer)
    cached.writer = tw.TxWriter(tid, j.timeout, raw=True, retry_s=j.timeout)
    cached.writer.producer, cached.tid, cached.token = object(), tid, "tok"
    worker_state.producers[tid] = cached
    seen = []

    def process(_job, _plan, _prod, _attempt):
        seen.append(gc.isenabled())
        raise KafkaException(KafkaError(KafkaError._FATAL, "gone", fatal=True))

    monkeypatch.setattr(task, "_process", process)
    assert gc.isenabled()
    result = task.run_plan(j, task.Plan("in", 0, limit=10, end=5, token="tok"))
    assert seen == [False]
    assert result.status == "fatal"
    assert gc.isenabled()


def test_a_worker_lets_go_of_an_earlier_runs_clients(worker_state):
    """Spark reuses a Python worker for the next job of its application: the clients kept for one
    run are let go when a task of another run comes (and kept for more tasks of the same run)."""
    import gc
    import weakref

    class Closing(_Consumer):
        closed = 0

        def close(self):
            self.closed += 1

    class Prod:  # stands in for a cached producer: destroyed when nothing references it
        pass

    first, second = dataclasses.replace(job({}), run="run-1"), dataclasses.replace(job({}), run="run-2")
    task._for_run(first)
    prod, consumer = Prod(), Closing()
    worker_state.producers["p.in.0"] = prod
    worker_state.consumers[task._consumer_key(first)] = consumer
    worker_state.topics_known.add((task._consumer_key(first), "in"))
    gone = weakref.ref(prod)
    del prod

    task._for_run(first)  # the same run: everything kept
    assert list(worker_state.producers) == ["p.in.0"] and consumer.closed == 0

    task._for_run(second)
    gc.collect()
    assert gone() is None  # the producer is released (librdkafka's client destroyed with it)
    assert consumer.closed == 1
    assert (worker_state.producers, worker_state.consumers, worker_state.topics_known) == ({}, {}, set())
    assert worker_state.run == "run-2"
