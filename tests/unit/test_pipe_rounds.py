"""kxtx/pipe/rounds.py: the pure helpers of executors mode's driver loop (table tests)."""

from __future__ import annotations

import pytest

from kxtx.pipe import rounds
from kxtx.pipe.worker.task import TaskResult


def test_a_round_says_where_its_time_went_with_debug(caplog):
    def result(partition, task_s, init):
        return TaskResult(
            topic="in",
            partition=partition,
            records_in=10,
            task_s=task_s,
            init=init,
            init_s=0.1 if init else 0.0,
            consume_s=0.01,
            udf_s=0.02,
            produce_s=0.003,
            commit_s=0.04,
        )

    results = [result(0, 0.2, False), result(1, 0.5, True)]
    with caplog.at_level("INFO", logger="kxtx"):
        rounds.log_round(["p0", "p1"], results, 0.012, 0.9)
    assert caplog.records == []  # only with --debug
    with caplog.at_level("DEBUG", logger="kxtx"):
        rounds.log_round(["p0", "p1"], results, 0.012, 0.9)
    assert caplog.messages == [
        "round: 2 task(s), 20 record(s); plan 12 ms, Spark job 900 ms, task time sum 700 ms; "
        "1 producer(s) started; slowest in[1] 500 ms (init 100, consume 10, udf 20, produce 3, "
        "commit 40)"
    ]


@pytest.mark.parametrize(
    "limit, biggest, round_s, interval_s, want",
    [
        (100_000, 100_000, 2.0, 300.0, 100_000),  # a normal round: unchanged
        (100_000, 100_000, 150.0, 300.0, 100_000),  # exactly half the interval: still unchanged
        (100_000, 100_000, 200.0, 300.0, 37_500),  # over half: sized to a quarter (75 s)
        (100_000, 100_000, 400.0, 300.0, 18_750),  # the round already cost the membership
        (100_000, 5_000, 200.0, 300.0, 1_875),  # sized from the records the round really had
        (1_000, 90_000, 200.0, 300.0, 1_000),  # never raised above the current limit
        (100, 100, 10_000.0, 8.0, 1),  # at least one record per partition
        (100_000, 0, 200.0, 300.0, 100_000),  # no task: nothing to learn from
    ],
)
def test_round_limit_keeps_rounds_inside_the_poll_interval(limit, biggest, round_s, interval_s, want):
    assert rounds.round_limit(limit, biggest, round_s, interval_s) == want


@pytest.mark.parametrize(
    "budget, wants, want",
    [
        (None, [5, 7], [5, 7]),  # no --max-records
        (20, [5, 7], [5, 7]),  # fits
        (10, [5, 7], [5, 5]),  # scaled down to exactly the budget
        (10, [2, 9, 9], [2, 4, 4]),  # a small want leaves its share to the others
        (1, [5, 5, 5], [0, 0, 1]),  # fewer records than partitions: the last one gets it
        (0, [5], [0]),
    ],
)
def test_split_fits_max_records_exactly(budget, wants, want):
    assert rounds.split(budget, wants) == want


def test_pace_warns_when_it_makes_rounds_or_transactions_smaller(caplog):
    """-X max.poll.interval.ms=8000 and a 15 s round of 3000 records per partition: the driver
    would lose its membership every round, so rounds shrink (with a warning) to ~2 s."""
    props = {"bootstrap.servers": "b:9092", "max.poll.interval.ms": "8000"}
    with caplog.at_level("WARNING", logger="kxtx"):
        assert rounds.pace(3000, 3000, 3.9, props, "round") == 3000
        assert caplog.records == []
        assert rounds.pace(3000, 3000, 15.0, props, "round") == 400
        assert rounds.pace(200_000, 200_000, 200.0, {}, "transaction") == 75_000  # 5 min default
    assert caplog.messages == [
        "a round took 15 s, more than half of max.poll.interval.ms (8 s); rounds now take at "
        "most 400 records per partition (a larger -X max.poll.interval.ms allows more)",
        "a transaction took 200 s, more than half of max.poll.interval.ms (300 s); transactions "
        "now take at most 75000 records (a larger -X max.poll.interval.ms allows more)",
    ]


RUN = "kxtx-pipe-run:mine"


@pytest.mark.parametrize(
    "before, offset, metadata, taken",
    [
        # another instance committed the partition after this run's task was planned
        (100, 250, "kxtx-pipe-run:theirs", True),
        (-1001, 250, "kxtx-pipe-run:theirs", True),  # nothing committed when planned
        (100, 250, None, True),  # a commit without a token (driver mode, an older kxtx)
        (100, 250, "", True),
        # this run's own retry or speculative copy committed it
        (100, 250, RUN, False),
        # no commit since: the run's own copy fenced it, or the coordinator ended the transaction
        (100, 100, "kxtx-pipe-run:theirs", False),  # e.g. the previous run's token
        (-1001, -1001, None, False),
        # the committed offset was not known when the round was planned: no verdict
        (None, 250, "kxtx-pipe-run:theirs", False),
    ],
)
def test_a_fenced_partition_was_taken_over_when_another_run_committed_it_since(
    before, offset, metadata, taken
):
    assert rounds.taken_over(before, offset, metadata, RUN) is taken


def test_each_run_has_its_own_token():
    assert rounds.run_token() != rounds.run_token()
    assert rounds.run_token().startswith("kxtx-pipe-run:")


@pytest.mark.parametrize(
    "mine, offset, metadata, counted",
    [
        (None, 500, "other", 500),  # first plan of the partition in this run: from where it stands
        (None, -1001, "", -1),  # nothing committed yet, read from the end (--from latest)
        (None, 500, RUN, 500),
        (300, 300, RUN, 300),  # this run's last reported commit
        (300, 500, RUN, 300),  # this run committed past its count: a lost result, the task counts it
        (300, 500, "other", 500),  # another instance moved it on: not this run's records
        (300, 200, "other", 300),  # an older read (not yet stable): the count stays
    ],
)
def test_where_the_count_of_a_partition_stands(mine, offset, metadata, counted):
    assert rounds.counted_from(mine, offset, metadata, RUN) == counted


@pytest.mark.parametrize(
    "mine, offset, metadata, counted",
    [
        (None, -1001, "", rounds.LOG_START),  # nothing committed, read from the log's start
        (None, 500, "other", 500),
        (rounds.LOG_START, 500, RUN, rounds.LOG_START),  # this run's first commit, its result lost
        (rounds.LOG_START, 500, "other", 500),  # another instance committed it first
    ],
)
def test_the_count_of_a_partition_read_from_the_start(mine, offset, metadata, counted):
    assert rounds.counted_from(mine, offset, metadata, RUN, earliest=True) == counted


def test_the_log_start_means_the_same_on_both_sides():
    from kxtx.pipe.worker import task

    assert task.LOG_START == rounds.LOG_START < -1


@pytest.mark.parametrize(
    "counted, offset, metadata, uncounted",
    [
        (300, 500, RUN, True),  # the job failed after an attempt committed: count it
        (300, 300, RUN, False),  # counted
        (300, 500, "other", False),  # another instance's (counted_from moves past it)
        (-1, 500, RUN, False),  # where the run started is not known: nothing to count from
        (rounds.LOG_START, 500, RUN, True),  # this run's first commit: counted from the log's start
        (rounds.LOG_START, 500, "other", False),
        (rounds.LOG_START, -1001, "", False),  # nothing committed
        (0, 1, RUN, True),
        (500, 300, RUN, False),  # an older read
    ],
)
def test_a_commit_of_this_run_no_result_reported(counted, offset, metadata, uncounted):
    assert rounds.uncounted(counted, offset, metadata, RUN) is uncounted
