"""The send_offsets_to_transaction watchdog (kxtx.client.txwriter) on a real broker: a broker that stalls
(SIGSTOP) while a transaction sends its offsets. librdkafka waits for that call without a bound of
its own (issues #5456/#5511); the writer must give control back within the call's timeout plus
its margin, and exactly once must hold: the stuck transaction's records are aborted when a new
producer with the same transactional id starts, and that producer commits.

A private broker (its own config), because the test stalls it: the session broker serves others."""

from __future__ import annotations

import logging
import os
import threading
import uuid

import pytest

from kxtx.client import kafkaerrors
from kxtx.client import txwriter as tw
from tests.integration.kafka_io import read_committed, read_uncommitted, values

#: Distinct from the session broker's config, so `brokers` starts a broker of its own. The stall
#: (up to ~45 s) must not get the broker fenced: with the default 9 s session timeout its controller
#: sometimes fences it on SIGCONT, its partitions are briefly without a leader, and Kafka 4's
#: coordinator then skips the abort marker of the fenced transaction (KAFKA-20734, see
#: docs/hanging.md): the fresh producer's commit committed `stuck` too, once in ~150 runs.
#: That is Kafka's bug, not the watchdog's this module tests.
PRIVATE_CONFIG = {"offsets.topic.num.partitions": "1", "broker.session.timeout.ms": "60000"}
#: The transactional calls' timeout in this test (the watchdog fires this + its margin later).
TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def private_broker(brokers):
    if os.environ.get("KXTX_TEST_BOOTSTRAP"):
        pytest.skip("stalls its broker: needs a sandbox of its own, not KXTX_TEST_BOOTSTRAP's")
    return brokers(PRIVATE_CONFIG)


def _writer(kafka, tid: str, abandoned: bool = False) -> tw.TxWriter:
    from confluent_kafka import Producer

    # The first transactional id on a new broker waits for __transaction_state to be created and
    # loaded (COORDINATOR_LOAD_IN_PROGRESS for seconds on a loaded machine: a CI run gave up after
    # 3 s): init waits as long as the product's writers do; the calls under test get TIMEOUT_S.
    w = tw.TxWriter(tid, TIMEOUT_S, raw=True, retry_s=kafkaerrors.FAILOVER_S)
    conf = {"bootstrap.servers": kafka.bootstrap, "transactional.id": tid}
    if abandoned:
        # A producer left blocked in a call lives as long as the test process, and once the
        # private broker stops, librdkafka wrote a "Connection refused" line to stderr every few
        # seconds for the rest of the run (the end of every CI log). Through a Python logger its
        # lines are delivered only while the producer is polled: during the test (pytest keeps
        # them for a failure's report), not after it is abandoned.
        conf["logger"] = logging.getLogger(f"kxtx.tests.abandoned.{tid}")
    w.producer = Producer(conf)
    w.init()
    w.retry_s = TIMEOUT_S
    return w


def _group_metadata(kafka, group: str):
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group})
    try:
        return c.consumer_group_metadata()
    finally:
        c.close()


@pytest.mark.timeout(300)  # without the watchdog the call may never return
def test_send_offsets_on_a_stalled_broker_returns_and_the_transaction_never_commits(private_broker):
    from confluent_kafka import KafkaException, TopicPartition

    kafka = private_broker
    src, out = kafka.create_topic(), kafka.create_topic()
    tid, group = f"stuck-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    md = _group_metadata(kafka, group)
    node = kafka.sandbox.info().node_list()[0].id

    stuck = _writer(kafka, tid, abandoned=True)
    stuck.begin()
    stuck.produce(out, b"stuck", None)
    assert stuck.producer.flush(30) == 0  # the record is in the log, its transaction open
    returned = threading.Event()
    outcome: list[BaseException] = []

    def send() -> None:
        try:
            stuck.send_offsets([TopicPartition(src, 0, 1)], md)
        except (tw.Stuck, KafkaException) as exc:
            outcome.append(exc)
        finally:
            returned.set()

    kafka.sandbox.pause_node(node)
    try:
        threading.Thread(target=send, daemon=True).start()
        # Not a timing assertion: the bound is how long this test is willing to wait for the
        # writer to give control back while the broker is still stalled.
        returned.wait(TIMEOUT_S + tw.WATCHDOG_MARGIN_S + 30)
        gave_back_while_stalled = returned.is_set()
    finally:
        kafka.sandbox.resume_node(node)
    assert gave_back_while_stalled, "send_offsets did not return while the broker was stalled"
    assert outcome, "send_offsets succeeded against a stalled broker"
    print(f"send_offsets on a stalled broker: {type(outcome[0]).__name__}: {outcome[0]}")

    # A new producer with the same transactional id fences the stuck one and aborts its
    # transaction; its own transaction commits (the retry bound is a failover's: the broker is
    # just back).
    fresh = _writer(kafka, tid)
    fresh.retry_s = kafkaerrors.FAILOVER_S
    fresh.begin()
    fresh.produce(out, b"fresh", None)
    fresh.send_offsets([TopicPartition(src, 0, 1)], md)
    fresh.commit()
    assert values(read_committed(kafka.bootstrap, out)) == [b"fresh"]
    assert b"stuck" in values(read_uncommitted(kafka.bootstrap, out))  # written, then aborted


#: The driver side in a process of its own: a transaction whose send_offsets meets the stalled
#: broker ("go" on stdin), then the exit code the writer's error carries (pipe's boundary does that).
DRIVER = """
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
from kxtx.errors import KxtxError
from kxtx.client.txwriter import TxWriter

bootstrap, tid, src, out = sys.argv[1:5]
w = TxWriter(tid, float(sys.argv[5]))
w.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
w.init()
md = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + tid}).consumer_group_metadata()
w.begin()
w.produce(out, b"stuck", None)
assert w.producer.flush(30) == 0
print("ready", flush=True)
sys.stdin.readline()
try:
    w.send_offsets([TopicPartition(src, 0, 1)], md)
except KxtxError as exc:
    print(exc, file=sys.stderr)
    sys.exit(int(exc.exit_code))
"""


@pytest.mark.timeout(300)
def test_a_driver_stuck_in_send_offsets_exits_75_while_the_broker_is_still_stalled(private_broker):
    """pipe --mode driver's side: the writer raises Unavailable (exit 75), and the process can exit
    although its abandoned call is still blocked inside librdkafka (a daemon thread)."""
    import subprocess
    import sys

    from confluent_kafka import TopicPartition

    from tests.conftest import ROOT

    kafka = private_broker
    src, out = kafka.create_topic(), kafka.create_topic()
    tid = f"stuck-{uuid.uuid4().hex[:8]}"
    node = kafka.sandbox.info().node_list()[0].id
    args = [kafka.bootstrap, tid, src, out, str(TIMEOUT_S)]
    child = subprocess.Popen(
        [sys.executable, "-c", DRIVER, *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        kafka.sandbox.pause_node(node)
        try:
            child.stdin.write("go\n")
            child.stdin.flush()
            # Less than the 60 s after which librdkafka's request would time out by itself: an
            # exit that waited for the stuck call would not be seen while the broker is stalled.
            code = child.wait(TIMEOUT_S + tw.WATCHDOG_MARGIN_S + 25)
        finally:
            kafka.sandbox.resume_node(node)
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert code == 75, err
    assert "#5456" in err and "run the same command again" in err

    fresh = _writer(kafka, tid)
    fresh.retry_s = kafkaerrors.FAILOVER_S
    fresh.begin()
    fresh.produce(out, b"fresh", None)
    fresh.send_offsets([TopicPartition(src, 0, 1)], _group_metadata(kafka, f"g-{tid}"))
    fresh.commit()
    assert values(read_committed(kafka.bootstrap, out)) == [b"fresh"]
    assert b"stuck" in values(read_uncommitted(kafka.bootstrap, out))
