"""`kxtx dump partition` against a real broker: committed and aborted transactions interleaved from two
producers, an idempotent and a plain producer, every compression codec, an open transaction holding
the LSO. Truth: what was produced (each producer uses its own codec, so its batches are known by it)
and what a confluent-kafka read_committed consumer reads."""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import json_doc
from tests.integration.kafka_io import commit_offset

# Batch formats and marker writing differ between 3.9 and 4.x: CI runs these on both.
pytestmark = pytest.mark.versioned


def _producer(kafka, codec: str, **conf):
    from confluent_kafka import Producer

    if "transactional.id" in conf:
        # The scene's transactions end minutes into a loaded module setup: librdkafka's default 60 s
        # timeout let the coordinator abort one first (FENCED at its commit, Kafka 3.9 at nice 10).
        conf.setdefault("transaction.timeout.ms", 600000)
    p = Producer({"bootstrap.servers": kafka.bootstrap, "compression.type": codec, "linger.ms": 500, **conf})
    if "transactional.id" in conf:
        p.init_transactions(30)
    return p


def _send(p, topic: str, n: int) -> None:
    for i in range(n):
        # Compressible values: librdkafka sends a batch uncompressed when compressing does not shrink it.
        p.produce(topic, key=b"k%d" % i, value=b"value %d " % i * 40, partition=0)
    p.flush(30)


@pytest.fixture(scope="module")
def log(kafka):
    """The partition's story (offsets are not assumed: markers are written asynchronously):

    A (lz4, txn): 3 committed; then 2 committed, interleaved with B's 2 aborted
    B (gzip, txn): 2 aborted (above), then 1 committed
    C (zstd, idempotent): 4; E (snappy, plain): 2; D (no codec, txn): 2 never ended (holds the LSO);
    C: 1 more, behind the LSO."""
    topic = kafka.create_topic()
    sfx = uuid.uuid4().hex[:8]
    a = _producer(kafka, "lz4", **{"transactional.id": f"dp-a-{sfx}"})
    b = _producer(kafka, "gzip", **{"transactional.id": f"dp-b-{sfx}"})
    c = _producer(kafka, "zstd", **{"enable.idempotence": True})
    e = _producer(kafka, "snappy", **{"enable.idempotence": False, "acks": "1"})
    # D stays open for the whole module: the broker's maximum timeout (a module that outlived 300 s
    # on an overloaded machine saw D aborted, its marker an extra batch).
    d = _producer(kafka, "none", **{"transactional.id": f"dp-d-{sfx}", "transaction.timeout.ms": 900000})
    a.begin_transaction()
    _send(a, topic, 3)
    a.commit_transaction(30)
    a.begin_transaction()
    b.begin_transaction()
    _send(a, topic, 2)
    _send(b, topic, 2)
    a.commit_transaction(30)
    b.abort_transaction(30)
    b.begin_transaction()
    _send(b, topic, 1)
    b.commit_transaction(30)
    time.sleep(1)  # the coordinator writes markers after answering: let them land before the rest
    _send(c, topic, 4)
    _send(e, topic, 2)
    d.begin_transaction()
    _send(d, topic, 2)
    _send(c, topic, 1)
    yield topic
    d.abort_transaction(30)


def _dump(run_kxtx, *args: str) -> dict:
    r = run_kxtx("dump", "partition", *args, "-o", "json", "--timeout", "30", timeout=120)
    doc = json_doc(r)
    assert doc["status"] == "ok"
    return doc


def _by_codec(batches: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for b in batches:
        if not b["control"]:
            out.setdefault(b["compression"], []).append(b)
    return out


def test_every_batch_fate_and_count(run_kxtx, log):
    doc = _dump(run_kxtx, log)
    batches, (s,) = doc["batches"], doc["summary"]
    codec = _by_codec(batches)
    assert sorted(codec) == ["gzip", "lz4", "none", "snappy", "zstd"]
    pid = {c: {b["producer_id"] for b in codec[c]} for c in codec}
    assert all(len(v) == 1 for k, v in pid.items() if k != "snappy")
    a, b_, c, d = (next(iter(pid[k])) for k in ("lz4", "gzip", "zstd", "none"))
    assert pid["snappy"] == {-1}  # not idempotent: no producer id
    assert [(x["count"], x["fate"]) for x in codec["lz4"]] == [(3, "committed"), (2, "committed")]
    assert [(x["count"], x["fate"]) for x in codec["gzip"]] == [(2, "aborted"), (1, "committed")]
    assert [(x["count"], x["fate"], x["transactional"]) for x in codec["zstd"]] == [
        (4, None, False),
        (1, None, False),
    ]
    assert c >= 0 and codec["zstd"][0]["base_sequence"] == 0 and codec["zstd"][1]["base_sequence"] == 4
    # librdkafka's plain producer may send its two records in one batch or two
    assert sum(x["count"] for x in codec["snappy"]) == 2 and {x["fate"] for x in codec["snappy"]} == {None}
    assert [(x["count"], x["fate"]) for x in codec["none"]] == [(2, "open")]
    assert codec["none"][0]["base_offset"] == s["lso"]
    markers = [(x["producer_id"], x["control_type"]) for x in batches if x["control"]]
    assert sorted(markers) == sorted([(a, "COMMIT"), (a, "COMMIT"), (b_, "ABORT"), (b_, "COMMIT")])
    assert all(x["coordinator_epoch"] is not None and x["fate"] is None for x in batches if x["control"])
    offsets = [x["base_offset"] for x in batches]
    assert offsets == sorted(offsets) and offsets[0] == 0
    assert s["hw"] == 21 and s["from"] == 0 and s["to"] == 21
    expected = {
        "batches": 11 + len(codec["snappy"]),
        "records": 17,
        "markers": 4,
        "committed_records": 6,
        "aborted_records": 2,
        "open_records": 2,
        "non_transactional_records": 7,
        "read_committed": 12,
    }
    assert {k: s[k] for k in expected} == expected
    producers = {
        p["producer_id"]: (p["committed"], p["aborted"], p["open"], p["records"]) for p in s["producers"]
    }
    assert producers == {a: (2, 0, 0, 5), b_: (1, 1, 0, 3), c: (0, 0, 0, 5), d: (0, 0, 1, 2)}


def test_read_committed_count_equals_a_consumer(run_kxtx, kafka, log):
    from confluent_kafka import Consumer, TopicPartition

    s = _dump(run_kxtx, log, "--to", "lso")["summary"][0]
    assert s["to"] == s["lso"] and s["open_records"] == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": f"dp-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(log, 0, 0)])
    got, deadline = 0, time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                assert m.offset() < s["lso"]
                got += 1
            if consumer.position([TopicPartition(log, 0)])[0].offset >= s["lso"]:
                break
    finally:
        consumer.close()
    assert got == s["read_committed"] == 12


def test_range_ending_before_the_markers_still_finds_them(run_kxtx, log):
    """The interleaved A/B batches alone: their markers lie past --to and are read to decide."""
    full = _dump(run_kxtx, log)["batches"]
    codec = _by_codec(full)
    first = codec["lz4"][1]["base_offset"]
    aborted = codec["gzip"][0]
    end = max(first, aborted["base_offset"]) + 2
    doc = _dump(run_kxtx, f"{log}:0", "--from", str(first), "--to", str(end))
    s = doc["summary"][0]
    assert [(x["compression"], x["fate"]) for x in doc["batches"]] == [
        ("lz4", "committed"),
        ("gzip", "aborted"),
    ]
    assert (s["from"], s["to"], s["markers"], s["records"], s["read_committed"]) == (first, end, 0, 4, 2)


def test_from_a_groups_committed_offset(run_kxtx, kafka, log):
    at = _by_codec(_dump(run_kxtx, log)["batches"])["zstd"][0]["base_offset"]
    group = f"dp-Group-{uuid.uuid4().hex[:6]}"
    commit_offset(kafka.bootstrap, group, log, 0, at)
    s = _dump(run_kxtx, log, "--from", f"committed:{group}", "--to", "lso")["summary"][0]
    # from the idempotent batch to the open transaction: 4 + 2 records, none of them transactional
    assert (s["from"], s["records"], s["non_transactional_records"], s["read_committed"]) == (at, 6, 6, 6)
    r = run_kxtx(
        "dump",
        "partition",
        log,
        "--from",
        "committed:no-such-group",
        "-o",
        "json",
        "--timeout",
        "30",
        expect=1,
    )
    assert "no committed offset" in json.loads(r.stdout)["error"]


def test_around_the_lso(run_kxtx, log):
    """Two offsets either side of the LSO: the open transaction's batch (at the LSO) and what is before."""
    doc = _dump(run_kxtx, log, "--around-lso", "2")
    s = doc["summary"][0]
    assert (s["from"], s["to"]) == (s["lso"] - 2, s["lso"] + 2)
    assert [b["fate"] for b in doc["batches"] if b["base_offset"] == s["lso"]] == ["open"]
    assert s["open_records"] == 2 and s["read_committed"] == 2  # the plain producer's two records
    run_kxtx("dump", "partition", log, "--around-lso", "2", "--to", "hw", "-o", "json", expect=2)


def test_table_and_jsonl(run_kxtx, log):
    r = run_kxtx("dump", "partition", log, "--to", "lso", "-o", "jsonl", "--timeout", "30", expect=0)
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["kind"] for x in rows].count("summary") == 1 and rows[-1]["kind"] == "summary"
    r = run_kxtx("dump", "partition", log, "-o", "table", "--timeout", "30", env={"COLUMNS": "80"}, expect=0)
    assert "ABORT" in r.stdout and "open" in r.stdout and "read_committed" in r.stdout


def test_bad_range_and_missing_topic(run_kxtx, log):
    r = run_kxtx("dump", "partition", log, "--to", "soon", "-o", "json", expect=2)
    assert json.loads(r.stdout)["status"] == "usage"
    r = run_kxtx("dump", "partition", f"{log}:5", "-o", "json", "--timeout", "30", expect=2)
    # a topic that does not exist: the one line and exit 2 of every command (test_no_such_topic.py)
    r = run_kxtx(
        "dump", "partition", f"no-such-{uuid.uuid4().hex[:6]}", "-o", "json", "--timeout", "30", expect=2
    )
    assert json.loads(r.stdout)["status"] == "usage"


def test_from_beyond_the_high_watermark_is_an_error(run_kxtx, log):
    """Issue 43: a start past the end used to be an empty result with exit 0 (`"from": 700, "to":
    662`); it is a usage error naming the partition's end. The end itself is an empty range."""
    hw = _dump(run_kxtx, log)["summary"][0]["hw"]
    r = run_kxtx("dump", "partition", log, "--from", str(hw + 38), "-o", "json", "--timeout", "30", expect=2)
    doc = json.loads(r.stdout)
    assert doc["status"] == "usage", r.stdout + r.stderr
    assert f"--from {hw + 38}: beyond the end of {log}:0 (high watermark {hw}" in doc["error"], doc
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    at_end = _dump(run_kxtx, log, "--from", str(hw))
    assert at_end["batches"] == [] and at_end["summary"][0]["from"] == hw


def test_json_with_records_is_streamed_with_the_same_bytes(run_kxtx, log):
    """Issue 43: `-o json --records` writes its batches as they are made (796 MB held for a 47 MB
    partition before, bench/README); the bytes are those of the whole document rendered at once."""
    from kxtx.cli.output import _dumps

    r = run_kxtx(
        "dump", "partition", log, "--records", "-o", "json", "--timeout", "30", timeout=120, expect=0
    )
    doc = json.loads(r.stdout)
    assert doc["batches"] and any(b.get("records") for b in doc["batches"]), doc
    assert r.stdout == _dumps(doc, indent=2) + "\n"


def test_range_through_compressed_batches(run_kxtx, log):
    """Bounds inside compressed batches: only their records in the range are counted."""
    codec = _by_codec(_dump(run_kxtx, log)["batches"])
    committed, aborted = codec["lz4"][1], codec["gzip"][0]
    first, end = committed["base_offset"] + 1, aborted["base_offset"] + 1
    doc = _dump(run_kxtx, log, "--from", str(first), "--to", str(end))
    s = doc["summary"][0]
    assert [x["fate"] for x in doc["batches"] if not x["control"]] == ["committed", "aborted"]
    assert (s["records"], s["committed_records"], s["aborted_records"], s["read_committed"]) == (2, 1, 1, 1)


def _kafka_dump_log(kafka, topic: str) -> list[dict]:
    """Kafka's DumpLogSegments (--deep-iteration) on the sandbox broker's segment files of partition 0:
    one dict per batch, the marker's type and coordinator epoch added from its record line."""
    if kafka.sandbox is None:
        pytest.skip("reads the broker's segment files: needs the sandbox broker")
    segments = sorted(Path(kafka.sandbox.dir).glob(f"node-*/data/{topic}-0/*.log"))
    assert segments, f"no segment files of {topic}-0 under {kafka.sandbox.dir}"
    main = "org.apache.kafka.tools.DumpLogSegments" if kafka.major >= 4 else "kafka.tools.DumpLogSegments"
    argv = kafka.java_tool(main, "--deep-iteration", "--files", ",".join(map(str, segments)))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    batches: list[dict] = []
    for line in r.stdout.splitlines():
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        if line.startswith("baseOffset:"):
            batches.append(fields)
        elif line.startswith("|") and "endTxnMarker" in fields:
            batches[-1].update(marker=fields["endTxnMarker"], coordinatorEpoch=fields["coordinatorEpoch"])
    return batches


def _ours(b: dict) -> tuple:
    """What both tools say of a batch, from kxtx's row."""
    return (
        b["base_offset"],
        b["last_offset"],
        b["count"],
        b["base_sequence"],
        b["producer_id"],
        b["producer_epoch"],
        b["transactional"],
        b["control"],
        b["compression"],
        b["size"],
        b["max_timestamp"],
        b["control_type"],
        b["coordinator_epoch"],
    )


def _kafkas(b: dict) -> tuple:
    """The same, from a batch of DumpLogSegments' output."""
    epoch = b.get("coordinatorEpoch")
    return (
        int(b["baseOffset"]),
        int(b["lastOffset"]),
        int(b["count"]),
        int(b["baseSequence"]),
        int(b["producerId"]),
        int(b["producerEpoch"]),
        b["isTransactional"] == "true",
        b["isControl"] == "true",
        b["compresscodec"],
        int(b["size"]),
        int(b["CreateTime"]),
        b.get("marker"),
        None if epoch is None else int(epoch),
    )


def test_agrees_with_kafka_dump_log_segments(run_kxtx, kafka, log):
    """Batch by batch, what kxtx read over the wire equals what Kafka's own tool reads from disk."""
    ours = _dump(run_kxtx, log)["batches"]
    theirs = _kafka_dump_log(kafka, log)
    assert len(ours) == len(theirs) == 11 + len(_by_codec(ours)["snappy"])
    assert [_ours(b) for b in ours] == [_kafkas(b) for b in theirs]


def test_transactions_named_by_their_transactional_id(run_kxtx, log):
    """The open transaction holding the LSO is named, as `inspect partition` names it; so are the
    producers and batches of the finished ones (their ids are still known to the coordinator)."""
    doc = _dump(run_kxtx, log)
    batches, (s,) = doc["batches"], doc["summary"]
    codec = _by_codec(batches)
    (opened,) = codec["none"]
    assert opened["fate"] == "open" and opened["transactional_id"].startswith("dp-d-")
    sfx = opened["transactional_id"][len("dp-d-") :]
    assert {x["transactional_id"] for x in codec["lz4"]} == {f"dp-a-{sfx}"}
    assert {x["transactional_id"] for x in codec["gzip"]} == {f"dp-b-{sfx}"}
    markers = {x["transactional_id"] for x in batches if x["control"]}
    assert markers == {f"dp-a-{sfx}", f"dp-b-{sfx}"}
    assert all(x["transactional_id"] is None for x in codec["zstd"] + codec["snappy"])
    names = {p["producer_id"]: p["transactional_id"] for p in s["producers"]}
    assert names == {
        codec["lz4"][0]["producer_id"]: f"dp-a-{sfx}",
        codec["gzip"][0]["producer_id"]: f"dp-b-{sfx}",
        codec["zstd"][0]["producer_id"]: None,
        opened["producer_id"]: f"dp-d-{sfx}",
    }
    r = run_kxtx("inspect", "partition", f"{log}:0", "-o", "json", "--timeout", "30")
    (theirs,) = json_doc(r)["open_transactions"]
    assert (theirs["producer_id"], theirs["transactional_id"], theirs["start_offset"]) == (
        opened["producer_id"],
        opened["transactional_id"],
        opened["base_offset"],
    )
    r = run_kxtx("dump", "partition", log, "-o", "table", "--timeout", "30", env={"COLUMNS": "80"}, expect=0)
    assert f"open: dp-d-{sfx}" in r.stdout


def test_records_of_every_codec_and_their_fate(run_kxtx, kafka, log):
    """--records: each compressed batch (gzip, snappy, lz4, zstd) decodes to exactly the records a
    read_uncommitted consumer reads at those offsets; aborted and open ones are marked so, and those
    a read_committed consumer reads are exactly its records."""
    from tests.integration.kafka_io import read

    doc = _dump(run_kxtx, log, "--records")
    ours = {}
    for b in doc["batches"]:
        assert ("records" in b) is not b["control"]
        for r in b.get("records", []):
            assert r["fate"] == b["fate"] and b["base_offset"] <= r["offset"] <= b["last_offset"]
            ours[r["offset"]] = (b["compression"], r)
    theirs = read(kafka.bootstrap, log, committed=False, offsets=True)
    assert sorted(ours) == [o for o, _ in theirs] and len(theirs) == 17
    for o, rec in theirs:
        _codec, r = ours[o]
        assert (r["key"], r["value"], r["timestamp"], r["headers"]) == (
            rec.key.decode(),
            rec.value.decode(),
            rec.timestamp,
            [],
        )
    by_codec: dict[str, list[str | None]] = {}
    for codec, r in ours.values():
        by_codec.setdefault(codec, []).append(r["fate"])
    assert by_codec == {
        "lz4": ["committed"] * 5,
        "gzip": ["aborted", "aborted", "committed"],
        "zstd": [None] * 5,
        "snappy": [None, None],
        "none": ["open", "open"],
    }
    visible = sorted((r["key"], r["value"]) for _c, r in ours.values() if r["read_committed"])
    committed = read(kafka.bootstrap, log, committed=True)
    assert visible == sorted((x.key.decode(), x.value.decode()) for x in committed) and len(visible) == 12


def test_records_formats_headers_and_width(run_kxtx, kafka, topic):
    """--value-format string / json / raw, headers, and the table cut to --width at 80 columns."""
    import base64

    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kafka.bootstrap, "compression.type": "zstd", "linger.ms": 100})
    value = json.dumps({"id": 7, "text": "x" * 100}).encode()
    p.produce(topic, key=b"k1", value=value, headers=[("h", b"v1"), ("bin", b"\xff\x00")], partition=0)
    p.produce(topic, key=b"\xfe", value=b"not json", partition=0)
    p.flush(30)

    def records(*args: str) -> list[dict]:
        return [r for b in _dump(run_kxtx, topic, "--records", *args)["batches"] for r in b["records"]]

    first, second = records()  # string is the default
    assert (first["key"], first["value"], first["headers"]) == (
        "k1",
        value.decode(),
        [["h", "v1"], ["bin", "\\xff\x00"]],  # NUL is valid UTF-8: kept, 0xff escaped
    )
    assert (second["key"], second["value"], second["fate"], second["read_committed"]) == (
        "\\xfe",
        "not json",
        None,
        True,
    )
    first, second = records("--value-format", "json")
    assert first["value"] == {"id": 7, "text": "x" * 100} and second["value"] == "not json"
    first, second = records("--value-format", "raw")
    assert base64.b64decode(first["value"]) == value and base64.b64decode(second["key"]) == b"\xfe"
    assert first["headers"][1] == ["bin", base64.b64encode(b"\xff\x00").decode()]
    r = run_kxtx(
        "dump",
        "partition",
        topic,
        "--records",
        "-o",
        "table",
        "--width",
        "12",
        env={"COLUMNS": "80"},
        expect=0,
    )
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    assert '{"id": 7, "…' in r.stdout
    assert "x" * 20 not in r.stdout
    r = run_kxtx("dump", "partition", topic, "--records", "-o", "jsonl", "--value-format", "json")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["kind"] for x in rows] == (
        ["batch", "record", "record"] if rows[0]["count"] == 2 else ["batch", "record", "batch", "record"]
    ) + ["summary"]
