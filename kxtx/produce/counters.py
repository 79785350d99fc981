"""Counters, delivery reports and the final summary of a `kxtx produce` run."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kxtx.log import logger
from kxtx.results import OMIT_EMPTY, Result

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

MAX_REPORTED_ERRORS = 10
PROGRESS_EVERY_S = 0.5


@dataclass(frozen=True, slots=True)
class Progress(Result):
    """Where a run is (this run's records and bytes, the open transaction's included)."""

    records: int
    bytes: int
    records_per_s: float
    transactions: int
    elapsed_s: float


@dataclass(frozen=True, slots=True)
class PartitionRange(Result):
    """The offsets this run committed in one partition of the topic."""

    partition: int
    first_offset: int | None
    last_offset: int | None
    records: int


@dataclass(frozen=True, slots=True)
class FileResult(Result):
    """One input of a run: where it started and how far it is committed."""

    file: str
    format: str
    start: str
    from_line: int
    committed_through_line: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary(Result):
    """What a `kxtx produce` run did, in the order of its output's keys."""

    result: str
    topic: str
    transactional_id: str
    records: int
    transactions: int
    bytes: int
    skipped: int
    dead_lettered: int
    aborted_transactions: int
    elapsed_s: float
    records_per_s: int | None
    partitions: list[PartitionRange]
    errors: list[str] = field(default_factory=list, metadata=OMIT_EMPTY)
    files: list[FileResult]
    #: the registry schemas keys / values were written with (`--value-schema`, `--key-schema`)
    schemas: list[dict] = field(default_factory=list, metadata=OMIT_EMPTY)
    #: why nothing was written (every input was produced already); the CLI also says it on stderr
    message: str = field(default="", metadata=OMIT_EMPTY)


ProgressFn = Callable[[Progress], None]


class Stats:
    def __init__(self, topic: str, transactional_id: str, progress: ProgressFn | None = None) -> None:
        self.topic, self.transactional_id, self.progress = topic, transactional_id, progress
        self.started = time.monotonic()
        self.records = self.bytes = self.transactions = 0  # committed by this run
        self.pending_records = self.pending_bytes = 0  # in the open transaction
        self.skipped = self.dead_lettered = self.aborted_transactions = 0
        self.pending_skipped = self.pending_dlq = 0
        self.errors: list[str] = []
        self.ranges: dict[int, list[int]] = {}  # partition -> [first, last, count], committed
        self.txn_ranges: dict[int, list] = {}
        #: partition -> records of the open transaction sent there without a delivery report (the
        #: fast paths choose the partition themselves: counted, not reported)
        self.txn_counted: dict[int, int] = {}
        self.delivery_error: KafkaError | None = None
        self.nothing_to_do = False
        self._last_progress = 0.0

    # --- delivery reports (called from poll/flush/commit in this thread) --------------------------
    # msg: the delivered record's Message, whose partition and offset are set (typed Optional)
    def delivered(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.delivery_error = self.delivery_error or err
            return
        p, o = msg.partition(), msg.offset()
        r = self.txn_ranges.get(p)
        if r is None:
            self.txn_ranges[p] = [o, o, 1]
        else:
            if o < r[0]:
                r[0] = o
            if o > r[1]:
                r[1] = o
            r[2] += 1

    def sampled(self, err: KafkaError | None, msg: Any) -> None:
        """The report of a counted record: it extends the partition's offset range only (the
        fast paths counted it already). `delivered`'s bookkeeping, its count taken back: that
        one stays straight-line, as librdkafka calls it once per record."""
        self.delivered(err, msg)
        if err is None:
            self.txn_ranges[msg.partition()][2] -= 1

    def other_delivered(self, err: KafkaError | None, msg: Any) -> None:  # noqa: ARG002 - librdkafka's delivery callback
        """Checkpoint and dead-letter records: only their errors matter."""
        if err is not None:
            self.delivery_error = self.delivery_error or err

    # --- transaction outcomes ---------------------------------------------------------------------
    def committed(self) -> None:
        self.records += self.pending_records
        self.bytes += self.pending_bytes
        self.skipped += self.pending_skipped
        self.dead_lettered += self.pending_dlq
        self.transactions += 1
        for p, n in self.txn_counted.items():
            if n:  # normally one report at least came back (a fake producer in the tests sends none)
                self.txn_ranges.setdefault(p, [None, None, 0])[2] += n
        for p, (first, last, n) in self.txn_ranges.items():
            r = self.ranges.setdefault(p, [first, last, 0])
            if first is not None:
                r[0] = first if r[0] is None else min(r[0], first)
                r[1] = last if r[1] is None else max(r[1], last)
            r[2] += n
        self._reset()
        self.tick(force=True)

    def aborted(self) -> None:
        self.aborted_transactions += 1
        self._reset()

    def _reset(self) -> None:
        self.pending_records = self.pending_bytes = self.pending_skipped = self.pending_dlq = 0
        self.txn_ranges = {}
        self.txn_counted = {}
        self.delivery_error = None

    def bad(self, where: str, reason: str, dlq: bool = False, outcome: str | None = None) -> None:
        """A bad line; `outcome`: what its warning says became of it (a dry run: what a run would
        do), else dead-lettered or skipped."""
        if dlq:
            self.pending_dlq += 1
        else:
            self.pending_skipped += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(f"{where}: {reason}")
            logger.warning(f"{where}: {reason} ({outcome or ('dead-lettered' if dlq else 'skipped')})")

    # --- progress and summary ---------------------------------------------------------------------
    def tick(self, force: bool = False) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if force or now - self._last_progress >= PROGRESS_EVERY_S:
            self._last_progress = now
            elapsed = max(now - self.started, 1e-9)
            done = self.records + self.pending_records
            self.progress(
                Progress(
                    records=done,
                    bytes=self.bytes + self.pending_bytes,
                    records_per_s=done / elapsed,
                    transactions=self.transactions,
                    elapsed_s=elapsed,
                )
            )

    def summary(self, files: list[FileResult], message: str = "") -> Summary:
        elapsed = time.monotonic() - self.started
        return Summary(
            result="nothing to do" if self.nothing_to_do else "produced",
            topic=self.topic,
            transactional_id=self.transactional_id,
            records=self.records,
            transactions=self.transactions,
            bytes=self.bytes,
            skipped=self.skipped,
            dead_lettered=self.dead_lettered,
            aborted_transactions=self.aborted_transactions,
            elapsed_s=round(elapsed, 3),
            records_per_s=round(self.records / elapsed) if elapsed > 0 else None,
            partitions=[PartitionRange(p, r[0], r[1], r[2]) for p, r in sorted(self.ranges.items())],
            errors=self.errors,
            files=files,
            message=message,
        )
