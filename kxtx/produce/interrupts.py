"""Ctrl-C and SIGTERM during a transactional run: noted, then acted on at a safe point.

The default handlers raise inside whatever runs, including confluent-kafka calls that check for
signals while they wait (commit_transaction then fails with "returned NULL without setting an
exception" and its outcome is unknown). While `Deferred` is active the first signal only sets
`received`; the engine checks it between records and transactions, aborts the open transaction and
stops. A second signal stops at once, for a run stuck on an unreachable cluster.
"""

from __future__ import annotations

import signal
import threading

from kxtx.signals import Terminated

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _exception(signum: int) -> BaseException:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


class Deferred:
    def __init__(self):
        self.received: int | None = None
        self._old: dict = {}

    def __enter__(self) -> Deferred:
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.getsignal(s) for s in _SIGNALS}
            for s in _SIGNALS:
                signal.signal(s, self._note)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._old.items():
            signal.signal(s, handler)

    def _note(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        if self.received is not None:
            raise _exception(signum)
        self.received = signum

    def check(self) -> None:
        """Raise KeyboardInterrupt / Terminated if a signal arrived."""
        if self.received is not None:
            raise _exception(self.received)
