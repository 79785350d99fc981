"""`kxtx complete`'s decisions without a broker: what `check` refuses before anything is sent, and
the exit code and stderr lines a result gets (an unread or unmoved partition is never a success)."""

from __future__ import annotations

import pytest

from kxtx.cli.complete import _done
from kxtx.client.model import CoordinatorTxn
from kxtx.errors import Refused
from kxtx.exitcodes import ExitCode
from kxtx.ops.complete import CompleteResult, check
from kxtx.ops.fence import FencedPartition, ProducerState


def txn(
    state: str = "Ongoing", pid: int = 7, epoch: int = 3, start: int = 1_700_000_000_000
) -> CoordinatorTxn:
    return CoordinatorTxn("app-0-42", 1, state, pid, epoch, 60_000, start, frozenset({("t", 0)}))


@pytest.mark.parametrize(
    ("desc", "pid", "epoch", "commit", "words"),
    [
        (txn(), None, None, True, None),  # the coordinator's own values: the plan shows them
        (txn(), 7, 3, True, None),
        (txn(), 7, None, False, None),
        (txn(), None, 4, True, ["epoch 4 given", "producer id 7, epoch 3, state Ongoing", "moved on"]),
        (txn(), 8, 3, True, ["producer id 8 given"]),
        (txn(), 8, 4, True, ["producer id 8 and epoch 4 given"]),
        (
            txn("CompleteAbort", epoch=4),
            7,
            3,
            True,
            ["no open transaction", "CompleteAbort", "2023-11-14T22:13:20.000+00:00", "epoch 4"],
        ),
        (
            txn("CompleteCommit", epoch=4),
            7,
            3,
            True,
            ["the outcome asked for: its last transaction is committed"],
        ),
        (txn("CompleteCommit"), None, None, False, ["CompleteCommit"]),
        (txn("PrepareCommit"), 7, 3, True, ["the coordinator says PrepareCommit"]),
        (txn("PrepareAbort"), None, None, False, ["PrepareAbort"]),
        (txn("Empty", start=-1), None, None, True, ["says Empty, producer id 7"]),
    ],
)
def test_check(desc, pid, epoch, commit, words):
    if words is None:
        check(desc, pid, epoch, commit)
        return
    with pytest.raises(Refused) as err:
        check(desc, pid, epoch, commit)
    assert err.value.exit_code == ExitCode.USAGE
    for w in words:
        assert w in str(err.value), (w, str(err.value))
    assert str(err.value).endswith("nothing was changed")
    if "CompleteCommit" in str(err.value) and not commit:
        assert "the outcome asked for" not in str(err.value)


MOVED = FencedPartition("t", 0, 0, 3, 3, True)
STUCK = FencedPartition("t", 1, 0, 0, 3, False)
UNSEEN = FencedPartition(
    "t", 2, 0, None, None, None, "offsets not read (no leader); run `kxtx audit-markers`"
)


def result(rows, done=True) -> CompleteResult:
    after = ProducerState("CompleteCommit" if done else "PrepareCommit", 7, 4)
    ok = done and all(r.lso_moved is True for r in rows)
    return CompleteResult("app-0-42", "commit", ProducerState("Ongoing", 7, 3), after, done, rows, ok)


@pytest.mark.parametrize(
    ("rows", "done", "code", "said"),
    [
        ([MOVED], True, None, []),
        ([MOVED, UNSEEN], True, ExitCode.RETRY, ["t:2: not seen"]),
        (
            [MOVED, STUCK],
            True,
            ExitCode.ERROR,
            ["t:1: the LSO did not move", "audit-markers --topic t --partition 1"],
        ),
        ([STUCK, UNSEEN], True, ExitCode.ERROR, ["t:1", "t:2"]),
        ([MOVED], False, ExitCode.ERROR, ["did not reach CompleteCommit: it says PrepareCommit"]),
    ],
)
def test_report(rows, done, code, said):
    d = _done(result(rows, done))
    assert d.exit_code == (ExitCode.OK if code is None else code)
    text = "\n".join(d.warnings)
    for s in said:
        assert s in text, (s, text)
