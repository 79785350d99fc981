"""`kxtx monitor collect` and `kxtx monitor check` on a real broker.

The scene: a truly hanging transaction (txn_helpers.make_hanging: a write the coordinator never
heard of, on a broker with partition verification off, as test_hanging.py), a transaction left
open by a transactional confluent-kafka producer SIGKILLed mid-transaction (the coordinator still
has it Ongoing: open, not hanging), and a read_committed consumer group that read everything a
read_committed consumer can read from a partition with a committed and an aborted transaction: its
naive lag (high watermark - committed) is markers and aborted records only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest

from tests import cli
from tests.conftest import json_doc
from tests.integration.kafka_io import commit_retrying, wait_until
from tests.integration.monitor_helpers import samples, serving
from tests.integration.txn_helpers import hanging_broker, kxtx_on, make_hanging

# Transactions v2 (4.x) and v1 (3.9) keep and end transactions differently: CI runs these on both.
pytestmark = [pytest.mark.kafka, pytest.mark.versioned]


@pytest.fixture(scope="module")
def broker(brokers):
    return hanging_broker(brokers)


kxtx = kxtx_on


#: A transactional producer that begins a transaction, writes to TOPIC:0, says so and waits to be killed.
_OPEN_AND_WAIT = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2],
              "transaction.timeout.ms": 600000})
p.init_transactions(60)
p.begin_transaction()
p.produce(sys.argv[3], b"open", partition=0)
assert p.flush(60) == 0
print("open", flush=True)
time.sleep(600)
"""


def _left_open(bootstrap: str, topic: str) -> None:
    """A transaction left open by a producer process that dies mid-transaction (SIGKILL)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _OPEN_AND_WAIT, bootstrap, f"mon-open-{uuid.uuid4().hex[:6]}", topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _markers_only_group(bootstrap: str, topic: str, group: str) -> None:
    """A committed transaction of 2 records (offsets 0-1, marker 2) and an aborted one (3-4, marker
    5); a read_committed consumer reads the 2 records and commits after the last (offset 2), as
    librdkafka-based clients do: the high watermark stays 4 ahead, and none of it will ever come."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"mon-mark-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(topic, b"a", partition=0)
    p.produce(topic, b"b", partition=0)
    p.commit_transaction(60)
    p.begin_transaction()
    p.produce(topic, b"x", partition=0)
    p.produce(topic, b"y", partition=0)
    assert p.flush(60) == 0  # written, then aborted
    p.abort_transaction(60)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got = []
        wait_until(lambda: got.extend(c.consume(10, 0.5)) or len(got) >= 2, 60, "2 committed records")
        assert [m.value() for m in got] == [b"a", b"b"]
        commit_retrying(c, [TopicPartition(topic, 0, got[-1].offset() + 1)])
    finally:
        c.close()


@pytest.fixture(scope="module")
def scene(broker):
    u = uuid.uuid4().hex[:6]
    hang = broker.create_topic(f"mon-hang-{u}", partitions=2)
    opened = broker.create_topic(f"mon-open-{u}")
    marks = broker.create_topic(f"mon-marks-{u}")
    _p, starts = make_hanging(broker.bootstrap, f"mon-h-{u}", [(hang, 1)])
    _left_open(broker.bootstrap, opened)
    group = f"mon-rc-{u}"
    _markers_only_group(broker.bootstrap, marks, group)
    yield {
        "hang": hang, "hang_start": starts[(hang, 1)], "open": opened, "marks": marks, "group": group,
        "tid": f"mon-h-{u}",
    }  # fmt: skip
    # The broker is the worker's one with verification off, shared with test_hanging.py, whose
    # find-hanging runs over every topic: leave nothing hanging behind.
    kxtx(broker, "abort-hanging", "--topic", hang, "--yes", expect=0)


def test_collect_json_shows_hanging_and_open_transactions_and_lso_lag(broker, scene):
    doc = json_doc(kxtx(broker, "monitor", "collect", "-o", "json"))
    assert doc["status"] == "ok" and doc["complete"] and doc["unseen"] == []
    parts = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    h = parts[(scene["hang"], 1)]
    assert (scene["hang"], 0) not in parts  # nothing open there
    assert h["hanging_transactions"] == 1 and h["oldest_start_offset"] == scene["hang_start"]
    assert h["lso"] == scene["hang_start"] and h["lso_gap_records"] == h["high_watermark"] - h["lso"] == 3
    # the coordinator never heard of it: no begin time; the last write was an hour ago
    assert h["oldest_age_since_start_s"] is None and h["oldest_age_since_last_write_s"] > 3000
    o = parts[(scene["open"], 0)]
    assert o["hanging_transactions"] == 0 and o["open_transactions"] == 1 and o["lso_gap_records"] == 1
    assert o["oldest_age_since_start_s"] is not None and o["oldest_age_since_start_s"] < 600
    assert o["oldest_age_since_start_s"] >= o["oldest_age_since_last_write_s"] - 1
    assert {(x["topic"], x["partition"]) for x in doc["hanging"]} >= {(scene["hang"], 1)}
    assert (scene["open"], 0) not in {(x["topic"], x["partition"]) for x in doc["hanging"]}
    states = {s["state"]: s for s in doc["transactional_id_states"]}
    assert states["Ongoing"]["transactional_ids"] >= 1 and states["Ongoing"]["oldest_age_seconds"] is not None
    (g,) = [x for x in doc["groups"] if x["group"] == scene["group"]]
    assert (g["committed"], g["high_watermark"], g["lso"]) == (2, 6, 6)
    assert (g["hw_lag_records"], g["lag_records"], g["invisible_records"], g["exact"]) == (4, 0, 4, True)


def _stderr_on_a_terminal(broker, tmp_path, *args: str) -> str:
    """`kxtx ARGS` with its stderr on a pseudo-terminal (stdout a file): what the terminal got."""
    import pty

    master, terminal = pty.openpty()
    with open(tmp_path / "stdout", "wb") as out:
        proc = cli.start(*args, stdout=out, stderr=terminal, env={"KXTX_BOOTSTRAP_SERVERS": broker.bootstrap})
    os.close(terminal)
    got = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the run closed the terminal's last writer
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    proc.wait(120)
    return got.decode()


@pytest.mark.parametrize(
    "args,what",
    [
        (("find-hanging",), "find-hanging"),
        (("monitor", "collect", "-o", "json"), "monitor collect"),
        (("inspect", "txn", "{tid}", "--no-history"), "inspect txn"),
    ],
)
def test_the_describeproducers_sweep_shows_its_progress_on_a_terminal_only(
    broker, scene, tmp_path, args, what
):
    """A line counting the partitions read, erased when the sweep is over, on a terminal (issue 63:
    nothing showed for seconds at 20,000 partitions); none in a log."""
    args = tuple(a.format(tid=scene["tid"]) for a in args)
    seen = _stderr_on_a_terminal(broker, tmp_path, *args)
    line = f"{what}: DescribeProducers: "
    assert line in seen and " partitions" in seen, seen
    shown = seen[seen.index(line) :].split("\r")[0]
    assert f"\r{' ' * len(shown)}\r" in seen, seen  # erased, not left behind
    assert "DescribeProducers" not in kxtx(broker, *args, expect=None).stderr


#: Per partition of `multi`: (committed offset, records a read_committed consumer still receives,
#: markers and aborted records).
MULTI = {0: (0, 5, 5), 1: (3, 2, 5), 2: (7, 2, 1)}


@pytest.fixture(scope="module")
def multi(broker):
    """Three partitions, each with 3 committed records (0-2, marker 3), 2 aborted (4-5, marker 6),
    2 committed (7-8, marker 9); a group committed MULTI's offsets. Returns (topic, group)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    u = uuid.uuid4().hex[:6]
    topic, group = broker.create_topic(f"mon-multi-{u}", partitions=3), f"mon-multi-{u}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"mon-multi-{u}"})
    p.init_transactions(60)
    for n, commit in ((3, True), (2, False), (2, True)):
        p.begin_transaction()
        for part in range(3):
            for i in range(n):
                p.produce(topic, f"{n}-{i}".encode(), partition=part)
        assert p.flush(60) == 0
        p.commit_transaction(60) if commit else p.abort_transaction(60)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        commit_retrying(c, [TopicPartition(topic, part, m[0]) for part, m in MULTI.items()])
    finally:
        c.close()
    return topic, group


def test_lag_counted_record_by_record_on_several_partitions_at_once(broker, multi):
    """The three partitions' first reads go in one Fetch."""
    topic, group = multi
    doc = json_doc(kxtx(broker, "monitor", "collect", "--topic", topic, "-g", group, "-o", "json"))
    rows = {g["partition"]: g for g in doc["groups"]}
    got = {
        part: (
            g["committed"],
            g["lso"],
            g["hw_lag_records"],
            g["lag_records"],
            g["invisible_records"],
            g["exact"],
        )
        for part, g in rows.items()
    }
    assert got == {part: (c, 10, 10 - c, lag, inv, True) for part, (c, lag, inv) in MULTI.items()}


def test_check_lag_is_the_metric_lag_per_group_and_topic(broker, multi):
    """Issue 43, item 4: `check`'s `lag` is kxtx_consumergroup_lag_records (the group's lag on the
    topic, summed over its partitions: 5 + 2 + 2 = 9), not the largest partition's (5): a
    threshold of 8 is CRITICAL in both (before, check said OK while an alert `> 8` fired)."""
    topic, group = multi
    scope = ("--topic", topic, "-g", group)
    metrics = samples(kxtx(broker, "monitor", "collect", *scope, "-o", "prometheus").stdout)
    assert metrics[("kxtx_consumergroup_lag_records", (("group", group), ("topic", topic)))] == 9
    doc = json_doc(kxtx(broker, "monitor", "collect", *scope, "-o", "json"))
    assert (doc["max_group_lag_records"], doc["max_read_committed_lag_records"]) == (9, 5)
    r = kxtx(broker, "monitor", "check", *scope, "--crit", "lag=8", expect=2)
    assert r.stdout.startswith("KXTX CRITICAL - ") and " lag=9;;8;0;" in r.stdout, r.stdout
    r = kxtx(broker, "monitor", "check", *scope, "--crit", "lag=9", expect=0)
    assert " lag=9;;9;0;" in r.stdout, r.stdout


def test_lag_reads_alone_what_the_shared_fetch_left_out(broker, multi, monkeypatch):
    """A shared first Fetch bounded to 1 byte brings one batch of the first partition only: the
    others are fetched on their own, with the same counts."""
    from kxtx.client.settings import Settings
    from kxtx.dump import partition

    topic, _group = multi
    monkeypatch.setattr(partition, "_FIRST_FETCHES_MAX_BYTES", 1)
    settings = Settings(props={"bootstrap.servers": broker.bootstrap}, timeout=30)
    dumps = partition.read_ranges(settings, topic, {p: m[0] for p, m in MULTI.items()}, "lso")
    got = {
        d.summary.partition: (d.summary.read_committed, d.summary.markers + d.summary.aborted_records)
        for d in dumps
    }
    assert got == {p: (lag, inv) for p, (_c, lag, inv) in MULTI.items()}


def test_collect_filters_by_topic_and_group(broker, scene):
    doc = json_doc(
        kxtx(broker, "monitor", "collect", "--topic", scene["open"], "-g", scene["group"], "-o", "json")
    )
    assert [(p["topic"], p["partition"]) for p in doc["partitions"]] == [(scene["open"], 0)]
    assert doc["hanging"] == [] and doc["partitions_checked"] == 1
    assert doc["groups"] == []  # the group reads another topic


def test_collect_prometheus_has_the_right_partitions(broker, scene):
    r = kxtx(broker, "monitor", "collect", "-o", "prometheus", expect=0)
    by = samples(r.stdout)
    hang = (("partition", "1"), ("topic", scene["hang"]))
    opened = (("partition", "0"), ("topic", scene["open"]))
    assert by[("kxtx_up", ())] == 1
    assert by[("kxtx_partition_hanging_transactions", hang)] == 1
    assert by[("kxtx_partition_hanging_transactions", opened)] == 0
    assert ("kxtx_partition_hanging_transactions", (("partition", "0"), ("topic", scene["hang"]))) not in by
    assert by[("kxtx_partition_lso_gap_records", hang)] == 3
    assert ("kxtx_partition_oldest_open_age_seconds", hang) not in by
    assert by[("kxtx_partition_oldest_open_last_write_age_seconds", hang)] > 3000
    assert by[("kxtx_hanging_transactions", ())] >= 1
    g = (("group", scene["group"]), ("topic", scene["marks"]))
    assert (by[("kxtx_consumergroup_hw_lag_records", g)], by[("kxtx_consumergroup_lag_records", g)]) == (4, 0)
    assert by[("kxtx_consumergroup_invisible_records", g)] == 4


def test_textfile_then_kxtx_up_0_when_the_cluster_is_down(broker, scene, tmp_path):
    r = kxtx(broker, "monitor", "collect", "--textfile", str(tmp_path), "--textfile-name", "t.prom", expect=0)
    assert r.stdout == "", r.stderr
    assert os.listdir(tmp_path) == ["t.prom"]
    assert samples((tmp_path / "t.prom").read_text())[("kxtx_up", ())] == 1
    r = kxtx(
        broker,
        "monitor",
        "collect",
        "--textfile",
        str(tmp_path),
        "--textfile-name",
        "t.prom",
        "-b",
        "127.0.0.1:1",
        expect=69,
    )
    by = samples((tmp_path / "t.prom").read_text())
    assert by[("kxtx_up", ())] == 0 and ("kxtx_hanging_transactions", ()) not in by  # no stale figures


def test_check_lag_is_ok_where_only_markers_are_behind(broker, scene):
    r = kxtx(
        broker,
        "monitor",
        "check",
        "--topic",
        scene["marks"],
        "-g",
        scene["group"],
        "--crit",
        "lag=0",
        expect=0,
    )
    assert r.stdout.startswith("KXTX OK - ") and " lag=0;;0;0;" in r.stdout and r.stdout.count("\n") == 1


def test_check_critical_until_abort_hanging(broker):
    """A hanging transaction of its own topic: CRITICAL, then OK once abort-hanging aborted it."""
    topic = broker.create_topic(f"mon-chk-{uuid.uuid4().hex[:6]}")
    make_hanging(broker.bootstrap, f"mon-chk-{uuid.uuid4().hex[:6]}", [(topic, 0)])
    r = kxtx(
        broker, "monitor", "check", "--topic", topic, "--crit", "hanging=0", "--warn", "lso-gap=100", expect=2
    )
    line = r.stdout.strip()
    assert line.startswith("KXTX CRITICAL - hanging transactions 1 (critical 0)") and "\n" not in line
    assert line.split(" | ")[1].startswith("hanging=1;;0;0; ") and " lso_gap=3;100;;0; " in line
    kxtx(broker, "abort-hanging", "--topic", topic, "--yes", expect=0)
    r = kxtx(broker, "monitor", "check", "--topic", topic, "--crit", "hanging=0", expect=0)
    assert r.stdout.startswith("KXTX OK - "), r.stdout + r.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-b", "127.0.0.1:1"], "no broker reachable"),
        (["--crit", "hanging=10:1"], "start 10 is above end 1"),
        (["--warn", "bogus=1"], "METRIC=RANGE"),
    ],
)
def test_check_unknown(broker, args, words):
    """No broker, a bad threshold: UNKNOWN (3) with one status line, never kxtx's 69 or 2 (which a
    plugin host reads as CRITICAL)."""
    r = kxtx(broker, "monitor", "check", *args, expect=3)
    assert r.stdout.startswith("KXTX UNKNOWN - ") and words in r.stdout and r.stdout.count("\n") == 1


def _scrape(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url, timeout=120) as r:
        return samples(r.read().decode())


@pytest.mark.parametrize("down", [False, True], ids=["up", "cluster-down"])
def test_serve_answers_and_stops_on_sigterm(broker, scene, down):
    from tests.conftest import ROOT

    # --scrape-timeout well above a collection's time on a loaded machine: the bound is not under
    # test here (test_monitor_unseen.py), and CI's first collection once took more than the 8 s default.
    argv = cli.argv("monitor", "serve", "--port", "0", "--min-interval", "0", "--scrape-timeout", "90")
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": broker.bootstrap}
    with serving(argv + (["-b", "127.0.0.1:1"] if down else []), env, ROOT) as url:
        first, second = _scrape(url), _scrape(url)  # a down cluster: the server keeps answering
        assert first[("kxtx_up", ())] == second[("kxtx_up", ())] == (0 if down else 1)
        assert second[("kxtx_collections_total", ())] == 2
        assert second[("kxtx_collection_failures_total", ())] == (2 if down else 0)
        if not down:
            hang = (("partition", "1"), ("topic", scene["hang"]))
            assert second[("kxtx_partition_hanging_transactions", hang)] == 1


def test_collect_table_leaves_out_group_partitions_at_lag_0(broker, scene):
    """The markers-only group has read everything (read_committed lag 0): the table leaves its
    partition out and says so; -o json still lists it."""
    table = kxtx(broker, "monitor", "collect", "-g", scene["group"], "-o", "table", expect=0)
    assert "groups_at_lag_0" in table.stdout and "1 group partition not shown" in table.stdout, table.stdout
    assert scene["group"] not in table.stdout, table.stdout
    doc = json_doc(kxtx(broker, "monitor", "collect", "-g", scene["group"], "-o", "json"))
    assert [(g["group"], g["lag_records"]) for g in doc["groups"]] == [(scene["group"], 0)]
