"""Why an open transaction holds an LSO (`decide.hold_class`), what ends it (`hold_action`):
every class from the producer state and the coordinator's answer, without a broker."""

import pytest

from kxtx.client.model import NOT_FOUND, CoordinatorTxn, OpenTxn
from kxtx.ops import decide

NOW = 10_000_000
MAX = 900_000  # the broker's transaction.max.timeout.ms
TP = ("L", 0)


def _open(idle_ms: int, epoch: int = 0) -> OpenTxn:
    return OpenTxn("L", 0, 1001, epoch, 0, NOW - idle_ms, 42)


def _coord(
    state: str, partitions=(TP,), start: int = NOW - 120_000, timeout: int = 600_000, epoch: int = 0
) -> CoordinatorTxn:
    return CoordinatorTxn("tid", 1, state, 1001, epoch, timeout, start, frozenset(partitions))


@pytest.mark.parametrize(
    ("idle", "tid", "desc", "kind", "ends"),
    [
        # Kafka's definition: untracked and idle past the max timeout
        (MAX + 1, None, None, decide.HOLD_HANGING, None),
        (MAX + 1, "tid", NOT_FOUND, decide.HOLD_HANGING, None),
        (MAX + 1, "tid", _coord("CompleteAbort", ()), decide.HOLD_HANGING, None),
        # its coordinator moved on without this partition: a lost marker, at once, not in 15 min
        (5_000, "tid", _coord("CompleteAbort", ()), decide.HOLD_LOST_MARKER, None),
        (5_000, "tid", _coord("CompleteCommit", ()), decide.HOLD_LOST_MARKER, None),
        (5_000, "tid", _coord("Empty", (), epoch=1), decide.HOLD_LOST_MARKER, None),  # fenced past it
        # Empty at its own epoch: the coordinator never began it (a write outside a transaction)
        (5_000, "tid", _coord("Empty", ()), decide.HOLD_UNTRACKED, NOW - 5_000 + MAX + 1),
        # a running transaction that never added this partition (a write outside it): untracked
        (5_000, "tid", _coord("Ongoing", (("L", 1),)), decide.HOLD_UNTRACKED, NOW - 5_000 + MAX + 1),
        # nothing tracks it yet: when it starts to count as hanging
        (5_000, None, None, decide.HOLD_UNTRACKED, NOW - 5_000 + MAX + 1),
        (MAX, "tid", NOT_FOUND, decide.HOLD_UNTRACKED, NOW - MAX + MAX + 1),  # strict, as Kafka
        # tracked: the coordinator aborts it at start + timeout
        (decide.ABANDONED_IDLE_MS, "tid", _coord("Ongoing"), decide.HOLD_ABANDONED, NOW - 120_000 + 600_000),
        (1_000, "tid", _coord("Ongoing"), decide.HOLD_IN_PROGRESS, NOW - 120_000 + 600_000),
        (1_000, "tid", _coord("Ongoing", start=-1), decide.HOLD_IN_PROGRESS, None),
        (MAX + 1, "tid", _coord("Ongoing"), decide.HOLD_ABANDONED, NOW - 120_000 + 600_000),
        (1_000, "tid", _coord("PrepareCommit"), decide.HOLD_ENDING, None),
        (MAX + 1, "tid", _coord("PrepareAbort"), decide.HOLD_ENDING, None),
    ],
)
def test_hold_class(idle, tid, desc, kind, ends):
    assert decide.hold_class(_open(idle), tid, desc, NOW, MAX) == (kind, ends)


@pytest.mark.parametrize(
    ("kind", "tid", "action"),
    [
        (decide.HOLD_HANGING, "tid", "kxtx abort-hanging --topic L --partition 0"),
        (
            decide.HOLD_LOST_MARKER,
            "tid",
            "kxtx audit-markers --topic L --partition 0, then kxtx repair-markers --topic L --partition 0",
        ),
        (
            decide.HOLD_UNTRACKED,
            None,
            "kxtx abort-hanging --topic L --partition 0 --max-transaction-timeout 0",
        ),
        (decide.HOLD_ABANDONED, "tid", "kxtx fence tid"),
        (decide.HOLD_ABANDONED, None, None),
        (decide.HOLD_IN_PROGRESS, "tid", None),
        (decide.HOLD_ENDING, "tid", None),
    ],
)
def test_hold_action(kind, tid, action):
    assert decide.hold_action(kind, TP, tid) == action


def test_an_abandoned_transaction_names_its_abort_time():
    ends = NOW + 480_000
    text = decide.hold_detail(decide.HOLD_ABANDONED, ends, _coord("Ongoing"))
    assert "likely abandoned" in text and "the coordinator aborts it at 1970-01-01T02:54:40" in text
