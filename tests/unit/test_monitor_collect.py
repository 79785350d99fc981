"""snapshot.collect over the fake cluster of test_txn_flows: which figures come from which answer.
The real Kafka behaviour (markers, aborted records, hanging transactions) is proven on a broker in
tests/integration/test_monitor.py; here the bookkeeping: ages, states, hanging counts, lag bounds,
what could not be seen."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kxtx.client.model import Offsets
from kxtx.dump import partition as dump_partition
from kxtx.dump import txnlog as history
from kxtx.errors import KafkaOperationError
from kxtx.monitor import snapshot
from tests.unit.test_txn_flows import NOW, OLD, FakeCluster, _desc, _o


class MonitorCluster(FakeCluster):
    def __init__(self, *args, listing=None, groups=None, group_error=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.listing = listing or {}
        self.groups = groups or {}
        self.group_error = group_error

    def transactions(self):
        return self.listing

    def group_listing(self):
        if self.group_error:
            raise KafkaOperationError(self.group_error)
        return sorted(self.groups), []

    def group_offsets(self, groups, tps=None):
        return {g: self.groups[g] for g in groups if g in self.groups}, {}

    def log_starts(self, tps):
        return dict.fromkeys(tps, 0)

    txn = None  # the kafka-python admin client read_ranges borrows (read_ranges is faked here)


@pytest.fixture(autouse=True)
def no_txn_log(monkeypatch):
    """No broker: __transaction_state is not read (as in test_txn_flows)."""
    monkeypatch.setattr(history, "ids_for_producers", lambda settings, pids: {})


@pytest.fixture
def scans(monkeypatch):
    """read_ranges as the log would answer for [committed, LSO): 1 marker per range, the rest data."""
    asked = []

    def read_ranges(settings, topic, starts, end, log_starts=None, admin=None):
        assert log_starts == dict.fromkeys(starts, 0)  # asked once for every topic, handed over
        asked.append((topic, dict(starts), end))
        lso = 9
        return [
            SimpleNamespace(
                summary=SimpleNamespace(read_committed=lso - start - 1, markers=1, aborted_records=0)
            )
            for start in starts.values()
        ]

    monkeypatch.setattr(dump_partition, "read_ranges", read_ranges)
    return asked


def _cluster(**kw):
    return MonitorCluster(
        producers={
            ("a", 0): [_o("a", 0, 1, start=5, last=NOW - 2000), _o("a", 0, 7, start=7, last=NOW - 500)],
            ("a", 1): [_o("a", 1, 2, start=3)],  # pid unknown to every coordinator: hanging
            ("b", 0): [_o("b", 0, 3, start=-1)],  # nothing open
        },
        listed={1: ("tx-1", "Ongoing")},
        listing={"tx-1": (1, "Ongoing"), "tx-9": (9, "PrepareCommit"), "tx-8": (8, "CompleteCommit")},
        descs={
            "tx-1": _desc("tx-1", {("a", 0)}),  # began NOW - 1000... see _desc
            "tx-9": _desc("tx-9", set(), state="PrepareCommit", pid=9),
        },
        offsets={("a", 0): Offsets(5, 12), ("a", 1): Offsets(3, 6), ("b", 0): Offsets(9, 9)},
        groups={"g": {("b", 0): 2, ("a", 0): 5}, "g2": {("b", 0): 4}, "far": {("b", 0): 0}},
        ops={"ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"},
        **kw,
    )


def test_partitions_states_and_lags(scans):
    snap = snapshot.collect(_cluster(), lag_scan_max=8, now_ms=NOW)
    by = {(p.topic, p.partition): p for p in snap.partitions}
    assert set(by) == {("a", 0), ("a", 1)}
    a0, a1 = by[("a", 0)], by[("a", 1)]
    # the oldest open transaction is the lowest start offset; its two ages come from two answers
    assert (a0.open_transactions, a0.oldest_start_offset, a0.oldest_transactional_id) == (2, 5, "tx-1")
    assert (a0.oldest_age_since_start_s, a0.oldest_age_since_last_write_s) == (1.0, 2.0)
    assert (a0.lso_gap_records, a0.hanging_transactions) == (7, 0)
    assert a1.hanging_transactions == 1 and a1.oldest_age_since_start_s is None
    assert a1.oldest_age_since_last_write_s == (NOW - OLD) / 1000
    assert snap.states["Ongoing"] == snap.states["PrepareCommit"] == snap.states["CompleteCommit"] == 1
    assert snap.states["Dead"] == 0
    assert snap.oldest_in_state_s == {"Ongoing": 1.0, "PrepareCommit": 1.0}
    lags = {(g.group, g.topic, g.partition): g for g in snap.groups}
    near, far, at_lso = lags[("g", "b", 0)], lags[("far", "b", 0)], lags[("g", "a", 0)]
    # 7 offsets behind the LSO (within --lag-scan-max 8): read; the marker is not lag
    assert (near.hw_lag_records, near.lag_records, near.invisible_records, near.exact) == (7, 6, 1, True)
    # 9 behind: counted by offsets, an upper bound, nothing said about markers
    assert (far.lag_records, far.invisible_records, far.exact) == (9, None, False)
    # at the LSO: no lag and nothing to read, however far the high watermark is
    assert (at_lso.hw_lag_records, at_lso.lag_records, at_lso.invisible_records) == (7, 0, 0)
    assert lags[("g2", "b", 0)].lag_records == 4
    # one read per topic and round: two groups on one partition take two rounds
    assert scans == [("b", {0: 2}, "lso"), ("b", {0: 4}, "lso")]
    s = snap.summary()
    assert (s["hanging_transactions"], s["open_transactions"], s["max_lso_gap_records"]) == (1, 3, 7)
    assert s["max_read_committed_lag_records"] == 9 and snap.complete


def test_topic_scope_and_what_could_not_be_seen(scans):
    snap = snapshot.collect(_cluster(group_error="GROUP_AUTHORIZATION_FAILED"), topic="a", now_ms=NOW)
    assert {(p.topic, p.partition) for p in snap.partitions} == {("a", 0), ("a", 1)}
    assert snap.partitions_checked == 2 and snap.groups == []
    assert not snap.complete and snap.unseen_counts()["groups"] == 1
    assert "GROUP_AUTHORIZATION_FAILED" in snap.unseen[0]["why"]


def test_held_lsos_come_from_the_listing_the_collection_already_read(scans):
    """One ListTransactions per collection (a scrape of `monitor serve`): why the open
    transactions that do not hang hold their LSO comes from the listing and descriptions the
    collection reads anyway, not from a second round of ListTransactions."""
    c = _cluster()
    snap = snapshot.collect(c, lag_scan_max=8, now_ms=NOW)
    assert c.asked == [{2}]  # Kafka's step only: the candidates' producer ids
    held = {(h.topic, h.partition, h.producer_id): h.kind for h in snap.held}
    assert held == {("a", 0, 1): "in-progress", ("a", 0, 7): "untracked"}
