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


def test_the_previews_partitions():
    """`fence` and `complete` previews list each partition's offsets in one shape; fence's adds
    why an unread one cannot be checked afterwards."""
    from kxtx.client.model import CoordinatorTxn
    from kxtx.ops import complete, fence

    class Cluster:
        def offsets(self, tps):
            return {("a", 0): Offsets(5, 9), ("b", 2): Offsets(None, 3, WHY)}

    desc = CoordinatorTxn("tid", 1, "Ongoing", 42, 3, 60000, -1, frozenset({("b", 2), ("a", 0)}))
    rows = [
        {"topic": "a", "partition": 0, "lso": 5, "high_watermark": 9, "held_back": 4},
        {"topic": "b", "partition": 2, "lso": None, "high_watermark": 3, "held_back": None},
    ]
    assert complete.plan(Cluster(), desc, True)["partitions"] == rows
    fenced = fence.plan(Cluster(), desc)["partitions"]
    assert [list(r) for r in fenced] == [[*rows[0], "unseen"]] * 2
    assert fenced[0] == {**rows[0], "unseen": None}
    assert fenced[1]["unseen"].startswith("offsets not read (LEADER_NOT_AVAILABLE")
