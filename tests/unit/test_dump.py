"""kxtx.dump without a broker: partition choice, filters, --latest folding, limits (fake source)."""

import pytest

import kxtx.dump.runner as dump
from kxtx.client.settings import Settings
from kxtx.dump.runner import DumpRequest, Start
from kxtx.errors import UsageError
from kxtx.records.partitioner import partition_for
from tests.unit import record_encoder as e

TXN, OFF = dump.TXN_TOPIC, dump.OFFSETS_TOPIC


def txn_key(tid):
    return e.key(0, e.string(tid))


def txn_value(pid, status, epoch=0):
    parts = None if status == 0 else [e.string("t") + e.array([e.i32(0)])]
    return e.value(
        0, e.i64(pid) + e.i16(epoch) + e.i32(60000) + e.i8(status) + e.narray(parts) + e.i64(10) + e.i64(5)
    )


def off_key(group, topic, part=0):
    return e.key(1, e.string(group), e.string(topic), e.i32(part))


def off_value(offset):
    return e.value(3, e.i64(offset) + e.i32(-1) + e.string("") + e.i64(99))


class FakeSource:
    records_by_topic: dict = {}
    asked: list = []

    def __init__(self, settings, topic, *args, **kwargs):
        self.topic = topic

    def batches(self, partitions, start, follow):
        FakeSource.asked.append((partitions, start, follow))
        chosen = [rec for rec in self.records_by_topic[self.topic] if rec[0] in partitions]
        for i in range(0, len(chosen), 2):  # small batches: filters and limits cross batch borders
            yield chosen[i : i + 2]

    def close(self):
        pass


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(dump, "partition_count", lambda settings, topic: 50)
    monkeypatch.setattr(dump, "ConfluentSource", FakeSource)
    FakeSource.asked = []
    p1, p2 = partition_for("a", 50), partition_for("b", 50)
    pg = partition_for("g1", 50)
    FakeSource.records_by_topic = {
        TXN: [
            (p1, 0, 1, txn_key("a"), txn_value(7, 0), None),
            (p1, 1, 2, txn_key("a"), txn_value(7, 1), None),
            (p2, 0, 3, txn_key("b"), txn_value(8, 0), None),
            (p1, 2, 4, txn_key("a"), txn_value(7, 2), None),
            (p2, 1, 5, txn_key("b"), None, None),  # b expired
            (p1, 3, 6, txn_key("a"), txn_value(7, 4), None),
        ],
        OFF: [
            (pg, 0, 1, off_key("g1", "orders"), off_value(5), None),
            (pg, 1, 2, off_key("g1", "pay"), off_value(1), None),
            (pg, 2, 3, e.key(2, e.string("g1")), None, None),
            (pg, 3, 4, off_key("g1", "orders"), off_value(9), None),
            (pg, 4, 5, off_key("g1", "pay"), None, None),
            (pg, 5, 6, e.key(99, b"??"), b"\x00\x00", None),
        ],
    }
    return FakeSource


S = Settings(props={"bootstrap.servers": "x:1"})


def rows(**kw):
    return list(dump.run(S, DumpRequest(**kw)))


def test_every_record_in_order(fake):
    out = rows(topic=TXN)
    assert [r["offset"] for r in out if r["partition"] == partition_for("a", 50)] == [0, 1, 2, 3]
    assert [r["value"]["transaction_status"] for r in out if r["key"] == {"transactional_id": "a"}] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
    ]
    deleted = [r for r in out if r["tombstone"]]
    assert deleted == [
        {
            "partition": partition_for("b", 50),
            "offset": 1,
            "timestamp_ms": 5,
            "time": "1970-01-01T00:00:00.005+00:00",
            "type": "TransactionLog",
            "type_id": 0,
            "key": {"transactional_id": "b"},
            "version": None,
            "value": None,
            "tombstone": True,
        }
    ]


def test_transactional_id_reads_only_its_partition(fake):
    out = rows(topic=TXN, ids=["a"])
    assert fake.asked[-1][0] == [partition_for("a", 50)]
    assert {r["key"]["transactional_id"] for r in out} == {"a"}


def test_latest_applies_tombstones(fake):
    out = rows(topic=TXN, latest=True)
    assert [(r["key"]["transactional_id"], r["value"]["transaction_status"]) for r in out] == [
        ("a", "CompleteCommit")
    ]


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"states": ["ongoing", "PrepareCommit"]}, [("a", 1), ("a", 2)]),
        ({"producer_ids": [8]}, [("b", 0)]),  # the tombstone has no producer id
        ({"producer_ids": [7], "latest": True}, [("a", 3)]),
        ({"states": ["Empty"], "latest": True}, []),  # filters apply after folding
        ({"limit": 2}, [("a", 0), ("a", 1)]),
        ({"limit": 0}, []),
    ],
)
def test_value_filters_and_limit(fake, kw, expected):
    out = rows(topic=TXN, **kw)
    got = sorted((r["key"]["transactional_id"], r["offset"]) for r in out)
    assert got == expected if "limit" not in kw else len(got) == len(expected)


def test_offsets_filters_and_latest(fake):
    assert [r["offset"] for r in rows(topic=OFF, topics=["orders"])] == [0, 3]
    assert [r["offset"] for r in rows(topic=OFF, types=["group-metadata"])] == [2]
    latest = rows(topic=OFF, ids=["g1"], latest=True)
    assert [(r["key"]["topic"], r["value"]["offset"]) for r in latest] == [("orders", 9)]
    assert fake.asked[-1][0] == [partition_for("g1", 50)]


def test_unknown_type_row_carries_raw_bytes_and_warns_once(fake, caplog):
    from kxtx.log import warn_once

    warn_once.__defaults__[0].clear()  # the once-per-process memo
    FakeSource.records_by_topic[OFF] = FakeSource.records_by_topic[OFF] * 2  # the same kind twice
    with caplog.at_level("WARNING", logger="kxtx"):
        out = rows(topic=OFF)
    warned = [r.getMessage() for r in caplog.records if "unknown record type 99" in r.getMessage()]
    assert len(warned) == 1 and "raw bytes" in warned[0]
    unknown = [r for r in out if r["type"] == "Unknown"]
    assert unknown and unknown[0]["raw_key"] == "00633f3f" and unknown[0]["raw_value"] == "0000"
    assert unknown[0]["notes"] == ["unknown record type 99 in __consumer_offsets"]


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"topic": TXN, "latest": True, "follow": True}, "cannot --follow"),
        ({"topic": OFF, "latest": True, "include_uncommitted": True}, "--include-uncommitted"),
        ({"topic": TXN, "states": ["Running"]}, "--state 'Running'"),
        ({"topic": OFF, "types": ["offsets"]}, "--type 'offsets'"),
        ({"topic": TXN, "partitions": [50]}, "partitions 0-49"),
        ({"topic": TXN, "ids": ["a"], "partitions": [(partition_for("a", 50) + 1) % 50]}, "holds none"),
        ({"topic": "other"}, "cannot dump"),
    ],
)
def test_usage_errors(fake, kw, message):
    with pytest.raises(UsageError, match=message):
        rows(**kw)


def test_choose_partitions_min_value_hash_goes_to_partition_zero():
    req = DumpRequest(topic=TXN, ids=["polygenelubricants", "kxtx-txn-71970-a8k"])
    assert dump.choose_partitions(req, 50) == [0]
    assert dump.choose_partitions(DumpRequest(topic=TXN, partitions=[3, 1]), 50) == [1, 3]
    assert dump.choose_partitions(DumpRequest(topic=TXN), 3) == [0, 1, 2]


def test_missing_topic_yields_nothing(monkeypatch):
    monkeypatch.setattr(dump, "partition_count", lambda settings, topic: None)
    assert rows(topic=TXN) == []


def test_start_is_passed_to_the_source(fake):
    rows(topic=TXN, start=Start("offset", 3), follow=False)
    assert fake.asked[-1][1:] == (Start("offset", 3), False)


def test_a_stopped_table_dump_shows_the_rows_read_so_far(capsys):
    """--follow into a table: Ctrl-C draws the rows read before it, then the stop is reported."""
    from kxtx.cli.dump import _emit_table

    def batches():
        yield [{"partition": 0, "offset": 7, "state": "Ongoing"}]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _emit_table(batches(), lambda r: r, ["partition", "offset", "state"])
    out = capsys.readouterr().out
    assert "Ongoing" in out and "7" in out
