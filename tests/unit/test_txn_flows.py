"""find-hanging / abort flows over a fake cluster: the order of Kafka's steps and kxtx's additions."""

from __future__ import annotations

import pytest

from kxtx.client.model import NOT_FOUND, CoordinatorTxn, Offsets, OpenTxn
from kxtx.client.settings import Settings
from kxtx.dump import txnlog as history
from kxtx.errors import partial_of
from kxtx.ops import abort, decide, hanging

NOW = 10_000_000_000
OLD = NOW - 16 * 60_000


class FakeCluster:
    def __init__(
        self, producers, listed=None, descs=None, offsets=None, committed=None, ops=None, max_ms=None
    ):
        self.settings = Settings(props={"bootstrap.servers": "x:1"}, timeout=1)
        self.producers = producers  # {tp: [OpenTxn]}
        self.listed = listed or {}
        self.descs = descs or {}
        self.off = offsets or {}
        self.comm = committed or {}
        self.ops = ops
        self.max_ms = max_ms
        self.markers = []
        self.asked_pids = None
        self.asked = []  # every ids_for_producers call's producer ids, in order

    def topics(self, topic=None):
        out = {}
        for t, p in self.producers:
            out.setdefault(t, {})[p] = (1, [1, 2] if p % 2 == 0 else [2, 3])
        return {k: v for k, v in out.items() if topic in (None, k)}

    def leaders(self, tps):
        moved = getattr(self, "moved_leaders", {})
        return {tp: moved.get(tp, self.topics(tp[0])[tp[0]][tp[1]][0]) for tp in tps}

    def describe_producers(self, tps, broker_id=None, progress=None):
        return {tp: self.producers.get(tp, []) for tp in tps}, {}

    def ids_for_producers(self, pids):
        self.asked_pids = set(pids)
        self.asked.append(set(pids))
        return {pid: v for pid, v in self.listed.items() if pid in pids}

    def describe_txns(self, ids):
        return {i: self.descs.get(i, NOT_FOUND) for i in ids}

    def max_txn_timeout_ms(self):
        return self.max_ms

    def offsets(self, tps):
        return {tp: self.off.get(tp, Offsets(5, 9)) for tp in tps}

    def committed(self, tps):
        return {tp: self.comm.get(tp, {}) for tp in tps}

    def cluster_operations(self):
        return self.ops

    def write_marker(self, tp, pid, epoch, coord, commit=False):
        self.markers.append((tp, pid, epoch, coord) + (("COMMIT",) if commit else ()))
        # the marker closes the transaction and releases the LSO
        self.producers[tp] = [OpenTxn(tp[0], tp[1], pid, epoch, coord, NOW, -1)]
        self.off[tp] = Offsets(10, 10)


def _o(t, p, pid, start=5, last=OLD, epoch=0, coord=-1):
    return OpenTxn(t, p, pid, epoch, coord, last, start)


@pytest.fixture(autouse=True)
def no_txn_log(monkeypatch):
    monkeypatch.setattr(history, "ids_for_producers", lambda settings, pids: {})


def _desc(tid, parts, state="Ongoing", pid=1):
    return CoordinatorTxn(tid, 1, state, pid, 0, 60_000, NOW - 1000, frozenset(parts))


def test_kafka_rules_end_to_end():
    c = FakeCluster(
        producers={
            ("a", 0): [_o("a", 0, 1)],  # tracked by the coordinator: not hanging
            ("a", 1): [_o("a", 1, 1)],  # same pid, partition not in the txn: hanging
            ("b", 0): [_o("b", 0, 2)],  # pid unknown: hanging
            ("b", 1): [_o("b", 1, 3, last=NOW - 1000)],  # young: not even a candidate
            ("c", 0): [_o("c", 0, 4, start=-1)],  # no open transaction
            ("c", 2): [_o("c", 2, 5)],  # id known but expired at the coordinator
        },
        listed={1: ("tx-1", "Ongoing"), 5: ("tx-5", "Ongoing")},
        descs={"tx-1": _desc("tx-1", {("a", 0)})},
        committed={("a", 1): {"g1": 5, "g2": 3}},
        ops={"ALL", "ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"},
    )
    r = hanging.find_hanging(c, hanging.Scope(), now_ms=NOW)
    assert r.max_timeout_ms == decide.DEFAULT_MAX_TIMEOUT_MS
    # Kafka's step (the candidates' producer ids), then kxtx's: the other open transactions'
    assert c.asked == [{1, 2, 5}, {1, 3}]
    held = {(h.topic, h.partition): h for h in r.held}
    assert set(held) == {("a", 0), ("b", 1)}
    assert (held[("a", 0)].kind, held[("a", 0)].action) == (decide.HOLD_ABANDONED, "kxtx fence tx-1")
    assert held[("a", 0)].ends_ms == NOW - 1000 + 60_000 and held[("a", 0)].coordinator_state == "Ongoing"
    assert (held[("b", 1)].kind, held[("b", 1)].transactional_id) == (decide.HOLD_UNTRACKED, None)
    got = {(h.topic, h.partition): h for h in r.hanging}
    assert set(got) == {("a", 1), ("b", 0), ("c", 2)}
    assert got[("a", 1)].transactional_id == "tx-1"
    assert got[("a", 1)].reason == decide.REASON_NOT_IN_TXN
    assert got[("a", 1)].coordinator_state == "Ongoing"
    assert got[("a", 1)].blocked_groups == ["g1"]
    assert (got[("a", 1)].lso, got[("a", 1)].high_watermark, got[("a", 1)].held_back) == (5, 9, 4)
    assert got[("b", 0)].transactional_id is None and got[("b", 0)].reason == decide.REASON_NO_ID
    assert got[("c", 2)].reason == decide.REASON_ID_NOT_FOUND
    assert r.warnings == [] and not any(h.maybe_false_positive for h in r.hanging)


def test_broker_scope_and_configured_timeout():
    c = FakeCluster(
        producers={
            ("a", 0): [_o("a", 0, 1, last=NOW - 61_000)],
            ("a", 1): [_o("a", 1, 1, last=NOW - 61_000)],
        },
        max_ms=60_000,
    )
    r = hanging.find_hanging(c, hanging.Scope(broker_id=1), now_ms=NOW)
    assert r.timeout_source.startswith("broker")
    assert r.partitions_checked == 1  # only a:0 has a replica on broker 1
    assert [(h.topic, h.partition) for h in r.hanging] == [("a", 0)]


def test_explicit_timeout_wins_and_acl_warning():
    c = FakeCluster(producers={("a", 0): [_o("a", 0, 1, last=NOW - 61_000)]}, max_ms=10, ops={"DESCRIBE"})
    r = hanging.find_hanging(c, hanging.Scope(), max_timeout_minutes=2, now_ms=NOW)
    assert r.max_timeout_ms == 120_000 and r.hanging == []
    r = hanging.find_hanging(c, hanging.Scope(), max_timeout_minutes=1, now_ms=NOW)
    assert len(r.hanging) == 1 and r.hanging[0].maybe_false_positive
    assert any("false positives" in w for w in r.warnings)


def test_txn_log_maps_rotated_producer_ids(monkeypatch):
    monkeypatch.setattr(history, "ids_for_producers", lambda settings, pids: {9: "tx-9"})
    c = FakeCluster(producers={("a", 0): [_o("a", 0, 9)]}, descs={"tx-9": _desc("tx-9", {("a", 0)}, pid=10)})
    assert hanging.find_hanging(c, hanging.Scope(), now_ms=NOW).hanging == []


def test_abort_rechecks_then_writes_epoch_zero_and_verifies():
    c = FakeCluster(
        producers={("a", 0): [_o("a", 0, 1, epoch=3, coord=-1)], ("a", 1): [_o("a", 1, 2, start=7)]}
    )
    rows = hanging.find_hanging(c, hanging.Scope(), now_ms=NOW).hanging
    targets = abort.targets_from_hanging(rows)
    assert [t.plan_row()["coordinator_epoch"] for t in targets] == [0, 0]
    # a:1 resolved by itself between the plan and the abort
    c.producers[("a", 1)] = [_o("a", 1, 2, start=-1)]
    out = {(o.topic, o.partition): o for o in abort.execute(c, targets)}
    assert c.markers == [(("a", 0), 1, 3, 0)]
    assert out[("a", 0)].outcome == "aborted" and out[("a", 0)].lso_after == 10
    assert out[("a", 1)].outcome == "already resolved"
    assert all(o.resolved for o in out.values())


def test_abort_reports_leaders_that_moved_since_the_plan():
    c = FakeCluster(
        producers={("a", 0): [_o("a", 0, 1)], ("a", 1): [_o("a", 1, 2)], ("a", 2): [_o("a", 2, 3)]}
    )
    targets = abort.targets_from_hanging(hanging.find_hanging(c, hanging.Scope(), now_ms=NOW).hanging)
    assert [t.plan_row()["leader"] for t in targets] == [1, 1, 1]
    c.moved_leaders = {("a", 1): 3, ("a", 2): -1}  # a:1 moved to broker 3; a:2 has none right now
    out = {o.partition: o for o in abort.execute(c, targets)}
    assert (out[0].outcome, out[0].planned_leader, out[0].leader) == ("aborted", 1, 1)
    assert out[1].outcome == "aborted" and out[1].leader == 3
    assert "leader moved from broker 1 to 3" in out[1].detail
    assert out[2].outcome == "leader moved" and not out[2].resolved
    assert [m[0] for m in c.markers] == [("a", 0), ("a", 1)]  # nothing written without a leader


def test_abort_stopped_midway_carries_the_outcomes_so_far():
    """A stop (or failure) after the first partition: the exception carries what was done, for the
    json document (kxtx.errors.carry)."""
    c = FakeCluster(producers={("a", 0): [_o("a", 0, 1)], ("a", 1): [_o("a", 1, 2)]})
    targets = abort.targets_from_hanging(hanging.find_hanging(c, hanging.Scope(), now_ms=NOW).hanging)
    leaders = c.leaders

    def second_is_stopped(tps):
        if ("a", 1) in tps:
            raise KeyboardInterrupt
        return leaders(tps)

    c.leaders = second_is_stopped
    with pytest.raises(KeyboardInterrupt) as info:
        abort.execute(c, targets)
    assert [(o.partition, o.outcome) for o in partial_of(info.value)] == [(0, "aborted")]


def test_manual_abort_by_start_offset_and_unknown_offset():
    from kxtx.errors import InputError

    c = FakeCluster(producers={("a", 0): [_o("a", 0, 1, start=5, coord=4), _o("a", 0, 2, start=8)]})
    t = abort.manual_target(c, ("a", 0), start_offset=8)
    assert t.expected.producer_id == 2
    t = abort.manual_target(c, ("a", 0), producer_id=1, producer_epoch=0)
    assert t.plan_row()["coordinator_epoch"] == 4
    with pytest.raises(InputError, match="no open transaction starts at offset 6"):
        abort.manual_target(c, ("a", 0), start_offset=6)


@pytest.mark.parametrize(
    "ops, allowed",
    [
        (None, True),  # unknown: the marker request decides
        ({"ALTER"}, True),  # Kafka 3.8+ (KIP-1037)
        ({"CLUSTER_ACTION"}, True),
        ({"ALL"}, True),
        ({"DESCRIBE", "IDEMPOTENT_WRITE"}, False),
    ],
)
def test_abort_preflight_names_the_missing_cluster_permission(ops, allowed):
    from kxtx.errors import AuthorizationError

    c = FakeCluster(producers={}, ops=ops)
    if allowed:
        abort.preflight(c)
    else:
        with pytest.raises(AuthorizationError, match="ALTER on Cluster is required .*CLUSTER_ACTION"):
            abort.preflight(c)


def test_a_repair_writes_commit_and_refuses_a_producer_that_wrote_since_the_plan():
    tp = ("r", 0)
    planned = OpenTxn("r", 0, 1, 2, 0, OLD, 5, last_sequence=4)
    c = FakeCluster(producers={tp: [planned]})
    (res,) = abort.execute(c, [abort.Target(planned, commit=True, same_writes=True)])
    assert (res.outcome, res.marker, c.markers) == ("committed", "COMMIT", [(tp, 1, 2, 0, "COMMIT")])
    moved_on = OpenTxn("r", 0, 1, 2, 0, NOW, 5, last_sequence=9)
    c = FakeCluster(producers={tp: [moved_on]})
    (res,) = abort.execute(c, [abort.Target(planned, commit=True, same_writes=True)])
    assert res.outcome == "failed" and "wrote to the partition since the plan" in res.detail
    assert c.markers == []  # nothing written


def test_a_marker_write_that_meets_a_moving_leader_writes_nothing_and_says_so():
    from kxtx.errors import KafkaOperationError

    tp = ("r", 0)
    planned = OpenTxn("r", 0, 1, 2, 0, OLD, 5)
    c = FakeCluster(producers={tp: [planned]})

    def refuse(*_args, **_kwargs):
        raise KafkaOperationError("WriteTxnMarkers COMMIT on r:0: NOT_LEADER_OR_FOLLOWER")

    c.write_marker = refuse
    (res,) = abort.execute(c, [abort.Target(planned, commit=True)])
    assert res.outcome == "leader moved" and "nothing written" in res.detail and not res.resolved
