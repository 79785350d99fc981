"""kxtx.signals: the one stop-signal guard (produce and pipe), the boundary's handling and exit statuses.

Real signals, sent with os.kill to this process: Python runs their handlers in the main thread
before os.kill returns to the test, so every assertion after os.kill sees the handler's effect."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from kxtx import signals
from kxtx.errors import Interrupted
from kxtx.exitcodes import ExitCode
from kxtx.signals import STOPS, Guard, Stopped, exit_status, guarded, signal_number

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _mine(signum, frame):  # a handler of the test's own, to see it come back
    raise AssertionError(f"{signum} reached the handler from before the guard")


@pytest.fixture
def handlers():
    """Every stop signal with a handler of its own; whatever the test did is undone after it."""
    before = {s: signal.getsignal(s) for s in STOPS}
    for s in STOPS:
        signal.signal(s, _mine)
    yield
    for s, handler in before.items():
        signal.signal(s, handler)


def current() -> dict:
    return {s: signal.getsignal(s) for s in STOPS}


@pytest.mark.parametrize(
    "signum, status, code, word",
    [
        (signal.SIGHUP, 129, ExitCode.HANGUP, "hung up"),
        (signal.SIGINT, 130, ExitCode.INTERRUPTED, "interrupted"),
        (signal.SIGTERM, 143, ExitCode.TERMINATED, "terminated"),
    ],
)
def test_each_stop_signal_has_its_status_exit_code_and_word(signum, status, code, word):
    assert exit_status(signum) == status == code
    assert Interrupted("x", signum).exit_code is code
    assert signals.WORDS[signum] == word
    assert str(Stopped(signum)) == signal.Signals(signum).name


def caused(exc: BaseException, cause: BaseException) -> BaseException:
    """`exc` raised from `cause`, as CPython chains a stop that landed inside a C call."""
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    "exc, expected",
    [
        (KeyboardInterrupt(), signal.SIGINT),
        (Stopped(signal.SIGTERM), signal.SIGTERM),
        (Stopped(signal.SIGHUP), signal.SIGHUP),
        (ValueError("x"), None),
        (SystemExit(3), None),
        (
            caused(
                SystemError("<class 'int'> returned a result with an exception set"), Stopped(signal.SIGTERM)
            ),
            signal.SIGTERM,
        ),
        (
            caused(
                SystemError("<class 'range'> returned a result with an exception set"), KeyboardInterrupt()
            ),
            signal.SIGINT,
        ),
        (caused(SystemError("x"), ValueError("y")), None),
        (SystemError("x"), None),
    ],
)
def test_signal_number(exc, expected):
    assert signal_number(exc) == expected


@pytest.mark.parametrize("sig", SIGNALS)
def test_every_stop_signal_is_noted_and_raised_at_check_only(handlers, sig):
    with Guard() as guard:
        os.kill(os.getpid(), sig)
        os.kill(os.getpid(), signal.SIGINT)  # a second one is noted too; the first one counts
        assert guard.received == [sig, signal.SIGINT]
        with pytest.raises(Stopped) as info:
            guard.check()
        assert info.value.signum == sig
    # stopping: ignored until the exit (not the handlers from before: the run is ending)
    assert current() == dict.fromkeys(STOPS, signal.SIG_IGN)


def test_without_a_signal_the_handlers_from_before_come_back(handlers):
    with Guard() as guard:
        assert guarded()
        assert all(h != _mine for h in current().values())
        guard.check()
    assert current() == dict.fromkeys(STOPS, _mine)
    assert not guarded()


@pytest.mark.parametrize("ignored", SIGNALS)
def test_a_signal_ignored_on_entry_stays_ignored(handlers, ignored):
    signal.signal(ignored, signal.SIG_IGN)
    with Guard() as guard:
        assert signal.getsignal(ignored) == signal.SIG_IGN
        os.kill(os.getpid(), ignored)
        guard.check()
        assert guard.received == []
    assert current() == {s: signal.SIG_IGN if s == ignored else _mine for s in STOPS}


def test_the_same_guard_entered_twice_records_until_the_outer_exit(handlers):
    guard = Guard()
    with guard:
        with guard:
            pass
        assert guarded()
        os.kill(os.getpid(), signal.SIGTERM)
    assert guard.received == [signal.SIGTERM]
    assert not guarded()


@pytest.mark.parametrize("when", ["before the inner guard", "inside it"])
def test_a_guard_inside_another_shares_its_signals(handlers, when):
    """The Spark job's guard inside the run's: whichever checks first raises."""
    with Guard() as outer:
        if when == "before the inner guard":
            os.kill(os.getpid(), signal.SIGHUP)
        with Guard() as inner:
            if when == "inside it":
                os.kill(os.getpid(), signal.SIGHUP)
        assert guarded()  # the inner exit left the outer guard's handlers in place
        with pytest.raises(Stopped):
            inner.check()
        with pytest.raises(Stopped):
            outer.check()
    assert current() == dict.fromkeys(STOPS, signal.SIG_IGN)


def test_a_nested_guard_without_a_signal_leaves_the_outer_one_recording(handlers):
    with Guard() as outer:
        with Guard():
            pass
        os.kill(os.getpid(), signal.SIGINT)
        assert outer.received == [signal.SIGINT]
    assert current() == dict.fromkeys(STOPS, signal.SIG_IGN)


def test_off_the_main_thread_a_guard_does_nothing(handlers):
    seen = []

    def body():
        with Guard() as guard:
            seen.append(current())
            guard.check()
        seen.append(current())

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [dict.fromkeys(STOPS, _mine)] * 2


@pytest.mark.parametrize("ignored", [False, True])
def test_install_makes_sigterm_raise_unless_it_is_ignored(handlers, ignored):
    if ignored:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signals.install()
    if ignored:
        os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        return
    with pytest.raises(Stopped) as info:
        os.kill(os.getpid(), signal.SIGTERM)
    assert info.value.signum == signal.SIGTERM


@pytest.mark.parametrize(
    "exc, code, line",
    [
        (KeyboardInterrupt(), 130, "kxtx: interrupted"),
        (Stopped(signal.SIGTERM), 143, "kxtx: terminated"),
        (Stopped(signal.SIGHUP), 129, "kxtx: hung up"),
        (
            Interrupted("stopped by SIGHUP after 3 rows", signal.SIGHUP),
            129,
            "kxtx: stopped by SIGHUP after 3 rows",
        ),
    ],
)
def test_the_boundary_reports_a_stop_in_one_line(handlers, capsys, exc, code, line):
    from kxtx.cli.common import exit_code_of

    def body():
        raise exc

    assert exit_code_of(body) == code
    assert capsys.readouterr().err.splitlines() == [line]
    assert current() == dict.fromkeys(STOPS, signal.SIG_IGN)  # impatient repeats change nothing
