"""`kxtx pipe` run statistics: progress, the summary, and the stop-by-signal exception carrying it."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kxtx.errors import Interrupted
from kxtx.results import Result
from kxtx.signals import signal_number
from kxtx.wording import plural

if TYPE_CHECKING:
    from kxtx.pipe.runconfig import RunConfig


@dataclass(frozen=True, slots=True)
class Progress(Result):
    """Where a run is: its counts, its input rate over the last interval (RATE_INTERVAL_S or more,
    since the report before: 0 while idle), the records left to read."""

    records_in: int
    records_out: int
    dlq: int
    transactions: int
    aborted: int
    rate: float
    #: records left to read in this instance's partitions (None: not known)
    lag: int | None = None


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class Summary(Result):
    """What a `kxtx pipe` run did, in the order of its output's keys."""

    group: str
    transactional_id: str
    input: str
    output: str
    records_in: int
    records_out: int
    dropped: int
    dlq: int
    transactions: int
    aborted: int
    lost_results: int
    elapsed_s: float
    records_per_s: float
    processing_s: float
    processing_records_per_s: float
    spark_ms_per_batch: float
    commit_ms_per_batch: float
    produce_ms_per_batch: float
    consume_s: float
    stopped: str


#: The input rate a progress report shows is over at least this many seconds (reports come about
#: once a second, forced ones more often: a shorter span would be noise).
RATE_INTERVAL_S = 1.0


@dataclass
class Stats:
    started: float = field(default_factory=time.monotonic)
    #: when the first record arrived: the rate after it leaves out Spark start-up and group join
    first_record: float | None = None
    records_in: int = 0
    records_out: int = 0
    dropped: int = 0
    dlq: int = 0
    transactions: int = 0
    aborted: int = 0
    #: executors mode: commits whose task result was lost (see task._recovered)
    lost_results: int = 0
    consume_s: float = 0.0
    spark_s: float = 0.0
    produce_s: float = 0.0
    commit_s: float = 0.0
    stopped: str = ""
    #: (when, records_in) at the start of the rate's interval, and the rate of the last one
    rate_mark: tuple[float, int] | None = None
    rate: float = 0.0

    def add_batch(self, n_in: int, n_out: int, n_dlq: int, n_dropped: int) -> None:
        self.records_in += n_in
        self.records_out += n_out
        self.dlq += n_dlq
        self.dropped += n_dropped
        self.transactions += 1

    def progress(self, lag: int | None = None) -> Progress:
        """The rate is over the last interval, not since the start: an average since the start
        fell slowly while the pipe was idle and rose slowly after."""
        now = time.monotonic()
        since, count = self.rate_mark or (self.started, 0)
        if now - since >= RATE_INTERVAL_S or self.rate_mark is None:
            self.rate = (self.records_in - count) / max(1e-9, now - since)
            self.rate_mark = (now, self.records_in)
        return Progress(
            records_in=self.records_in,
            records_out=self.records_out,
            dlq=self.dlq,
            transactions=self.transactions,
            aborted=self.aborted,
            rate=round(self.rate, 1),
            lag=lag,
        )

    def summary(self, cfg: RunConfig) -> Summary:
        now = time.monotonic()
        elapsed = now - self.started
        busy = now - self.first_record if self.first_record is not None else 0.0
        txns = max(1, self.transactions)
        return Summary(
            group=cfg.group,
            transactional_id=cfg.transactional_id,
            input=",".join(cfg.inputs),
            output=cfg.out,
            records_in=self.records_in,
            records_out=self.records_out,
            dropped=self.dropped,
            dlq=self.dlq,
            transactions=self.transactions,
            aborted=self.aborted,
            lost_results=self.lost_results,
            elapsed_s=round(elapsed, 3),
            records_per_s=round(self.records_in / elapsed, 1) if elapsed > 0 else 0.0,
            processing_s=round(busy, 3),
            processing_records_per_s=round(self.records_in / busy, 1) if busy > 0 else 0.0,
            spark_ms_per_batch=round(1000 * self.spark_s / txns, 1),
            commit_ms_per_batch=round(1000 * self.commit_s / txns, 1),
            produce_ms_per_batch=round(1000 * self.produce_s / txns, 1),
            consume_s=round(self.consume_s, 3),
            stopped=self.stopped or "error",
        )


class PipeInterrupted(Interrupted):
    """SIGINT/SIGTERM/SIGHUP: the open transaction was finished or aborted; carries the summary."""

    def __init__(self, summary: Summary, signum: int) -> None:
        super().__init__(
            f"stopped by {signal.Signals(signum).name} after {plural(summary.records_in, 'record')} in "
            f"{plural(summary.transactions, 'transaction')}; no transaction left "
            "open",
            signum,
        )
        self.summary = self.partial = summary


def interrupted(exc: BaseException, stats: Stats, cfg: RunConfig) -> PipeInterrupted | None:
    """What a run raises when `exc` is a stop by a signal (the summary so far); None for an error
    (an error stays an error, signal or not). `PipeCore.run` uses it, for both modes."""
    signum = signal_number(exc)
    if signum is None:
        return None
    stats.stopped = signum.name
    return PipeInterrupted(stats.summary(cfg), signum)
