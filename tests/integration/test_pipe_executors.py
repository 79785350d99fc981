"""`kxtx pipe --mode executors` without a cluster: the task's fencing against a frozen zombie and
of a worker's cached producer, two instances of one pipe, other members of its group (also one
joining mid-round), pattern inputs (both modes), rounds longer than the poll interval, input
partitions added while it runs, and how little a task fetches past its round (real broker; local
Spark)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter

import pytest

from tests import cli
from tests.conftest import ROOT
from tests.integration.kafka_io import multiset, read_committed, wait_until
from tests.integration.pipe_helpers import (
    FAST_GROUP,
    committed_offsets,
    pipe_args,
    produce,
    run_in_process,
    start_pipe,
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.fixture(autouse=True)
def _forget_cached_task_clients():
    """The tests that call `run_plan` here play a Spark Python worker, which caches its consumer and
    producers for the next task. Closed after each test: left open, they logged "Connection
    refused" every few milliseconds once the session broker stopped."""
    yield
    from kxtx.pipe.worker import task as taskmod

    state = sys.modules.pop(taskmod._STATE, None)
    for consumer in getattr(state, "consumers", {}).values():
        consumer.close()


def test_a_frozen_task_is_fenced_by_the_next_one(kafka, tmp_path):
    """A task reads its start offset and is frozen (SIGSTOP) mid-UDF; the task that replaces it
    (same partition, so the same transactional id) fences it, reads the same start offset and
    commits. Thawed, the zombie's transaction is refused: every input's output exactly once."""
    from kxtx.pipe.worker import task as taskmod
    from tests.integration.pipe_task_runner import job

    src, out = kafka.create_topic(), kafka.create_topic()
    vals = [b"z-%d" % i for i in range(3000)]
    produce(kafka.bootstrap, src, vals)
    group, pipe_id = f"g-{uuid.uuid4().hex[:8]}", f"pipe-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "started"
    env = {**os.environ, "KXTX_TEST_MARKER": str(marker), "PYTHONPATH": str(ROOT)}
    zombie = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.pipe_task_runner",
            kafka.bootstrap,
            group,
            pipe_id,
            src,
            "0",
            out,
            "marking_slow_identity",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline and zombie.poll() is None:
            time.sleep(0.05)
        if not marker.exists():
            pytest.fail("the task did not start: " + "\n".join(zombie.communicate(timeout=30)))
        zombie.send_signal(signal.SIGSTOP)
        plan = taskmod.Plan(src, 0, limit=1_000_000, end=1 << 62, token=None)
        fresh = taskmod.run_plan(job(kafka.bootstrap, group, pipe_id, out, "identity"), plan)
        assert (fresh.status, fresh.records_in, fresh.init) == ("ok", 3000, True), fresh
        zombie.send_signal(signal.SIGCONT)
        stdout, stderr = zombie.communicate(timeout=120)
    finally:
        if zombie.poll() is None:
            zombie.send_signal(signal.SIGCONT)
            zombie.kill()
            zombie.wait()
    result = json.loads(stdout.splitlines()[-1])
    assert result["status"] == "fenced", (result["status"], result["error"], stderr[-1500:])
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals)
    assert committed_offsets(kafka.bootstrap, group, src, 1) == [3000]


def test_a_task_whose_cached_producer_was_fenced_reports_the_fence(kafka):
    """A worker keeps its producer across rounds; fenced meanwhile (here by a producer with the
    same transactional id), its next round's produce() calls fail with `_FATAL` only. The task
    still reports `fenced` (so the driver plans the partition again instead of stopping), drops
    that producer, and nothing of the round is committed; the next round starts a new one."""
    from confluent_kafka import Producer

    from kxtx.pipe.worker import task as taskmod
    from tests.integration.pipe_task_runner import job

    src, out = kafka.create_topic(), kafka.create_topic()
    produce(kafka.bootstrap, src, [b"a-%d" % i for i in range(10)])
    group, pipe_id = f"g-{uuid.uuid4().hex[:8]}", f"pipe-{uuid.uuid4().hex[:8]}"
    j = job(kafka.bootstrap, group, pipe_id, out, "identity")
    first = taskmod.run_plan(j, taskmod.Plan(src, 0, limit=1_000_000, end=1 << 62, token=None))
    assert (first.status, first.records_in) == ("ok", 10), first
    tid = taskmod.transactional_id(pipe_id, src, 0)
    other = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid})
    other.init_transactions(30)  # fences the worker's cached producer
    # Enough records that the fence arrives while produce() is still queueing them.
    produce(kafka.bootstrap, src, [b"b-%d" % i for i in range(200_000)])
    again = taskmod.Plan(src, 0, limit=1_000_000, end=1 << 62, token=first.token)
    second = taskmod.run_plan(j, again)
    assert (second.status, second.records_in, second.init) == ("fenced", 0, False), second
    assert tid not in taskmod._state().producers
    assert committed_offsets(kafka.bootstrap, group, src, 1) == [10]
    third = taskmod.run_plan(j, again)
    assert (third.status, third.records_in, third.init) == ("ok", 200_000, True), third
    assert len(read_committed(kafka.bootstrap, out)) == 200_010


def test_a_retry_counts_what_an_attempt_with_a_lost_result_committed(kafka):
    """An attempt commits and its worker dies before the result reaches the driver; Spark runs
    the task again with the same plan. The retry finds the partition committed past what the
    driver counted, under this run's token: it counts those records (read again, not produced
    again) and goes on with what came since. A commit by another instance (another token) past
    the driver's count is not this run's work and is not counted."""
    import dataclasses

    from kxtx.pipe.worker import task as taskmod
    from tests.integration.pipe_task_runner import job

    src, out = kafka.create_topic(), kafka.create_topic()
    produce(kafka.bootstrap, src, [b"a-%d" % i for i in range(500)])
    group, pipe_id = f"g-{uuid.uuid4().hex[:8]}", f"pipe-{uuid.uuid4().hex[:8]}"
    j = dataclasses.replace(job(kafka.bootstrap, group, pipe_id, out, "identity"), run="run-1")
    plan = taskmod.Plan(src, 0, limit=1_000_000, end=1 << 62, token=None, counted=-1001)
    first = taskmod.run_plan(j, plan)
    assert (first.status, first.records_in, first.recovered, first.committed) == ("ok", 500, 0, 500)
    # the result is lost; the retry runs the same plan (the driver's count still at the start)
    again = dataclasses.replace(plan, counted=0)
    retry = taskmod.run_plan(j, again)
    assert (retry.status, retry.records_in, retry.recovered, retry.committed) == ("ok", 500, 500, 500)
    # the partition's first commit: the driver's count stands at the log's start (LOG_START, --from
    # earliest with nothing committed), not at an offset; the retry counts from there
    first_retry = taskmod.run_plan(j, dataclasses.replace(plan, counted=taskmod.LOG_START))
    assert (first_retry.status, first_retry.records_in, first_retry.recovered) == ("ok", 500, 500)
    # or the whole Spark job failed, and nothing came since: the driver's next round plans a task
    # that only counts (limit 0, ExecutorPipe._plan); it counts the commit and writes nothing
    count_only = taskmod.run_plan(j, dataclasses.replace(plan, limit=0, end=500, counted=0))
    assert (count_only.status, count_only.records_in, count_only.recovered) == ("ok", 500, 500)
    assert (count_only.committed, count_only.records_out) == (500, 0)
    produce(kafka.bootstrap, src, [b"b-%d" % i for i in range(300)])
    more = taskmod.run_plan(j, again)
    assert (more.status, more.records_in, more.recovered, more.committed) == ("ok", 800, 500, 800)
    assert len(read_committed(kafka.bootstrap, out)) == 800  # nothing produced twice
    other = taskmod.run_plan(dataclasses.replace(j, run="run-2"), dataclasses.replace(plan, counted=500))
    assert (other.status, other.records_in, other.recovered, other.committed) == ("ok", 0, 0, None)


def test_a_task_fetches_little_past_its_round(kafka):
    """A task reads its round out of a backlog, then unassigns: what its consumer prefetched past
    the round is dropped (and fetched again next round). The consumer keeps about one consume()
    batch queued, not librdkafka's default 100000 records."""
    import dataclasses

    from kxtx.pipe.worker import task as taskmod
    from tests.integration.pipe_task_runner import job

    src, out = kafka.create_topic(), kafka.create_topic()
    produce(kafka.bootstrap, src, [b"%06d-%s" % (i, b"p" * 90) for i in range(200_000)])  # ~10k a fetch
    stats: dict = {}

    def keep(text: str) -> None:
        doc = json.loads(text)
        if doc["type"] == "consumer":
            stats["fetched"] = doc["rxmsgs"]

    j = job(kafka.bootstrap, f"g-{uuid.uuid4().hex[:8]}", f"pipe-{uuid.uuid4().hex[:8]}", out, "identity")
    j = dataclasses.replace(j, conf={**j.conf, "statistics.interval.ms": 100, "stats_cb": keep})
    limit = 50_000
    result = taskmod.run_plan(j, taskmod.Plan(src, 0, limit=limit, end=1 << 62, token=None))
    assert (result.status, result.records_in) == ("ok", limit)
    (consumer,) = sys.modules[taskmod._STATE].consumers.values()
    wait_until(lambda: consumer.poll(0.1) is None and "fetched" in stats, 10, "the consumer's statistics")
    time.sleep(0.3)
    consumer.poll(0.3)  # statistics after the unassign: nothing more comes
    # the round, the batch the queue keeps, one fetch in flight, one more fetch's worth of slack
    assert limit <= stats["fetched"] <= limit + 4 * taskmod.CONSUME_BATCH, stats


@pytest.mark.parametrize("start, first_in", [("earliest", 50), ("latest", 0)])
def test_a_partition_without_committed_offset_starts_where_from_says(kafka, start, first_in):
    """--from names where a group without committed offsets starts; the task asks for that
    offset itself (not through auto.offset.reset). Either way the first round pins it by a
    commit, so what arrives after it is read, and only once."""
    import dataclasses

    from kxtx.pipe.worker import task as taskmod
    from tests.integration.pipe_task_runner import job

    src, out = kafka.create_topic(), kafka.create_topic()
    old = [b"old-%d" % i for i in range(50)]
    produce(kafka.bootstrap, src, old)
    group, pipe_id = f"g-{uuid.uuid4().hex[:8]}", f"pipe-{uuid.uuid4().hex[:8]}"
    j = dataclasses.replace(job(kafka.bootstrap, group, pipe_id, out, "identity"), start=start)
    plan = taskmod.Plan(src, 0, limit=1_000_000, end=1 << 62, token=None)
    first = taskmod.run_plan(j, plan)
    assert (first.status, first.records_in, first.committed) == ("ok", first_in, 50), first
    assert committed_offsets(kafka.bootstrap, group, src, 1) == [50]
    new = [b"new-%d" % i for i in range(30)]
    produce(kafka.bootstrap, src, new)
    second = taskmod.run_plan(j, dataclasses.replace(plan, token=first.token))
    assert (second.status, second.records_in, second.committed) == ("ok", 30, 80), second
    expected = (old if start == "earliest" else []) + new
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(expected)


def local(mode: str = "executors") -> tuple[str, ...]:
    """The arguments of every run here: MODE on a one-core local Spark."""
    return ("--mode", mode, "--master", "local[1]")


def errs(tmp_path, procs: list):
    """The stderr of runs p0, p1, ... (read when called: `procs` may still grow)."""
    return lambda: [(tmp_path / f"p{i}.err").read_text() for i in range(len(procs))]


def wait_all(procs: list, tmp_path, timeout: float = 400) -> list[dict]:
    try:
        rcs = [p.wait(timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    errs = [(tmp_path / f"p{i}.err").read_text() for i in range(len(procs))]
    assert rcs == [0] * len(procs), errs
    return [json.loads((tmp_path / f"p{i}.out").read_text()) for i in range(len(procs))]


def test_two_instances_of_one_pipe_never_duplicate(kafka, tmp_path):
    """Same group and pipe id: every task of one fences the other's task on that partition."""
    src, out = kafka.create_topic(partitions=4), kafka.create_topic(partitions=2)
    vals = [b"two-%d" % i for i in range(12_000)]
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 31) for i in range(len(vals))])
    args = pipe_args(src, out, "slow_identity", batch_max_records=500, until_idle=6)
    procs = [start_pipe(kafka.bootstrap, tmp_path, f"p{i}", *local(), *args) for i in range(2)]
    summaries = wait_all(procs, tmp_path)
    counts = multiset(read_committed(kafka.bootstrap, out))
    assert not {v: c for v, c in counts.items() if c > 1}
    assert counts == Counter(vals)
    assert sum(s["records_in"] for s in summaries) == len(vals)


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(("executors", "--transactional-id", "other-id"), id="executors-other-id"),
        pytest.param(("driver",), id="driver-mode"),
    ],
)
def test_another_member_of_the_group_never_duplicates(kafka, tmp_path, second):
    """Same group, transactional ids that cannot fence each other (another --transactional-id,
    or driver mode): the group splits the partitions and a task commits only with its driver's
    generation, so nothing is processed twice."""
    src, out = kafka.create_topic(partitions=4), kafka.create_topic(partitions=2)
    vals = [b"mix-%d" % i for i in range(12_000)]
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 31) for i in range(len(vals))])
    args = [*pipe_args(src, out, "slow_identity", batch_max_records=500, until_idle=8), *FAST_GROUP]
    mode, *extra = second
    procs = [
        start_pipe(kafka.bootstrap, tmp_path, "p0", *local(), *args),
        start_pipe(kafka.bootstrap, tmp_path, "p1", *local(mode), *args, *extra),
    ]
    shared_exactly_once(kafka, out, vals, wait_all(procs, tmp_path))


def shared_exactly_once(kafka, out: str, vals: list, summaries: list[dict]) -> None:
    """Every input's output once, and every instance took part."""
    counts = multiset(read_committed(kafka.bootstrap, out))
    assert not {v: c for v, c in counts.items() if c > 1}
    assert counts == Counter(vals)
    assert sum(s["records_in"] for s in summaries) == len(vals)
    assert all(s["records_in"] > 0 for s in summaries), summaries


def test_a_member_joining_mid_round_never_duplicates(kafka, tmp_path):
    """A driver-mode instance joins the group while a round is open (its first task is held by
    the UDF until the test has seen the group start rebalancing). The round commits with the
    generation it was planned in, still current until this driver rejoins; the next rounds plan
    only the partitions the group gives it, and the newcomer reads from the committed offsets."""
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    src, out = kafka.create_topic(partitions=4), kafka.create_topic(partitions=2)
    vals = [b"join-%d" % i for i in range(4000)]
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 31) for i in range(len(vals))])
    group = f"g-{uuid.uuid4().hex[:8]}"
    marker, gate = tmp_path / "started", tmp_path / "gate"
    env = {"KXTX_TEST_MARKER": str(marker), "KXTX_TEST_GATE": str(gate)}
    args = [*pipe_args(src, out, "gated_identity", group, batch_max_records=500, until_idle=8), *FAST_GROUP]
    procs = [start_pipe(kafka.bootstrap, tmp_path, "p0", *local(), *args, env=env)]
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    try:
        wait_until(
            marker.exists, 180, "the first round's first task", procs=procs, stderr=errs(tmp_path, procs)
        )
        procs.append(start_pipe(kafka.bootstrap, tmp_path, "p1", *local("driver"), *args, env=env))
        # PREPARING_REBALANCING: the newcomer's JoinGroup waits for this driver to rejoin
        wait_until(
            lambda: (
                admin.describe_consumer_groups([group])[group].result(30).state
                == ConsumerGroupState.PREPARING_REBALANCING
            ),
            180,
            "the second member's join",
            procs=procs,
            stderr=errs(tmp_path, procs),
        )
        # the join arrived mid-round: nothing of the held round is committed yet
        assert read_committed(kafka.bootstrap, out) == []
    finally:
        gate.touch()
    shared_exactly_once(kafka, out, vals, wait_all(procs, tmp_path))


@pytest.mark.parametrize("mode", ["executors", "driver"])
def test_a_pattern_input_takes_its_topics_and_never_kafkas_own(kafka, spark_session, mode):
    """--in '^(__|PREFIX-)': both PREFIX- topics, and not __consumer_offsets or
    __transaction_state, which librdkafka's pattern subscription would take too. (In-process: the
    subscription is the subject, not the process.)"""
    prefix = f"re{uuid.uuid4().hex[:8]}"
    a = kafka.create_topic(f"{prefix}-a", partitions=2)
    b = kafka.create_topic(f"{prefix}-b")
    out = kafka.create_topic()
    produce(kafka.bootstrap, a, [b"a-%d" % i for i in range(300)])
    produce(kafka.bootstrap, b, [b"b-%d" % i for i in range(200)])
    summary = run_in_process(kafka, spark_session, [f"^(__|{prefix}-)"], out, "identity", mode=mode)
    want = Counter([b"a-%d" % i for i in range(300)] + [b"b-%d" % i for i in range(200)])
    assert multiset(read_committed(kafka.bootstrap, out)) == want
    assert summary.records_in == 500


def test_a_udf_failure_stops_the_other_tasks_of_its_round(kafka, spark_session):
    """Issue 42 item 6, executors mode on local Spark, no dead-letter topic: the task whose UDF
    fails stops calling it after the chunk with the failing record and tells the round's other
    tasks, which stop between fetches or UDF calls and abort, instead of running their whole
    round (here 20,000 records of a slow UDF, ~5 s). Nothing is committed anywhere; the summary
    counts what was aborted."""
    from kxtx.errors import partial_of
    from kxtx.pipe.core import UdfFailed

    src = kafka.create_topic(partitions=2)
    produce(kafka.bootstrap, src, [b"a-%d" % i for i in range(20000)], partition=0)
    bad = [b"b-%d" % i for i in range(20000)]
    bad[50] = b"poison"
    produce(kafka.bootstrap, src, bad, partition=1)
    out, group = kafka.create_topic(), f"g-{uuid.uuid4().hex[:8]}"
    # UDF calls of 500 records: where the tasks look for the stop
    spark_session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
    try:
        with pytest.raises(UdfFailed) as caught:
            run_in_process(
                kafka,
                spark_session,
                [src],
                out,
                "slow_poison",
                mode="executors",
                group=group,
                batch_max_records=20000,
            )
    finally:
        spark_session.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    summary = partial_of(caught.value)
    assert f"failed on {src}[1]@50: ValueError: cannot handle the poison record" in str(caught.value)
    # partition 0's task stopped: without the stop it committed its 20,000 records
    assert summary.records_in == 0 and summary.transactions == 0
    assert summary.aborted >= 1
    assert read_committed(kafka.bootstrap, out) == []
    assert committed_offsets(kafka.bootstrap, group, src, 2) == [-1001, -1001]


@pytest.mark.parametrize("mode", ["executors", "driver"])
def test_rounds_longer_than_the_poll_interval_shrink_instead_of_failing(kafka, tmp_path, mode):
    """A slow UDF and a round (driver mode: a transaction) of 2000 records, 10 s, against
    -X max.poll.interval.ms=6000 (the least librdkafka takes with the 6 s session timeout): the
    driver polls the group only between them, so it loses its membership and the commit is refused. The same size again would fail again until the run
    gives up; instead they shrink (with a warning) and every input arrives exactly once."""
    src, out = kafka.create_topic(), kafka.create_topic()
    vals = [b"slow-%d" % i for i in range(2000)]
    produce(kafka.bootstrap, src, vals)
    proc = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "p0",
        *local(mode),
        *pipe_args(src, out, "sluggish_identity", batch_max_records=2000, until_idle=6),
        *FAST_GROUP,
        "-X",
        "max.poll.interval.ms=6000",
    )
    (summary,) = wait_all([proc], tmp_path)
    err = (tmp_path / "p0.err").read_text()
    unit = "rounds" if mode == "executors" else "transactions"
    assert f"more than half of max.poll.interval.ms (6 s); {unit} now take at most" in err, err
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals)
    assert summary["records_in"] == len(vals)


def test_partitions_added_while_running_are_picked_up(kafka, tmp_path):
    from confluent_kafka.admin import AdminClient, NewPartitions

    src, out = kafka.create_topic(partitions=2), kafka.create_topic()
    first = [b"old-%d" % i for i in range(2000)]
    # keyed: keyless records stick to one partition per batch, and all 2,000 can land on one, which
    # left partition 1 without a transaction (and its id out of `inspect txn` below)
    produce(kafka.bootstrap, src, first, keys=[b"k%d" % i for i in range(len(first))])
    proc = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "p0",
        *local(),
        *pipe_args(src, out, until_idle=15),
    )
    wait_until(
        lambda: len(read_committed(kafka.bootstrap, out)) >= len(first),
        240,
        "the first records' output",
        every=0.5,
        procs=[proc],
        stderr=(tmp_path / "p0.err").read_text,
    )
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_partitions([NewPartitions(src, 4)])[src].result(30)
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kafka.bootstrap})
    later = [b"new-%d" % i for i in range(400)]
    for i, v in enumerate(later):
        p.produce(src, v, partition=2 + i % 2)
    assert p.flush(30) == 0
    (summary,) = wait_all([proc], tmp_path)
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(first + later)
    assert summary["records_in"] == len(first) + len(later)
    # `inspect txn PIPE-ID` shows the partitions' own ids (PIPE-ID itself is never used), the
    # added partitions' too, each with its last transaction committed
    pipe_id = summary["transactional_id"]
    view = cli.run(
        "inspect", "txn", pipe_id, "-o", "json", timeout=120, env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap}
    ).json
    assert [row["transactional_id"] for row in view["transactional_ids"]] == [
        f"{pipe_id}.{src}.{p}" for p in range(4)
    ]
    assert {row["state"] for row in view["transactional_ids"]} == {"CompleteCommit"}
    assert view["verdict"] == "4 transactional ids, one per input partition: all idle, no open transaction"
    assert all(d["history"][-1]["state"] == "CompleteCommit" for d in view["details"])


def test_a_pipe_from_latest_reads_what_arrives_between_rounds(kafka, tmp_path):
    """`--from latest`, a new group, 4 partitions that already hold records: the first round
    commits their ends, so records written while the pipe runs are all read, once (before,
    every round started at a new "latest" and skipped what had come in between)."""
    src, out = kafka.create_topic(partitions=4), kafka.create_topic(partitions=2)
    old = [b"old-%d" % i for i in range(400)]
    produce(kafka.bootstrap, src, old, [b"k%d" % (i % 13) for i in range(len(old))])
    group = f"g-{uuid.uuid4().hex[:8]}"
    procs = [
        start_pipe(
            kafka.bootstrap,
            tmp_path,
            "p0",
            *local(),
            # Stops on the condition, not on idle time: a first round slower than a short
            # --until-idle (Spark's workers starting on a loaded machine) ended the run before the
            # new records came. A pipe that skipped some never reaches the count and idles out.
            *pipe_args(src, out, "identity", group, from_="latest", max_records=300, until_idle=120),
        )
    ]
    ends: list[int] = []

    def pinned():
        ends[:] = committed_offsets(kafka.bootstrap, group, src, 4)
        return all(o >= 0 for o in ends)

    wait_until(pinned, 180, "the first round's commits", procs=procs, stderr=errs(tmp_path, procs))
    assert sum(ends) == len(old)
    new = [b"new-%d" % i for i in range(300)]
    for i in range(0, len(new), 50):  # across several rounds
        produce(kafka.bootstrap, src, new[i : i + 50], [b"k%d" % (j % 13) for j in range(50)])
        time.sleep(0.3)
    (summary,) = wait_all(procs, tmp_path)
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(new)
    assert summary["records_in"] == len(new)
