"""Processes of a sharded dump (kxtx.dump.shards), with real forks and no Kafka: whole batches on the
shared output, exit codes combined, the partition split."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from kxtx.dump import shards as shards_mod
from kxtx.dump.runner import DumpRequest, choose_partitions, shardable
from kxtx.dump.shards import Shards
from kxtx.errors import UsageError


@pytest.fixture(autouse=True)
def _forkable(monkeypatch):
    # other tests of the session may have left threads behind; these children touch none of them
    monkeypatch.setattr(shards_mod, "_threads", lambda: 1)


def test_a_process_with_threads_is_not_forked(monkeypatch):
    monkeypatch.setattr(shards_mod, "_threads", lambda: 3)
    shards = Shards.fork(4)
    assert (shards.count, shards.index, shards.children) == (1, 0, [])


def test_default_count_is_one_per_core_at_most_four_and_one_off_linux(monkeypatch):
    from kxtx.dump.shards import default_count

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert default_count() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert default_count() == 1
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert default_count() == 1


def _in_workers(count: int, body) -> Shards:
    """Fork; run body(shards) in every process; workers end with the code body returns."""
    shards = Shards.fork(count)
    if shards.is_worker:
        code = 70
        try:
            code = body(shards)
        finally:
            os._exit(code)  # never back into pytest
    body(shards)
    return shards


def test_batches_are_never_interleaved(tmp_path):
    # each batch is written line by line (many small writes) into one pipe read by a thread-free
    # reader after the fact: without the write token, batches of different processes mix
    r, w = os.pipe()
    out = tmp_path / "out"

    def body(shards):
        for batch in range(60):
            with shards.writing():
                for line in range(40):
                    os.write(w, b"%d %d %d\n" % (shards.index, batch, line))
                    if line % 10 == 0:
                        time.sleep(0)  # give the others a chance to cut in
        return 0

    reader = os.fork()
    if reader == 0:  # drains the pipe so writers never block on a full pipe
        os.close(w)
        with open(out, "wb") as f:
            while chunk := os.read(r, 65536):
                f.write(chunk)
        os._exit(0)
    os.close(r)
    shards = _in_workers(3, body)
    assert shards.wait(0) == 0
    os.close(w)
    os.waitpid(reader, 0)
    lines = [tuple(map(int, x.split())) for x in out.read_bytes().splitlines()]
    assert len(lines) == 3 * 60 * 40
    for start in range(0, len(lines), 40):  # 40 consecutive lines = one batch of one process
        block = lines[start : start + 40]
        assert {(p, b) for p, b, _ in block} == {block[0][:2]}
        assert [n for _, _, n in block] == list(range(40))


def test_first_failing_worker_decides_the_exit_code():
    shards = _in_workers(4, lambda s: {0: 0, 1: 0, 2: 3, 3: 5}[s.index])
    assert shards.wait(0) == 3


def test_parent_failure_wins_and_stops_the_workers():
    def body(shards):
        if shards.is_worker:
            time.sleep(30)  # until SIGTERM ends it (default action: exit by signal)
        return 0

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    started = time.monotonic()
    shards = _in_workers(3, body)
    assert shards.wait(1) == 1
    assert time.monotonic() - started < 10


def test_worker_killed_by_a_signal_reports_128_plus_signal():
    shards = _in_workers(2, lambda s: os.kill(os.getpid(), signal.SIGKILL) if s.is_worker else 0)
    assert shards.wait(0) == 128 + signal.SIGKILL


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_shards_split_the_partitions(count):
    seen = []
    for index in range(count):
        req = DumpRequest(topic="__consumer_offsets", shard=(index, count))
        seen.append(choose_partitions(req, 50))
    assert sorted(p for part in seen for p in part) == list(range(50))
    assert all(part for part in seen)


@pytest.mark.parametrize(
    "opts, ok",
    [
        ({}, True),
        ({"partitions": [1, 2]}, True),
        ({"partitions": [3]}, False),
        ({"ids": ["g"]}, False),
        ({"latest": True}, False),
        ({"limit": 10}, False),
        ({"follow": True}, False),
        ({"include_uncommitted": True}, False),
    ],
)
def test_what_can_be_sharded(opts, ok):
    assert shardable(DumpRequest(topic="__consumer_offsets", **opts)) is ok


def test_sharding_what_cannot_be_is_a_usage_error():
    from kxtx.dump.runner import validate

    with pytest.raises(UsageError, match="--latest"):
        validate(DumpRequest(topic="__consumer_offsets", latest=True, shard=(0, 2)))


def test_workers_leave_ctrl_c_to_the_parent_and_end_quietly_on_sigterm():
    def body(shards):
        shards.worker_signals()
        if shards.is_worker:
            time.sleep(30)
        return 0

    shards = _in_workers(2, body)
    (pid,) = shards.children
    time.sleep(0.3)  # the worker has installed its handlers
    os.kill(pid, signal.SIGINT)
    time.sleep(0.3)
    assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # still running
    os.kill(pid, signal.SIGTERM)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 143
    shards.children = []


def test_the_parent_knows_the_rows_of_every_process():
    """Each process counts its rows into memory the fork shares: the parent can say a dump wrote
    none (a sharded dump that matched nothing printed nothing at all)."""

    def body(shards):
        shards.add_rows(shards.index * 10)  # 0, 10, 20, 30
        return 0

    shards = _in_workers(4, body)
    assert shards.wait(0) == 0
    assert shards.rows() == 60
    empty = _in_workers(3, lambda s: s.add_rows(0) or 0)
    assert empty.wait(0) == 0 and empty.rows() == 0
