"""Lost transaction markers, made for real on the 3-node cluster (KAFKA-20734), found, classified and
repaired by `audit-markers` / `repair-markers`, and refused by `abort-hanging`.

The scene: four topics, each with partition 0 on node 3 only and partition 1 on node 1 only. Four
transactional producers (coordinators not on node 3) write 5 records to both partitions of their own
topic. Node 3 is paused until the controller fences it (partition 0 has no leader); then A and D
commit, B and C abort. Kafka 4.0-4.4 completes those transactions without partition 0's marker;
Kafka 3.9 waits for the leader and writes it once node 3 is back. After node 3 is back, C commits a
second transaction on its partition 0 (so its lost abort is committed with it) and D aborts one (its
lost commit is dropped with it). Kafka 4 then shows one lost marker of each class; Kafka 3.9 none.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import end_offsets, read_committed, wait_until

pytestmark = [pytest.mark.multibroker, pytest.mark.versioned, pytest.mark.timeout(900)]

VICTIM = 3  # the node paused while the transactions end
RECORDS = 5
FINAL = ("CompleteCommit", "CompleteAbort")


def _tid_not_on(kafka, node: int) -> str:
    """A transactional id whose coordinator is not `node` (the pause must not move it)."""
    for _ in range(200):
        tid = f"lost-{uuid.uuid4().hex[:8]}"
        if ch.coordinator(kafka, tid) != node:
            return tid
    raise AssertionError(f"every transactional id tried is coordinated by node {node}")


def _producer(kafka, tid: str):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid, "log_level": 2})
    p.init_transactions(60)
    return p


def _write(p, topic: str, partitions, tag: str) -> None:
    p.begin_transaction()
    for part in partitions:
        for i in range(RECORDS):
            p.produce(topic, value=f"{tag}-{part}-{i}".encode(), partition=part)
    assert p.flush(60) == 0


def _states(kafka, tids: list[str]) -> dict[str, str]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        return {tid: d.state.value for tid, d in admin.describe_transactions(tids).items()}
    finally:
        admin.close()


def _committed(kafka, topic: str) -> Counter:
    return Counter((r.partition, r.value) for r in read_committed(kafka.bootstrap, topic))


@pytest.fixture(scope="module")
def scene(cluster3):
    kafka = cluster3
    ch.wait_healthy(kafka, [])
    names = "ABCD"
    topics = {
        n: kafka.create_topic(
            f"lost{n}-{uuid.uuid4().hex[:6]}", replicas=[[VICTIM], [1]], config={"min.insync.replicas": "1"}
        )
        for n in names
    }
    _producer(kafka, f"lost-init-{uuid.uuid4().hex[:8]}")  # __transaction_state exists from here on
    tids = {n: _tid_not_on(kafka, VICTIM) for n in names}
    producers = {n: _producer(kafka, tids[n]) for n in names}
    for n in names:
        _write(producers[n], topics[n], (0, 1), f"{n}1")
    kafka.sandbox.pause_node(VICTIM)
    try:
        wait_until(
            lambda: all(ch.leaders(kafka, topics[n])[0] < 0 for n in names),
            90,
            f"partition 0 without a leader (node {VICTIM} fenced)",
            every=0.5,
            tolerate=ch.MOVING,
        )
        producers["A"].commit_transaction(60)
        producers["B"].abort_transaction(60)
        producers["C"].abort_transaction(60)
        producers["D"].commit_transaction(60)
    finally:
        kafka.sandbox.resume_node(VICTIM)
    wait_until(
        lambda: all(ch.leaders(kafka, topics[n])[0] == VICTIM for n in names),
        120,
        f"node {VICTIM} leading partition 0 again",
        every=0.5,
        tolerate=ch.MOVING,
    )
    ch.wait_healthy(kafka, [])
    wait_until(
        lambda: set(_states(kafka, list(tids.values())).values()) <= set(FINAL),
        120,
        "every transaction completed by its coordinator",
        every=0.5,
        tolerate=ch.MOVING,
    )
    _write(producers["C"], topics["C"], (0,), "C2")
    producers["C"].commit_transaction(60)
    _write(producers["D"], topics["D"], (0,), "D2")
    producers["D"].abort_transaction(60)
    for p in producers.values():
        p.flush(10)
    return {"kafka": kafka, "topics": topics, "tids": tids, "lost": kafka.major >= 4}


def _audit(scene, *args: str):
    return ch.run(scene["kafka"], "audit-markers", "-o", "json", *args, expect=None)


def _findings(scene, topic_name: str, *args: str) -> list[dict]:
    r = _audit(scene, "--topic", scene["topics"][topic_name], *args)
    assert r.returncode in (0, 3), r.stderr
    return json.loads(r.stdout)["findings"]


def test_the_readme_lines_as_written(scene):
    """README's two lines (other tests' outages on this cluster may add rows: only exit codes here)."""
    audit = ch.run(scene["kafka"], "audit-markers", "--since", "2h", expect=None)
    plan = ch.run(scene["kafka"], "repair-markers", "--since", "2h", "--dry-run", expect=None)
    if scene["lost"]:
        assert audit.returncode == 3 and plan.returncode == 3, (audit.stderr, plan.stderr)
    else:
        assert audit.returncode == 0 and plan.returncode == 0, (audit.stderr, plan.stderr)
    assert "dry run" in plan.stderr or not scene["lost"], plan.stderr


def test_audit_classifies_each_lost_marker(scene):
    r = _audit(scene)
    doc = json.loads(r.stdout)
    mine = {f["topic"]: f for f in doc["findings"] if f["topic"] in scene["topics"].values()}
    if not scene["lost"]:
        # Kafka 3.9 waits for the leader: every marker was written, nothing to report, and the
        # records are as the coordinators decided.
        assert r.returncode == 0 and mine == {}, (r.stderr, mine)
        assert "nothing to check" not in r.stderr, r.stderr
        kafka, t = scene["kafka"], scene["topics"]
        assert _committed(kafka, t["A"]) == Counter(
            {(p, f"A1-{p}-{i}".encode()): 1 for p in (0, 1) for i in range(RECORDS)}
        )
        assert _committed(kafka, t["B"]) == Counter()
        assert _committed(kafka, t["C"]) == Counter({(0, f"C2-0-{i}".encode()): 1 for i in range(RECORDS)})
        assert _committed(kafka, t["D"]) == Counter(
            {(p, f"D1-{p}-{i}".encode()): 1 for p in (0, 1) for i in range(RECORDS)}
        )
        return
    assert r.returncode == 3, r.stderr
    t, tid = scene["topics"], scene["tids"]
    expected = {
        "A": ("lost-commit-open", "COMMIT", "open", True),
        "B": ("lost-abort-open", "ABORT", "open", True),
        "C": ("lost-abort-committed", "ABORT", "committed", False),
        "D": ("lost-commit-aborted", "COMMIT", "aborted", False),
    }
    for n, (kind, decided, fate, repairable) in expected.items():
        f = mine[t[n]]
        assert (f["kind"], f["decided"], f["fate"], f["repairable"]) == (kind, decided, fate, repairable), f
        assert (f["partition"], f["transactional_id"]) == (0, tid[n]), f
        # exactly the first transaction's records: offsets 0..4 of partition 0, not the second's
        assert (f["first_offset"], f["last_offset"], f["records"]) == (0, RECORDS - 1, RECORDS), f
    assert tid["C"] in mine[t["C"]]["ended_by"]
    # an offset window: from 0 the same; past the records, the decision cannot be judged
    (whole,) = _findings(scene, "A", "--partition", "0", "--from", "0")
    assert whole["kind"] == "lost-commit-open", whole
    (past,) = _findings(scene, "A", "--partition", "0", "--from", str(RECORDS))
    assert past["kind"] == "undetermined" and "--from" in past["detail"], past
    # partition 1 of every topic got its markers: nothing reported there
    assert all(f["partition"] == 0 for f in mine.values())


def test_monitor_counts_lost_markers(scene):
    kafka, topic = scene["kafka"], scene["topics"]["A"]
    r = ch.run(
        kafka, "monitor", "collect", "--topic", topic, "--audit-markers", "2h", "-o", "prometheus", expect=0
    )
    want = 1 if scene["lost"] else 0
    assert f'kxtx_lost_markers{{kind="lost-commit-open"}} {want}' in r.stdout, r.stdout
    check = ch.run(kafka, "monitor", "check", "--topic", topic, "--audit-markers", "2h", expect=None)
    if scene["lost"]:
        assert check.returncode == 2, check.stdout
        assert "lost transaction markers needing action 1" in check.stdout, check.stdout
    else:
        assert check.returncode == 0 and "lost_markers=0;" in check.stdout, check.stdout


def test_abort_hanging_refuses_a_lost_commit(scene):
    if not scene["lost"]:
        pytest.skip("Kafka 3.9 writes every marker: nothing hangs")
    kafka, topic = scene["kafka"], scene["topics"]["A"]
    before = end_offsets(kafka.bootstrap, topic)
    r = ch.run(kafka, "abort-hanging", "--topic", topic, "--max-transaction-timeout", "1s", "--yes", expect=3)
    assert "repair-markers" in r.stderr and "committed" in r.stderr, r.stderr
    one = ch.run(
        kafka, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0", "--yes", expect=3
    )
    assert "repair-markers" in one.stderr, one.stderr
    assert end_offsets(kafka.bootstrap, topic) == before  # nothing written: the LSO did not move
    forced = ch.run(
        kafka,
        "abort-hanging",
        "--topic",
        topic,
        "--max-transaction-timeout",
        "1s",
        "--drop-committed",
        "--dry-run",
        expect=3,
    )
    plan = [json.loads(line) for line in forced.stdout.splitlines()]
    assert [(p["kind"], p["partition"]) for p in plan] == [("plan", 0)], forced.stderr


def test_repair_writes_the_decided_markers(scene):
    if not scene["lost"]:
        pytest.skip("Kafka 3.9 writes every marker: nothing to repair")
    kafka, t = scene["kafka"], scene["topics"]
    a_before, b_before = _committed(kafka, t["A"]), _committed(kafka, t["B"])
    assert a_before == Counter({(1, f"A1-1-{i}".encode()): 1 for i in range(RECORDS)})
    assert b_before == Counter()
    # Its only broker down: a one-line error and exit 75 (run it again), nothing written. The
    # client bootstraps from the live nodes (a paused bootstrap address costs kafka-python's
    # bootstrap the whole --timeout: that is "no broker reachable", another test's subject).
    live = ",".join(f"127.0.0.1:{n.port}" for n in kafka.sandbox.info().node_list() if n.id != VICTIM)
    kafka.sandbox.pause_node(VICTIM)
    try:
        down = ch.run(
            kafka, "repair-markers", "--topic", t["A"], "--yes", "--timeout", "5", "-b", live, expect=75
        )
    finally:
        kafka.sandbox.resume_node(VICTIM)
    errors = [line for line in down.stderr.splitlines() if line.startswith("kxtx: error: ")]
    assert len(errors) == 1 and "Traceback" not in down.stderr, down.stderr
    wait_until(
        lambda: ch.leaders(kafka, t["A"])[0] == VICTIM,
        120,
        "partition 0 led again",
        every=0.5,
        tolerate=ch.MOVING,
    )
    assert _committed(kafka, t["A"]) == a_before
    ch.run(kafka, "repair-markers", "--topic", t["A"], "--dry-run", "-o", "json", expect=3)
    assert _committed(kafka, t["A"]) == a_before  # the dry run wrote nothing
    ch.run(kafka, "repair-markers", "--topic", t["A"], expect=2)  # no TTY, no --yes
    for n, marker in (("A", "COMMIT"), ("B", "ABORT")):
        r = ch.run(kafka, "repair-markers", "--topic", t[n], "--yes", "-o", "json", expect=0)
        rows = json.loads(r.stdout)["transactions"]
        assert [(x["marker"], x["outcome"], x["partition"]) for x in rows] == [
            (marker, "committed" if marker == "COMMIT" else "aborted", 0)
        ], rows
    # What the coordinators decided, no more: A's records on both partitions, none of B's.
    assert _committed(kafka, t["A"]) == Counter(
        {(p, f"A1-{p}-{i}".encode()): 1 for p in (0, 1) for i in range(RECORDS)}
    )
    assert _committed(kafka, t["B"]) == Counter()
    lso, hw = end_offsets(kafka.bootstrap, t["B"]), end_offsets(kafka.bootstrap, t["B"], committed=False)
    assert lso == hw  # the stuck LSO moved
    # Audited again: repaired, so healed; the exposed and dropped records cannot be repaired.
    assert [f["kind"] for f in _findings(scene, "A")] == ["healed"]
    assert [f["kind"] for f in _findings(scene, "B")] == ["healed"]
    c = ch.run(kafka, "repair-markers", "--topic", t["C"], "--yes", expect=0)
    assert "no lost marker to write" in c.stderr, c.stderr
    assert "lost-abort-committed not repaired" in c.stderr, c.stderr
