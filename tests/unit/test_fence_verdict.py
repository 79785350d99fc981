"""fence's per-partition verdict from the offsets read before and after: an unread partition is
`unseen`, never moved (a leaderless partition once came out `lso_moved: true`, `ok: true`)."""

import pytest

from kxtx.client.model import Offsets
from kxtx.ops.fence import _checked

WHY = "LEADER_NOT_AVAILABLE: Broker: Leader not available"


@pytest.mark.parametrize(
    ("before", "after", "moved", "unseen"),
    [
        (Offsets(5, 9), Offsets(10, 10), True, False),  # held back 4, LSO past them
        (Offsets(5, 9), Offsets(5, 10), False, False),  # read both times, did not move
        (Offsets(2, 2), Offsets(2, 2), True, False),  # nothing held back: nothing to move
        (Offsets(None, None, WHY), Offsets(None, None, WHY), None, True),  # leaderless throughout
        (Offsets(None, None, WHY), Offsets(7, 7), None, True),  # unread before: no evidence
        (Offsets(5, 9), Offsets(None, None, WHY), None, True),  # unread after: unchecked
        (Offsets(5, None, WHY), Offsets(9, 9), None, True),  # half a read is no read
    ],
)
def test_verdict(before, after, moved, unseen):
    row = _checked(("L", 0), before, after)
    assert row.lso_moved is moved
    assert (row.unseen is not None) is unseen
    if unseen:
        assert WHY in row.unseen and "kxtx audit-markers --topic L --partition 0" in row.unseen
