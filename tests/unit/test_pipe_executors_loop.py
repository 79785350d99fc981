"""The driver loop of `kxtx pipe --mode executors` (kxtx/pipe/executors.py): when it stops.

Rounds are stood in for (no Spark, no broker): what is tested is the loop's own bookkeeping."""

from __future__ import annotations

import time

import pytest

from kxtx.client.settings import Settings
from kxtx.errors import Unavailable, partial_of
from kxtx.pipe import executors
from kxtx.pipe.rounds import Streak
from kxtx.pipe.runconfig import PipeConfig
from kxtx.pipe.stats import Stats
from kxtx.signals import Guard


class Loop(executors.ExecutorPipe):
    """Planned work for `rounds` rounds; each round either fails (Spark job error) or reads."""

    def __init__(self, rounds: list, until_idle: float, assign_after: int | None = 1):
        self.cfg = PipeConfig(inputs=["in"], out="out", group="g", udf="m:f", until_idle=until_idle)
        self.settings = Settings()
        self.stats, self.progress, self.lag = Stats(), None, 0
        self.signals = Guard()
        self.streak, self._next_progress = Streak(executors.MAX_FAILED_ROUNDS, "failed round"), 0.0
        self._round_began = None
        self._unreadable_since = self._lost_since = None
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
        self.streak.ok()
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
    assert (summary.records_in, summary.stopped) == (5, "error")


def _absorbing(monkeypatch) -> executors.ExecutorPipe:
    monkeypatch.setattr(executors.time, "sleep", lambda s: None)
    pipe = Loop([], until_idle=1)
    pipe._fenced, pipe._planned_from, pipe.tokens = {}, {}, {}
    return pipe


def test_rounds_failing_while_the_cluster_fails_over_give_up_with_exit_75(monkeypatch):
    from kxtx.errors import Unavailable
    from kxtx.pipe.worker.task import TaskResult

    pipe = _absorbing(monkeypatch)
    failed = TaskResult("in", 0, status="aborted", error="FENCED_LEADER_EPOCH: ...", unavailable=True)
    with pytest.raises(Unavailable, match="gave up after 8 failed rounds"):
        for _ in range(executors.MAX_FAILED_ROUNDS):
            pipe._absorb([failed])


def test_rounds_failing_otherwise_give_up_with_exit_1(monkeypatch):
    from kxtx.errors import KafkaOperationError, Unavailable
    from kxtx.pipe.worker.task import TaskResult

    pipe = _absorbing(monkeypatch)
    results = [
        TaskResult("in", 0, status="aborted", error="NOT_COORDINATOR: ...", unavailable=True),
        TaskResult("in", 1, status="aborted", error="INVALID_TXN_STATE: ...", unavailable=False),
    ]
    with pytest.raises(KafkaOperationError, match="gave up") as info:
        for _ in range(executors.MAX_FAILED_ROUNDS):
            pipe._absorb(results)
    assert not isinstance(info.value, Unavailable)


class Unreadable(Loop):
    """A partition's end cannot be read in the first `n` rounds (its leader moving)."""

    def __init__(self, n: int):
        super().__init__([], until_idle=0.05)
        self.n, self.calls = n, 0

    def _plan(self, budget):
        self.calls += 1
        self._unreadable_since = time.monotonic() if self.calls <= self.n else None
        return []


def test_rounds_that_cannot_read_a_partition_are_not_idle():
    # each idle round takes ~10 ms here: 30 of them outlast --until-idle 0.05 s
    loop = Unreadable(30)
    loop._loop()
    assert loop.calls > 30 and loop.stats.stopped == "idle"


def test_a_partition_unreadable_for_too_long_stops_with_exit_75(monkeypatch):
    from kxtx.errors import Unavailable

    loop = _absorbing(monkeypatch)
    loop.settings.failover = 0.0  # KXTX_FAILOVER_TIMEOUT
    loop._unreadable("in[0]: FENCED_LEADER_EPOCH")  # the first time starts the clock
    with pytest.raises(Unavailable, match=r"unreadable .*in\[0\]: FENCED_LEADER_EPOCH"):
        loop._unreadable("in[0]: FENCED_LEADER_EPOCH")


class Lost(Loop):
    """The group membership is lost (its coordinator down) in the first `n` rounds."""

    def __init__(self, n: int):
        super().__init__([], until_idle=0.05)
        self.n, self.calls = n, 0

    def _plan(self, budget):
        self.calls += 1
        self._lost_since = time.monotonic() if self.calls <= self.n else None
        return []


def test_rounds_without_the_group_are_not_idle():
    loop = Lost(30)
    loop._loop()
    assert loop.calls > 30 and loop.stats.stopped == "idle"


def test_a_group_lost_for_too_long_stops_with_exit_75():
    from kxtx.errors import Unavailable

    loop = Lost(1)
    loop.settings.failover = 0.0  # KXTX_FAILOVER_TIMEOUT
    loop._lost_since = time.monotonic() - 0.01
    with pytest.raises(Unavailable, match="consumer group 'g' stayed unavailable"):
        loop.lost()


@pytest.mark.parametrize("failing_first", [True, False])
def test_a_udf_error_is_counted_with_the_rest_of_its_round(failing_first):
    """The run stops on a task's UDF error, but the summary it carries says what the round did:
    the failed task's transaction aborted (the message says so), the other task's commit counted,
    whichever result comes first."""
    from kxtx.pipe.core import UdfFailed
    from kxtx.pipe.worker.outputs import UdfFailure
    from kxtx.pipe.worker.task import TaskResult

    loop = Loop([], until_idle=1)
    loop.tokens, loop._planned_from, loop._fenced, loop._counted = {}, {}, {}, {}
    loop.loaded = type("Loaded", (), {"name": "m:f"})()
    failed = TaskResult("in", 1, "udf-error", udf_failure=UdfFailure("in", 1, 7, "ValueError: x", 1))
    ok = TaskResult("in", 0, records_in=5, records_out=5, committed=5, token="t")
    with pytest.raises(UdfFailed, match="the transaction was aborted") as caught:
        loop._absorb([failed, ok] if failing_first else [ok, failed])
    assert "in[1]@7" in str(caught.value)
    assert (loop.stats.aborted, loop.stats.records_in, loop.stats.transactions) == (1, 5, 1)


def test_failing_rounds_have_one_bound_the_failover_timeout(monkeypatch):
    """A frozen schema registry made each round wait out every task's retries: 8 rounds took
    274 s at --timeout 5 (issue 62). The streak now ends at KXTX_FAILOVER_TIMEOUT, exit 75, with the
    tasks counted by what became of them (not "fenced or aborted" when nothing was fenced)."""
    from kxtx.errors import Unavailable
    from kxtx.pipe.worker.task import TaskResult

    pipe = _absorbing(monkeypatch)
    clock = [1000.0]
    monkeypatch.setattr(executors.time, "monotonic", lambda: clock[0])
    failed = TaskResult(
        "in", 0, status="aborted", error="_REGISTRY: schema registry did not answer", unavailable=True
    )
    pipe._absorb([failed])  # the first failed round: the streak begins
    clock[0] += pipe.settings.failover + 1  # one round that waited out its tasks' retries
    with pytest.raises(
        Unavailable, match=r"gave up after 2 failed rounds in \d+s \(KXTX_FAILOVER_TIMEOUT\)"
    ) as info:
        pipe._absorb([failed])
    assert "1 task(s) failed (1 aborted): schema registry did not answer" in str(info.value)
