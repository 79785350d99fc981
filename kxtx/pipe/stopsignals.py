"""Stop signals during `kxtx pipe`: recorded when they arrive, acted on at safe points.

An exception raised by a signal handler lands wherever the main thread happens to be: inside a
py4j call (the gateway connection is left mid-answer, py4j logs "KeyboardInterrupt while sending
command."), inside PySpark's JVM launch (the JVM then fails to write its port file and lives on,
re-parented to init), or inside a librdkafka call. So while a pipe runs, SIGINT, SIGTERM and
SIGHUP only note themselves; the engine looks between steps (`check`), then aborts the open
transaction, stops Spark (and with it the JVM and Python workers) and reports once.

A signal that was ignored when kxtx started (nohup's SIGHUP, SIGINT of a background job) stays
ignored.
"""

from __future__ import annotations

import signal
import threading

from kxtx.signals import ignore_stop_signals

NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


class Stopped(BaseException):
    """A stop signal was received (BaseException, like KeyboardInterrupt: no `except Exception`
    swallows it)."""

    def __init__(self, signum: int):
        super().__init__(NAMES.get(signum, str(signum)))
        self.signum = signum


class Guard:
    """Context manager: record stop signals instead of raising (main thread only; elsewhere a
    no-op, as Python delivers signals to the main thread)."""

    def __init__(self):
        self.received: list[int] = []
        self._previous: dict[int, object] = {}

    def __enter__(self) -> Guard:
        self._depth = getattr(self, "_depth", 0) + 1
        if self._depth > 1 or threading.current_thread() is not threading.main_thread():
            return self  # entered again (the CLI's guard, passed to the engine): already on
        for sig in NAMES:
            current = signal.getsignal(sig)
            if current == signal.SIG_IGN:
                continue
            self._previous[sig] = current
            signal.signal(sig, self._note)
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth:
            return
        if self.received:
            # Stopping because of a signal: the stop line and the interpreter's shutdown (py4j,
            # atexit) still follow, and an impatient second Ctrl-C there would otherwise kill the
            # process with SIGINT's default action (status -2). Ignored, not a Python handler:
            # Python puts SIG_DFL back for its own handlers when it finalizes, not for SIG_IGN.
            ignore_stop_signals()
            return
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _note(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        self.received.append(signum)

    def check(self) -> None:
        """Raise `Stopped` if a stop signal arrived."""
        if self.received:
            raise Stopped(self.received[0])


def guarded() -> bool:
    """Is a Guard recording signals right now (so callers need not defer them themselves)?"""
    return any(isinstance(getattr(signal.getsignal(sig), "__self__", None), Guard) for sig in NAMES)


def signal_number(exc: BaseException) -> int | None:
    """The stop signal behind `exc` (KeyboardInterrupt, Terminated, Stopped), or None."""
    from kxtx.signals import Terminated

    if isinstance(exc, KeyboardInterrupt):
        return 2
    if isinstance(exc, Terminated):
        return 15
    if isinstance(exc, Stopped):
        return exc.signum
    return None
