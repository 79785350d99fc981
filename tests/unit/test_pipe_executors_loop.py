"""The driver loop of `kxtx pipe --mode executors` (kxtx/pipe/executors.py): when it stops.

Rounds are stood in for (no Spark, no broker): what is tested is the loop's own bookkeeping."""

from __future__ import annotations

import time

import pytest

from kxtx.errors import Unavailable, partial_of
from kxtx.pipe import executors
from kxtx.pipe.settings import PipeConfig
from kxtx.pipe.stats import Stats
from kxtx.signals import Guard


class Loop(executors.ExecutorPipe):
    """Planned work for `rounds` rounds; each round either fails (Spark job error) or reads."""

    def __init__(self, rounds: list, until_idle: float, assign_after: int | None = 1):
        self.cfg = PipeConfig(inputs=["in"], out="out", group="g", udf="m:f", until_idle=until_idle)
        self.stats, self.progress, self.lag = Stats(), None, 0
        self.signals = Guard()
        self._failed_rounds, self._next_progress = 0, 0.0
        self.rounds, self.ran = list(rounds), []
        self.assign_after, self.served = assign_after, 0

    def _serve(self, timeout):
        """The group assigns partitions at the `assign_after`-th call (None: never)."""
        self.served += 1
        time.sleep(min(timeout, 0.01))
        if self.served == self.assign_after:
            self._last_data = time.monotonic()  # what _on_assign does to the idle clock

    def _plan(self, budget):
        return ["plan"] if self.rounds else []

    def _round(self, plans):
        outcome = self.rounds.pop(0)
        self.ran.append(outcome)
        if outcome == "fail":
            self._failed("Spark job failed: lost executor")
            return 0
        self._failed_rounds = 0
        self.stats.add_batch(outcome, outcome, 0, 0)
        return outcome


def test_failed_rounds_do_not_count_as_idle():
    # Each failed round backs off (0.2 s, 0.4 s, ...), longer than --until-idle: the records are
    # still there, so the run goes on until they are processed, then stops idle.
    loop = Loop(["fail", "fail", "fail", 7], until_idle=0.1)
    loop._loop()
    assert loop.ran == ["fail", "fail", "fail", 7]
    assert (loop.stats.records_in, loop.stats.stopped) == (7, "idle")


def test_no_planned_work_is_idle():
    loop = Loop([], until_idle=0.05)
    loop._loop()
    assert (loop.ran, loop.stats.stopped) == ([], "idle")


def test_the_idle_clock_waits_for_the_first_assignment(monkeypatch):
    # Joining the group takes seconds: until then nothing is idle; after it, --until-idle counts.
    monkeypatch.setattr(executors, "ASSIGN_GRACE_S", 0.6)
    loop = Loop([], until_idle=0.05, assign_after=None)
    t0 = time.monotonic()
    loop._loop()
    assert loop.stats.stopped == "idle" and time.monotonic() - t0 >= 0.6
    loop = Loop([], until_idle=0.05, assign_after=2)
    t0 = time.monotonic()
    loop._loop()
    assert loop.stats.stopped == "idle" and time.monotonic() - t0 < 0.6


class Failing(Loop):
    """A run whose cluster goes away after its first round: "down" raises exit 75's error."""

    def prepare(self):
        pass

    def _subscribe(self):
        self.consumer = object()  # a member of the group from here on

    def close(self):
        pass

    def _round(self, plans):
        if self.rounds[0] == "down":
            raise Unavailable("the cluster stayed unavailable")
        return super()._round(plans)


def test_an_error_after_consuming_carries_the_summary():
    """What the json document of a failed pipe shows: the summary of what was done (carry)."""
    with pytest.raises(Unavailable) as info:
        Failing([5, "down"], until_idle=30).run()
    summary = partial_of(info.value)
    assert (summary["records_in"], summary["stopped"]) == (5, "error")
