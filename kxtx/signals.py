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


#: The stop signals kxtx covers from its first line, and the handlers they had before.
_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_before_start: dict[int, object] = {}


def _stopped_while_starting(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    # os.write and os._exit: safe in the middle of any import; nothing has been done yet that
    # needs cleaning up (no client, no JVM, no output).
    import os

    os.write(2, f"kxtx: stopped by {signal.Signals(signum).name} while starting\n".encode())
    os._exit(128 + signum)


def while_starting() -> None:
    """From the entry point's first line until a command's `install`: a stop signal prints one line
    and exits 128 + n (Python's defaults would print a KeyboardInterrupt traceback from inside an
    import, or end silently on SIGTERM/SIGHUP). A signal ignored at start (nohup) stays ignored."""
    for sig in _STOPS:
        if signal.getsignal(sig) != signal.SIG_IGN:
            _before_start[sig] = signal.signal(sig, _stopped_while_starting)


def install() -> None:
    """A command starts: SIGINT and SIGHUP get back their handlers from before `while_starting`
    (KeyboardInterrupt for SIGINT), SIGTERM raises `Terminated`."""
    for sig, handler in _before_start.items():
        signal.signal(sig, handler)
    _before_start.clear()
    signal.signal(signal.SIGTERM, _raise_terminated)


def stop_signal(exc: BaseException) -> tuple[int, str]:
    """(signal number, name) of the stop that `exc` (KeyboardInterrupt or Terminated) stands for."""
    return (15, "SIGTERM") if isinstance(exc, Terminated) else (2, "SIGINT")


def ignore_stop_signals() -> None:
    """The process is about to exit because of a stop signal: further ones change nothing. SIG_IGN
    rather than a Python handler, because Python puts SIG_DFL back for its own handlers while it
    finalizes (then a second Ctrl-C ends the process with status -2 instead of 130)."""
    for sig in _STOPS:
        signal.signal(sig, signal.SIG_IGN)
