"""Warnings and progress from library code go through the `kxtx` logger; the CLI sends them to stderr.

Library modules never print: stdout is data only.
"""

import logging

logger = logging.getLogger("kxtx")


def warn_once(kind: str, message: str, _seen: set = set()) -> None:  # noqa: B006 - process-wide memo
    """Warn once per process for a kind of problem (e.g. one unknown record version)."""
    if kind in _seen:
        return
    _seen.add(kind)
    logger.warning(message)
