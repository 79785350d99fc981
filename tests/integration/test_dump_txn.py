"""`kxtx dump txn-state` against a real broker: committed, aborted, timed-out and fenced transactions.

Truth comes from DescribeTransactions (kafka-python) and from Kafka's own
TransactionLogMessageFormatter run from the broker's jars."""

from __future__ import annotations

import uuid
from collections import defaultdict

import pytest

from kxtx.records.partitioner import partition_for
from tests import cli
from tests.integration.dump_helpers import (
    assert_agrees,
    dump,
    kafka_formatter,
    key_type,
    states,
)
from tests.integration.kafka_io import wait_until

# Record formats and coordinator behaviour differ between 3.9 and 4.x: CI runs these on both.
pytestmark = pytest.mark.versioned

#: Java's String.hashCode of this id is Integer.MIN_VALUE (checked with Java): Kafka puts it in
#: partition Utils.abs(MIN_VALUE) % 50 = 0, where a naive abs() would give 48.
MIN_HASH_ID = "kxtx-txn-71970-a8k"


def _producer(kafka, tid: str, **conf):
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 60000,
            **conf,
        }
    )
    p.init_transactions(30)
    return p


def _one(p, topic: str, end: str | None) -> None:
    p.begin_transaction()
    p.produce(topic, b"v")
    p.flush(30)
    if end == "commit":
        p.commit_transaction(30)
    elif end == "abort":
        p.abort_transaction(30)


@pytest.fixture(scope="module")
def txns(kafka):
    from confluent_kafka import KafkaException
    from kafka.admin import KafkaAdminClient

    topic = kafka.create_topic()
    sfx = uuid.uuid4().hex[:8]
    ids = {k: f"dump-{k}-{sfx}" for k in ("commit", "abort", "timeout", "fenced")}
    ids["minhash"] = MIN_HASH_ID
    _one(_producer(kafka, ids["commit"]), topic, "commit")
    _one(_producer(kafka, ids["abort"]), topic, "abort")
    _one(_producer(kafka, ids["minhash"]), topic, "commit")
    # Never ended: the coordinator aborts it after transaction.timeout.ms (checked every 10 s).
    timed_out = _producer(kafka, ids["timeout"], **{"transaction.timeout.ms": 1000})
    _one(timed_out, topic, None)
    zombie = _producer(kafka, ids["fenced"])
    _one(zombie, topic, None)
    _producer(kafka, ids["fenced"])  # same id again: fences the zombie and aborts its transaction
    with pytest.raises(KafkaException):
        zombie.commit_transaction(10)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        wait_until(
            lambda: (
                admin.describe_transactions([ids["timeout"]])[ids["timeout"]].state.value == "CompleteAbort"
            ),
            90,
            "the timed-out transaction to be aborted",
            every=0.5,
        )
        truth = admin.describe_transactions(list(ids.values()))
    finally:
        admin.close()
    return ids, truth


def _by_id(rows):
    out = defaultdict(list)
    for r in rows:
        out[r["key"]["transactional_id"]].append(r)
    return out


@pytest.mark.parametrize(
    "case, expected",
    [
        ("commit", ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]),
        ("abort", ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"]),
        ("minhash", ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]),
        ("timeout", ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"]),
        ("fenced", ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]),
    ],
)
def test_state_sequence_and_producer_match_describe_transactions(run_kxtx, txns, case, expected):
    ids, truth = txns
    tid = ids[case]
    rows = dump(run_kxtx, "txn-state", "--transactional-id", tid)
    assert states(rows) == expected
    t = truth[tid]
    last = rows[-1]["value"]
    assert (last["producer_id"], last["producer_epoch"]) == (t.producer_id, t.producer_epoch)
    assert last["transaction_status"] == t.state.value
    assert all(r["value"]["producer_id"] == t.producer_id for r in rows)
    assert {r["partition"] for r in rows} == {partition_for(tid, 50)}
    ongoing = [r for r in rows if r["value"]["transaction_status"] == "Ongoing"]
    assert ongoing[-1]["value"]["transaction_partitions"], "Ongoing lists the partitions written"
    assert ongoing[-1]["value"]["transaction_timeout_ms"] == (1000 if case == "timeout" else 60000)
    if case in ("timeout", "fenced"):
        # Kafka bumps the epoch when it aborts a transaction the producer did not end itself.
        aborted = next(r for r in rows if r["value"]["transaction_status"] == "PrepareAbort")
        assert aborted["value"]["producer_epoch"] > ongoing[-1]["value"]["producer_epoch"]


def test_ids_live_in_the_partition_kafka_uses(run_kxtx, txns):
    """Read every partition without a filter: each id is where kxtx's formula says (MIN_VALUE -> 0)."""
    ids, _ = txns
    found = _by_id(r for r in dump(run_kxtx, "txn-state") if r["key"])
    for tid in ids.values():
        assert {r["partition"] for r in found[tid]} == {partition_for(tid, 50)}, tid
    assert {r["partition"] for r in found[MIN_HASH_ID]} == {0}


def test_latest_and_filters(run_kxtx, txns):
    ids, truth = txns
    args = [a for tid in ids.values() for a in ("-t", tid)]
    latest = dump(run_kxtx, "txn-state", *args, "--latest")
    assert {r["key"]["transactional_id"]: r["value"]["transaction_status"] for r in latest} == {
        tid: truth[tid].state.value for tid in ids.values()
    }
    aborted = dump(run_kxtx, "txn-state", *args, "--latest", "--state", "completeabort")
    assert {r["key"]["transactional_id"] for r in aborted} == {ids["abort"], ids["timeout"]}
    pid = truth[ids["commit"]].producer_id
    only = dump(run_kxtx, "txn-state", *args, "--producer-id", str(pid))
    assert {r["key"]["transactional_id"] for r in only} == {ids["commit"]}
    assert len(dump(run_kxtx, "txn-state", *args, "--limit", "3")) == 3
    assert all(r["value"]["transaction_status_code"] in range(8) for r in latest)


def test_agrees_with_kafkas_transaction_log_formatter(kafka, run_kxtx, txns):
    ids, _ = txns
    mine = _by_id(r for r in dump(run_kxtx, "txn-state") if r["key"])
    theirs = defaultdict(list)
    seen = sum(map(len, mine.values()))
    for rec in kafka_formatter(
        kafka, "__transaction_state", "TransactionLogMessageFormatter", min_messages=seen
    ):
        theirs[rec["key"]["data"]["transactionalId"]].append(rec)
    for tid in ids.values():
        assert len(theirs[tid]) == len(mine[tid]) > 0, tid
        for t, m in zip(theirs[tid], mine[tid]):
            assert key_type(t) == m["type_id"] == 0
            if t["value"] is None:
                assert m["tombstone"]
                continue
            assert t["value"]["version"] == m["version"]
            assert_agrees(t["value"]["data"], m["value"], f"{tid}@{m['offset']}")


def test_start_positions_partition_and_follow(kafka, run_kxtx):
    import subprocess

    tid = f"dump-follow-{uuid.uuid4().hex[:8]}"  # its own id: the other tests' histories stay as they are
    topic = kafka.create_topic()
    _one(_producer(kafka, tid), topic, "commit")
    rows = dump(run_kxtx, "txn-state", "-t", tid)
    assert dump(run_kxtx, "txn-state", "-t", tid, "--from-offset", str(rows[1]["offset"])) == rows[1:]
    since = rows[2]["timestamp_ms"]
    assert dump(run_kxtx, "txn-state", "-t", tid, "--since", str(since)) == [
        r for r in rows if r["timestamp_ms"] >= since
    ]
    p = partition_for(tid, 50)
    assert [
        r for r in dump(run_kxtx, "txn-state", "--partition", str(p)) if r["key"] == rows[0]["key"]
    ] == rows
    wrong = run_kxtx("dump", "txn-state", "-t", tid, "--partition", str((p + 1) % 50), expect=2)
    assert "holds none" in wrong.stderr
    # --follow: waits for new records; --limit ends it once the next transaction's records arrive.
    proc = cli.start(
        *("dump", "txn-state", "-t", tid, "--follow", "--limit", str(len(rows) + 2), "-o", "jsonl"),
        env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _one(_producer(kafka, tid), topic, "commit")
        followed = cli.finish(proc, timeout=90).rows
    finally:
        proc.kill()
    assert followed[: len(rows)] == rows and len(followed) == len(rows) + 2
    assert followed[-1]["offset"] > rows[-1]["offset"]


@pytest.mark.parametrize("sig, code, name", [(2, 130, "SIGINT"), (15, 143, "SIGTERM")])
def test_follow_stops_on_a_signal_with_a_summary(kafka, sig, code, name):
    """Ctrl-C / SIGTERM is how --follow normally ends: a one-line summary, not an error, and the
    exit code of the README's table; every row read before it is on stdout."""
    import json
    import subprocess
    import threading

    tid = f"dump-stop-{uuid.uuid4().hex[:8]}"
    topic = kafka.create_topic()
    _one(_producer(kafka, tid), topic, "commit")  # Empty, Ongoing, PrepareCommit, CompleteCommit
    proc = cli.start(
        *("dump", "txn-state", "-t", tid, "--follow", "-o", "jsonl"),
        env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(90, proc.kill)  # a dump that never shows its rows fails, not hangs
    watchdog.start()
    try:
        rows = [json.loads(proc.stdout.readline()) for _ in range(4)]
        assert [r["value"]["transaction_status"] for r in rows][-1] == "CompleteCommit"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        watchdog.cancel()
        proc.kill()
    assert proc.returncode == code, err
    assert out == ""  # nothing more arrived after the four rows
    assert err.splitlines() == [f"kxtx: stopped by {name} after 4 rows"]


def test_an_empty_result_says_so_on_stderr(run_kxtx, txns):
    """Outside a terminal the rows are JSON lines: a dump that matched nothing printed nothing at
    all, on stdout or stderr (issue 59)."""
    r = run_kxtx(
        "dump", "txn-state", "--transactional-id", f"nobody-{uuid.uuid4().hex[:6]}", "-o", "jsonl", expect=0
    )
    assert (
        r.stdout == ""
        and r.stderr.strip() == "kxtx: no record: nothing in the range read, or none matched the filters"
    )


def test_a_sharded_dump_that_matched_nothing_says_so_once(run_kxtx, txns):
    """Several processes (--workers), each seeing only its share: the parent says it, once."""
    r = run_kxtx("dump", "txn-state", "--from-offset", "1000000000", "--workers", "2", "-o", "jsonl")
    assert r.stdout == "" and r.stderr.count("kxtx: no record:") == 1, r.stderr
