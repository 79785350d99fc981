"""`kxtx topic create` against the real broker: what it creates, that the next command can use the
topic at once, and each refusal with its exit code, nothing created."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.conftest import json_doc

pytestmark = pytest.mark.kafka


def _name() -> str:
    return f"tc-{uuid.uuid4().hex[:10]}"


def _describe(kafka, name):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    t = admin.list_topics(name, timeout=10).topics[name]
    if t.error is not None:
        return None, {}
    res = ConfigResource(ResourceType.TOPIC, name)
    configs = admin.describe_configs([res])[res].result(timeout=30)
    return len(t.partitions), {k: v.value for k, v in configs.items()}


def _exists(kafka, name) -> bool:
    from confluent_kafka.admin import AdminClient

    return name in AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10).topics


def test_create_then_produce_at_once(kafka, run_kxtx, tmp_path):
    name = _name()
    r = run_kxtx(
        "topic",
        "create",
        name,
        "-p",
        "3",
        "-c",
        "cleanup.policy=compact",
        "--topic-config",
        "retention.ms=3600000",
        "-o",
        "json",
    )
    row = json_doc(r)
    assert row == {  # -o json: one document, with the status keys every command's document has
        "status": "ok",
        "exit_code": 0,
        "error": None,
        "topic": name,
        "created": True,
        "partitions": 3,
        "replication_factor": 1,
        "config": {"cleanup.policy": "compact", "retention.ms": "3600000"},
    }
    partitions, configs = _describe(kafka, name)
    assert partitions == 3
    assert configs["cleanup.policy"] == "compact" and configs["retention.ms"] == "3600000"
    data = tmp_path / "a.jsonl"
    data.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(30)))
    r = run_kxtx("produce", str(data), "-t", name, "-k", "id", "-o", "json")
    assert json_doc(r)["records"] == 30


def test_broker_defaults(kafka, run_kxtx):
    name = _name()
    r = run_kxtx("topic", "create", name, "-o", "json")
    row = json_doc(r)
    assert row["created"] is True and row["partitions"] >= 1 and row["replication_factor"] == 1


def test_exists_is_exit_1_unless_if_not_exists(kafka, run_kxtx):
    name = kafka.create_topic(_name(), partitions=2)
    r = run_kxtx("topic", "create", name, "-p", "2", expect=1)
    assert r.stderr.strip() == (
        f"kxtx: error: topic {name!r} already exists (2 partitions, replication "
        "factor 1); nothing was changed (--if-not-exists makes this a success)"
    )
    r = run_kxtx("topic", "create", name, "-p", "5", "--if-not-exists", "-o", "json")
    row = json_doc(r)
    assert row["created"] is False and row["partitions"] == 2
    assert "exists with 2 partitions, not 5 as asked" in r.stderr
    assert _describe(kafka, name)[0] == 2


@pytest.mark.parametrize(
    "args, reason",
    [
        (["-r", "3"], "INVALID_REPLICATION_FACTOR"),  # one broker
        (["-c", "no.such.setting=1"], "INVALID_CONFIG"),
        (["-c", "cleanup.policy=sometimes"], "INVALID_CONFIG"),
    ],
)
def test_broker_refusal_is_a_usage_error_and_creates_nothing(kafka, run_kxtx, args, reason):
    name = _name()
    r = run_kxtx("topic", "create", name, *args, expect=2)
    line = r.stderr.strip()
    assert (
        line.startswith(f"kxtx: error: topic {name!r}: the broker refused to create it: ") and reason in line
    )
    assert len(line.splitlines()) == 1 and not _exists(kafka, name)


def test_invalid_name_and_options(kafka, run_kxtx):
    r = run_kxtx("topic", "create", "bad/name", expect=2)
    assert "bad/name" in r.stderr and "Traceback" not in r.stderr
    r = run_kxtx("topic", "create", _name(), "-p", "0", expect=2)
    r = run_kxtx("topic", "create", _name(), "-c", "no-equals", expect=2)
    assert "--topic-config 'no-equals': expected key=value" in r.stderr


def test_dry_run_validates_and_creates_nothing(kafka, run_kxtx):
    name = _name()
    r = run_kxtx("topic", "create", name, "-p", "4", "--dry-run", "-o", "json")
    assert json_doc(r)["created"] is False and not _exists(kafka, name)
    r = run_kxtx("topic", "create", name, "-r", "3", "--dry-run", expect=2)
    assert "INVALID_REPLICATION_FACTOR" in r.stderr


def test_count_per_partition_and_total(kafka, run_kxtx):
    """Committed, aborted, open and plain records, and markers: `records` counts every data record,
    `read_committed` what a read_committed consumer gets now, markers apart."""
    from confluent_kafka import Producer

    name = kafka.create_topic(_name(), partitions=2)
    tx = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": f"tx-count-{uuid.uuid4().hex}"})
    tx.init_transactions(30)
    tx.begin_transaction()
    for i in range(5):  # committed: 3 on partition 0, 2 on partition 1
        tx.produce(name, f"c{i}".encode(), partition=0 if i < 3 else 1)
    tx.commit_transaction(30)
    tx.begin_transaction()
    for i in range(2):
        tx.produce(name, f"a{i}".encode(), partition=0)
    tx.flush(30)
    tx.abort_transaction(30)
    plain = Producer({"bootstrap.servers": kafka.bootstrap})
    plain.produce(name, b"plain", partition=0)
    assert plain.flush(30) == 0
    tx.begin_transaction()
    for i in range(4):  # open while kxtx counts: holds partition 1's LSO
        tx.produce(name, f"o{i}".encode(), partition=1)
    tx.flush(30)
    try:
        r = run_kxtx("topic", "count", name, "-o", "json")
        jsonl = run_kxtx("topic", "count", f"{name}:1", "-o", "jsonl", expect=0)
        table = run_kxtx("topic", "count", name, "-o", "table", env={"COLUMNS": "200"}, expect=0)
    finally:
        tx.abort_transaction(30)
    doc = json_doc(r)
    keys = ("records", "read_committed", "committed_records", "aborted_records", "open_records")
    got = [
        [row["kind"], row["partition"], *(row[k] for k in keys), row["non_transactional_records"]]
        for row in doc["partitions"]
    ]
    assert got == [
        ["partition", 0, 6, 4, 3, 2, 0, 1],
        ["partition", 1, 6, 2, 2, 0, 4, 0],
        ["total", None, 12, 6, 5, 2, 4, 1],
    ], doc
    assert [row["markers"] for row in doc["partitions"]] == [2, 1, 3]  # commit + abort; commit
    assert doc["partitions"][1]["lso"] == 3 and doc["partitions"][1]["hw"] == 7  # 2 + marker, then 4 open
    assert [(x["partition"], x["records"]) for x in jsonl.rows] == [(1, 6), (None, 6)]
    # the open records' transaction, named with why it holds the LSO (issue 59): a live producer's
    (held,) = doc["lso_held"]
    assert (held["partition"], held["kind"], held["start_offset"]) == (1, "in-progress", 3)
    assert held["transactional_id"].startswith("tx-count-") and "(normal)" in r.stderr
    assert "total" in table.stdout and "read_committed" in table.stdout, table.stdout
    # the table leads with the total (a topic of many partitions would push it off the screen);
    # json and jsonl keep it last, after the partitions it sums
    firsts = [line.strip("│┃ ").split(" ")[0] for line in table.stdout.splitlines()]
    assert [w for w in firsts if w in ("total", "partition")][:2] == ["total", "partition"], table.stdout
