"""Stop signals (SIGINT, SIGTERM, SIGHUP): the one place kxtx decides what they do.

- From the entry point's first line to a command's start (`while_starting`): one line, exit 128 + n.
- A command's boundary (`install`): SIGINT raises KeyboardInterrupt (Python's default), SIGTERM
  raises `Stopped`; SIGHUP keeps its default action. Commands that change nothing need no more.
- Transactional runs (`kxtx produce`, `kxtx pipe`) hold a `Guard`: the three signals only note
  themselves, and the run acts on them between steps (`Guard.check`), after which it aborts the
  open transaction and reports once.

Everywhere, a signal that was ignored when kxtx started (nohup's SIGHUP, SIGINT of a background
job in a non-interactive shell) stays ignored, and the exit status of a stop is 128 + n.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType
    from typing import Any, TypeAlias

    #: What signal.signal takes and signal.getsignal returns.
    Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

#: The signals that ask kxtx to stop.
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: How a stop reads in a one-line message ("terminated: aborted the open transaction; ...").
WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}


class Stopped(BaseException):
    """A stop signal was received. BaseException, like KeyboardInterrupt: no `except Exception`
    in library code swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signal.Signals(signum)
        super().__init__(self.signum.name)


def exit_status(signum: int) -> int:
    """The exit status of a run stopped by `signum`, as a shell reports a process it killed."""
    return 128 + signal.Signals(signum)


@overload
def signal_number(exc: KeyboardInterrupt | Stopped) -> signal.Signals: ...
@overload
def signal_number(exc: BaseException) -> signal.Signals | None: ...
def signal_number(exc: BaseException) -> signal.Signals | None:
    """The stop signal behind `exc` (KeyboardInterrupt is SIGINT's), or None for anything else."""
    exc = stop_of(exc) or exc
    if isinstance(exc, KeyboardInterrupt):
        return signal.SIGINT
    if isinstance(exc, Stopped):
        return exc.signum
    return None


class Guard:
    """While entered, stop signals only note themselves; `check` raises `Stopped` for the first.

    An exception raised by a signal handler lands wherever the main thread happens to be: inside a
    librdkafka call that checks for signals while it waits (commit_transaction then fails with
    "returned NULL without setting an exception", its outcome unknown), inside a py4j call (the
    gateway connection is left mid-answer) or inside PySpark's JVM launch (the JVM then lives on,
    re-parented to init). Noted, a signal is acted on where the run can clean up. Further signals
    change nothing: the first one's clean-up runs to its end (each of its steps is bounded in time).

    Nested use: the same guard entered again (the CLI's, handed to the engine) is already on, and
    a guard entered while another one records shares that one's signals (either `check` raises).
    On the outermost exit the handlers from before come back, unless a signal arrived: the process
    is stopping then, and further stop signals are ignored until it has exited (see
    `ignore_stop_signals`). Only the main thread receives signals; elsewhere a guard does nothing.
    """

    def __init__(self) -> None:
        self.received: list[signal.Signals] = []
        self._previous: dict[int, Handler] = {}
        self._depth = 0
        self._root = False

    def __enter__(self) -> Guard:
        self._depth += 1
        if self._depth > 1 or threading.current_thread() is not threading.main_thread():
            return self
        outer = _recording()
        if outer is not None:
            self.received = outer.received
            return self
        self._root = True
        for sig in STOPS:
            current = signal.getsignal(sig)
            if current == signal.SIG_IGN:
                continue  # nohup's contract: an ignored signal stays ignored
            self._previous[sig] = current
            signal.signal(sig, self._note)
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth or not self._root:
            return
        self._root = False
        if self.received:
            ignore_stop_signals()
        else:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
        self._previous.clear()

    def _note(self, signum: int, frame: FrameType | None) -> None:  # noqa: ARG002 - handler signature
        self.received.append(signal.Signals(signum))

    def check(self) -> None:
        """Raise `Stopped` if a stop signal arrived."""
        if self.received:
            raise Stopped(self.received[0])


def _recording() -> Guard | None:
    """The guard whose handlers are installed, if any."""
    for sig in STOPS:
        owner = getattr(signal.getsignal(sig), "__self__", None)
        if isinstance(owner, Guard):
            return owner
    return None


def guarded() -> bool:
    """Is a Guard recording stop signals right now?"""
    return _recording() is not None


# --- before and outside a guard ----------------------------------------------------------------------
_before_start: dict[int, Handler] = {}


def _stopped_while_starting(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - handler signature
    # os.write and os._exit: safe in the middle of any import; nothing has been done yet that
    # needs cleaning up (no client, no JVM, no output).
    import os

    os.write(2, f"kxtx: stopped by {signal.Signals(signum).name} while starting\n".encode())
    os._exit(exit_status(signum))


def while_starting() -> None:
    """From the entry point's first line until a command's `install`: a stop signal prints one line
    and exits 128 + n (Python's defaults would print a KeyboardInterrupt traceback from inside an
    import, or end silently on SIGTERM/SIGHUP). A signal ignored at start (nohup) stays ignored."""
    for sig in STOPS:
        if signal.getsignal(sig) != signal.SIG_IGN:
            _before_start[sig] = signal.signal(sig, _stopped_while_starting)


def stop_of(exc: BaseException | None) -> KeyboardInterrupt | Stopped | None:
    """The stop `exc` is, or stands for; None if it is no stop.

    A stop handler's exception can land inside a C call that then returns a result anyway (seen in
    CI, `kxtx dump` stopped by SIGINT/SIGTERM): CPython raises "SystemError: <class 'int'> returned
    a result with an exception set" with the stop as its cause. That is the stop, not an error."""
    if isinstance(exc, SystemError):
        exc = exc.__cause__
    return exc if isinstance(exc, (KeyboardInterrupt, Stopped)) else None


def _raise_stopped(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - handler signature
    raise Stopped(signum)


def install() -> None:
    """A command starts: SIGINT and SIGHUP get back their handlers from before `while_starting`
    (KeyboardInterrupt for SIGINT), SIGTERM raises `Stopped` unless it is ignored."""
    for sig, handler in _before_start.items():
        signal.signal(sig, handler)
    _before_start.clear()
    if signal.getsignal(signal.SIGTERM) != signal.SIG_IGN:
        signal.signal(signal.SIGTERM, _raise_stopped)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Stop signals ignored for a step that must not be cut short (the last write of a finished
    run: half a JSON document is no document), then as before. One arriving meanwhile is dropped:
    the run is over."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOPS}
    for sig in STOPS:
        signal.signal(sig, signal.SIG_IGN)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: a handler not set from Python; left ignored
                signal.signal(sig, handler)


def ignore_stop_signals() -> None:
    """The process is about to exit because of a stop signal: further ones change nothing. SIG_IGN
    rather than a Python handler, because Python puts SIG_DFL back for its own handlers while it
    finalizes (then a second Ctrl-C ends the process with status -2 instead of 130)."""
    for sig in STOPS:
        signal.signal(sig, signal.SIG_IGN)
