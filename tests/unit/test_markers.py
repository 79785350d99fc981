"""The lost-marker audit's pure core (kxtx.ops.markers): decisions from __transaction_state rows, and
one partition's batches held against them. Table-driven; the real reproduction is in
tests/integration/test_multibroker_lost_markers.py."""

from __future__ import annotations

import pytest

from kxtx.ops import markers as m
from kxtx.ops.markers import PBatch

TP = ("t", 0)
PID = 7


def row(status, ts, *, tid="tx", pid=PID, epoch=0, parts=(TP,), start=None, ctv=0, offset=0):
    grouped: dict[str, list[int]] = {}
    for t, p in parts:
        grouped.setdefault(t, []).append(p)
    value = {
        "producer_id": pid,
        "producer_epoch": epoch,
        "transaction_status": status,
        "transaction_partitions": [{"topic": t, "partition_ids": ps} for t, ps in grouped.items()],
        "transaction_last_update_timestamp_ms": ts,
        "transaction_start_timestamp_ms": ts if start is None else start,
        "client_transaction_version": ctv,
    }
    return {
        "key": {"transactional_id": tid},
        "value": value,
        "partition": 3,
        "offset": offset,
        "timestamp_ms": ts,
    }


def txn(outcome, start, prepare, complete, *, epoch=0, marker_epoch=None, tid="tx", parts=(TP,)):
    """The rows of one transaction: Ongoing at `start`, Prepare and Complete (None: not yet)."""
    rows = [row("Ongoing", start, epoch=epoch, tid=tid, parts=parts, start=start)]
    me = epoch if marker_epoch is None else marker_epoch
    if prepare is not None:
        word = "Commit" if outcome == m.COMMIT else "Abort"
        rows.append(row(f"Prepare{word}", prepare, epoch=me, tid=tid, parts=parts, start=start))
        if complete is not None:
            rows.append(row(f"Complete{word}", complete, epoch=me, tid=tid, parts=(), start=start))
    return rows


def data(offset, ts, *, n=5, epoch=0, pid=PID):
    return PBatch(offset, offset + n - 1, n, pid, epoch, ts, None)


def marker(offset, ts, kind, *, epoch=0, pid=PID):
    return PBatch(offset, offset, 1, pid, epoch, ts, kind)


def audit(rows, batches):
    return m.audit_partition(TP, batches, m.decisions(rows))


# (name, rows, batches, expected (kind, first, last, records, fate, repairable) per finding, orphans)
CASES = [
    (
        "a commit with its marker",
        txn(m.COMMIT, 100, 200, 210),
        [data(0, 150), marker(5, 205, m.COMMIT)],
        [],
        0,
    ),
    (
        "a lost commit, still open",
        txn(m.COMMIT, 100, 200, 210),
        [data(0, 150)],
        [(m.LOST_COMMIT_OPEN, 0, 4, 5, m.OPEN, True)],
        0,
    ),
    (
        "a lost abort, still open",
        txn(m.ABORT, 100, 200, 210),
        [data(0, 150)],
        [(m.LOST_ABORT_OPEN, 0, 4, 5, m.OPEN, True)],
        0,
    ),
    (
        "a lost abort committed by the next transaction (same epoch: told apart by time)",
        txn(m.ABORT, 100, 200, 210) + txn(m.COMMIT, 300, 400, 410),
        [data(0, 150), data(5, 350), marker(10, 405, m.COMMIT)],
        [(m.LOST_ABORT_COMMITTED, 0, 4, 5, m.COMMITTED, False)],
        0,
    ),
    (
        "a lost commit aborted by the next transaction",
        txn(m.COMMIT, 100, 200, 210) + txn(m.ABORT, 300, 400, 410),
        [data(0, 150, n=3), data(3, 350), marker(8, 405, m.ABORT)],
        [(m.LOST_COMMIT_ABORTED, 0, 2, 3, m.ABORTED, False)],
        0,
    ),
    (
        "a lost commit whose producer's next transaction is still running there: not repairable",
        txn(m.COMMIT, 100, 200, 210) + txn(m.COMMIT, 300, None, None),
        [data(0, 150), data(5, 350)],
        [(m.LOST_COMMIT_OPEN, 0, 4, 5, m.OPEN, False)],
        0,
    ),
    (
        "two lost commits in a row: one COMMIT repairs both",
        txn(m.COMMIT, 100, 200, 210) + txn(m.COMMIT, 300, 400, 410),
        [data(0, 150), data(5, 350)],
        [(m.LOST_COMMIT_OPEN, 0, 4, 5, m.OPEN, True), (m.LOST_COMMIT_OPEN, 5, 9, 5, m.OPEN, True)],
        0,
    ),
    (
        "a lost commit then a lost abort, both open: one marker cannot end both",
        txn(m.COMMIT, 100, 200, 210) + txn(m.ABORT, 300, 400, 410),
        [data(0, 150), data(5, 350)],
        [(m.LOST_COMMIT_OPEN, 0, 4, 5, m.OPEN, False), (m.LOST_ABORT_OPEN, 5, 9, 5, m.OPEN, False)],
        0,
    ),
    (
        "transactions v2: the epoch tells the transactions apart, whatever the clocks say",
        txn(m.ABORT, 100, 200, 210, epoch=4, marker_epoch=5) + txn(m.COMMIT, 300, 400, 410, epoch=5),
        # the second transaction's batch carries a timestamp before the first's Prepare (clock skew)
        [
            data(0, 150, epoch=4),
            data(5, 190, epoch=5),
            marker(10, 405, m.COMMIT, epoch=5),
        ],
        [(m.LOST_ABORT_COMMITTED, 0, 4, 5, m.COMMITTED, False)],
        0,
    ),
    (
        "a lost marker where the transaction wrote nothing",
        txn(m.COMMIT, 100, 200, 210),
        [],
        [(m.NO_RECORDS, None, None, 0, None, False)],
        0,
    ),
    (
        "a lost commit repaired since (a marker no coordinator decided): healed",
        txn(m.COMMIT, 100, 200, 210),
        [data(0, 150), marker(5, 9000, m.COMMIT)],
        [(m.HEALED, 0, 4, 5, m.COMMITTED, False)],
        0,
    ),
    (
        "a marker within the brokers' clock slack of its window is not lost",
        txn(m.COMMIT, 100, 200, 210),
        [data(0, 150), marker(5, 210 + m.MARKER_SLACK_MS, m.COMMIT)],
        [],
        0,
    ),
    (
        "a marker of the wrong outcome is not the decision's: the commit was lost, the abort dropped it",
        txn(m.COMMIT, 100, 200, 210),
        [data(0, 150), marker(5, 205, m.ABORT)],
        [(m.LOST_COMMIT_ABORTED, 0, 4, 5, m.ABORTED, False)],
        0,
    ),
    (
        "open records older than every decision: nobody's; the lost commit after them cannot be repaired alone",
        txn(m.COMMIT, 100_000, 200_000, 210_000),
        [data(0, 100), data(5, 150_000)],
        [(m.LOST_COMMIT_OPEN, 5, 9, 5, m.OPEN, False)],
        1,
    ),
    (
        "an ongoing transaction's open records are neither lost nor orphans",
        txn(m.COMMIT, 100, None, None),
        [data(0, 150)],
        [],
        0,
    ),
    (
        "a transaction prepared but not completed yet is not judged",
        txn(m.COMMIT, 100, 200, None),
        [data(0, 150)],
        [],
        0,
    ),
    (
        "another producer's batches are not this decision's",
        txn(m.COMMIT, 100, 200, 210),
        [data(0, 150, pid=99), data(5, 160), marker(10, 205, m.COMMIT)],
        [],
        1,
    ),
]


@pytest.mark.parametrize(("name", "rows", "batches", "expected", "orphans"), CASES, ids=[c[0] for c in CASES])
def test_audit_partition(name, rows, batches, expected, orphans):
    found, left = audit(rows, batches)
    got = [(f.kind, f.first_offset, f.last_offset, f.records, f.fate, f.repairable) for f in found]
    assert got == expected, name
    assert sum(len(v) for v in left.values()) == orphans, name


def test_findings_name_the_decision_and_what_ended_them():
    rows = txn(m.ABORT, 100, 200, 210, tid="a") + txn(m.COMMIT, 300, 400, 410, tid="a")
    (f,), _ = audit(rows, [data(0, 150), data(5, 350), marker(10, 405, m.COMMIT)])
    assert (f.transactional_id, f.decided, f.decided_ms, f.completed_ms) == ("a", m.ABORT, 200, 210)
    assert (f.marker_offset, f.marker_type, f.assigned_by) == (10, m.COMMIT, "time")
    assert "commit of a's transaction" in f.ended_by
    assert f.prepared_at == (3, 0)


def test_repair_blocker_names_the_running_transaction():
    rows = txn(m.COMMIT, 100, 200, 210, tid="x") + txn(m.COMMIT, 300, None, None, tid="x")
    (f,), _ = audit(rows, [data(0, 150), data(5, 350)])
    assert "still running" in f.detail and "x" in f.detail


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # (outcome, data epoch, marker epoch, ended) per decision
        (txn(m.COMMIT, 1, 2, 3), [(m.COMMIT, 0, 0, True)]),
        (txn(m.ABORT, 1, 2, None, epoch=3, marker_epoch=4), [(m.ABORT, 3, 4, False)]),
        # a Prepare whose Ongoing was not read: a v1 commit's data carries its epoch, an abort's may not
        (
            [row("PrepareCommit", 2, epoch=5), row("CompleteCommit", 3, epoch=5, parts=())],
            [(m.COMMIT, 5, 5, True)],
        ),
        ([row("PrepareAbort", 2, epoch=5)], [(m.ABORT, None, 5, False)]),
        ([row("PrepareCommit", 2, epoch=5, ctv=2)], [(m.COMMIT, None, 5, False)]),
        # transactions v2 aborting from Empty: no partitions, nothing to judge
        ([row("PrepareAbort", 2, epoch=5, parts=(), ctv=2)], []),
        # a Complete whose Prepare was not read (compacted): no decision can be placed
        ([row("CompleteCommit", 3, epoch=5, parts=())], []),
        # an expired id (tombstone) starts over
        (
            txn(m.COMMIT, 1, None, None)[:1] + [{"key": {"transactional_id": "tx"}, "value": None}],
            [(None, 0, None, False)],
        ),
    ],
)
def test_decisions(rows, expected):
    got = [(d.outcome, d.data_epoch, d.marker_epoch, d.ended) for d in m.decisions(rows)]
    assert got == expected


def test_decisions_merge_the_partitions_added_while_ongoing():
    rows = [row("Ongoing", 1, parts=[("t", 0)]), row("Ongoing", 2, parts=[("t", 0), ("u", 1)], start=1)]
    rows += [row("PrepareCommit", 3, parts=[("t", 0), ("u", 1)], start=1)]
    (d,) = m.decisions(rows)
    assert d.partitions == {("t", 0), ("u", 1)} and d.start_ms == 1 and d.prepare_ms == 3


def test_a_complete_appended_after_its_update_time_bounds_the_markers():
    """Kafka 3.9 sets a Complete's last-update time before the markers are acknowledged and appends
    it after: a marker written in between is the decision's, not a lost one's replacement."""
    rows = txn(m.COMMIT, 100, 200, 210)
    rows[-1]["timestamp_ms"] = 20_000  # appended 19.8 s after its last-update time
    found, _ = audit(rows, [data(0, 150), marker(5, 15_000, m.COMMIT)])
    assert found == []


def test_fates_are_the_partitions_own():
    """A data batch's fate is its producer's next marker on the partition, whatever decided it."""
    bs = [data(0, 1), data(5, 2), marker(10, 3, m.ABORT), data(11, 4), marker(16, 5, m.COMMIT), data(17, 6)]
    fates = m.fates_of(bs)
    assert [fates.get(id(b)) for b in bs] == [m.ABORTED, m.ABORTED, None, m.COMMITTED, None, m.OPEN]
