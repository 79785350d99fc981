"""`kxtx pipe` under faults: SIGKILL at random moments, SIGTERM, and a zombie instance.

Each case checks the read_committed output against the input as an exact multiset: every input's
output exactly once, no duplicates, no losses.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter

import pytest

from tests.integration.kafka_io import HighWatermarks, multiset, read_committed, wait_until
from tests.integration.pipe_helpers import FAST_GROUP, UDFS, committed_offsets, pipe_args, produce, start_pipe

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

# A killed member stays in the group until its session times out; the broker's minimum keeps
# each restart's rebalance short.


#: Every run here: one Spark driver process, and a killed member leaves its group soon.
DRIVER = ("--mode", "driver", *FAST_GROUP)


def text(tmp_path, name: str, ext: str) -> str:
    return (tmp_path / f"{name}.{ext}").read_text()


def test_sigkill_at_random_moments_then_sigterm_exactly_once(kafka, tmp_path):
    n = 100_000
    src, out = kafka.create_topic(partitions=2), kafka.create_topic(partitions=2)
    vals = [b"r-%d" % i for i in range(n)]
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 97) for i in range(n)])
    group = f"crash-{uuid.uuid4().hex[:8]}"
    io = pipe_args(src, out, None, group, batch_max_records=2000, batch_max_ms=1000)
    # ~0.5 ms per record keeps each run short of the whole input, so every kill lands
    # mid-stream (Spark's start-up dominates a run otherwise).
    args = [*io, "--udf", f"{UDFS}:slow_identity"]
    hw = HighWatermarks(kafka.bootstrap, out, 2)
    rng = random.Random(int(os.environ.get("KXTX_TEST_SEED", "6")))
    proc = None
    try:
        for i in range(5):
            proc = start_pipe(kafka.bootstrap, tmp_path, f"kill{i}", *DRIVER, *args)
            assert hw.wait_growth(proc), text(tmp_path, f"kill{i}", "err")
            time.sleep(rng.uniform(0.0, 1.5))
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        # A SIGTERM mid-stream: the open transaction is finished or aborted, exit 143, summary.
        proc = start_pipe(kafka.bootstrap, tmp_path, "term", *DRIVER, *args)
        assert hw.wait_growth(proc), text(tmp_path, "term", "err")
        time.sleep(rng.uniform(0.0, 1.0))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 143, text(tmp_path, "term", "err")
        assert json.loads(text(tmp_path, "term", "out"))["stopped"] == "SIGTERM"
        assert "stopped by SIGTERM" in text(tmp_path, "term", "err")
    finally:
        hw.close()
        if proc is not None and proc.poll() is None:  # a failed assertion: leave no pipe behind
            proc.kill()
            proc.wait()
    # The rest at full speed (identity writes what slow_identity writes), stopping once the group's
    # committed offsets reach the end of the input rather than after an idle wait.
    rest = n - sum(max(o, 0) for o in committed_offsets(kafka.bootstrap, group, src, 2))
    assert rest > 0, "the input was all committed before the last run: the kills proved nothing"
    proc = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "final",
        *DRIVER,
        *io,
        "--udf",
        f"{UDFS}:identity",
        "--max-records",
        str(rest),
    )
    assert proc.wait(300) == 0, text(tmp_path, "final", "err")
    got = read_committed(kafka.bootstrap, out, timeout=120)
    counts = multiset(got)
    dupes = {v: c for v, c in counts.items() if c > 1}
    assert not dupes, f"{len(dupes)} duplicated outputs, e.g. {list(dupes.items())[:3]}"
    assert counts == Counter(vals), f"{len(set(vals) - set(counts))} inputs without output"


def feed_until_exit(proc: subprocess.Popen, bootstrap: str, topic: str, vals: list, timeout: float = 180):
    """A few more inputs on every partition of `topic` (2) every few seconds until `proc` exits;
    returns its exit code, None if it still runs after `timeout`. A fenced pipe learns it is fenced
    only at its next transaction: if it has finished its input and the rebalance left it a
    partition nobody writes to, it waits forever. (The likely way this test once hung under load:
    its extra inputs were unkeyed, and sticky partitioning can put them all on one partition.)"""
    deadline, k = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        for partition in (0, 1):
            extra = [b"extra-%d" % (k + i) for i in range(10)]
            produce(bootstrap, topic, extra, partition=partition)
            vals += extra
            k += len(extra)
        try:
            return proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
    return proc.poll()


def test_zombie_is_fenced_and_nothing_duplicates(kafka, tmp_path):
    n = 40_000
    src, out = kafka.create_topic(partitions=2), kafka.create_topic(partitions=2)
    vals = [b"z-%d" % i for i in range(n)]
    produce(kafka.bootstrap, src, vals)
    common = pipe_args(
        *(src, out, None, f"zombie-{uuid.uuid4().hex[:8]}"),
        transactional_id=f"zombie-{uuid.uuid4().hex[:8]}",
        batch_max_records=1000,
        batch_max_ms=500,
    )
    hw = HighWatermarks(kafka.bootstrap, out, 2)
    # faulthandler: a first instance that never ends is sent SIGABRT below, and its stderr then
    # shows where each thread waits (once in CI it wrote output, then nothing for minutes).
    first = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "first",
        *DRIVER,
        *common,
        "--udf",
        f"{UDFS}:slow_identity",
        env={"PYTHONFAULTHANDLER": "1"},
    )
    second = None
    try:
        assert hw.wait_growth(first), text(tmp_path, "first", "err")
        second = start_pipe(
            kafka.bootstrap, tmp_path, "second", *DRIVER, *common, "--udf", f"{UDFS}:identity"
        )
        rc = feed_until_exit(first, kafka.bootstrap, src, vals)
        if rc is None:
            first.send_signal(signal.SIGABRT)
            first.wait(30)
        err = text(tmp_path, "first", "err")
        assert rc == 1, f"exit {rc}; the first instance's stderr (tracebacks after SIGABRT):\n{err[-6000:]}"
        assert "fenced: another instance with the same transactional id took over" in err
        wait_until(
            lambda: len(read_committed(kafka.bootstrap, out)) >= len(vals),
            180,
            "the second instance to commit every input",
            every=0.5,
            procs=[second],
            stderr=lambda: text(tmp_path, "second", "err"),
        )
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 143, text(tmp_path, "second", "err")
    finally:
        hw.close()
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals)


def test_two_instances_share_the_group_exactly_once(kafka, tmp_path):
    """Scale-out: two instances, one group, their own transactional ids; rebalances on join/leave."""
    n = 16_000
    src, out = kafka.create_topic(partitions=4), kafka.create_topic(partitions=2)
    vals = [b"s-%d" % i for i in range(n)]
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 31) for i in range(n)])
    group = f"share-{uuid.uuid4().hex[:8]}"
    procs = [
        start_pipe(
            kafka.bootstrap,
            tmp_path,
            f"p{i}",
            *DRIVER,
            *pipe_args(
                src, out, "slow_identity", group, transactional_id=f"{group}-{i}", batch_max_records=1000
            ),
            *("--batch-max-ms", "500", "--until-idle", "8"),
        )
        for i in range(2)
    ]
    try:
        rcs = [p.wait(300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert rcs == [0, 0], [text(tmp_path, f"p{i}", "err") for i in range(2)]
    summaries = [json.loads(text(tmp_path, f"p{i}", "out")) for i in range(2)]
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals)
    assert sum(s["records_in"] for s in summaries) >= n


def test_an_older_executors_instance_stops_when_another_took_over(kafka, tmp_path):
    """Issue 29: an executors-mode instance frozen whole (SIGSTOP) mid-transaction while a second
    one with the same group and transactional id takes its partition over, fences its task and
    commits. Thawed, the older one must stop with exit 1 saying so (before, it rejoined the group
    and ran on beside the newer one); the newer one goes on: every input's output once."""
    src, out = kafka.create_topic(), kafka.create_topic()
    vals = [b"t-%d" % i for i in range(200)]
    produce(kafka.bootstrap, src, vals)
    marker, gate = tmp_path / "started", tmp_path / "gate"
    common = [
        *("--mode", "executors", "--master", "local[1]", "--in", src, "--out", out),
        *("--group", f"takeover-{uuid.uuid4().hex[:8]}"),
        *("--transactional-id", f"takeover-{uuid.uuid4().hex[:8]}", "--until-idle", "10", *FAST_GROUP),
    ]
    env = {"KXTX_TEST_MARKER": str(marker), "KXTX_TEST_GATE": str(gate)}
    # Its task holds in the UDF (the gate) with the start offset read and the transaction begun.
    older = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "older",
        *common,
        "--udf",
        f"{UDFS}:gated_identity",
        env=env,
        new_session=True,
    )
    newer = None
    try:
        wait_until(
            marker.exists,
            180,
            "the older instance's task",
            procs=[older],
            stderr=lambda: text(tmp_path, "older", "err"),
        )
        os.killpg(older.pid, signal.SIGSTOP)  # driver, Spark and its Python workers alike
        newer = start_pipe(kafka.bootstrap, tmp_path, "newer", *common, "--udf", f"{UDFS}:identity")
        wait_until(
            lambda: len(read_committed(kafka.bootstrap, out)) >= len(vals),
            180,
            "the newer instance to commit every input",
            every=0.5,
            procs=[newer],
            stderr=lambda: text(tmp_path, "newer", "err"),
        )
        gate.touch()
        os.killpg(older.pid, signal.SIGCONT)
        rc = older.wait(120)
        err = text(tmp_path, "older", "err")
        assert rc == 1, err
        assert "another instance with the same transactional id" in err and "took over" in err, err
        assert newer.wait(120) == 0, text(tmp_path, "newer", "err")
    finally:
        if older.poll() is None:  # its whole session: Spark's JVM and workers too
            os.killpg(older.pid, signal.SIGKILL)
            older.wait()
        if newer is not None and newer.poll() is None:
            newer.kill()
            newer.wait()
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals)
