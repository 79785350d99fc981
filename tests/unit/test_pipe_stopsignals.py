"""kxtx.signals.Guard in `kxtx pipe`: signals are noted, raised only at `check`, ignored ones stay ignored."""

from __future__ import annotations

import os
import signal

import pytest

from kxtx.signals import Guard, Stopped, guarded


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_is_noted_and_raised_at_check(sig):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with Guard() as guard:
        assert guarded()
        os.kill(os.getpid(), sig)  # delivered to this (main) thread at once; must not raise
        assert guard.received == [sig]
        with pytest.raises(Stopped) as info:
            guard.check()
        assert info.value.signum == sig
    try:
        # Stopping: from here to the exit (and through Python's finalization, which resets its
        # own handlers but not SIG_IGN) further stop signals are ignored.
        assert all(signal.getsignal(s) == signal.SIG_IGN for s in before)
        os.kill(os.getpid(), sig)  # would end this process with the default action
        assert guard.received == [sig]
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def test_without_a_signal_the_handlers_come_back():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with Guard():
        assert guarded()
    assert {s: signal.getsignal(s) for s in before} == before
    assert not guarded()


def test_check_without_a_signal_does_nothing():
    with Guard() as guard:
        guard.check()


def test_an_ignored_signal_stays_ignored():
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with Guard() as guard:
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
            guard.check()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_entered_twice_keeps_recording_until_the_outer_exit():
    with Guard() as guard:
        with guard:
            pass
        assert guarded()
    assert not guarded()
