"""SIGTERM as an exception, so transactional code can abort cleanly before the process exits.

SIGINT already arrives as KeyboardInterrupt. `Terminated` derives from BaseException for the same
reason KeyboardInterrupt does: `except Exception` blocks in library code must not swallow it.
"""

from __future__ import annotations

import signal


class Terminated(BaseException):
    """Raised in the main thread when the process receives SIGTERM."""


def _raise_terminated(signum, frame):  # noqa: ARG001 - signal handler signature
    raise Terminated()


def install() -> None:
    signal.signal(signal.SIGTERM, _raise_terminated)


def stop_signal(exc: BaseException) -> tuple[int, str]:
    """(signal number, name) of the stop that `exc` (KeyboardInterrupt or Terminated) stands for."""
    return (15, "SIGTERM") if isinstance(exc, Terminated) else (2, "SIGINT")
