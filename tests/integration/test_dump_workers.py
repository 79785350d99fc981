"""`kxtx dump --workers N` against a real broker: N processes, each reading a share of the
partitions, write the same rows as one process, whole lines, each partition in offset order; errors
found before forking are reported once."""

from __future__ import annotations

import json
import uuid

from kxtx.records.partitioner import partition_for
from tests import cli


def _commit_many(kafka, groups: list[str], rounds: int) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"workers-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    for group in groups:  # standalone commits: one offset-commit record per partition and round
        c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "enable.auto.commit": False})
        for r in range(rounds):
            c.commit(offsets=[TopicPartition(topic, p, r + 1) for p in range(4)], asynchronous=False)
        c.close()


def _rows(proc) -> list[dict]:
    return [json.loads(line) for line in cli.check(proc).stdout.splitlines()]  # a torn line would not parse


def test_workers_write_the_rows_of_one_process(kafka, run_kxtx):
    groups = [f"kxtx-workers-{i}-{uuid.uuid4().hex[:6]}" for i in range(24)]
    assert len({partition_for(g, 50) for g in groups}) > 3  # spread over several shards
    _commit_many(kafka, groups, rounds=3)

    one = _rows(run_kxtx("dump", "offsets", "--format", "jsonl", "--workers", "1"))
    many = _rows(run_kxtx("dump", "offsets", "--format", "jsonl", "--workers", "3"))

    by_position = {(r["partition"], r["offset"]): r for r in many}
    assert len(by_position) == len(many)  # nothing written twice
    for r in one:  # everything one process saw (the log only grows between the two runs)
        assert by_position[(r["partition"], r["offset"])] == r
    last: dict[int, int] = {}
    for r in many:  # each partition in offset order, whatever the interleaving of partitions
        assert r["offset"] > last.get(r["partition"], -1)
        last[r["partition"]] = r["offset"]
    ours = [r for r in many if r["type"] == "OffsetCommit" and r["key"]["group"] in groups]
    assert len(ours) == 24 * 4 * 3


def test_sharding_what_needs_one_process_is_a_usage_error(run_kxtx):
    proc = run_kxtx("dump", "offsets", "--format", "jsonl", "--workers", "2", "--latest", expect=2)
    assert "--workers 2" in proc.stderr and "Traceback" not in proc.stderr


def test_unreachable_cluster_is_reported_once(run_kxtx):
    proc = run_kxtx(
        "dump",
        "txn-state",
        "--format",
        "jsonl",
        "--workers",
        "3",
        "-b",
        "127.0.0.1:1",
        "--timeout",
        "2",
        bootstrap=False,
        expect=69,
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kxtx: error:")]
    assert len(errors) == 1, proc.stderr
