"""`kxtx complete ID --commit|--abort` on one broker, on both Kafka versions (issue 61).

A transactional producer begins, writes to 3 partitions, flushes (what Flink's pre-commit does) and
is SIGKILLed: its coordinator holds the transaction open (Ongoing) until `transaction.timeout.ms`.
`complete` ends it by EndTxn with its producer id and epoch. Every check reads independently of
kxtx: the coordinator through kafka-python's DescribeTransactions, the records with a
read_committed consumer, the LSO with ListOffsets. A refusal must leave all three as they were.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
import uuid

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import NotLeaderForPartitionError as NotLeader

from tests import cli
from tests.integration.kafka_io import end_offsets, read_committed, wait_until
from tests.integration.txn_helpers import LowLevel, bump_epoch, kxtx_on

pytestmark = [pytest.mark.kafka, pytest.mark.versioned]

PARTITIONS = 3
PER_PARTITION = 2

#: a producer that writes PER_PARTITION records to each partition of TOPIC in a transaction,
#: flushes (the records are on the brokers, the transaction open) and dies as a crash does
ABANDON = r"""
import os, sys
from confluent_kafka import Producer
bootstrap, tid, topic, partitions, per, timeout_ms = sys.argv[1:7]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": int(timeout_ms)})
p.init_transactions(60)
p.begin_transaction()
for i in range(int(partitions) * int(per)):
    p.produce(topic, value=b"%s-%d" % (tid.encode(), i), partition=i % int(partitions))
assert p.flush(60) == 0
print("flushed", flush=True)
os.kill(os.getpid(), 9)
"""


def abandon(kafka, tid: str, topic: str, timeout_ms: int = 600_000) -> list[str]:
    """The values the SIGKILLed producer left in its open transaction."""
    args = [kafka.bootstrap, tid, topic, str(PARTITIONS), str(PER_PARTITION), str(timeout_ms)]
    p = subprocess.run([sys.executable, "-c", ABANDON, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == -9 and "flushed" in p.stdout, p.stderr[-2000:]
    return [f"{tid}-{i}" for i in range(PARTITIONS * PER_PARTITION)]


def coordinator(kafka, tid: str):
    """kafka-python's DescribeTransactions answer for `tid` (state, producer_id, producer_epoch)."""
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=30000)
    try:
        return admin.describe_transactions([tid])[tid]
    finally:
        admin.close()


def state(kafka, tid: str) -> tuple[str, int, int]:
    d = coordinator(kafka, tid)
    return (getattr(d.state, "value", None) or str(d.state), d.producer_id, d.producer_epoch)


def committed_values(kafka, topic: str) -> list[str]:
    return sorted(r.value.decode() for r in read_committed(kafka.bootstrap, topic, timeout=30))


@pytest.fixture
def lingering(kafka):
    """(topic, transactional id, values, producer id, epoch) of a SIGKILLed producer's open transaction."""
    topic = kafka.create_topic(f"cpl-{uuid.uuid4().hex[:6]}", partitions=PARTITIONS)
    tid = f"cpl-{uuid.uuid4().hex[:8]}"
    values = abandon(kafka, tid, topic)
    st, pid, epoch = state(kafka, tid)
    assert st == "Ongoing"
    assert end_offsets(kafka.bootstrap, topic) == dict.fromkeys(range(PARTITIONS), 0)
    return topic, tid, values, pid, epoch


def run(kafka, *args: str, expect: int):
    r = kxtx_on(kafka, "complete", *args, "--timeout", "20", expect=expect)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_commit_makes_every_record_readable_once(kafka, lingering):
    topic, tid, values, pid, epoch = lingering
    r = run(
        kafka,
        tid,
        "--commit",
        "--producer-id",
        str(pid),
        "--epoch",
        str(epoch),
        "--yes",
        "-o",
        "json",
        expect=0,
    )
    doc = r.json
    assert doc["ok"] is True and doc["outcome"] == "commit" and doc["coordinator_done"] is True
    assert [p["lso_moved"] for p in doc["partitions"]] == [True] * PARTITIONS
    assert committed_values(kafka, topic) == sorted(values)  # every record, each once
    st, pid_after, epoch_after = state(kafka, tid)
    # transactions v2 (KIP-890) bumps the epoch at every end; v1 keeps it
    assert st == "CompleteCommit" and pid_after == pid and epoch_after in (epoch, epoch + 1)
    assert doc["after"] == {"state": st, "producer_id": pid_after, "producer_epoch": epoch_after}
    # the same line again: the transaction ended, so it refuses and nothing changes
    again = run(kafka, tid, "--commit", "--producer-id", str(pid), "--epoch", str(epoch), "--yes", expect=2)
    assert "has no open transaction: the coordinator says CompleteCommit" in again.stderr, again.stderr
    assert "the outcome asked for: its last transaction is committed" in again.stderr, again.stderr
    assert committed_values(kafka, topic) == sorted(values)


def test_abort_makes_none_readable_and_moves_the_lso(kafka, lingering):
    topic, tid, _values, _pid, _epoch = lingering
    # neither --producer-id nor --epoch: the coordinator's, which the plan shows
    r = run(kafka, tid, "--abort", "--yes", "-o", "json", expect=0)
    assert r.json["ok"] is True and r.json["outcome"] == "abort"
    assert state(kafka, tid)[0] == "CompleteAbort"
    assert committed_values(kafka, topic) == []
    lso, hw = end_offsets(kafka.bootstrap, topic), end_offsets(kafka.bootstrap, topic, committed=False)
    # past the records and the marker: nothing is held back any more
    assert lso == hw and all(v == PER_PARTITION + 1 for v in lso.values()), (lso, hw)


def _unchanged(kafka, topic: str, tid: str, pid: int, epoch: int) -> None:
    assert state(kafka, tid) == ("Ongoing", pid, epoch)
    assert end_offsets(kafka.bootstrap, topic) == dict.fromkeys(range(PARTITIONS), 0)


def test_refusals_change_nothing(kafka, lingering):
    topic, tid, _values, pid, epoch = lingering
    wrong_epoch = run(
        kafka, tid, "--commit", "--producer-id", str(pid), "--epoch", str(epoch + 5), "--yes", expect=2
    )
    line = (
        f"epoch {epoch + 5} given, but the coordinator's open transaction is producer id {pid}, epoch {epoch}"
    )
    assert line in wrong_epoch.stderr, wrong_epoch.stderr
    _unchanged(kafka, topic, tid, pid, epoch)
    wrong_pid = run(
        kafka, tid, "--commit", "--producer-id", str(pid + 1000), "--epoch", str(epoch), "--yes", expect=2
    )
    assert (
        f"producer id {pid + 1000} given" in wrong_pid.stderr and "the producer moved on" in wrong_pid.stderr
    )
    _unchanged(kafka, topic, tid, pid, epoch)
    # no terminal and no --yes: the plan, then a refusal
    no_tty = run(kafka, tid, "--commit", expect=2)
    assert "refusing to act without --yes when not on a terminal" in no_tty.stderr
    _unchanged(kafka, topic, tid, pid, epoch)
    dry = run(kafka, tid, "--commit", "--dry-run", "-o", "json", expect=3)
    assert dry.json["producer_id"] == pid and dry.json["producer_epoch"] == epoch
    assert [p["held_back"] for p in dry.json["partitions"]] == [PER_PARTITION] * PARTITIONS
    _unchanged(kafka, topic, tid, pid, epoch)
    both = run(kafka, tid, "--commit", "--abort", "--yes", expect=2)
    assert "--commit or --abort" in both.stderr
    _unchanged(kafka, topic, tid, pid, epoch)
    # and the right values still work afterwards
    run(kafka, tid, "--abort", "--producer-id", str(pid), "--epoch", str(epoch), "--yes", expect=0)


def test_a_transaction_the_coordinator_timed_out_is_refused(kafka):
    topic = kafka.create_topic(f"cpl-t-{uuid.uuid4().hex[:6]}", partitions=PARTITIONS)
    tid = f"cpl-t-{uuid.uuid4().hex[:8]}"
    abandon(kafka, tid, topic, timeout_ms=2000)
    pid = coordinator(kafka, tid).producer_id
    # the coordinator's sweep (every 10 s by default) aborts it, bumping the epoch
    wait_until(
        lambda: state(kafka, tid)[0] == "CompleteAbort", 60, "the coordinator's timeout abort", every=0.5
    )
    _st, _pid, epoch = state(kafka, tid)
    before = end_offsets(kafka.bootstrap, topic)
    r = run(kafka, tid, "--commit", "--producer-id", str(pid), "--yes", expect=2)
    assert "has no open transaction: the coordinator says CompleteAbort" in r.stderr, r.stderr
    assert "the outcome asked for" not in r.stderr  # it asked for a commit
    assert state(kafka, tid) == ("CompleteAbort", pid, epoch)
    assert end_offsets(kafka.bootstrap, topic) == before and committed_values(kafka, topic) == []


def test_an_exhausted_epoch_ends_with_a_new_producer_id(kafka):
    """The producer's epoch at 32766 (Short.MAX_VALUE - 1, "exhausted"): under transactions v2
    (Kafka 4) the coordinator commits, and since the epoch cannot be bumped again it gives the
    producer a new producer id at epoch 0 (in EndTxn's answer and in DescribeTransactions). That
    is the same producer's transaction ended, not another's: `complete` reports success. Kafka 3.9
    (v1) keeps the producer id and epoch."""
    if kafka.sandbox is None:
        pytest.skip("bumps the epoch on a raw connection to a one-broker sandbox")
    topic = kafka.create_topic(f"cpl-x-{uuid.uuid4().hex[:6]}", partitions=PARTITIONS)
    tid = f"cpl-x-{uuid.uuid4().hex[:8]}"
    ll = LowLevel(kafka.bootstrap)
    try:
        p = ll.init(tid)
    finally:
        ll.close()
    # 32765: the abandoned producer's own InitProducerId then takes the epoch to 32766
    assert bump_epoch(kafka.bootstrap, tid, 32765 - p.producer_epoch) == (p.producer_id, 32765)
    values = abandon(kafka, tid, topic)
    assert state(kafka, tid) == ("Ongoing", p.producer_id, 32766)
    r = run(
        kafka,
        tid,
        "--commit",
        "--producer-id",
        str(p.producer_id),
        "--epoch",
        "32766",
        "--yes",
        "-o",
        "json",
        expect=0,
    )
    assert r.json["ok"] is True and r.json["coordinator_done"] is True, r.stdout
    assert committed_values(kafka, topic) == sorted(values)
    st, pid_after, epoch_after = state(kafka, tid)
    if kafka.major >= 4:
        assert (st, epoch_after) == ("CompleteCommit", 0) and pid_after != p.producer_id
    else:
        assert (st, pid_after, epoch_after) == ("CompleteCommit", p.producer_id, 32766)
    assert r.json["after"] == {"state": st, "producer_id": pid_after, "producer_epoch": epoch_after}


def test_unknown_id(kafka):
    r = run(kafka, f"cpl-nope-{uuid.uuid4().hex[:8]}", "--commit", "--yes", expect=1)
    errors = [x for x in r.stderr.splitlines() if x.startswith("kxtx: error:")]
    assert len(errors) == 1 and "is unknown to its coordinator" in errors[0], r.stderr


def test_flinks_request_sequence(kafka):
    """Flink's KafkaSink at the wire: transactional id PREFIX-SUBTASK-CHECKPOINT, InitProducerId,
    AddPartitionsToTxn, Produce to each partition, the flush (every Produce acknowledged) and then
    the job stops: no EndTxn. What Flink's recovery does next, kxtx complete --commit does."""
    topic = kafka.create_topic(f"cpl-f-{uuid.uuid4().hex[:6]}", partitions=PARTITIONS)
    tid = f"sink{uuid.uuid4().hex[:6]}-0-42"
    ll = LowLevel(kafka.bootstrap)
    try:
        p = ll.init(tid, timeout_ms=600_000)
        ll.add_partitions(p, topic, list(range(PARTITIONS)))
        for part in range(PARTITIONS):
            batch = [f"f-{part}-{i}".encode() for i in range(PER_PARTITION)]
            # a new topic's leaders reach kafka-python's metadata a moment after creation: the
            # same batch again (its sequence is not taken until a write succeeds)
            wait_until(
                lambda part=part, batch=batch: ll.produce(p, topic, part, batch) >= 0,
                30,
                "produce",
                tolerate=(NotLeader,),
            )
    finally:
        ll.close()
    assert state(kafka, tid) == ("Ongoing", p.producer_id, p.producer_epoch)
    r = run(
        kafka,
        tid,
        "--commit",
        "--producer-id",
        str(p.producer_id),
        "--epoch",
        str(p.producer_epoch),
        "--yes",
        "-o",
        "json",
        expect=0,
    )
    assert "looks like Flink's KafkaSink" in r.stderr and "checkpoint 42" in r.stderr, r.stderr
    assert r.json["ok"] is True
    want = sorted(f"f-{part}-{i}" for part in range(PARTITIONS) for i in range(PER_PARTITION))
    assert committed_values(kafka, topic) == want
    inspect = kxtx_on(kafka, "inspect", "txn", tid, "--no-scan", "-o", "json", expect=0).json
    assert inspect["owner_hint"].startswith("looks like Flink's KafkaSink")


def _read_until(fd: int, text: str, proc, timeout: float = 60) -> str:
    """What the run wrote to its terminal, up to and including `text`."""
    seen, deadline = "", time.monotonic() + timeout
    while text not in seen:
        assert proc.poll() is None and time.monotonic() < deadline, (proc.poll(), seen)
        if select.select([fd], [], [], 0.2)[0]:
            seen += os.read(fd, 4096).decode(errors="replace")
    return seen


def test_a_coordinator_frozen_mid_command_is_exit_75_and_the_rerun_is_truthful(kafka, lingering):
    """The broker (the coordinator) is frozen after the plan, while the run waits for its yes on a
    terminal: EndTxn gets no answer, exit 75. Thawed, the same line again either finishes the
    commit or, if the frozen request was served after all, refuses naming CompleteCommit; either
    way every record is readable once."""
    if kafka.sandbox is None:
        pytest.skip("freezes the broker: needs the sandbox broker, not KXTX_TEST_BOOTSTRAP")
    topic, tid, values, pid, epoch = lingering
    line = [tid, "--commit", "--producer-id", str(pid), "--epoch", str(epoch), "--timeout", "5"]
    master, slave = pty.openpty()
    proc = cli.start(
        "complete",
        *line,
        "-o",
        "json",
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        text=True,
        env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap},
    )
    os.close(slave)
    frozen = False
    try:
        _read_until(master, "[y/N]", proc)
        kafka.sandbox.pause_node(1)
        frozen = True
        os.write(master, b"y\n")
        out, _ = proc.communicate(timeout=120)
        said = _drain(master)
    finally:
        if frozen:
            kafka.sandbox.resume_node(1)
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert proc.returncode == 75, (proc.returncode, said)
    assert "Traceback" not in said and "kxtx: error:" in said, said
    assert json.loads(out)["status"] == "retry"
    again = run(kafka, *line, "--yes", expect=None)
    assert again.returncode in (0, 2), again.stderr
    if again.returncode == 2:
        assert "has no open transaction: the coordinator says" in again.stderr, again.stderr
    wait_until(lambda: committed_values(kafka, topic) == sorted(values), 60, "every record, once")


def _drain(fd: int) -> str:
    """The rest of what the run wrote to its terminal (Linux answers EIO once it has ended)."""
    said = ""
    while select.select([fd], [], [], 0.5)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        said += chunk.decode(errors="replace")
    return said
