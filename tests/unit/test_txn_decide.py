"""The pure rules of find-hanging / abort / inspect (no broker)."""

from __future__ import annotations

import pytest

from kxtx.client.model import NOT_FOUND, CoordinatorTxn, OpenTxn
from kxtx.ops import decide

MAX = 15 * 60 * 1000
NOW = 10_000_000_000


def _p(start=5, last_ts=NOW - MAX - 1, pid=7, epoch=3, coord=-1, topic="t", part=0):
    return OpenTxn(topic, part, pid, epoch, coord, last_ts, start)


def _d(state="Ongoing", parts=(("t", 0),), pid=7, epoch=3, start=NOW - 1000, timeout=60_000):
    return CoordinatorTxn("tx", 1, state, pid, epoch, timeout, start, frozenset(parts))


@pytest.mark.parametrize(
    "producer, expected",
    [
        (_p(), True),  # open, 1 ms past the max
        (_p(last_ts=NOW - MAX), False),  # exactly the max: Kafka's `>` is strict
        (_p(last_ts=NOW - MAX + 1), False),  # younger
        (_p(start=-1), False),  # no open transaction
        (_p(start=0), True),  # a transaction starting at offset 0 is open
        (_p(last_ts=NOW + 5000), False),  # client clock ahead (CreateTime)
    ],
)
def test_candidate(producer, expected):
    assert decide.is_candidate(producer, NOW, MAX) is expected


@pytest.mark.parametrize(
    "txn_id, desc, expected",
    [
        (None, None, decide.REASON_NO_ID),
        ("tx", NOT_FOUND, decide.REASON_ID_NOT_FOUND),
        ("tx", None, decide.REASON_ID_NOT_FOUND),
        ("tx", _d(parts=()), decide.REASON_NOT_IN_TXN),  # Empty / Complete*: no partitions
        ("tx", _d(state="CompleteCommit", parts=()), decide.REASON_NOT_IN_TXN),
        ("tx", _d(parts=(("t", 1),)), decide.REASON_NOT_IN_TXN),  # other partition only
        ("tx", _d(parts=(("t", 0), ("u", 0))), None),  # the coordinator tracks it
        ("tx", _d(state="PrepareAbort", parts=(("t", 0),)), None),  # waiting for its marker
        ("tx", _d(pid=99, epoch=0, parts=(("t", 0),)), None),  # no epoch/pid comparison (Kafka)
    ],
)
def test_hanging_reason(txn_id, desc, expected):
    assert decide.hanging_reason(("t", 0), txn_id, desc) == expected


@pytest.mark.parametrize("value, expected", [(None, 0), (-1, 0), (-5, 0), (0, 0), (4, 4)])
def test_abort_coordinator_epoch_never_negative(value, expected):
    assert decide.abort_coordinator_epoch(value) == expected


@pytest.mark.parametrize(
    "current, resolved, words",
    [
        ([_p()], False, ""),
        ([_p(pid=8), _p()], False, ""),
        ([], True, "no longer active"),
        ([_p(pid=8)], True, "no longer active"),
        ([_p(start=-1)], True, "no open transaction"),
        ([_p(start=42)], True, "moved on"),
        ([_p(epoch=4)], True, "moved on"),
    ],
)
def test_recheck(current, resolved, words):
    row, why = decide.recheck(_p(), current)
    assert (row is None) is resolved
    assert words in why


@pytest.mark.parametrize("start, lso, moved", [(5, 5, False), (5, 6, True), (5, None, False), (5, 4, False)])
def test_lso_moved(start, lso, moved):
    assert decide.lso_moved(start, lso) is moved


@pytest.mark.parametrize(
    "committed, lso, hw, expected",
    [
        ({"a": 10, "b": 7, "c": 12}, 10, 12, ["a"]),  # b lags, c reads uncommitted
        ({"a": 10}, 10, 10, []),  # nothing waits behind the LSO
        ({"a": 10}, None, 12, []),
        ({"z": 3, "a": 3}, 3, 9, ["a", "z"]),
    ],
)
def test_blocked_groups(committed, lso, hw, expected):
    assert decide.blocked_groups(committed, lso, hw) == expected


@pytest.mark.parametrize(
    "desc, hanging_on, starts",
    [
        (_d(), [], "ongoing for 1s"),
        (_d(start=NOW - 120_000), [], "stuck past its timeout"),
        (_d(state="Empty", parts=()), [], "idle"),
        (_d(state="CompleteAbort", parts=()), [], "idle"),
        (None, [], "expired"),
        (_d(state="Dead"), [], "expired"),
        (_d(state="Empty"), [("t", 2), ("a", 0)], "hanging on a:0, t:2"),
    ],
)
def test_verdict(desc, hanging_on, starts):
    assert decide.txn_verdict(desc, NOW, hanging_on).startswith(starts)


@pytest.mark.parametrize(
    "desc, hanging_on, kind",
    [
        (_d(), [], decide.ONGOING),
        (_d(start=NOW - 60_000), [], decide.ONGOING),  # exactly the timeout: not past it
        (_d(start=NOW - 60_001), [], decide.STUCK),
        (_d(state="PrepareCommit", start=-1), [], decide.ONGOING),  # no start time known
        (_d(state="CompleteCommit", parts=()), [], decide.IDLE),
        (_d(state="Empty", parts=()), [], decide.IDLE),
        (None, [], decide.EXPIRED),
        (_d(state="Dead"), [], decide.EXPIRED),
        (_d(state="CompleteCommit"), [("t", 1)], decide.HANGING),  # hanging wins over the state
        (_d(state="SomethingNew"), [], "SomethingNew"),
    ],
)
def test_kind(desc, hanging_on, kind):
    assert decide.txn_kind(desc, NOW, hanging_on) == kind


@pytest.mark.parametrize(
    "ms, text",
    [
        (None, "-"),
        (850, "850ms"),
        (42_000, "42s"),
        (192_000, "3m12s"),
        (5 * 3600_000 + 180_000, "5h03m"),
        (52 * 3600_000, "2d04h"),
    ],
)
def test_fmt_age(ms, text):
    assert decide.fmt_age(ms) == text
