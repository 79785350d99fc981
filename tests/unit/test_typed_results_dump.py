"""What `dump partition` writes from the batches, records and summaries it reads, byte for byte:
batches built as a producer and a coordinator write them, read by the command's own reader, their
producers named, then rendered as a table, json and jsonl (kxtx.results, issue 44). The summaries
of `dump partition` feed `count` and the marker audit too: their rows are pinned here as well."""

from __future__ import annotations

import contextlib
import io
import json
import struct
import sys
from types import SimpleNamespace

import pytest

from kxtx.cli import output
from kxtx.cli.common import OutputFormat, ValueFormat
from tests.unit.test_batchheader import control_batch

T0 = 1_700_000_000_000


def _data(base: int, pid: int, epoch: int, records: list[tuple], txn: bool = True, seq: int = 0) -> bytes:
    """A data batch as a producer writes it (kafka-python's builder) at offset `base` (the base
    offset is outside the batch's CRC)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, txn, pid, epoch, seq, 1 << 20)
    for i, (ts, key, value, headers) in enumerate(records):
        b.append(i, ts, key, value, headers)
    return struct.pack(">q", base) + bytes(b.build())[8:]


# Partition 0: a committed, an aborted transaction (markers after each), an idempotent and a plain
# batch, then an open transaction of the first producer (it holds the LSO at 9).
P0 = (
    _data(
        0,
        7,
        3,
        [(T0, b"k0", b'{"a": 1}', [("h", b"1")]), (T0 + 1, None, None, []), (T0 + 2, b"k2", b"x" * 30, [])],
    )
    + control_batch(3, 1, 9, pid=7, epoch=3, ts=T0 + 10)
    + _data(4, 8, 0, [(T0 + 20, b"a", b"b", []), (T0 + 21, b"c", b"d", [])])
    + control_batch(6, 0, 9, pid=8, epoch=0, ts=T0 + 30)
    + _data(7, 9, 1, [(T0 + 40, b"i", b"1", [])], txn=False, seq=5)
    + _data(8, -1, -1, [(T0 + 50, b"p", b"2", [])], txn=False, seq=-1)
    + _data(9, 7, 4, [(T0 + 60, b"o", b"open", []), (T0 + 61, b"o", b"open2", []), (T0 + 62, b"o", b"3", [])])
)
# Partition 1: its log starts at 4 (asked from 0: the start was deleted), one committed transaction.
P1 = _data(4, 8, 0, [(T0 + 70, b"z", b"9", [("x", None)])]) + control_batch(
    5, 1, 2, pid=8, epoch=0, ts=T0 + 80
)


def _reader(p: int, buf: bytes, log_start: int, lso: int, hw: int, records: bool):
    """The command's partition reader, its first Fetch answered with `buf` (the whole range)."""
    from kxtx.dump.partition import _PartitionReader

    head = SimpleNamespace(
        error_code=0, high_watermark=hw, last_stable_offset=lso, log_start_offset=log_start, records=buf
    )
    source = SimpleNamespace(topic="t", settings=SimpleNamespace(timeout=5.0))
    return _PartitionReader(source, p, 0, "hw", records, log_start, 1, head)


def _dumps(monkeypatch, records: bool = True) -> list:
    """Both partitions read, their producers named as `dump partition` names them (the first
    producer id found as tx-a)."""
    from kxtx.dump import partition_run as ops

    dumps = [_reader(0, P0, 0, 9, 12, records).read(), _reader(1, P1, 4, 6, 6, records).read()]
    monkeypatch.setattr(ops, "Cluster", lambda settings: contextlib.nullcontext())
    monkeypatch.setattr(ops, "named_producers", lambda cluster, pids, in_log: {7: "tx-a"})
    ops.name_producers(None, dumps)
    return dumps


def _written(monkeypatch, fmt: str, records: bool = True, how: str = "string") -> str:
    """What `kxtx dump partition t --from 0 [--records] -o FMT` writes on stdout."""
    from kxtx.cli import dump_partition as cli
    from kxtx.dump import partition_run as ops

    dumps = _dumps(monkeypatch, records)
    monkeypatch.setattr(ops, "dump_partitions", lambda *args, **kwargs: dumps)
    monkeypatch.setenv("COLUMNS", "100")
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    with output.document(OutputFormat(fmt), "batches") as doc:
        cli.partition_cmd.__wrapped__(  # the command, without its boundary
            target="t",
            start="0",
            end=None,
            around=None,
            records=records,
            value_format=ValueFormat(how),
            width=16,
            bootstrap=["localhost:9092"],
            config=None,
            command_config=None,
            timeout=None,
            fmt=OutputFormat(fmt),
        )
        if doc is not None:
            doc.write(0)
    out.flush()
    return raw.getvalue().decode("utf-8")


TABLE = """\
                               batches                                
┏━━━┳━━━━━━━━━┳━━━┳━━━━━━━━━━┳━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━┓
┃ p ┃ offsets ┃ n ┃ producer ┃ seq ┃ kind       ┃ fate       ┃ codec ┃
┡━━━╇━━━━━━━━━╇━━━╇━━━━━━━━━━╇━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━┩
│ 0 │ 0-2     │ 3 │ 7/3      │ 0   │ txn        │ committed  │ none  │
│ 0 │ 3-3     │ 1 │ 7/3      │ -   │ COMMIT     │ -          │ none  │
│ 0 │ 4-5     │ 2 │ 8/0      │ 0   │ txn        │ aborted    │ none  │
│ 0 │ 6-6     │ 1 │ 8/0      │ -   │ ABORT      │ -          │ none  │
│ 0 │ 7-7     │ 1 │ 9/1      │ 5   │ idempotent │ -          │ none  │
│ 0 │ 8-8     │ 1 │ -        │ -   │ plain      │ -          │ none  │
│ 0 │ 9-11    │ 3 │ 7/4      │ 0   │ txn        │ open: tx-a │ none  │
│ 1 │ 4-4     │ 1 │ 8/0      │ 0   │ txn        │ committed  │ none  │
│ 1 │ 5-5     │ 1 │ 8/0      │ -   │ COMMIT     │ -          │ none  │
└───┴─────────┴───┴──────────┴─────┴────────────┴────────────┴───────┘
                                  records                                   
┏━━━┳━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━┳━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━┓
┃ p ┃ offset ┃ time         ┃ key ┃ value            ┃ headers ┃ fate      ┃
┡━━━╇━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━╇━━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━┩
│ 0 │ 0      │ 22:13:20.000 │ k0  │ {"a": 1}         │ h=1     │ committed │
│ 0 │ 1      │ 22:13:20.001 │ -   │ -                │ -       │ committed │
│ 0 │ 2      │ 22:13:20.002 │ k2  │ xxxxxxxxxxxxxxx… │ -       │ committed │
│ 0 │ 4      │ 22:13:20.020 │ a   │ b                │ -       │ aborted   │
│ 0 │ 5      │ 22:13:20.021 │ c   │ d                │ -       │ aborted   │
│ 0 │ 7      │ 22:13:20.040 │ i   │ 1                │ -       │ -         │
│ 0 │ 8      │ 22:13:20.050 │ p   │ 2                │ -       │ -         │
│ 0 │ 9      │ 22:13:20.060 │ o   │ open             │ -       │ open      │
│ 0 │ 10     │ 22:13:20.061 │ o   │ open2            │ -       │ open      │
│ 0 │ 11     │ 22:13:20.062 │ o   │ 3                │ -       │ open      │
│ 1 │ 4      │ 22:13:20.070 │ z   │ 9                │ x=      │ committed │
└───┴────────┴──────────────┴─────┴──────────────────┴─────────┴───────────┘
summary
1 of 2 ─────────────────────────────────────────────────────────────────────────────────────────────
p               0                                  
range           0-12                               
lso             9                                  
hw              12                                 
records         10                                 
markers         2                                  
aborted         2                                  
open            3                                  
read_committed  5                                  
producers       tx-a:1c/0a/1o 8:0c/1a/0o 9:0c/0a/0o
2 of 2 ─────────────────────────────────────────────────────────────────────────────────────────────
p               1                  
range           4-6 (start deleted)
lso             6                  
hw              6                  
records         1                  
markers         1                  
aborted         0                  
open            0                  
read_committed  1                  
producers       8:1c/0a/0o         
"""  # noqa: W291 - rich pads the summary blocks to their width

JSONL = """\
{"kind":"batch","partition":0,"base_offset":0,"last_offset":2,"count":3,"producer_id":7,"producer_epoch":3,"base_sequence":0,"transactional":true,"control":false,"control_type":null,"coordinator_epoch":null,"fate":"committed","transactional_id":"tx-a","first_timestamp":1700000000000,"first_time":"2023-11-14T22:13:20.000+00:00","max_timestamp":1700000000002,"max_time":"2023-11-14T22:13:20.002+00:00","compression":"none","size":128}
{"kind":"record","partition":0,"offset":0,"timestamp":1700000000000,"time":"2023-11-14T22:13:20.000+00:00","key":"k0","headers":[["h","1"]],"value":"{\\"a\\": 1}","fate":"committed","read_committed":true}
{"kind":"record","partition":0,"offset":1,"timestamp":1700000000001,"time":"2023-11-14T22:13:20.001+00:00","key":null,"headers":[],"value":null,"fate":"committed","read_committed":true}
{"kind":"record","partition":0,"offset":2,"timestamp":1700000000002,"time":"2023-11-14T22:13:20.002+00:00","key":"k2","headers":[],"value":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","fate":"committed","read_committed":true}
{"kind":"batch","partition":0,"base_offset":3,"last_offset":3,"count":1,"producer_id":7,"producer_epoch":3,"base_sequence":-1,"transactional":true,"control":true,"control_type":"COMMIT","coordinator_epoch":9,"fate":null,"transactional_id":"tx-a","first_timestamp":1700000000010,"first_time":"2023-11-14T22:13:20.010+00:00","max_timestamp":1700000000010,"max_time":"2023-11-14T22:13:20.010+00:00","compression":"none","size":78}
{"kind":"batch","partition":0,"base_offset":4,"last_offset":5,"count":2,"producer_id":8,"producer_epoch":0,"base_sequence":0,"transactional":true,"control":false,"control_type":null,"coordinator_epoch":null,"fate":"aborted","transactional_id":null,"first_timestamp":1700000000020,"first_time":"2023-11-14T22:13:20.020+00:00","max_timestamp":1700000000021,"max_time":"2023-11-14T22:13:20.021+00:00","compression":"none","size":79}
{"kind":"record","partition":0,"offset":4,"timestamp":1700000000020,"time":"2023-11-14T22:13:20.020+00:00","key":"a","headers":[],"value":"b","fate":"aborted","read_committed":false}
{"kind":"record","partition":0,"offset":5,"timestamp":1700000000021,"time":"2023-11-14T22:13:20.021+00:00","key":"c","headers":[],"value":"d","fate":"aborted","read_committed":false}
{"kind":"batch","partition":0,"base_offset":6,"last_offset":6,"count":1,"producer_id":8,"producer_epoch":0,"base_sequence":-1,"transactional":true,"control":true,"control_type":"ABORT","coordinator_epoch":9,"fate":null,"transactional_id":null,"first_timestamp":1700000000030,"first_time":"2023-11-14T22:13:20.030+00:00","max_timestamp":1700000000030,"max_time":"2023-11-14T22:13:20.030+00:00","compression":"none","size":78}
{"kind":"batch","partition":0,"base_offset":7,"last_offset":7,"count":1,"producer_id":9,"producer_epoch":1,"base_sequence":5,"transactional":false,"control":false,"control_type":null,"coordinator_epoch":null,"fate":null,"transactional_id":null,"first_timestamp":1700000000040,"first_time":"2023-11-14T22:13:20.040+00:00","max_timestamp":1700000000040,"max_time":"2023-11-14T22:13:20.040+00:00","compression":"none","size":70}
{"kind":"record","partition":0,"offset":7,"timestamp":1700000000040,"time":"2023-11-14T22:13:20.040+00:00","key":"i","headers":[],"value":"1","fate":null,"read_committed":true}
{"kind":"batch","partition":0,"base_offset":8,"last_offset":8,"count":1,"producer_id":-1,"producer_epoch":-1,"base_sequence":-1,"transactional":false,"control":false,"control_type":null,"coordinator_epoch":null,"fate":null,"transactional_id":null,"first_timestamp":1700000000050,"first_time":"2023-11-14T22:13:20.050+00:00","max_timestamp":1700000000050,"max_time":"2023-11-14T22:13:20.050+00:00","compression":"none","size":70}
{"kind":"record","partition":0,"offset":8,"timestamp":1700000000050,"time":"2023-11-14T22:13:20.050+00:00","key":"p","headers":[],"value":"2","fate":null,"read_committed":true}
{"kind":"batch","partition":0,"base_offset":9,"last_offset":11,"count":3,"producer_id":7,"producer_epoch":4,"base_sequence":0,"transactional":true,"control":false,"control_type":null,"coordinator_epoch":null,"fate":"open","transactional_id":"tx-a","first_timestamp":1700000000060,"first_time":"2023-11-14T22:13:20.060+00:00","max_timestamp":1700000000062,"max_time":"2023-11-14T22:13:20.062+00:00","compression":"none","size":95}
{"kind":"record","partition":0,"offset":9,"timestamp":1700000000060,"time":"2023-11-14T22:13:20.060+00:00","key":"o","headers":[],"value":"open","fate":"open","read_committed":false}
{"kind":"record","partition":0,"offset":10,"timestamp":1700000000061,"time":"2023-11-14T22:13:20.061+00:00","key":"o","headers":[],"value":"open2","fate":"open","read_committed":false}
{"kind":"record","partition":0,"offset":11,"timestamp":1700000000062,"time":"2023-11-14T22:13:20.062+00:00","key":"o","headers":[],"value":"3","fate":"open","read_committed":false}
{"kind":"batch","partition":1,"base_offset":4,"last_offset":4,"count":1,"producer_id":8,"producer_epoch":0,"base_sequence":0,"transactional":true,"control":false,"control_type":null,"coordinator_epoch":null,"fate":"committed","transactional_id":null,"first_timestamp":1700000000070,"first_time":"2023-11-14T22:13:20.070+00:00","max_timestamp":1700000000070,"max_time":"2023-11-14T22:13:20.070+00:00","compression":"none","size":73}
{"kind":"record","partition":1,"offset":4,"timestamp":1700000000070,"time":"2023-11-14T22:13:20.070+00:00","key":"z","headers":[["x",null]],"value":"9","fate":"committed","read_committed":true}
{"kind":"batch","partition":1,"base_offset":5,"last_offset":5,"count":1,"producer_id":8,"producer_epoch":0,"base_sequence":-1,"transactional":true,"control":true,"control_type":"COMMIT","coordinator_epoch":2,"fate":null,"transactional_id":null,"first_timestamp":1700000000080,"first_time":"2023-11-14T22:13:20.080+00:00","max_timestamp":1700000000080,"max_time":"2023-11-14T22:13:20.080+00:00","compression":"none","size":78}
{"kind":"summary","partition":0,"from":0,"to":12,"log_start":0,"lso":9,"hw":12,"batches":7,"records":10,"markers":2,"committed_records":3,"aborted_records":2,"open_records":3,"non_transactional_records":2,"read_committed":5,"producers":[{"producer_id":7,"transactional_id":"tx-a","committed":1,"aborted":0,"open":1,"records":6},{"producer_id":8,"transactional_id":null,"committed":0,"aborted":1,"open":0,"records":2},{"producer_id":9,"transactional_id":null,"committed":0,"aborted":0,"open":0,"records":1}]}
{"kind":"summary","partition":1,"from":4,"to":6,"log_start":4,"lso":6,"hw":6,"deleted":"offsets 0..3 are gone (below the log start offset)","batches":2,"records":1,"markers":1,"committed_records":1,"aborted_records":0,"open_records":0,"non_transactional_records":0,"read_committed":1,"producers":[{"producer_id":8,"transactional_id":null,"committed":1,"aborted":0,"open":0,"records":1}]}
"""


def test_the_table(monkeypatch):
    assert _written(monkeypatch, "table") == TABLE


def test_jsonl_a_line_per_batch_its_records_after_it_then_the_summaries(monkeypatch):
    assert _written(monkeypatch, "jsonl") == JSONL


def _document(records: bool) -> str:
    """The json document the jsonl lines make: each data batch with its records under "records"
    (with --records), the summaries under "summary", as the output layer writes a dict."""
    batches, summaries = [], []
    for line in JSONL.splitlines():
        row = json.loads(line)
        if row["kind"] == "batch":
            if records and not row["control"]:
                row["records"] = []
            batches.append(row)
        elif row["kind"] == "record":
            if records:
                batches[-1]["records"].append(row)
        else:
            summaries.append(row)
    doc = {"status": "ok", "exit_code": 0, "error": None, "batches": batches, "summary": summaries}
    return output._dumps(doc, indent=2) + "\n"


@pytest.mark.parametrize("records", [True, False], ids=["records", "batches"])
def test_the_json_document(monkeypatch, records):
    assert _written(monkeypatch, "json", records) == _document(records)


def test_count_rows_come_from_the_summaries(monkeypatch):
    from kxtx.dump import partition_run as ops
    from kxtx.ops.topics import count_records

    dumps = _dumps(monkeypatch, records=False)
    monkeypatch.setattr(ops, "dump_partitions", lambda *args, **kwargs: dumps)
    counts = ("records", "read_committed", "committed_records", "aborted_records", "open_records")
    rest = ("non_transactional_records", "markers", "log_start", "lso", "hw")
    assert [[r[k] for k in ("kind", "partition", *counts, *rest)] for r in count_records(None, "t")] == [
        ["partition", 0, 10, 5, 3, 2, 3, 2, 2, 0, 9, 12],
        ["partition", 1, 1, 1, 1, 0, 0, 0, 1, 4, 6, 6],
        ["total", None, 11, 6, 4, 2, 3, 2, 3, None, None, None],
    ]
    assert [list(r) for r in count_records(None, "t")][0] == ["kind", "partition", *counts, *rest]


def test_the_marker_audit_reads_the_bounds_of_its_partitions(monkeypatch):
    from kxtx.dump import partition
    from kxtx.ops import audit

    readers = {0: _reader(0, P0, 0, 9, 12, False), 1: _reader(1, P1, 4, 6, 6, False)}
    monkeypatch.setattr(
        partition,
        "read_headers",
        lambda settings, topic, starts: [readers[p].transactional_headers() for p in starts],
    )
    judged = audit.judge(None, {"t": {0: 0, 1: 0}}, {})
    assert [(tp, bounds, len(found)) for tp, bounds, found, _ in judged] == [
        (("t", 0), (9, 12), 0),
        (("t", 1), (6, 6), 0),
    ]
