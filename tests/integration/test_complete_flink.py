"""A real Flink 2.2 job stopped between pre-commit and commit, finished by `kxtx complete` (issue 61).

tests/integration/java/flink/KxtxFlinkPreCommit.java runs in a local MiniCluster (one JVM, no
cluster): a KafkaSink with DeliveryGuarantee.EXACTLY_ONCE and a transactional id prefix, two
subtasks, checkpointing on. Checkpoint 1 is triggered once each subtask passed its 5 records to
the sink; there each subtask's sink flushes and pre-commits its transaction (PREFIX-SUBTASK-1),
then the job blocks before the checkpoint can complete, so no
committer commits; the test SIGKILLs the JVM there (the Java file says why that point is exact).
Each subtask writes to two partitions of its own, so the two lingering transactions are independent:
kxtx names both as Flink's, commits one and aborts the other. The checks read independently of kxtx:
the coordinator through kafka-python, the LSO with ListOffsets, the records read_committed.
"""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest

from tests import flink
from tests.integration.kafka_io import end_offsets, read_committed
from tests.integration.txn_helpers import kxtx_on

pytestmark = [pytest.mark.kafka, pytest.mark.versioned]

SUBTASKS = 2
PER_SUBTASK = 5  # KxtxFlinkPreCommit.PER_SUBTASK
PARTITIONS = 2 * SUBTASKS  # subtask s writes to partitions 2s and 2s+1


def _state(kafka, tid: str) -> tuple[str, int, int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=30000)
    try:
        d = admin.describe_transactions([tid])[tid]
    finally:
        admin.close()
    return (getattr(d.state, "value", None) or str(d.state), d.producer_id, d.producer_epoch)


def _committed(kafka, topic: str) -> list[str]:
    return sorted(r.value.decode() for r in read_committed(kafka.bootstrap, topic, timeout=30))


def run_until_pre_committed(kafka, topic: str, prefix: str, tmp_path) -> dict[int, list[str]]:
    """Run the job until every subtask pre-committed checkpoint 1, then SIGKILL it: {subtask:
    the values in its transaction}."""
    argv = flink.job()
    log = tmp_path / "flink.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [*argv, kafka.bootstrap, topic, prefix, str(tmp_path), str(SUBTASKS)],
            stdout=err,
            stderr=subprocess.STDOUT,
        )
        try:
            signals = [tmp_path / f"precommitted-{s}" for s in range(SUBTASKS)]
            deadline = time.monotonic() + 180
            while not all(p.exists() for p in signals):
                assert proc.poll() is None, (
                    f"the Flink job ended ({proc.returncode}): {log.read_text()[-4000:]}"
                )
                assert time.monotonic() < deadline, f"no pre-commit in 180 s: {log.read_text()[-4000:]}"
                time.sleep(0.1)
        finally:
            proc.kill()  # SIGKILL: no close, no abort, no commit
            proc.wait(30)
    return {s: p.read_text().splitlines() for s, p in enumerate(signals)}


def test_a_flink_job_killed_after_pre_commit_is_committed_or_aborted_by_kxtx(kafka, tmp_path):
    topic = kafka.create_topic(f"cpl-flink-{uuid.uuid4().hex[:6]}", partitions=PARTITIONS)
    prefix = f"orders-sink-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    pre = run_until_pre_committed(kafka, topic, prefix, tmp_path)
    flink_s = time.monotonic() - started
    print(f"the Flink job ran {flink_s:.1f} s until both subtasks pre-committed")
    committed_tid, aborted_tid = f"{prefix}-0-1", f"{prefix}-1-1"  # Flink's PREFIX-SUBTASK-CHECKPOINT
    assert [len(v) for v in pre.values()] == [PER_SUBTASK] * SUBTASKS and not set(pre[0]) & set(pre[1]), pre

    # The coordinator holds both open, the records are on the brokers, the LSO is held at 0.
    coord = {tid: _state(kafka, tid) for tid in (committed_tid, aborted_tid)}
    assert {st for st, _pid, _epoch in coord.values()} == {"Ongoing"}, coord
    hw = end_offsets(kafka.bootstrap, topic, committed=False)
    for s, values in pre.items():  # alternately on 2s and 2s+1
        assert (hw[2 * s], hw[2 * s + 1]) == ((len(values) + 1) // 2, len(values) // 2), (s, hw)
    assert end_offsets(kafka.bootstrap, topic) == dict.fromkeys(range(PARTITIONS), 0)
    assert _committed(kafka, topic) == []

    # kxtx names them: find-hanging's held LSOs (nothing hangs yet by KIP-664's definition) ...
    found = kxtx_on(kafka, "find-hanging", "--topic", topic, "-o", "json", expect=0)
    held = {h["partition"]: h for h in found.json["lso_held"]}
    assert sorted(held) == list(range(PARTITIONS)), found.stdout
    for p, h in held.items():
        tid = f"{prefix}-{p // 2}-1"
        assert h["transactional_id"] == tid and h["producer_id"] == coord[tid][1], h
        assert h["owner_hint"].startswith(
            f"looks like Flink's KafkaSink (prefix {prefix!r}, subtask {p // 2}"
        )
        assert "checkpoint 1)" in h["owner_hint"] and "its sink then aborts it" in h["owner_hint"], h
    # ... and inspect txn, from the coordinator
    for tid, (_st, pid, epoch) in coord.items():
        doc = kxtx_on(kafka, "inspect", "txn", tid, "--no-scan", "-o", "json", expect=0).json
        assert (doc["state"], doc["producer_id"], doc["producer_epoch"]) == ("Ongoing", pid, epoch), doc
        assert doc["owner_hint"].startswith("looks like Flink's KafkaSink"), doc

    # Subtask 0's transaction committed with its producer id and epoch: its records, each once.
    _st, pid, epoch = coord[committed_tid]
    r = kxtx_on(
        kafka,
        "complete",
        committed_tid,
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
    assert r.json["ok"] is True and r.json["outcome"] == "commit", r.stdout
    assert "looks like Flink's KafkaSink" in r.stderr, r.stderr
    assert _state(kafka, committed_tid)[0] == "CompleteCommit"
    assert _committed(kafka, topic) == sorted(pre[0])
    lso = end_offsets(kafka.bootstrap, topic)
    assert (lso[0], lso[1]) == (hw[0] + 1, hw[1] + 1) and (lso[2], lso[3]) == (0, 0), lso  # +1: the marker

    # Subtask 1's aborted: none of its records ever readable, and no LSO held any more.
    r = kxtx_on(kafka, "complete", aborted_tid, "--abort", "--yes", "-o", "json", expect=0)
    assert r.json["ok"] is True and r.json["outcome"] == "abort", r.stdout
    assert _state(kafka, aborted_tid)[0] == "CompleteAbort"
    assert _committed(kafka, topic) == sorted(pre[0])
    lso = end_offsets(kafka.bootstrap, topic)
    assert lso == end_offsets(kafka.bootstrap, topic, committed=False)
    assert lso == {p: hw[p] + 1 for p in range(PARTITIONS)}


def test_a_restart_without_state_aborts_it_and_complete_refuses_the_old_epoch(kafka, tmp_path):
    """The same job started again without its state, with the same prefix: Flink's KafkaSink aborts
    the lingering transactions of its prefix at start (InitProducerId on PREFIX-SUBTASK-1 and on)
    and uses those ids again. The records the first run pre-committed are gone for good, and
    `complete` with the first run's producer id and epoch (what its checkpoint would hold) refuses:
    it would end the second run's transaction instead."""
    topic = kafka.create_topic(f"cpl-flink-r-{uuid.uuid4().hex[:6]}", partitions=PARTITIONS)
    prefix = f"orders-sink-{uuid.uuid4().hex[:6]}"
    (tmp_path / "first").mkdir()
    (tmp_path / "again").mkdir()
    run_until_pre_committed(kafka, topic, prefix, tmp_path / "first")
    tid = f"{prefix}-0-1"
    first = {s: _state(kafka, f"{prefix}-{s}-1") for s in range(SUBTASKS)}
    hw = end_offsets(kafka.bootstrap, topic, committed=False)
    again = run_until_pre_committed(kafka, topic, prefix, tmp_path / "again")

    # The same ids, open again under the same producer ids, later epochs; the first run's records
    # were aborted (the LSO is past them and their ABORT marker, held by the second run's).
    for s, (_st, pid, epoch) in first.items():
        st, pid_now, epoch_now = _state(kafka, f"{prefix}-{s}-1")
        assert (st, pid_now) == ("Ongoing", pid) and epoch_now > epoch, (s, first[s], st, epoch_now)
    assert end_offsets(kafka.bootstrap, topic) == {p: hw[p] + 1 for p in range(PARTITIONS)}

    _st, pid, epoch = first[0]
    now = _state(kafka, tid)
    refused = kxtx_on(
        kafka,
        "complete",
        tid,
        "--commit",
        "--producer-id",
        str(pid),
        "--epoch",
        str(epoch),
        "--yes",
        expect=2,
    )
    line = f"epoch {epoch} given, but the coordinator's open transaction is producer id {pid}, epoch {now[2]}"
    assert line in refused.stderr, refused.stderr
    assert _state(kafka, tid) == now

    # The second run's: subtask 0's committed, subtask 1's aborted. The values repeat the first
    # run's (the source starts again at index 0): each must be read once.
    kxtx_on(kafka, "complete", tid, "--commit", "--producer-id", str(pid), "--epoch", str(now[2]), "--yes")
    kxtx_on(kafka, "complete", f"{prefix}-1-1", "--abort", "--yes")
    assert _committed(kafka, topic) == sorted(again[0])
