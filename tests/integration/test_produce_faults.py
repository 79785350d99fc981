"""`kxtx produce` under faults: SIGKILL at random moments and resume, SIGTERM/SIGINT/SIGHUP, zombie fencing.
The final read_committed content must equal the input exactly once, in order."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

from tests import cli
from tests.integration.kafka_io import read, values
from tests.integration.produce_helpers import summary, write_jsonl


def _start(kafka, *args, preexec_fn=None) -> subprocess.Popen:
    return cli.start(
        "produce",
        *args,
        env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )


def _wait_for_records(kafka, topic: str, at_least: int, proc, timeout: float = 60) -> bool:
    """Until the topic's high watermark (committed or not) reaches `at_least`; False if the run
    ended first."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "watermarks"})
    try:
        deadline = time.monotonic() + timeout
        while c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1] < at_least:
            if proc.poll() is not None:
                return False
            assert time.monotonic() < deadline, "the run produced nothing"
            time.sleep(0.01)
        return True
    finally:
        c.close()


def test_sigkill_at_random_moments_then_resume(kafka, topic, tmp_path):
    path = tmp_path / "big.jsonl"
    lines = write_jsonl(path, 200_000)
    seed = int(os.environ.get("KXTX_TEST_SEED", time.time_ns() % 10**6))
    rnd = random.Random(seed)
    # one kill during start-up, then kills when the log (uncommitted records included) reaches
    # random sizes, so they land inside transactions, between them and during commits
    moments = [("startup", rnd.uniform(0.1, 0.8))] + [
        ("offset", o) for o in sorted(rnd.sample(range(1, 195_000), 5))
    ]
    killed_while_running = 0
    for kind, at in moments:
        proc = _start(kafka, str(path), "-t", topic, "-n", "5000", "-k", "c.k")
        if kind == "startup":
            time.sleep(at)
            running = proc.poll() is None
        else:
            running = _wait_for_records(kafka, topic, at, proc)
        if running:
            proc.send_signal(signal.SIGKILL)
            killed_while_running += 1
        proc.communicate(timeout=60)
    assert killed_while_running >= 3, f"seed {seed}: runs finished before they could be killed"
    final = _start(kafka, str(path), "-t", topic, "-n", "5000", "-k", "c.k")
    cli.finish(final, timeout=300)
    got = values(read(kafka.bootstrap, topic, timeout=120))
    assert len(got) == len(lines), f"seed {seed}: {len(got)} records for {len(lines)} lines"
    assert got == lines, f"seed {seed}: content differs from the input"
    # and once more: nothing left to do
    again = _start(kafka, str(path), "-t", topic, "-k", "c.k")
    assert "nothing to do" in cli.finish(again, timeout=120).stderr


def test_sigterm_sigint_and_sighup_abort_and_resume(kafka, topic, tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    path = tmp_path / "in.jsonl"
    lines = write_jsonl(path, 100_000)
    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "watermarks"})
    stops = (
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGHUP, 129, "hung up"),
    )
    for sig, code, word in stops:
        high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        # small transactions keep the run busy for seconds; signal it once it wrote 2000 more
        proc = _start(kafka, str(path), "-t", topic, "-n", "200")
        assert _wait_for_records(kafka, topic, high + 2000, proc), "the run ended before the signal"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert f"{word}: aborted the open transaction" in err
        # the checkpoint is consistent: what is visible is a prefix of the input
        got = values(read(kafka.bootstrap, topic))
        assert got == lines[: len(got)] and 0 < len(got) < len(lines)
    c.close()
    final = _start(kafka, str(path), "-t", topic)
    cli.finish(final, timeout=120)
    assert values(read(kafka.bootstrap, topic)) == lines


def test_a_signal_ignored_at_start_stays_ignored(kafka, topic, tmp_path):
    """`kxtx produce ... &` in a script: the shell starts it with SIGINT ignored (nohup does the same
    with SIGHUP), and a Ctrl-C meant for the script's foreground job must not stop it."""
    path = tmp_path / "in.jsonl"
    lines = write_jsonl(path, 20_000)
    proc = _start(kafka, str(path), "-t", topic, "-n", "200", preexec_fn=_ignore_sigint)
    assert _wait_for_records(kafka, topic, 2000, proc), "the run ended before the signal"
    proc.send_signal(signal.SIGINT)
    cli.finish(proc, timeout=120)
    assert values(read(kafka.bootstrap, topic)) == lines


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_zombie_is_fenced(kafka, topic, tmp_path):
    path = tmp_path / "in.jsonl"
    lines = write_jsonl(path, 50_000)
    # the older run commits small transactions, so it is still running when the newer one starts
    old = _start(kafka, str(path), "-t", topic, "-n", "100")
    assert _wait_for_records(kafka, topic, 1000, old), "the older run ended too early"
    new = _start(kafka, str(path), "-t", topic, "-n", "10000")
    newer = cli.finish(new, timeout=120)
    out_old, err_old = old.communicate(timeout=60)
    assert old.returncode == 1, err_old
    assert "was taken over by another producer (fenced)" in err_old
    assert summary(newer)["transactional_id"] in err_old
    assert values(read(kafka.bootstrap, topic)) == lines


def test_resume_waits_for_another_producers_open_transaction(kafka, topic, tmp_path):
    """A read_committed reader stops at the last stable offset: an open transaction of another
    producer on the checkpoint topic must delay the resume, not hide our checkpoint."""
    import threading

    from confluent_kafka import Producer

    path = tmp_path / "in.jsonl"
    first = write_jsonl(path, 1000)
    cli.finish(_start(kafka, str(path), "-t", topic, "-n", "300"), timeout=120)
    other = Producer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "transactional.id": f"other-{topic}",
            "transaction.timeout.ms": 300_000,
        }
    )
    other.init_transactions(30)
    other.begin_transaction()
    other.produce("kxtx-checkpoints", b"{}", key=f"other-{topic}".encode())
    other.flush(30)
    more = write_jsonl(path, 10, start=1000)
    resumed = _start(kafka, str(path), "-t", topic, "-n", "300")
    # The other transaction ends once the run says it waits for it (a fixed 5 s timer ended it
    # before a run slowed by a loaded CI machine had read the checkpoints: nothing to wait for).
    lines: list[str] = []

    def read_stderr() -> None:
        assert resumed.stderr is not None
        lines.extend(resumed.stderr)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while not any("waiting for another producer's open transaction" in line for line in lines):
        if resumed.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    other.abort_transaction(30)
    out = resumed.stdout.read() if resumed.stdout else ""
    resumed.wait(120)
    reader.join(30)
    err = "".join(lines)
    assert resumed.returncode == 0, err
    assert "waiting for another producer's open transaction" in err
    assert summary(subprocess.CompletedProcess([], 0, out, err))["records"] == 10
    assert values(read(kafka.bootstrap, topic)) == first + more
