"""Driver mode's aborted transactions in a row (kxtx/pipe/driver.py, kxtx/pipe/rounds.py Streak):
when a schema registry that does not answer is ridden out, and when the run gives up.

The batch is stood in for (no Spark, no broker); the clock is a list the stand-ins move."""

from __future__ import annotations

import pytest

from kxtx.client.registry import RegistryUnavailable
from kxtx.client.settings import Settings
from kxtx.errors import ExitCode
from kxtx.pipe import driver, rounds
from kxtx.pipe.stats import Stats


class Txn:
    def abort(self, cause=None):
        pass


class Frozen(driver.DriverPipe):
    """Each batch's schema id fetch waits out 3 tries of --timeout, then fails, for the first
    `down` batches (a SIGSTOPped registry, as issue 62 froze one); the later batches commit."""

    def __init__(self, clock: list, down: int, timeout: float, failover: float):
        self.settings = Settings()
        self.settings.timeout, self.settings.failover = timeout, failover
        self.stats, self._txn, self.pending = Stats(), Txn(), []
        self.streak = rounds.Streak(driver.MAX_ATTEMPTS, "aborted transaction")
        self.clock, self.down, self.batches = clock, down, 0

    def _seek_to_first(self, records, only_owned=False):
        pass

    def _transact(self, batch):
        self.batches += 1
        if self.batches > self.down:
            return
        self.clock[0] += 3 * self.settings.timeout
        raise RegistryUnavailable("schema registry http://r:8081 did not answer (schema id 7): timed out")


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(driver.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(driver.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


def test_a_registry_that_comes_back_is_ridden_out(clock):
    """It used to stop the run at the first batch that met it (exit 75), where executors mode
    rode it out; now the batch is aborted, read again and committed."""
    pipe = Frozen(clock, down=2, timeout=1.0, failover=90.0)
    for _ in range(3):
        pipe._process_batch()
    assert (pipe.batches, pipe.stats.aborted, pipe.streak.n) == (3, 2, 0)


def test_a_registry_that_stays_frozen_gives_up_at_the_failover_timeout(clock):
    """The whole ride-out has one bound, KXTX_FAILOVER_TIMEOUT, counted from the first failing
    batch's start: at --timeout 5 each batch waits 15 s, so 20 s is over after the second."""
    pipe = Frozen(clock, down=99, timeout=5.0, failover=20.0)
    with pytest.raises(RegistryUnavailable) as info:
        for _ in range(driver.MAX_ATTEMPTS):
            pipe._process_batch()
    assert info.value.exit_code == ExitCode.RETRY
    assert str(info.value).startswith(
        "gave up after 2 aborted transactions in 30s (KXTX_FAILOVER_TIMEOUT); last: schema registry "
        "http://r:8081 did not answer"
    )


def test_a_streak_gives_up_after_its_count_when_the_cause_is_not_an_outage(clock):
    streak = rounds.Streak(3, "failed round")
    for _ in range(2):
        streak.failed("INVALID_TXN_STATE", 0.0, unavailable=False)
    with pytest.raises(Exception, match="gave up after 3 failed rounds in a row; last: INVALID") as info:
        streak.failed("INVALID_TXN_STATE", 0.0, unavailable=False)
    assert info.value.exit_code == ExitCode.ERROR
    streak.ok()
    assert (streak.n, streak.since) == (0, None)
