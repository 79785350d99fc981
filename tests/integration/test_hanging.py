"""Hanging transactions on a real broker: find-hanging, abort-hanging, abort, inspect, fence.

The broker runs with `transaction.partition.verification.enable=false`, so a transactional Produce to
a partition never added to the transaction is accepted (see txn_helpers): a truly hanging
transaction. A dedicated broker per module, because the session broker keeps verification on.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.conftest import json_doc
from tests.integration.kafka_io import commit_offset, end_offsets, read_committed
from tests.integration.txn_helpers import LowLevel, hanging_broker, kxtx_on, make_hanging
from tests.unit.record_encoder import iso

# Transactions v2 (4.x) and v1 (3.9) hang and abort differently: CI runs these on both.
pytestmark = [pytest.mark.kafka, pytest.mark.versioned]


@pytest.fixture(scope="module")
def broker(brokers):
    return hanging_broker(brokers)


kxtx = kxtx_on


def rows(result):
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def offsets(broker, topic, partition):
    """(LSO, high watermark)"""
    return tuple(end_offsets(broker.bootstrap, topic, committed)[partition] for committed in (True, False))


def produce_plain(broker, topic, partition, n):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(n):
        p.produce(topic, value=f"before-{i}".encode(), partition=partition)
    assert p.flush(30) == 0


def committed_values(broker, topic, partition) -> list[str]:
    """The values a read_committed consumer gets from the start of a partition: up to its LSO."""
    return [r.value.decode() for r in read_committed(broker.bootstrap, topic) if r.partition == partition]


@pytest.fixture(scope="module")
def hanging(broker):
    """Hanging transactions on a:0 and a:2 (the producer commits normally on b:1) and on b:1 after a
    committed marker there (so its coordinator epoch is 0, where kafka-python's -1 is rejected).
    a:0 has 4 committed records first, and group `blocked` sits at the stuck LSO."""
    a = broker.create_topic(f"hang-a-{uuid.uuid4().hex[:6]}", partitions=3)
    b = broker.create_topic(f"hang-b-{uuid.uuid4().hex[:6]}", partitions=2)
    produce_plain(broker, a, 0, 4)
    tid = f"tx-hang-{uuid.uuid4().hex[:6]}"
    p, starts = make_hanging(broker.bootstrap, tid, [(a, 0), (a, 2)], commit_on=(b, 1))
    # The COMMIT marker is written asynchronously: until it is, a new batch would join that transaction.
    deadline = time.monotonic() + 30
    while offsets(broker, b, 1)[0] != offsets(broker, b, 1)[1] and time.monotonic() < deadline:
        time.sleep(0.1)
    ll = LowLevel(broker.bootstrap)
    try:
        starts[(b, 1)] = ll.produce(p, b, 1, [b"hanging-b"], timestamp_ms=int(time.time() * 1000) - 3_600_000)
    finally:
        ll.close()
    group = f"blocked-{uuid.uuid4().hex[:6]}"
    assert committed_values(broker, a, 0) == [f"before-{i}" for i in range(4)]
    commit_offset(broker.bootstrap, group, a, 0, offsets(broker, a, 0)[0])  # the group at the stuck LSO
    return {
        "a": a,
        "b": b,
        "tid": tid,
        "pid": p.producer_id,
        "epoch": p.producer_epoch,
        "starts": starts,
        "group": group,
    }


def test_find_hanging_reports_exactly_the_hanging_partitions(broker, hanging):
    r = kxtx(broker, "find-hanging", "-o", "jsonl", expect=3)
    got = {(x["topic"], x["partition"]): x for x in rows(r)}
    assert set(got) == set(hanging["starts"])
    for tp, x in got.items():
        assert (x["producer_id"], x["producer_epoch"]) == (hanging["pid"], hanging["epoch"])
        assert x["start_offset"] == hanging["starts"][tp]
        assert x["transactional_id"] == hanging["tid"]
        assert x["coordinator_state"] == "CompleteCommit"
        assert x["lso"] == hanging["starts"][tp] and x["held_back"] == x["high_watermark"] - x["lso"] > 0
    assert got[(hanging["a"], 0)]["start_offset"] == 4
    for x in got.values():  # a time in ms and, next to it, ISO-8601 (as in dump and inspect)
        assert x["last_time"] == iso(x["last_timestamp_ms"]) and "last_timestamp" not in x
    assert got[(hanging["a"], 0)]["blocked_groups"] == [hanging["group"]]
    assert got[(hanging["b"], 1)]["coordinator_epoch"] == 0  # a marker was written there before
    # the same, scoped to one broker and to one partition
    r = kxtx(broker, "find-hanging", "--broker-id", "1", "-o", "jsonl", expect=3)
    assert {(x["topic"], x["partition"]) for x in rows(r)} == set(got)
    r = kxtx(broker, "find-hanging", "--topic", hanging["a"], "--partition", "1", "-o", "jsonl", expect=0)
    assert rows(r) == []


def test_inspect_names_the_hanging_partitions(broker, hanging):
    r = kxtx(broker, "inspect", "txn", hanging["tid"], "-o", "json")
    out = json_doc(r)
    want = ", ".join(f"{t}:{p}" for t, p in sorted(hanging["starts"]))
    assert out["verdict"] == f"hanging on {want}"
    assert [h["state"] for h in out["history"]][-1] == "CompleteCommit"
    for h in out["history"]:  # the same names and both time forms as `dump` shows
        assert h["time"] == iso(h["timestamp_ms"])
        assert h["txn_start_time"] == iso(h["txn_start_timestamp_ms"])
        assert h["last_update_time"] == iso(h["last_update_timestamp_ms"])
    r = kxtx(broker, "inspect", "partition", f"{hanging['a']}:0", "-o", "json")
    out = json.loads(r.stdout)
    assert out["lso"] == 4 and out["open_transactions"][0]["transactional_id"] == hanging["tid"]
    assert out["open_transactions"][0]["status"].startswith("hanging")
    assert out["open_transactions"][0]["last_time"] == iso(out["open_transactions"][0]["last_timestamp_ms"])
    assert out["groups"] == [{"group": hanging["group"], "committed": 4, "blocked": True}]


def test_dry_run_and_refusal_change_nothing(broker, hanging):
    before = {tp: offsets(broker, *tp) for tp in hanging["starts"]}
    r = kxtx(broker, "abort-hanging", "--dry-run", "-o", "jsonl", expect=3)
    assert {(x["topic"], x["partition"]) for x in rows(r)} == set(hanging["starts"])
    assert all(x["action"] == "abort" for x in rows(r))
    r = kxtx(broker, "abort-hanging", "-o", "jsonl", expect=2)  # no TTY, no --yes
    assert "without --yes" in r.stderr
    assert {tp: offsets(broker, *tp) for tp in hanging["starts"]} == before
    kxtx(broker, "find-hanging", "-o", "jsonl", expect=3)


def test_abort_hanging_yes_releases_the_lso(broker, hanging):
    r = kxtx(broker, "abort-hanging", "--yes", "-o", "jsonl", expect=0)
    # plan rows, then result rows, in one stream: `kind` tells which
    assert [x["kind"] for x in rows(r)] == ["plan"] * len(hanging["starts"]) + ["result"] * len(
        hanging["starts"]
    )
    results = [x for x in rows(r) if x["kind"] == "result"]
    assert {(x["topic"], x["partition"]): x["outcome"] for x in results} == {
        tp: "aborted" for tp in hanging["starts"]
    }
    for tp in hanging["starts"]:
        lso, hw = offsets(broker, *tp)
        assert lso == hw
    # A read_committed consumer now gets past the stuck point; the aborted records stay invisible.
    produce_plain(broker, hanging["a"], 0, 1)
    seen = committed_values(broker, hanging["a"], 0)
    assert seen == [f"before-{i}" for i in range(4)] + ["before-0"]
    assert not any(v.startswith("hanging") for v in seen)
    kxtx(broker, "find-hanging", "-o", "jsonl", expect=0)
    # abort-hanging again: nothing to do, and still one JSON document for a script (it printed nothing)
    doc = kxtx(broker, "abort-hanging", "--yes", "-o", "json", expect=0).json
    assert (doc["status"], doc["transactions"]) == ("ok", []), doc
    r = kxtx(broker, "abort-hanging", "--yes", "-o", "jsonl", expect=0)
    assert r.stdout == "", r.stdout


def test_manual_abort_by_start_offset(broker):
    t = broker.create_topic(f"hang-m-{uuid.uuid4().hex[:6]}", partitions=1)
    _p, starts = make_hanging(broker.bootstrap, f"tx-m-{uuid.uuid4().hex[:6]}", [(t, 0)])
    r = kxtx(broker, "abort", "--topic", t, "--partition", "0", "--start-offset", "7", "--yes", expect=1)
    assert "no open transaction starts at offset 7" in r.stderr
    r = kxtx(broker, "abort", "--topic", t, "--partition", "0", "--start-offset", "0", expect=2)
    r = kxtx(
        broker,
        "abort",
        "--topic",
        t,
        "--partition",
        "0",
        "--start-offset",
        "0",
        "--yes",
        "-o",
        "jsonl",
        expect=0,
    )
    assert rows(r)[-1]["outcome"] == "aborted"
    lso, hw = offsets(broker, t, 0)
    assert lso == hw == 4  # 3 records + the abort marker


def test_no_history_still_shows_the_partitions_of_a_finished_transaction(broker):
    from confluent_kafka import Producer

    t = broker.create_topic(f"done-{uuid.uuid4().hex[:6]}", partitions=3)
    tid = f"tx-done-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(t, value=b"v%d" % i, partition=i)
    p.commit_transaction(30)
    seen = {}
    for extra in ([], ["--no-history"]):
        r = kxtx(broker, "inspect", "txn", tid, "-o", "json", *extra)
        out = json_doc(r)
        seen[bool(extra)] = sorted((row["topic"], row["partition"]) for row in out["partitions"])
        assert ("history" in out) is not bool(extra)
    assert seen[False] == seen[True] == [(t, 0), (t, 1), (t, 2)]


def test_ongoing_transaction_is_not_hanging_and_fence_ends_it(broker):
    from confluent_kafka import Producer

    t = broker.create_topic(f"long-{uuid.uuid4().hex[:6]}", partitions=1)
    tid = f"tx-long-{uuid.uuid4().hex[:6]}"
    p = Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 300_000}
    )
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(t, value=b"open-%d" % i, partition=0)
    assert p.flush(30) == 0
    time.sleep(1.5)  # past the 1s max below: a candidate, yet the coordinator tracks it
    r = kxtx(broker, "find-hanging", "--topic", t, "--max-transaction-timeout", "1s", "-o", "jsonl", expect=0)
    assert rows(r) == [], r.stderr
    out = json.loads(kxtx(broker, "inspect", "txn", tid, "-o", "json").stdout)
    assert out["state"] == "Ongoing" and out["verdict"].startswith("ongoing for")
    assert out["txn_start_time"] == iso(out["txn_start_timestamp_ms"]) is not None
    assert out["partitions"][0]["blocking"] is True and out["partitions"][0]["hanging"] is False
    out = json.loads(kxtx(broker, "inspect", "partition", f"{t}:0", "-o", "json").stdout)
    assert out["open_transactions"][0]["status"] == "ongoing (coordinator: Ongoing)"
    assert out["open_transactions"][0]["blocking"] is True and out["held_back"] == 3
    kxtx(broker, "fence", tid, expect=2)  # no TTY, no --yes
    r = kxtx(broker, "fence", tid, "--yes", "-o", "json")
    res = json_doc(r)
    assert res["after"]["producer_epoch"] > res["before"]["producer_epoch"]
    lso, hw = offsets(broker, t, 0)
    assert lso == hw
    with pytest.raises(Exception):
        p.commit_transaction(10)  # the old producer is fenced


def test_committed_and_aborted_only_is_clean(broker):
    from confluent_kafka import Producer

    t = broker.create_topic(f"clean-{uuid.uuid4().hex[:6]}", partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-c-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(30)
    for commit in (True, False):
        p.begin_transaction()
        p.produce(t, value=b"x", partition=0)
        p.produce(t, value=b"y", partition=1)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    r = kxtx(broker, "find-hanging", "--topic", t, "--max-transaction-timeout", "0", "-o", "jsonl", expect=0)
    assert r.stdout == "", r.stderr
    # stdout stays data only; stderr says so, as abort-hanging does
    assert "kxtx: nothing hangs (2 partitions checked)" in r.stderr.splitlines(), r.stderr
    r = kxtx(broker, "inspect", "txn", "no-such-transactional-id", expect=1)
    assert "unknown to its coordinator" in r.stderr


def test_a_stuck_lso_that_does_not_hang_is_named_with_why_and_what_ends_it(broker):
    """Issue 59, on both Kafka versions: an LSO held by an open transaction that is not hanging by
    Kafka's definition is still explained, with the command that ends it. A write outside any
    transaction its coordinator began is `untracked` (it counts as hanging only after the max
    transaction timeout: find-hanging said "nothing hangs" until then); a crashed producer's
    transaction is `in-progress`, then `abandoned` once silent for a minute, with `kxtx fence`."""
    from confluent_kafka import Producer

    t = broker.create_topic(f"held-{uuid.uuid4().hex[:6]}", partitions=2)
    tid = f"tx-abandoned-{uuid.uuid4().hex[:6]}"
    gone = Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 300_000}
    )
    gone.init_transactions(30)
    gone.begin_transaction()
    gone.produce(t, value=b"pre-committed", partition=0)
    assert gone.flush(30) == 0  # then nothing more, as from a producer that crashed
    silent_since = time.monotonic()
    make_hanging(broker.bootstrap, f"tx-outside-{uuid.uuid4().hex[:6]}", [(t, 1)], age_ms=0)

    r = kxtx(broker, "find-hanging", "--topic", t, "-o", "json")
    held = {h["partition"]: h for h in json_doc(r)["lso_held"]}  # exit 0: nothing hangs
    assert held[0]["kind"] == "in-progress" and held[0]["action"] is None
    assert held[1]["kind"] == "untracked"
    assert held[1]["action"] == f"kxtx abort-hanging --topic {t} --partition 1 --max-transaction-timeout 0"
    assert "untracked" in r.stderr and "1 stuck LSO not hanging" in r.stderr
    kxtx(broker, *held[1]["action"].split()[1:], "--yes", expect=0)
    assert offsets(broker, t, 1)[0] == offsets(broker, t, 1)[1]

    time.sleep(max(0.0, 61 - (time.monotonic() - silent_since)))  # silent past the minute
    r = kxtx(broker, "find-hanging", "--topic", t, "-o", "json")
    (h,) = json_doc(r)["lso_held"]
    assert (h["partition"], h["kind"], h["action"], h["transactional_id"]) == (
        0,
        "abandoned",
        f"kxtx fence {tid}",
        tid,
    )
    assert h["ends_time"] and f"ends it now: kxtx fence {tid}" in r.stderr
    assert offsets(broker, t, 0)[0] < offsets(broker, t, 0)[1]
    kxtx(broker, "fence", tid, "--yes", expect=0)
    assert offsets(broker, t, 0)[0] == offsets(broker, t, 0)[1]
    assert committed_values(broker, t, 0) == []


def test_make_hanging_fits_a_broker_with_a_short_max_transaction_timeout(brokers):
    """txn_helpers.make_hanging asked for a 300,000 ms transaction timeout, which a broker with
    transaction.max.timeout.ms=60000 refuses (InvalidTransactionTimeout): it takes the broker's
    maximum when that is less (issue 63, item 10)."""
    from tests.integration.txn_helpers import BROKER_CONFIG

    short = brokers({**BROKER_CONFIG, "transaction.max.timeout.ms": "60000"})
    topic = short.create_topic()
    _p, starts = make_hanging(short.bootstrap, f"short-{uuid.uuid4().hex[:6]}", [(topic, 0)])
    doc = kxtx_on(short, "find-hanging", "--topic", topic, "-o", "json", expect=3).json
    assert [(h["topic"], h["partition"], h["start_offset"]) for h in doc["hanging"]] == [
        (topic, 0, starts[(topic, 0)])
    ]
    kxtx_on(short, "abort-hanging", "--topic", topic, "--yes", expect=0)
