"""The fast path (kxtx.produce.fast.plain) against the general path: same records, transactions,
checkpoints, bad-line handling and per-partition offset ranges; block reader positions equal the
record-by-record reader's."""

from __future__ import annotations

import dataclasses
import gzip
import json

import pytest

from kxtx import fast
from kxtx.client.settings import Settings
from kxtx.produce import brokerside, inputs, loop
from kxtx.produce.fast import keyed, plain
from kxtx.produce.options import ProduceOptions
from tests.conftest import fast_only
from tests.unit.test_produce_engine import FakeProducer

#: fast and general paths compared: CI runs them again with KXTX_FAST=0 (kxtx.fast)
pytestmark = pytest.mark.fastpath

DATA = (
    b'{"a":1}\n\n{"a":2}\r\n   \n{"a":NaN}\n{bad\n'
    + b'{"big":"'
    + b"x" * 6000
    + b'"}\n'
    + b'{"n":123456789012345678901234567890}\n{"a":3}\r\n'
    + b'{"u":"\xc3\xa9"}\n'
    + b'{"not utf-8":"\xff"}\n'
    + b"[" * 1200
    + b"]" * 1200
    + b"\n"
    + b'{"huge":"'
    + b"y" * 12000
    + b'"}\n'
    + b"".join(b'{"i":%d}\n' % i for i in range(40))
    + b"\n\n"
    + b'{"last":1}'
)


#: all UTF-8 (checked by msgspec), with lines it refuses in the middle of a block: nested past
#: kxtx's limit of 1024 levels, at the limit (a record) and at the limit with NaN (json decides),
#: NaN (json accepts it), a 64-bit overflow, bad JSON
DEEP = (
    b'{"k":1}\n'
    + b"[" * 1200
    + b"]" * 1200
    + b'\n{"k":NaN}\n{"k":1e999999}\n[1,]\n'
    + b"[" * 1024
    + b"]" * 1024
    + b"\n"
    + b"[" * 1025
    + b"]" * 1025
    + b"\n"
    + b'{"a":' * 1023
    + b"[NaN]"
    + b"}" * 1023
    + b"\n"
    + b'{"n":123456789012345678901234567890}\n{"k":"\xc3\xa9"}\n{"k":2}\n'
)


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return str(p)


@pytest.mark.parametrize(
    "name, fmt", [("x.jsonl", None), ("x.txt", None), ("x.jsonl.gz", None), ("x.jsonl", "lines")]
)
@pytest.mark.parametrize("block", [7, 64, 1 << 20])
@pytest.mark.parametrize("start", [0, 2, 11])
def test_blocks_give_the_readers_positions(tmp_path, monkeypatch, name, fmt, block, start):
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    src = inputs.detect(_write(tmp_path, name, DATA), fmt)
    expected = list(inputs.read(src))
    offset, lineno = (0, 0) if not start else (expected[start - 1].end, expected[start - 1].lineno)
    expected = list(inputs.read(src, offset, lineno))
    got = [b.line(i) for b in inputs.read_blocks(src, offset, lineno) for i in range(len(b.values))]
    if src.fmt == "jsonl":
        got = [x for x in got if x.raw.strip()]
    assert got == expected


class Reporting(FakeProducer):
    """Also assigns offsets (with gaps: other producers' records) and sends delivery reports for
    the records that asked for one when the transaction commits."""

    def __init__(self, conf, fail_commits):
        super().__init__(conf, fail_commits)
        self.next_offset, self.reports = {}, []

    def produce(self, topic, value=None, key=None, partition=-1, callback=None, **kw):
        super().produce(topic, value, key)
        callback = callback or kw.get("on_delivery")
        part = max(partition if kw.get("partition") is None else kw["partition"], 0)
        o = self.next_offset.get((topic, part), 5)
        self.next_offset[(topic, part)] = o + 1 + (o % 3 == 0)
        if callback is not None:
            self.reports.append((callback, _Msg(part, o)))

    def commit_transaction(self, timeout):
        reports, self.reports = self.reports, []
        for cb, msg in reports:
            cb(None, msg)
        super().commit_transaction(timeout)


class QueueFull(Reporting):
    """Refuses every 5th produce() with BufferError (librdkafka's local queue is full) until
    poll() serves delivery reports: nothing refused may be lost or produced twice."""

    def __init__(self, conf, fail_commits):
        super().__init__(conf, fail_commits)
        self.calls = self.refused = 0
        self.full = False

    def produce(self, topic, value=None, key=None, *args, **kw):
        self.calls += 1
        if self.full or self.calls % 5 == 0:
            self.full = True
            self.refused += 1
            raise BufferError("Local: Queue full")
        super().produce(topic, value, key, *args, **kw)

    def poll(self, timeout=0):
        self.full = False
        return 0


class _Msg:
    def __init__(self, p, o):
        self.p, self.o = p, o

    def partition(self):
        return self.p

    def offset(self):
        return self.o


_FAST_FILE = keyed.fast_file


def _run(monkeypatch, paths, partitions, fake=None, **opts):
    """Run the engine on a fake producer (a topic of 1 partition); `partitions` 1 takes the fast
    path, 2 the general one."""
    made = {}
    monkeypatch.setattr(keyed, "fast_file", _FAST_FILE if partitions == 1 else lambda *a: None)
    monkeypatch.setattr(loop.clients, "probing_admin", lambda s: object())
    monkeypatch.setattr(
        brokerside,
        "describe_topic",
        lambda a, s, t, what="topic", keyed=None: brokerside.TopicInfo(t, 1, 10_000),
    )
    monkeypatch.setattr(brokerside, "ensure_checkpoint_topic", lambda a, s, t: False)
    monkeypatch.setattr(brokerside, "read_checkpoint", lambda s, t, tid, admin: None)

    def producer(settings, **conf):
        made["p"] = (fake or Reporting)(conf, {})
        return made["p"]

    monkeypatch.setattr(loop.clients, "producer", producer)
    calls = []
    real = plain.PlainFile.produce_all
    monkeypatch.setattr(
        plain.PlainFile, "produce_all", lambda self, plan: calls.append(1) or real(self, plan)
    )
    summary = loop.Run(
        Settings(props={"bootstrap.servers": "x:1"}), ProduceOptions(topic="t", paths=paths, **opts)
    ).execute()
    # the path under test was taken (KXTX_FAST=0: the general one, whatever the test asks)
    assert bool(calls) == (partitions == 1 and fast.enabled("produce"))
    txns = []
    for txn in made["p"].committed:
        rows = []
        for topic, key, value in txn:
            if topic == "kxtx-checkpoints":
                cp = json.loads(value)
                cp.pop("updated_ms")
                value = cp
            rows.append((topic, key, value))
        txns.append(rows)
    return txns, dataclasses.replace(summary, elapsed_s=0.0, records_per_s=None)


@pytest.mark.parametrize(
    "opts",
    [
        {},
        {"records_per_txn": 1},
        {"records_per_txn": 3},
        {"records_per_txn": 7},
        {"bytes_per_txn": 50},
        {"bytes_per_txn": 5000, "records_per_txn": 4},
        {"all_or_nothing": True},
        {"on_error": "skip", "records_per_txn": 5},
        {"on_error": "dlq:dead", "records_per_txn": 2},
    ],
)
@pytest.mark.parametrize("block", [7, 100, 1 << 20])
@pytest.mark.parametrize("libs_take_deep", [False, True])
def test_fast_path_equals_general_path(tmp_path, monkeypatch, opts, block, libs_take_deep):
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    if libs_take_deep:  # as with orjson < 3.13 or msgspec on CPython 3.13: kxtx checks depth itself
        from kxtx.produce import mapping

        monkeypatch.setattr(mapping, "_FAST_TAKES_TOO_DEEP", True)
        monkeypatch.setattr(plain, "_TAKES_TOO_DEEP", dict.fromkeys(plain._TAKES_TOO_DEEP, True))
    paths = [
        _write(tmp_path, "a.jsonl", DATA),
        _write(tmp_path, "b.txt", b"p\n\nq\r\nr"),
        _write(tmp_path, "c.jsonl.gz", b"".join(b'{"j":%d}\n' % i for i in range(9))),
        _write(tmp_path, "d.jsonl", DEEP),
    ]
    opts.setdefault("on_error", "skip")
    fast = _run(monkeypatch, paths, 1, **opts)
    general = _run(monkeypatch, paths, 2, **opts)
    assert fast == general
    summary = fast[1]
    # a.jsonl: {bad, not UTF-8, 1200 levels, the line over 10000 bytes; d.jsonl: 1200 and 1025
    # levels, [1,] -- whatever the JSON libraries' versions
    assert summary.skipped + summary.dead_lettered == 7
    assert summary.partitions[0].records == summary.records
    assert summary.partitions[0].first_offset is not None


@fast_only
@pytest.mark.parametrize("block", [7, 100, 1 << 20])
def test_full_queue_loses_and_repeats_nothing(tmp_path, monkeypatch, block):
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    paths = [
        _write(tmp_path, "a.jsonl", DATA),
        _write(tmp_path, "b.txt", b"p\n\nq\r\nr"),
        _write(tmp_path, "d.jsonl", DEEP),
    ]
    made = []
    monkeypatch.setattr(
        QueueFull, "poll", lambda self, timeout=0: made.append(self) or setattr(self, "full", False)
    )
    fast = _run(monkeypatch, paths, 1, QueueFull, on_error="skip", records_per_txn=6)
    assert made and made[0].refused > 10  # the queue was full, more than once
    general = _run(monkeypatch, paths, 2, on_error="skip", records_per_txn=6)
    assert fast == general


@fast_only
@pytest.mark.parametrize("limit", [0, 40, 1 << 30])
@pytest.mark.parametrize("block", [7, 100])
def test_reading_ahead_changes_nothing(tmp_path, monkeypatch, limit, block):
    """Blocks read (and checked) ahead while a commit waits give the same transactions as the
    general path, whatever the read-ahead's limit (0: nothing is read ahead)."""
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    monkeypatch.setattr(plain, "READ_AHEAD_BYTES", limit)
    steps = []
    real = inputs.ReadAhead.step
    monkeypatch.setattr(inputs.ReadAhead, "step", lambda self: steps.append(1) or real(self))
    paths = [_write(tmp_path, "a.jsonl", DATA), _write(tmp_path, "d.jsonl.gz", DEEP)]
    opts = {"on_error": "skip", "records_per_txn": 3}
    fast = _run(monkeypatch, paths, 1, **opts)
    assert steps  # the commits asked for blocks ahead
    assert fast == _run(monkeypatch, paths, 2, **opts)


@pytest.mark.parametrize("limit", [0, 1 << 30])
def test_an_unreadable_part_stops_where_it_starts(tmp_path, monkeypatch, limit):
    """A gzip file cut short: the transactions before the part that cannot be read commit, read
    ahead or not, as on the general path; then the run stops with the file named."""
    from kxtx.errors import InputError

    monkeypatch.setattr(inputs, "BLOCK_BYTES", 64)
    monkeypatch.setattr(plain, "READ_AHEAD_BYTES", limit)
    packed = gzip.compress(b"".join(b'{"i":%d}\n' % i for i in range(3000)), mtime=0)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[: len(packed) // 2])
    made: list = []
    real = Reporting.commit_transaction
    monkeypatch.setattr(Reporting, "commit_transaction", lambda self, t: made.append(self) or real(self, t))
    committed = {}
    for partitions in (1, 2):
        with pytest.raises(InputError, match=r"cut\.jsonl\.gz: cannot read"):
            _run(monkeypatch, [str(path)], partitions, records_per_txn=100)
        committed[partitions] = [
            [(t, k, v) if t == "t" else json.loads(v) | {"updated_ms": 0} for t, k, v in txn]
            for txn in made[-1].committed
        ]
    assert len(committed[1]) > 3  # transactions before the cut were committed
    assert committed[1] == committed[2]


def test_bad_line_fails_with_file_and_line(tmp_path, monkeypatch):
    from kxtx.errors import InputError

    path = _write(tmp_path, "a.jsonl", b'{"a":1}\n\n{"a":2}\n{bad\n{"a":3}\n')
    with pytest.raises(InputError, match=r"a\.jsonl:4: bad JSON"):
        _run(monkeypatch, [path], 1)


def _stdin_pipe(monkeypatch, pieces: list[tuple[float, bytes]]) -> None:
    """stdin becomes a pipe that a thread writes `pieces` into, each after its pause (seconds)."""
    import io
    import os
    import sys
    import threading
    import time

    r, w = os.pipe()

    def write() -> None:
        for pause, data in pieces:
            time.sleep(pause)
            os.write(w, data)
        os.close(w)

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(open(r, "rb")))
    threading.Thread(target=write, daemon=True).start()


def test_blocks_from_a_quiet_pipe_come_with_empty_ones_between(monkeypatch):
    """`idle`: stdin from a pipe that is quiet for a while gives empty blocks meanwhile (the
    transaction loop commits by age and checks stop signals there); the lines are those written,
    a line cut across two writes whole."""
    _stdin_pipe(monkeypatch, [(0, b'{"a":1}\n'), (0.35, b'{"b"'), (0.35, b":2}\n"), (0, b'{"c":3}')])
    blocks = list(inputs.read_blocks(inputs.detect("-"), idle=0.1))
    lines = [v for b in blocks for v in b.values]
    assert lines == [b'{"a":1}', b'{"b":2}', b'{"c":3}']
    # Each of the two quiet gaps lasts 3.5 idle periods: at least one empty block each, whatever
    # the machine's load (under load a reader wakes late, so more than one each is not promised).
    first_b = next(i for i, b in enumerate(blocks) if b'{"b":2}' in b.values)
    empty = [b for b in blocks[:first_b] if not b.values]
    assert len(empty) >= 2 and all(b.span == 0 for b in blocks if not b.values)
    assert [b.line(0).lineno for b in blocks if b.values] == [1, 2, 3]


def test_blocks_of_a_file_never_wait(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n')
    blocks = list(inputs.read_blocks(inputs.detect(str(path)), idle=0.01))
    assert [b.values for b in blocks] == [[b'{"a":1}', b'{"b":2}']]
