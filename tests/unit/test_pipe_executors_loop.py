"""The driver loop of `kxtx pipe --mode executors` (kxtx/pipe/executors.py): when it stops, and
which planning errors it leaves to a later round.

Rounds are stood in for (no Spark, no broker): what is tested is the loop's own bookkeeping."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from kxtx.pipe import executors, stopsignals
from kxtx.pipe.config import PipeConfig, Stats


class Loop(executors.ExecutorPipe):
    """Planned work for `rounds` rounds; each round either fails (Spark job error) or reads."""

    def __init__(self, rounds: list, until_idle: float, assign_after: int | None = 1):
        self.cfg = PipeConfig(inputs=["in"], out="out", group="g", udf="m:f",
                              until_idle=until_idle)
        self.stats, self.progress, self.lag = Stats(), None, 0
        self.signals = stopsignals.Guard()
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


def test_a_round_says_where_its_time_went_with_debug(caplog):
    def result(partition, task_s, init):
        return {"topic": "in", "partition": partition, "in": 10, "task_s": task_s, "init": init,
                "init_s": 0.1 if init else 0.0, "consume_s": 0.01, "udf_s": 0.02,
                "produce_s": 0.003, "commit_s": 0.04}

    results = [result(0, 0.2, False), result(1, 0.5, True)]
    with caplog.at_level("INFO", logger="kxtx"):
        executors._log_round(["p0", "p1"], results, 0.012, 0.9)
    assert caplog.records == []  # only with --debug
    with caplog.at_level("DEBUG", logger="kxtx"):
        executors._log_round(["p0", "p1"], results, 0.012, 0.9)
    assert caplog.messages == [
        "round: 2 task(s), 20 record(s); plan 12 ms, Spark job 900 ms, task time sum 700 ms; "
        "1 producer(s) started; slowest in[1] 500 ms (init 100, consume 10, udf 20, produce 3, "
        "commit 40)"]


@pytest.mark.parametrize("exc, later", [
    # A partition the planner's clients do not know yet (just added) or whose leader moves.
    (KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION)), True),
    (KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)), True),
    (KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE)), True),
    (KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)), True),
    (KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT, "t", retriable=True)), True),
    # Nothing a later round changes: the planner stops with the error.
    (KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), False),
    (KafkaException(KafkaError(KafkaError._FENCED, "f", fatal=True)), False),
    (KafkaException("no error object"), False),
    (KafkaException(), False),
])
def test_which_planning_errors_wait_for_a_later_round(exc, later):
    assert executors._later(exc) is later
