"""The consumer settings exactly once rests on, for every consumer `kxtx pipe` makes.

Driver mode's consumer, executors mode's group member on the driver and its tasks' consumers all
use them; they come after the user's own settings, which cannot override them. On a cluster this
module is shipped by value with the tasks (`kxtx.pipe.worker`).
"""

from __future__ import annotations


def exactly_once(group: str, start: str) -> dict:
    """Offsets move only inside the pipe's transactions (never by auto-commit), under `group`,
    and only committed records are read; `start` (earliest, latest) where the group has none."""
    return {
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": start,
    }
