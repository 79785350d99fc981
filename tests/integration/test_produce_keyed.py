"""`kxtx produce` on its keyed fast path against a real broker, read back read_committed: keyed JSON
lines (dotted path) and CSV to 6 partitions land on the Java client's partition for their key, in
input order per key, counted right in the summary; headers and timestamps from fields; exactly once
after SIGKILLs and a rerun; a record the broker refuses aborts the transaction and is reported."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import signal
import time
from collections import Counter, defaultdict

import pytest
from kafka.partitioner.default import murmur2  # the Java client's partitioner, in Python

from tests import cli
from tests.integration.kafka_io import read
from tests.integration.produce_helpers import summary
from tests.integration.test_produce_faults import _start

# fast and general paths compared: CI runs them again with KXTX_FAST=0 (kxtx.fast)
pytestmark = [pytest.mark.kafka, pytest.mark.fastpath]
PARTITIONS = 6


def _java_partition(key: bytes) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % PARTITIONS


def _check_keyed(records, expected: list[tuple[bytes, bytes]], result: dict | None = None) -> None:
    """Every (key, value) once, on its key's Java partition, in input order per key; the
    summary's per-partition counts are what was read back."""
    assert sorted((r[1], r[2]) for r in records) == sorted(expected)
    by_key = defaultdict(list)
    for part, key, value, _, _ in records:
        assert part == _java_partition(key), key
        by_key[key].append(value)
    for key, values in by_key.items():
        assert values == [v for k, v in expected if k == key], f"order of key {key!r}"
    if result is not None:
        got = Counter(r[0] for r in records)
        assert {p["partition"]: p["records"] for p in result["partitions"]} == dict(got)
        for p in result["partitions"]:
            assert p["first_offset"] == 0 and p["last_offset"] >= p["records"] - 1


def _jsonl(path, n: int) -> list[tuple[bytes, bytes]]:
    lines = [
        json.dumps(
            {"id": i, "c": {"k": f"k{i % 37}-é"}, "ev": f"e{i % 3}", "ts": 1700000000000 + i},
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
        for i in range(n)
    ]
    path.write_bytes(b"\n".join(lines[:10]) + b'\n\n{"bad\n' + b"\n".join(lines[10:]) + b"\n")
    return [(json.loads(v)["c"]["k"].encode(), v) for v in lines]


def test_keyed_jsonl_six_partitions(kafka, run_kxtx, tmp_path):
    topic = kafka.create_topic(partitions=PARTITIONS)
    path = tmp_path / "in.jsonl"
    expected = _jsonl(path, 3000)
    p = run_kxtx("produce", str(path), "-t", topic, "-k", "c.k", "-n", "500", "--on-error", "skip", expect=0)
    result = summary(p)
    # 3001 lines: the bad one counts towards -n as in the general path
    assert result["records"] == 3000 and result["skipped"] == 1 and result["transactions"] == 7
    assert f"{path}:12: bad JSON" in p.stderr
    _check_keyed(read(kafka.bootstrap, topic), expected, result)


def test_keyed_csv_six_partitions_value_as_json(kafka, run_kxtx, tmp_path):
    topic = kafka.create_topic(partitions=PARTITIONS)
    rows = [[f"k{i % 23}", f'name {i}, "quoted" ü', str(i)] for i in range(2000)]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["key", "name", "n"])
    w.writerows(rows)
    path = tmp_path / "in.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    p = run_kxtx("produce", str(path), "-t", topic, "-k", "key", "--value-as-json", "-n", "300", expect=0)
    expected = [
        (
            r[0].encode(),
            json.dumps(
                dict(zip(["key", "name", "n"], r)), ensure_ascii=False, separators=(",", ":")
            ).encode(),
        )
        for r in rows
    ]
    _check_keyed(read(kafka.bootstrap, topic), expected, summary(p))


def test_header_and_timestamp_fields(kafka, run_kxtx, tmp_path):
    topic = kafka.create_topic(partitions=PARTITIONS)
    path = tmp_path / "in.jsonl"
    expected = _jsonl(path, 500)
    p = run_kxtx(
        "produce",
        str(path),
        "-t",
        topic,
        "-k",
        "c.k",
        "--header-field",
        "event=ev",
        "--timestamp-field",
        "ts",
        "-H",
        "src=test",
        "--on-error",
        "skip",
        expect=0,
    )
    records = read(kafka.bootstrap, topic)
    _check_keyed(records, expected, summary(p))
    for _, _, value, headers, ts in records:
        doc = json.loads(value)
        assert headers == [("src", b"test"), ("event", doc["ev"].encode())]
        assert ts == doc["ts"]


def _log_end(kafka, topic: str) -> int:
    """Records in the topic's log, committed or not (the sum of the high watermarks)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "watermarks"})
    try:
        return sum(
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)
        )
    finally:
        c.close()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_sigkill_then_rerun_is_exactly_once(kafka, tmp_path, fmt):
    topic = kafka.create_topic(partitions=PARTITIONS)
    n = 100_000
    path = tmp_path / f"big.{fmt}"
    if fmt == "jsonl":
        expected = _jsonl(path, n)
        args = [str(path), "-t", topic, "-k", "c.k", "-n", "5000", "--on-error", "skip"]
    else:
        lines = [f"u{i % 101},{i},xxxxxxxxxxxxxxxxxxxx".encode() for i in range(n)]
        path.write_bytes(b"user,i,pad\n" + b"\n".join(lines) + b"\n")
        expected = [(v.split(b",")[0], v) for v in lines]
        args = [str(path), "-t", topic, "-k", "user", "-n", "5000"]
    seed = int(os.environ.get("KXTX_TEST_SEED", time.time_ns() % 10**6))
    rnd = random.Random(seed)
    killed = 0
    for at in sorted(rnd.sample(range(1, n - 5000), 4)):
        proc = _start(kafka, *args)
        deadline = time.monotonic() + 120
        while _log_end(kafka, topic) < at and proc.poll() is None:
            assert time.monotonic() < deadline, "the run produced nothing"
            time.sleep(0.01)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.communicate(timeout=60)
    assert killed >= 2, f"seed {seed}: runs finished before they could be killed"
    final = _start(kafka, *args)
    cli.finish(final, timeout=300)
    _check_keyed(read(kafka.bootstrap, topic, timeout=120), expected)


def test_a_record_the_broker_refuses_aborts_and_is_reported(kafka, run_kxtx, tmp_path):
    """Each record is within the topic's max.message.bytes (kxtx's own check passes, and the
    fast path produces them without a report of their own), but librdkafka's batches are not: the
    broker refuses them, the transaction must abort, the run fail and say why, nothing be visible."""
    topic = kafka.create_topic(partitions=PARTITIONS, config={"max.message.bytes": "10000"})
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(b'{"k":"k%d","pad":"%s"}\n' % (i % 7, b"x" * 1000) for i in range(2000)))
    p = run_kxtx("produce", str(path), "-t", topic, "-k", "k", expect=None)
    assert p.returncode != 0
    assert "Message size too large" in p.stderr and "aborted" in p.stderr, p.stderr
    assert read(kafka.bootstrap, topic) == []
