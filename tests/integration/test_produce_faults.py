"""`kxtx produce` under faults: SIGKILL at random moments and resume, SIGTERM/SIGINT, zombie fencing.
The final read_committed content must equal the input exactly once, in order."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT
from tests.integration.produce_helpers import consume, summary, values, write_jsonl


def _start(kafka, *args) -> subprocess.Popen:
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap}
    return subprocess.Popen([sys.executable, "-m", "kxtx", "produce", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_records(kafka, topic: str, at_least: int, proc, timeout: float = 60) -> None:
    """Until the topic holds some records (committed or not): the run is past its start-up."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "watermarks"})
    try:
        deadline = time.monotonic() + timeout
        while c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1] < at_least:
            assert proc.poll() is None, f"run ended early: {proc.communicate()}"
            assert time.monotonic() < deadline, "the run produced nothing"
            time.sleep(0.05)
    finally:
        c.close()


def test_sigkill_at_random_moments_then_resume(kafka, topic, tmp_path):
    path = tmp_path / "big.jsonl"
    lines = write_jsonl(path, 200_000)
    seed = int(os.environ.get("KXTX_TEST_SEED", time.time_ns() % 10**6))
    rnd = random.Random(seed)
    killed_while_running = 0
    for _ in range(5):
        proc = _start(kafka, str(path), "-t", topic, "-n", "5000", "-k", "c.k")
        # start-up (connect, init_transactions, read the checkpoint) takes about a second
        time.sleep(rnd.uniform(0.5, 4.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed_while_running += 1
        proc.communicate(timeout=60)
    assert killed_while_running >= 3, f"seed {seed}: runs finished before they could be killed"
    final = _start(kafka, str(path), "-t", topic, "-n", "5000", "-k", "c.k")
    out, err = final.communicate(timeout=300)
    assert final.returncode == 0, err
    got = values(consume(kafka.bootstrap, topic, timeout=120))
    assert len(got) == len(lines), f"seed {seed}: {len(got)} records for {len(lines)} lines"
    assert got == lines, f"seed {seed}: content differs from the input"
    # and once more: nothing left to do
    again = _start(kafka, str(path), "-t", topic, "-k", "c.k")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and "nothing to do" in err


def test_sigterm_and_sigint_abort_and_resume(kafka, topic, tmp_path):
    path = tmp_path / "in.jsonl"
    lines = write_jsonl(path, 30_000)
    for sig, code, word in ((signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")):
        proc = _start(kafka, str(path), "-t", topic, "-n", "200")
        _wait_for_records(kafka, topic, 1 if sig == signal.SIGTERM else len(values(
            consume(kafka.bootstrap, topic))) + 1, proc)
        time.sleep(0.3)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert f"{word}: aborted the open transaction" in err
        # the checkpoint is consistent: what is visible is a prefix of the input
        got = values(consume(kafka.bootstrap, topic))
        assert got == lines[:len(got)] and 0 < len(got) < len(lines)
    final = _start(kafka, str(path), "-t", topic, "-n", "5000")
    out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    assert values(consume(kafka.bootstrap, topic)) == lines


def test_zombie_is_fenced(kafka, topic, tmp_path):
    path = tmp_path / "in.jsonl"
    lines = write_jsonl(path, 50_000)
    # the older run commits small transactions, so it is still running when the newer one starts
    old = _start(kafka, str(path), "-t", topic, "-n", "100")
    _wait_for_records(kafka, topic, 1000, old)
    new = _start(kafka, str(path), "-t", topic, "-n", "10000")
    out, err = new.communicate(timeout=120)
    assert new.returncode == 0, err
    out_old, err_old = old.communicate(timeout=60)
    assert old.returncode == 1, err_old
    assert "was taken over by another producer (fenced)" in err_old
    assert summary(subprocess.CompletedProcess([], 0, out, err))["transactional_id"] in err_old
    assert values(consume(kafka.bootstrap, topic)) == lines
