"""Pure helpers of `kxtx pipe`'s loops: how big a round (executors mode) or a transaction (driver
mode) may be, when a streak of failed ones gives up (`Streak`), and the --debug line that says
where a round's time went."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from kxtx.errors import KafkaOperationError, Unavailable
from kxtx.log import logger
from kxtx.wording import plural

if TYPE_CHECKING:
    from kxtx.pipe.worker.task import TaskResult

#: librdkafka's default max.poll.interval.ms.
MAX_POLL_INTERVAL_MS = 300_000


def log_round(plans: list, results: list[TaskResult], plan_s: float, job_s: float) -> None:
    """With --debug: where a round's time went (the per-round fixed cost is what bounds small
    rounds; a task that started a producer has moved or was fenced)."""
    if not results or not logger.isEnabledFor(logging.DEBUG):
        return
    slow = max(results, key=lambda r: r.task_s)
    logger.debug(
        "round: %d task(s), %d record(s); plan %.0f ms, Spark job %.0f ms, task time sum %.0f ms;"
        " %d producer(s) started; slowest %s[%d] %.0f ms (init %.0f, consume %.0f, udf %.0f,"
        " produce %.0f, commit %.0f)",
        len(plans),
        sum(r.records_in for r in results),
        1000 * plan_s,
        1000 * job_s,
        1000 * sum(r.task_s for r in results),
        sum(r.init for r in results),
        slow.topic,
        slow.partition,
        *(
            1000 * getattr(slow, k)
            for k in ("task_s", "init_s", "consume_s", "udf_s", "produce_s", "commit_s")
        ),
    )


class Streak:
    """Failed rounds (executors mode) or aborted transactions (driver mode) in a row, and when
    they give up: after `most` of them, or, while they fail because the cluster or the schema
    registry does not answer, once KXTX_FAILOVER_TIMEOUT has passed since the first of them
    began. Each such failure waits out its own retries (a frozen registry: 3 tries of --timeout
    per request), so a count alone held a run for `most` times that (issue 62): the time bound
    makes the whole ride-out one bound, as a broker outage has."""

    def __init__(self, most: int, unit: str) -> None:
        self.most, self.unit = most, unit
        #: failures in a row, and when the first of them began (monotonic; None while none failed)
        self.n = 0
        self.since: float | None = None

    def ok(self) -> None:
        """One succeeded: the streak ends."""
        self.n, self.since = 0, None

    def failed(
        self,
        why: str,
        bound: float,
        unavailable: bool,
        began: float | None = None,
        error: type[KafkaOperationError] | None = None,
    ) -> int:
        """Count a failure (which began at `began`, monotonic; now if not given) and return how
        many in a row; when the streak is over, raise `error` (by default `Unavailable`, exit 75,
        when `unavailable`, else `KafkaOperationError`) saying why it gave up, `why` last."""
        now = time.monotonic()
        self.n += 1
        if self.since is None:
            self.since = now if began is None else min(began, now)
        over = unavailable and now - self.since >= bound
        if self.n >= self.most or over:
            error = error or (Unavailable if unavailable else KafkaOperationError)
            took = f" in {now - self.since:.0f}s (KXTX_FAILOVER_TIMEOUT)" if over else " in a row"
            raise error(f"gave up after {plural(self.n, self.unit)}{took}; last: {why}")
        return self.n


def run_token() -> str:
    """A token naming one run of executors mode: its tasks commit it as the offsets' metadata."""
    import uuid

    return f"kxtx-pipe-run:{uuid.uuid4().hex}"


#: `counted_from` for a partition with nothing committed when the run first planned it, read from
#: the log's start (--from earliest): the count stands at the log's start (the worker's Plan.counted
#: takes it as "read from the start"), so a first commit whose result is lost is counted too
LOG_START = -2


def counted_from(
    mine: int | None, offset: int, metadata: str | None, run: str, earliest: bool = False
) -> int:
    """Where the driver's count of a partition's records stands for a plan (`task.Plan.counted`):
    `mine`, where run `run`'s count stood (the committed offset it first planned from, then the
    offset each result reported; None: not planned yet); `offset` and `metadata`, the committed
    offset the driver read (< 0: none). A commit by another instance (its own token) moves the
    count up: those records are not this run's to count. A commit of this run's past `mine` is
    left for the task to count (a lost result). Nothing committed yet: LOG_START when the run
    reads such partitions from the start (`earliest`), else -1 (not known: from --from latest
    the first task starts at an end nobody recorded)."""
    if mine is None:
        return offset if offset >= 0 else (LOG_START if earliest else -1)
    if offset > mine and metadata != run:
        return offset
    return mine


def uncounted(counted: int, offset: int, metadata: str | None, run: str) -> bool:
    """Whether run `run` committed a partition past where its count stands (`counted`: an offset,
    LOG_START, or -1: not known) with no result reporting it: the Spark job failed after the
    attempt committed."""
    return (counted >= 0 or counted == LOG_START) and counted < offset and metadata == run


def taken_over(before: int | None, offset: int, metadata: str | None, run: str) -> bool:
    """Whether a partition on which a task of run `run` was fenced has been taken over by another
    instance: someone committed it since the round was planned (committed offset `before`, None
    if unknown), and not this run (its tasks commit `run` as metadata, its retries and
    speculative copies too). A fence with no commit since is this run's own copy, or the
    coordinator ending a transaction that outlived its timeout: the partition is planned again."""
    if before is None or offset < 0 or offset == before:
        return False
    return metadata != run


def round_limit(limit: int, biggest: int, round_s: float, interval_s: float) -> int:
    """The per-partition limit after a round of `round_s` whose largest task had `biggest`
    records: unchanged while rounds take at most half of the poll interval, else sized so that
    such a round takes about a quarter of it (a round's time grows with its largest tasks)."""
    if round_s <= interval_s / 2 or biggest < 1:
        return limit
    return max(1, min(limit, int(biggest * interval_s / 4 / round_s)))


def pace(limit: int, biggest: int, took_s: float, props: dict, unit: str) -> int:
    """The limit after a round or transaction of `biggest` records that took `took_s`, with a
    warning when it drops. Both loops poll the group only between them: one longer than
    max.poll.interval.ms costs the membership and its commit is refused (KIP-447), and the same
    size again fails again until the run gives up. A slow UDF at the default sizes gets there
    (100k records at 300 records/s)."""
    interval_s = float(props.get("max.poll.interval.ms", MAX_POLL_INTERVAL_MS)) / 1000
    new = round_limit(limit, biggest, took_s, interval_s)
    if new < limit:
        one, many, per = _UNITS[unit]
        logger.warning(
            "%s took %.0f s, more than half of max.poll.interval.ms (%.0f s); %s now "
            "take at most %d records%s (a larger -X max.poll.interval.ms allows more)",
            one,
            took_s,
            interval_s,
            many,
            new,
            per,
        )
    return new


_UNITS = {
    "round": ("a round", "rounds", " per partition"),
    "transaction": ("a transaction", "transactions", ""),
}


def split(budget: int | None, wants: list[int]) -> list[int]:
    """Each partition's limit for a round: its want, scaled down to fit --max-records exactly."""
    if budget is None or sum(wants) <= budget:
        return wants
    out, left = [], budget
    for i, want in enumerate(wants):
        share = min(want, left // (len(wants) - i) if i < len(wants) - 1 else left)
        out.append(share)
        left -= share
    return out
