"""The keyed fast path (kxtx.produce.fast.keyed, columns, murmur) against the general path: the same
(key, value, partition, headers, timestamp) for every record, the same transactions, checkpoints,
bad-line reports and per-partition offset ranges, on a table of inputs and options."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter

import pytest
from kafka.partitioner.default import murmur2 as java_murmur2  # the Java client's, in Python

from kxtx import fast as switch
from kxtx.client.settings import Settings
from kxtx.errors import InputError
from kxtx.produce import brokerside, inputs, loop
from kxtx.produce.fast import keyed, murmur
from kxtx.produce.mapping import MappingSpec
from kxtx.produce.options import ProduceOptions
from tests.binaries import need_native
from tests.conftest import fast_only
from tests.unit.test_produce_engine import FakeProducer
from tests.unit.test_produce_plain import _Msg

#: fast and general paths compared: CI runs them again with KXTX_FAST=0 (kxtx.fast)
pytestmark = pytest.mark.fastpath

PARTITIONS = 6
_FAST_FILE = keyed.fast_file


@pytest.mark.parametrize("seed", range(3))
def test_murmur2_matches_the_java_client(seed):
    rnd = random.Random(seed)
    keys = [rnd.randbytes(rnd.randrange(0, 70)) for _ in range(3000)]
    keys += [b"u%05d" % i for i in range(300)] + ["é€😀".encode(), b"\xff" * 7]
    for k in keys[:500]:
        assert murmur.murmur2(k) == java_murmur2(k) & 0xFFFFFFFF
    for n in (1, 2, 6, 7, 100):
        expected = [-1 if not k else (java_murmur2(k) & 0x7FFFFFFF) % n for k in keys]
        assert murmur.partitions_of(keys, n) == expected
        assert murmur.partitions_of(keys[:1], n) == expected[:1]


@pytest.mark.parametrize("way", ["kxtx.fast.native", "confluent-kafka's", "kxtx's"])
@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 12, 100, 1000, 65537, 2**31 - 1])
def test_block_partitions_for_many_partition_counts(n, way):
    """The modulo is computed for all keys at once (multiply-shift): exact for every count; and
    the C loop (kxtx.fast.native, where it was built) and confluent-kafka's murmur2, where the
    partitioner uses them, agree; empty keys are left to librdkafka (-1) every way."""
    rnd = random.Random(n)
    keys = [rnd.randbytes(rnd.randrange(0, 12)) for _ in range(4000)]
    part = murmur.Partitioner(n, native=way != "kxtx's")
    # the C loop itself, even where KXTX_SPEEDUPS=0 turned it off (a skip where it was not built,
    # a fail under CI), or confluent-kafka's murmur2 without it
    part._loop = need_native() if way == "kxtx.fast.native" else None
    assert (part._murmur2 is not None) == (way != "kxtx's")  # confluent-kafka >= 2.13 is installed here
    assert part(keys) == [-1 if not k else (java_murmur2(k) & 0x7FFFFFFF) % n for k in keys]


class Capture(FakeProducer):
    """Keeps (topic, key, value, partition, headers, timestamp) of each record. partition=-1 is
    decided as librdkafka's murmur2_random would (a null key: None, any partition); offsets per
    partition with gaps, delivery reports for the records that asked, at commit."""

    def __init__(self, conf, fail_commits):
        super().__init__(conf, fail_commits)
        self.next_offset, self.reports = {}, []

    def produce(
        self,
        topic,
        value=None,
        key=None,
        partition=-1,
        callback=None,
        on_delivery=None,
        timestamp=0,
        headers=None,
    ):
        assert self.open is not None, "produce outside a transaction"
        if topic == "t" and partition == -1:
            partition = (java_murmur2(key) & 0x7FFFFFFF) % PARTITIONS if key is not None else None
        self.open.append((topic, key, value, partition if key is not None else None, headers, timestamp))
        part = partition or 0
        o = self.next_offset.get((topic, part), 5)
        self.next_offset[(topic, part)] = o + 1 + (o % 3 == 0)
        cb = callback or on_delivery
        if cb is not None:
            self.reports.append((cb, _Msg(part, o)))

    def commit_transaction(self, timeout):
        reports, self.reports = self.reports, []
        for cb, msg in reports:
            cb(None, msg)
        super().commit_transaction(timeout)


class QueueFull(Capture):
    """Refuses every 5th produce() with BufferError (librdkafka's local queue is full) until
    poll() serves delivery reports: nothing refused may be lost or produced twice."""

    def __init__(self, conf, fail_commits):
        super().__init__(conf, fail_commits)
        self.calls = self.refused = 0
        self.full = False

    def produce(self, *args, **kw):
        self.calls += 1
        if self.full or self.calls % 5 == 0:
            self.full = True
            self.refused += 1
            raise BufferError("Local: Queue full")
        super().produce(*args, **kw)

    def poll(self, timeout=0):
        self.full = False
        return 0


def run(monkeypatch, paths, fast, partitions=PARTITIONS, fake=None, **opts):
    made = {}
    taken = []
    real = _FAST_FILE

    def fast_file(settings, src, mapper):
        cls = real(settings, src, mapper) if fast else None
        taken.append(cls is not None)
        return cls

    monkeypatch.setattr(keyed, "fast_file", fast_file)
    monkeypatch.setattr(loop.clients, "probing_admin", lambda s: object())
    monkeypatch.setattr(
        brokerside,
        "describe_topic",
        lambda a, s, t, what="topic", keyed=None: brokerside.TopicInfo(t, partitions, 10_000),
    )
    monkeypatch.setattr(brokerside, "ensure_checkpoint_topic", lambda a, s, t: False)
    monkeypatch.setattr(brokerside, "read_checkpoint", lambda s, t, tid, admin: None)

    def producer(settings, **conf):
        made["p"] = (fake or Capture)(conf, {})
        return made["p"]

    monkeypatch.setattr(loop.clients, "producer", producer)
    summary = loop.Run(
        Settings(props={"bootstrap.servers": "x:1"}), ProduceOptions(topic="t", paths=paths, **opts)
    ).execute()
    if switch.enabled("produce"):
        assert all(taken) == fast  # the path under test was taken
    else:
        assert not taken  # KXTX_FAST=0: the general path, whatever the test asks
    txns = []
    for txn in made["p"].committed:
        rows = []
        for row in txn:
            if row[0] == "kxtx-checkpoints":
                cp = json.loads(row[2])
                cp.pop("updated_ms")
                row = (row[0], row[1], cp)
            rows.append(row)
        txns.append(rows)
    return txns, dataclasses.replace(summary, elapsed_s=0.0, records_per_s=None)


def _write(tmp_path, name, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


#: JSON lines: string, number, unicode, nested, bool keys; missing, null and empty keys; a dotted
#: top-level key that wins (also when null); escapes in names; duplicate names; lenient JSON (NaN,
#: a 64-bit overflow: the general mapper decides); bad JSON; blank lines; a line over the size
#: limit; not UTF-8; nested past the limit; ISO and bad timestamps; partitions out of range
JSONL = b"".join(
    [
        b'{"user":"u1","c":{"id":"c1"},"ts":1700000000000,"ev":"click","p":1}\n',
        b'{"user":42,"c":{"id":7},"ts":"2024-01-02T03:04:05Z","ev":{"a":[1,"\\u00e9"]},"p":"2"}\n',
        '{"user":"é€😀","c":{"id":"ü"},"ts":1,"ev":true,"p":0}\n'.encode(),
        b'{"user":{"x":1},"c":{"id":[1,2]},"ts":"17","ev":null,"p":5}\n',
        b'{"user":true,"c.id":"literal","c":{"id":"nested"},"ts":1700000000001,"p":3}\n',
        b'{"user":"u2","c.id":null,"c":{"id":"nested"},"ts":1700000000002,"ev":"x","p":1}\n',
        b"\n",
        b'{"c":{"id":"no user"},"ts":5,"p":1}\n',
        b'{"user":null,"c":{},"ts":5,"p":1}\n',
        b'{"user":"","c":{"id":""},"ts":5,"p":1}\n',
        b'{"us\\u0065r":"escaped","c":{"id":"e"},"ts":6,"p":1}\n',
        b'{"user":"first","user":"dup","c":{"id":"d"},"c":{"id":"d2"},"ts":7,"p":1}\n',
        b'{"user":"nan","x":NaN,"c":{"id":"n"},"ts":8,"p":1}\n',
        b'{"user":"big","x":123456789012345678901234567890,"c":{"id":"b"},"ts":9,"p":1}\n',
        b'{"user":"bad",\n',
        b"   \r\n",
        b'{"user":"long","c":{"id":"l"},"pad":"' + b"x" * 11000 + b'","ts":1,"p":1}\n',
        b'{"user":"nearly","c":{"id":"l"},"pad":"' + b"x" * 9930 + b'","ts":1,"p":1}\n',
        b'{"user":"latin1 \xe9","c":{"id":"x"},"ts":1,"p":1}\n',
        b'{"user":"deep","x":' + b"[" * 1100 + b"]" * 1100 + b',"c":{"id":"x"},"ts":1,"p":1}\n',
        b'{"user":"ts","c":{"id":"x"},"ts":"yesterday","p":1}\n',
        b'{"user":"ts","c":{"id":"x"},"ts":false,"p":1}\n',
        b'{"user":"p","c":{"id":"x"},"ts":1,"p":6}\n',
        b'{"user":"p","c":"not an object","ts":1,"p":-1}\n',
        b"[1,2]\n",
        b'{"user":"crlf","c":{"id":"r"},"ts":1,"p":1}\r\n',
        # keys the C scan (kxtx.fast.native.json_keys) reads or leaves to msgspec
        b'{"user":-17,"c":{"id":"n"},"ts":1,"p":1}\n',
        b'{"user":-0,"c":{"id":"n"},"ts":1,"p":1}\n',
        b'{"user":1234567890123456789,"c":{"id":"n"},"ts":1,"p":1}\n',
        b'{"user":1.5e2,"c":{"id":"n"},"ts":1,"p":1}\n',
        b'{"user":"tab\\tand \\u00e9","c":{"id":"n"},"ts":1,"p":1}\n',
        b'{"x":{"user":"inner"},"user":"outer","c":{"id":"n"},"ts":1,"p":1}\n',
        b'{"user":"lone \\ud800","c":{"id":"n"},"ts":1,"p":1}\n',
        b'  {"user" : "spaced" , "c":{"id":"n"},"ts":1,"p":1}  \n',
    ]
    + [
        b'{"user":"k%d","c":{"id":"c%d"},"ts":%d,"ev":"e%d","p":%d}\n' % (i % 13, i % 7, i, i, i % 6)
        for i in range(60)
    ]
    + [b'{"user":"last","c":{"id":"z"},"ts":3,"p":4}']
)

CSV = b"".join(
    [
        b"id,name,ts,p\n",
        b"1,alice,1700000000000,1\n",
        b'2,"bob, jr",2024-01-02T03:04:05,2\n',
        b'3,"say ""hi""",17,0\n',
        "4,zoë 😀,5,5\n".encode(),
        b"\n",
        b",empty key,5,1\n",
        b"5,too,many,columns,1\n",
        b"6,short\n",
        b"7,crlf,8,1\r\n",
        b"\r\n",
        b"8,ts,not a time,1\n",
        b"9,p,1,9\n",
    ]
    + [b"k%d,n%d,%d,%d\n" % (i % 11, i, i, i % 6) for i in range(60)]
    + [b'8,"quoted\r\nbreak",3,1\n', b"9,after,3,1\n"]
)

#: a quoted line break: the rest of the file goes to the general path
CSV_MULTILINE = (
    b"id,name,ts,p\n"
    + b"".join(b"k%d,n%d,%d,1\n" % (i, i, i) for i in range(30))
    + b'x,"line\nbreak",1,2\n'
    + b"".join(b"k%d,n%d,2,3\n" % (i, i) for i in range(30))
)

JSON_OPTS = [
    {"mapping": MappingSpec(key_field="user")},
    {"mapping": MappingSpec(key_field="c.id")},
    {"mapping": MappingSpec(key_field="c.id", value_field="ev")},
    {
        "mapping": MappingSpec(
            key_field="user",
            timestamp_field="ts",
            header_fields=(("event", "ev"), ("cid", "c.id")),
            headers=(("src", "test"),),
        )
    },
    {"mapping": MappingSpec(key_field="user", partition_field="p")},
    {"mapping": MappingSpec(timestamp_field="ts")},  # no key: partitions left out of the comparison
    {"mapping": MappingSpec()},  # the plain fast path, to 6 partitions
]
CSV_OPTS = [
    {"mapping": MappingSpec(key_field="id")},
    {"mapping": MappingSpec(key_field="name", value_as_json=True)},
    {
        "mapping": MappingSpec(
            key_field="id", value_field="name", timestamp_field="ts", header_fields=(("n", "name"),)
        )
    },
    {"mapping": MappingSpec(key_field="id", partition_field="p", value_as_json=True)},
    {"mapping": MappingSpec(key_field="id", partition_field="p")},
]
POLICIES = [
    {"on_error": "skip"},
    {"on_error": "dlq:dead", "records_per_txn": 7},
    {"on_error": "skip", "records_per_txn": 1},
    {"on_error": "skip", "bytes_per_txn": 700},
]


def _compare(monkeypatch, paths, opts):
    fast = run(monkeypatch, paths, True, **opts)
    general = run(monkeypatch, paths, False, **opts)
    if not opts["mapping"].key_field and not opts["mapping"].partition_field:
        # unkeyed: the fast path picks one partition a block, librdkafka any
        fast, general = ((txns, dataclasses.replace(s, partitions=[])) for txns, s in (fast, general))
    assert fast == general
    return fast


@pytest.mark.parametrize("opts", JSON_OPTS)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("block", [7, 150, 1 << 20])
def test_jsonl_fast_path_equals_general_path(tmp_path, monkeypatch, opts, policy, block):
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    path = _write(tmp_path, "a.jsonl", JSONL)
    txns, summary = _compare(monkeypatch, [path], {**opts, **policy})
    assert summary.records > 60 and summary.skipped + summary.dead_lettered >= 4
    if summary.partitions:  # left out of the comparison when unkeyed
        assert sum(p.records for p in summary.partitions) == summary.records


@pytest.mark.parametrize("opts", CSV_OPTS)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("block", [7, 150, 1 << 20])
def test_csv_fast_path_equals_general_path(tmp_path, monkeypatch, opts, policy, block):
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    paths = [_write(tmp_path, "a.csv", CSV), _write(tmp_path, "m.csv", CSV_MULTILINE)]
    txns, summary = _compare(monkeypatch, paths, {**opts, **policy})
    assert summary.records > 100 and summary.skipped + summary.dead_lettered >= 2
    assert sum(p.records for p in summary.partitions) == summary.records


@fast_only
@pytest.mark.parametrize("block,cut", [(150, True), (1 << 20, False)])
def test_csv_blocks_without_quotes_are_cut_at_commas(tmp_path, monkeypatch, block, cut):
    """Blocks with no quote, CR or empty line take the comma-cutting reader (and the comparison
    above then covers it); a block with any of them takes csv.reader."""
    from kxtx.produce.fast import columns

    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    calls = Counter()
    for name in ("csv_split_columns", "csv_columns"):

        def spy(*args, _real=getattr(columns, name), _name=name, **kw):
            calls[_name] += 1
            return _real(*args, **kw)

        monkeypatch.setattr(columns, name, spy)
    path = _write(tmp_path, "a.csv", CSV)
    run(monkeypatch, [path], True, mapping=MappingSpec(key_field="id"), on_error="skip")
    assert (calls["csv_split_columns"] > 0) == cut


@fast_only
@pytest.mark.parametrize("block", [7, 150, 1 << 20])
def test_full_queue_loses_and_repeats_nothing(tmp_path, monkeypatch, block):
    monkeypatch.setattr(inputs, "BLOCK_BYTES", block)
    paths = [_write(tmp_path, "a.jsonl", JSONL), _write(tmp_path, "b.csv", CSV)]
    opts = {"mapping": MappingSpec(key_field="user"), "on_error": "skip"}
    fast = run(monkeypatch, paths[:1], True, fake=QueueFull, **opts)
    assert fast == run(monkeypatch, paths[:1], False, **opts)
    opts["mapping"] = MappingSpec(key_field="id", timestamp_field="ts", header_fields=(("n", "name"),))
    fast = run(monkeypatch, paths[1:], True, fake=QueueFull, **opts)
    assert fast == run(monkeypatch, paths[1:], False, **opts)


@fast_only
def test_unkeyed_records_go_to_one_partition_a_block(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "BLOCK_BYTES", 150)
    monkeypatch.setattr(Capture, "produce", _recording_partitions(Capture.produce))
    path = _write(tmp_path, "a.jsonl", b"".join(b'{"i":%d}\n' % i for i in range(300)))
    txns, summary = run(monkeypatch, [path], True, records_per_txn=120)
    counts = {p.partition: p.records for p in summary.partitions}
    assert sum(counts.values()) == summary.records == 300 and len(counts) == PARTITIONS
    assert counts == dict(Counter(_SEEN))  # the summary counts what was produced where


_SEEN: list = []


def _recording_partitions(produce):
    _SEEN.clear()

    def wrapper(self, topic, value=None, key=None, partition=-1, *args, **kw):
        if topic == "t":
            _SEEN.append(partition)
        return produce(self, topic, value, key, partition, *args, **kw)

    return wrapper


def test_keyed_records_carry_the_java_partition(tmp_path, monkeypatch):
    """Not only equal to the general path: each key's partition is the Java client's, and a
    record whose key maps elsewhere would show here (the fake trusts explicit partitions)."""
    path = _write(tmp_path, "a.jsonl", b"".join(b'{"user":"u%d"}\n' % i for i in range(500)))
    txns, summary = run(monkeypatch, [path], True, mapping=MappingSpec(key_field="user"))
    rows = [r for t in txns for r in t if r[0] == "t"]
    assert len(rows) == 500
    for _, key, _, part, _, _ in rows:
        assert part == (java_murmur2(key) & 0x7FFFFFFF) % PARTITIONS
    assert len({r[3] for r in rows}) == PARTITIONS


def test_bad_line_fails_with_file_and_line(tmp_path, monkeypatch):
    path = _write(tmp_path, "a.jsonl", b'{"user":"a"}\n\n{"user":"b"}\n{"nouser":1}\n')
    with pytest.raises(InputError, match=r"a\.jsonl:4: missing key field 'user'"):
        run(monkeypatch, [path], True, mapping=MappingSpec(key_field="user"))
    path = _write(tmp_path, "a.csv", b"id,v\n1,a\n2,b,c\n")
    with pytest.raises(InputError, match=r"a\.csv:3: expected 2 CSV columns, got 3"):
        run(monkeypatch, [path], True, mapping=MappingSpec(key_field="id"))


def test_value_as_json_equals_json_dumps():
    """--value-as-json in the fast path uses orjson.dumps; the general path json.dumps."""
    from kxtx.produce.fast.columns import _dumps
    from kxtx.produce.mapping import value_bytes

    texts = ["".join(map(chr, range(0, 128))), "é€😀\u2028\u2029\ufeff", 'a\\b"c', ""]
    row = dict(zip(map(str, range(len(texts))), texts))
    assert _dumps(row) == value_bytes(row)


@pytest.mark.parametrize(
    "props, spec, fmt, fast",
    [
        ({}, MappingSpec(key_field="a"), "jsonl", True),
        ({}, MappingSpec(key_field="a", header_fields=(("h", "x.y"),)), "jsonl", True),
        ({}, MappingSpec(key_field="a"), "csv", True),
        ({}, MappingSpec(), "jsonl", True),
        ({}, MappingSpec(), "lines", True),
        ({"partitioner": "murmur2_random"}, MappingSpec(key_field="a"), "jsonl", True),
        # a user's partitioner: only librdkafka knows it
        ({"partitioner": "consistent"}, MappingSpec(key_field="a"), "jsonl", False),
        ({"partitioner": "random"}, MappingSpec(), "jsonl", False),
        # a field that is also a path
        ({}, MappingSpec(key_field="a", header_fields=(("h", "a.b"),)), "jsonl", False),
        # constant headers on plain lines
        ({}, MappingSpec(headers=(("h", "v"),)), "lines", False),
    ],
)
def test_which_options_take_the_fast_path(tmp_path, props, spec, fmt, fast):
    from kxtx.produce.mapping import Mapper

    settings = Settings(props={"bootstrap.servers": "x:1", **props})
    src = inputs.detect(_write(tmp_path, "a." + {"lines": "txt"}.get(fmt, fmt), b""))
    assert (_FAST_FILE(settings, src, Mapper(spec, fmt)) is not None) == fast
    assert _FAST_FILE(settings, inputs.detect("-", "csv"), Mapper(spec, "csv")) is None or fmt != "csv"


@pytest.mark.parametrize(
    ("partitions", "parts", "i"),
    [
        (6, [0, 1, 0, 5, 5, 1], 0),
        (6, [3], 7),
        (6, [-1, 2, -1, 2, 4, -1], 10),  # odd lines (-1) are not counted here
        (6, [-1, -1], 0),
        (254, [253, 0, 253, 17, -1], 3),  # the largest count kept as bytes
        (255, [254, 0, 254, -1, 7], 0),  # and the smallest kept as a list
        (1000, [999, 0, 999, -1, 300, 300], 5),
    ],
)
def test_spread_counts_and_finds_each_partitions_first_and_last_record(partitions, parts, i):
    f = object.__new__(keyed.KeyedFile)
    f.partitions, f.counts = partitions, Counter()
    ends = f._spread(list(parts), i)
    want = Counter(p for p in parts if p >= 0)
    assert f.counts == want
    firsts = [i + parts.index(p) for p in want]
    lasts = [i + len(parts) - 1 - parts[::-1].index(p) for p in want]
    assert sorted(ends) == sorted(firsts + lasts)
