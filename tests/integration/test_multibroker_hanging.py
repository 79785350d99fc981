"""Hanging transactions on partitions led by different brokers of the 3-node cluster.

find-hanging must find all of them, and with `--broker-id` the same set as Kafka's own
`kafka-transactions.sh find-hanging --broker-id` for each broker; abort-hanging aborts all, and a
leader that moves between the plan and the abort is reported as such, not a failed run."""

import json
import uuid

import pytest

from tests.conftest import json_doc
from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import wait_until
from tests.integration.txn_helpers import make_hanging

pytestmark = [pytest.mark.multibroker, pytest.mark.timeout(900)]


def _rows(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def _kafka_find_hanging(kafka, broker_id: int) -> set[tuple[str, int]]:
    """Kafka's own tool: the (topic, partition) rows of `find-hanging --broker-id`."""
    import subprocess

    argv = kafka.java_tool(
        "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server",
        kafka.bootstrap.split(",")[0],
        "find-hanging",
        "--broker-id",
        str(broker_id),
    )
    out = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines and lines[0].split()[:2] == ["Topic", "Partition"], out.stdout
    return {(cols[0], int(cols[1])) for cols in (line.split() for line in lines[1:]) if cols}


@pytest.fixture(scope="module")
def spread(cluster3):
    """Hanging transactions on: one partition of an RF-3 topic per leader (brokers 1, 2, 3), and
    on an RF-1 topic with one partition on each broker (so --broker-id sets differ)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    rf3 = cluster3.create_topic(f"hang3-{uuid.uuid4().hex[:6]}", partitions=6, replication=3)
    rf1 = f"hang1-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster3.bootstrap})
    admin.create_topics(
        [NewTopic(rf1, 3, replica_assignment=[[1], [2], [3]], config={"min.insync.replicas": "1"})]
    )[rf1].result(60)
    wait_until(
        lambda: all(v >= 0 for v in ch.leaders(cluster3, rf1).values()),
        60,
        "rf1 leaders",
        every=0.5,
        tolerate=ch.MOVING,
    )
    by_leader: dict[int, int] = {}
    for part, leader in sorted(ch.leaders(cluster3, rf3).items()):
        by_leader.setdefault(leader, part)
    assert len(by_leader) >= 2, f"the controller put every leader on one broker: {by_leader}"
    hang_on = [(rf3, p) for p in sorted(by_leader.values())] + [(rf1, p) for p in range(3)]
    tid = f"tx-spread-{uuid.uuid4().hex[:6]}"
    _p, starts = make_hanging(cluster3.bootstrap, tid, hang_on)
    return {"rf3": rf3, "rf1": rf1, "starts": starts, "tid": tid, "leaders": by_leader}


def test_find_hanging_covers_every_broker_like_kafka(cluster3, spread):
    found = ch.run(cluster3, "find-hanging", "-o", "jsonl", expect=3)
    rows = {(r["topic"], r["partition"]): r for r in _rows(found)}
    assert set(rows) == set(spread["starts"])
    for (topic, part), r in rows.items():
        assert r["leader"] == ch.leaders(cluster3, topic)[part]
        assert r["start_offset"] == spread["starts"][(topic, part)]
    for broker in (1, 2, 3):
        ours = ch.run(cluster3, "find-hanging", "--broker-id", str(broker), "-o", "jsonl", expect=3)
        got = {(r["topic"], r["partition"]) for r in _rows(ours)}
        theirs = _kafka_find_hanging(cluster3, broker)
        mine = {tp for tp in theirs if tp in spread["starts"]}  # other tests' leftovers aside
        assert got == mine, f"broker {broker}: kxtx {sorted(got)} vs Kafka {sorted(mine)}"
        # every RF-3 partition, and the one RF-1 partition that lives on this broker
        assert got == {tp for tp in spread["starts"] if tp[0] == spread["rf3"]} | {
            (spread["rf1"], broker - 1)
        }


def test_inspect_names_the_coordinator_and_each_partition_leader(cluster3, spread):
    r = ch.run(cluster3, "inspect", "txn", spread["tid"], "-o", "json")
    out = json_doc(r)
    assert out["coordinator"] == ch.coordinator(cluster3, spread["tid"])
    assert out["transaction_log_partition"].startswith("__transaction_state:")
    leaders = {(p["topic"], p["partition"]): p["leader"] for p in out["partitions"]}
    assert set(leaders) == set(spread["starts"])
    assert leaders == {tp: ch.leaders(cluster3, tp[0])[tp[1]] for tp in leaders}
    assert len(set(leaders.values())) == 3  # the RF-1 partitions alone sit on three brokers
    topic, part = next(iter(sorted(spread["starts"])))
    r = ch.run(cluster3, "inspect", "partition", f"{topic}:{part}", "-o", "json")
    one = json.loads(r.stdout)
    assert one["leader"] == ch.leaders(cluster3, topic)[part] and one["leader"] in one["replicas"]


def test_abort_hanging_reports_a_leader_that_moved_after_the_plan(cluster3, spread):
    from kxtx.client.admin import Cluster
    from kxtx.ops import abort
    from kxtx.ops.hanging import Scope, find_hanging

    with Cluster(cluster3.settings()) as cluster:
        report = find_hanging(cluster, Scope())
        targets = [t for t in abort.targets_from_hanging(report.hanging) if t.expected.tp in spread["starts"]]
        assert len(targets) == len(spread["starts"])
        # Between plan and abort: broker `victim` shuts down; its RF-3 leaderships move to another
        # replica, its RF-1 partition has no leader at all.
        moving = (
            next(t for t in targets if t.expected.topic == spread["rf3"] and t.leader == 2)
            if 2 in spread["leaders"]
            else next(t for t in targets if t.expected.topic == spread["rf3"])
        )
        victim = moving.leader
        cluster3.sandbox.stop_node(victim)
        try:
            wait_until(
                lambda: ch.leaders(cluster3, spread["rf3"])[moving.expected.partition] not in (victim, -1),
                ch.FENCE_WAIT_S,
                "the leadership to move",
                every=0.5,
                tolerate=ch.MOVING,
            )
            results = {(r.topic, r.partition): r for r in abort.execute(cluster, targets)}
        finally:
            cluster3.sandbox.start_node(victim)
    moved = results[moving.expected.tp]
    assert moved.outcome == "aborted", moved
    assert moved.planned_leader == victim and moved.leader != victim
    assert f"leader moved from broker {victim} to {moved.leader}" in moved.detail
    offline = results[(spread["rf1"], victim - 1)]
    assert offline.outcome == "leader moved" and not offline.resolved, offline
    others = [
        r
        for tp, r in results.items()
        if tp not in (moving.expected.tp, offline and (spread["rf1"], victim - 1))
    ]
    assert all(r.outcome == "aborted" for r in others), others
    wait_until(
        lambda: ch.leaders(cluster3, spread["rf1"])[victim - 1] == victim,
        120,
        "rf1 back",
        every=0.5,
        tolerate=ch.MOVING,
    )
    # The operator's rerun finds only the partition that could not be aborted, and aborts it.
    again = ch.run(cluster3, "abort-hanging", "--yes", "-o", "jsonl", expect=0)
    outcomes = {(r["topic"], r["partition"]): r["outcome"] for r in _rows(again) if "outcome" in r}
    assert {tp: o for tp, o in outcomes.items() if tp in spread["starts"]} == {
        (spread["rf1"], victim - 1): "aborted"
    }
    ch.run(cluster3, "find-hanging", "--topic", spread["rf1"], expect=0)
    ch.run(cluster3, "find-hanging", "--topic", spread["rf3"], expect=0)
