"""The pure parts of `dump partition`: range parsing and resolving, transaction fates, summaries."""

from __future__ import annotations

import pytest

from kxtx.dump.partition import (
    ABORTED,
    COMMITTED,
    OPEN,
    Batch,
    Bounds,
    Fates,
    parse_from,
    parse_target,
    parse_to,
    resolve,
    summarize,
)
from kxtx.errors import KxtxError, UsageError
from kxtx.records.batchrecords import BatchRecords, show
from kxtx.records.batchrecords import BatchRecords as Offsets


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("orders", ("orders", None)),
        ("orders:0", ("orders", [0])),
        ("orders:2,0,2", ("orders", [0, 2])),
        ("my.topic-1:3, 1", ("my.topic-1", [1, 3])),
    ],
)
def test_parse_target(text, expected):
    assert parse_target(text) == expected


@pytest.mark.parametrize("text", ["", ":0", "orders:", "orders:x", "orders:-1", "orders:1,,a"])
def test_parse_target_refuses(text):
    with pytest.raises(UsageError):
        parse_target(text)


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [
        (parse_from, "earliest", "earliest"),
        (parse_from, "EARLIEST", "earliest"),
        (parse_from, "0", 0),
        (parse_from, " 42 ", 42),
        (parse_from, "committed:My-Group", "committed:My-Group"),  # group names keep their case
        (parse_from, "COMMITTED:g:1", "committed:g:1"),
        (parse_from, "LSO-5", "lso-5"),
        (parse_to, "lso+0", "lso+0"),
        (parse_to, "lso", "lso"),
        (parse_to, "HW", "hw"),
        (parse_to, "7", 7),
    ],
)
def test_parse_bounds(parse, text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_from, "hw"),
        (parse_from, "-1"),
        (parse_from, "soon"),
        (parse_from, "committed:"),
        (parse_from, "lso-x"),
        (parse_to, "lso*2"),
        (parse_to, "committed:g"),
        (parse_to, "earliest"),
        (parse_to, "1.5"),
    ],
)
def test_parse_bounds_refuse(parse, text):
    with pytest.raises(UsageError):
        parse(text)


@pytest.mark.parametrize(
    ("start", "end", "log_start", "lso", "hw", "expected"),
    [
        ("earliest", "hw", 0, 10, 12, (0, 12)),
        ("earliest", "lso", 5, 10, 12, (5, 10)),
        (3, "hw", 5, 10, 12, (5, 12)),  # below the log start: from the log start
        (7, 9, 0, 10, 12, (7, 9)),
        (7, 50, 0, 10, 12, (7, 12)),  # nothing past the high watermark
        ("lso-3", "lso+1", 0, 10, 12, (7, 11)),  # --around-lso
        ("lso-30", "lso+30", 2, 10, 12, (2, 12)),  # --around-lso wider than the log
        ("lso", "hw", 0, 10, 12, (10, 12)),  # what the open transactions hold back
    ],
)
def test_resolve(start, end, log_start, lso, hw, expected):
    assert resolve(start, end, log_start, lso, hw) == expected


def _b(base: int, pid: int, n: int = 1, txn: bool = True, control: str | None = None) -> Batch:
    b = Batch(0, base, base + n - 1, n, pid, 0, 0, txn, control is not None, 0, 0, "none", 100)
    b.control_type = control
    b.in_range = b.committed_view = n
    return b


# (batches in offset order as (base, pid, count, transactional, control), shown flags default True)
# -> fates of the data batches, in order
FATE_CASES = [
    pytest.param([(0, 1, 2, True, None), (2, 1, 1, True, "COMMIT")], [COMMITTED], id="commit"),
    pytest.param([(0, 1, 2, True, None), (2, 1, 1, True, "ABORT")], [ABORTED], id="abort"),
    pytest.param([(0, 1, 2, True, None)], [OPEN], id="no marker: open"),
    pytest.param(
        [(0, 1, 1, True, None), (1, 2, 1, True, None), (2, 1, 1, True, "COMMIT"), (3, 2, 1, True, "ABORT")],
        [COMMITTED, ABORTED],
        id="interleaved producers",
    ),
    pytest.param(
        [(0, 1, 1, True, None), (1, 1, 1, True, "ABORT"), (2, 1, 1, True, None), (3, 1, 1, True, "COMMIT")],
        [ABORTED, COMMITTED],
        id="one producer, two transactions",
    ),
    pytest.param(
        [(0, 3, 4, False, None), (4, 1, 1, True, None), (5, 3, 1, False, None), (6, 1, 1, True, "COMMIT")],
        [None, COMMITTED, None],
        id="idempotent batches have no fate",
    ),
    pytest.param(
        [(0, 1, 1, True, None), (1, 2, 1, True, "COMMIT")],
        [OPEN],
        id="another producer's marker decides nothing",
    ),
]


@pytest.mark.parametrize(("spec", "fates"), FATE_CASES)
def test_fates(spec, fates):
    f = Fates()
    batches = [_b(base, pid, n, txn, control) for base, pid, n, txn, control in spec]
    for b in batches:
        f.add(b, shown=True)
    f.finish()
    assert [b.fate for b in batches if not b.control] == fates


def test_fates_count_only_transactions_with_data_in_range():
    f = Fates()
    before, marker = _b(0, 1), _b(1, 1, control="COMMIT")
    f.add(before, shown=False)  # read ahead of nothing: a batch outside the range
    f.add(marker, shown=True)
    assert f.finish() == [] and before.fate is None


def test_undecided_until_the_marker():
    f = Fates()
    f.add(_b(0, 1), shown=True)
    assert f.undecided
    f.add(_b(1, 1, control="ABORT"), shown=False)  # a marker found past --to still decides
    assert not f.undecided and [t.fate for t in f.finish()] == [ABORTED]


def test_summary_counts():
    spec = [
        (0, 1, 3, True, None),  # committed
        (3, 2, 2, True, None),  # aborted
        (5, 1, 1, True, "COMMIT"),
        (6, 2, 1, True, "ABORT"),
        (7, 9, 4, False, None),  # idempotent
        (11, -1, 2, False, None),  # plain
        (13, 4, 2, True, None),  # open: holds the LSO at 13
    ]
    batches = [_b(base, pid, n, txn, control) for base, pid, n, txn, control in spec]
    batches[-1].committed_view = 0  # at/after the LSO
    f = Fates()
    for b in batches:
        f.add(b, shown=True)
    s = summarize(0, batches, f.finish(), Bounds(0, 15, 0, 13, 15))
    got = (s.batches, s.records, s.markers, s.committed_records, s.aborted_records)
    assert got == (7, 13, 2, 3, 2)
    assert (s.open_records, s.non_transactional_records, s.read_committed) == (2, 6, 9)
    assert {p.producer_id: (p.committed, p.aborted, p.open, p.records) for p in s.producers} == {
        1: (1, 0, 0, 3),
        2: (0, 1, 0, 2),
        4: (0, 0, 1, 2),
        9: (0, 0, 0, 4),
    }


class _Raw:
    """A record batch as kafka-python shows it: header fields, records iterable once."""

    def __init__(self, offsets: list[int], base: int | None = None, last: int | None = None):
        self.base_offset = offsets[0] if base is None else base
        self.last_offset = offsets[-1] if last is None else last
        self.records_count = len(offsets)
        fields = {"key": None, "value": None, "timestamp": 0, "headers": []}
        self._records = iter([type("R", (), {"offset": o, **fields})() for o in offsets])

    def __iter__(self):
        return self._records


@pytest.mark.parametrize(
    ("offsets", "lo", "hi", "expected"),
    [
        ([5, 6, 7], 0, 10, 3),  # inside
        ([5, 6, 7], 8, 10, 0),  # after
        ([5, 6, 7], 0, 5, 0),  # before (end exclusive)
        ([5, 6, 7], 6, 10, 2),  # contiguous, across the start: from the header
        ([5, 6, 7], 0, 7, 2),  # contiguous, across the end
        ([5, 9], 6, 10, 1),  # compacted across the start: read
        ([5, 7, 9], 0, 8, 2),  # compacted across the end: read
    ],
)
def test_records_of_a_batch_in_range(offsets, lo, hi, expected):
    o = Offsets(_Raw(offsets))
    assert o.count(lo, hi) == expected
    assert o.count(lo, hi) == expected  # asked twice: the records are read once


@pytest.mark.parametrize(
    ("data", "how", "expected"),
    [
        (None, "string", None),
        (b"caf\xc3\xa9", "string", "café"),
        (b"a\xffb", "string", "a\\xffb"),  # undecodable bytes stay visible
        (b'{"a": [1]}', "json", {"a": [1]}),
        (b"12", "json", 12),
        (b"not json", "json", "not json"),
        (b"\xff", "json", "\\xff"),
        (b"\x00\xff", "raw", "AP8="),
        (b"", "string", ""),
    ],
)
def test_show(data, how, expected):
    assert show(data, how) == expected


@pytest.mark.parametrize(
    ("compression", "error", "message"),
    [
        (
            3,
            "UnsupportedCodecError",
            "t[0] batch at offset 40 is lz4-compressed: reading its records needs the Python package lz4",
        ),
        (
            2,
            "UnsupportedCodecError",
            "t[0] batch at offset 40 is snappy-compressed: reading its records needs the Python package python-snappy",
        ),
        (
            4,
            "UnsupportedCodecError",
            "t[0] batch at offset 40 is zstd-compressed: reading its records needs the Python package zstandard",
        ),
        (
            1,
            "CorruptRecordError",
            "t[0] batch at offset 40: its records cannot be read (gzip): [Error 2] CorruptRecordError: bad",
        ),
    ],
)
def test_a_batch_that_cannot_be_read_is_named(compression, error, message):
    import kafka.errors

    class Raw:
        compression_type, base_offset = compression, 40

        def __iter__(self):
            raise getattr(kafka.errors, error)("bad")

    with pytest.raises(KxtxError) as exc:
        BatchRecords(Raw(), "t[0]").read()
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("value", "width", "expected"),
    [
        (None, 5, None),
        ("abcdef", 5, "abcd…"),
        ("abcde", 5, "abcde"),
        ("abcdef", 0, "abcdef"),  # 0: never cut
        ({"a": 1}, 0, '{"a":1}'),
        ("a\nb", 10, "a\\nb"),  # one line per row
        ("\x00\x00\x00", 0, "\\x00\\x00\\x00"),  # not a blank cell
        ("a\tb\r\x1b[31mc\x7f", 0, "a\\tb\\r\\x1b[31mc\\x7f"),  # no escape reaches the terminal
        ("é€", 0, "é€"),
    ],
)
def test_table_cells_are_cut(value, width, expected):
    from kxtx.cli.dump_partition import _cut

    assert _cut(value, width) == expected


def _built(codec: int, records: list[tuple]):
    """A record batch as a producer writes it (kafka-python's builder), read back by its reader."""
    from kafka.record import MemoryRecords
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, codec, True, 7, 0, 0, 2**20)
    for offset, ts, key, value, headers in records:
        b.append(offset, ts, key, value, headers)
    return MemoryRecords(bytes(b.build())).next_batch()


_RECORDS = [
    (0, 1_700_000_000_000, b"k", b"v", []),
    (1, 1_700_000_000_001, None, None, []),  # null key, tombstone
    (2, 1_699_999_999_000, b"", b"x" * 300, [("h", b"1"), ("empty", b""), ("null", None)]),  # 2-byte lengths
    (200, 1_700_000_100_000, b"k" * 70, b"y" * 20000, []),  # a gap (compaction), 3-byte varints
    (201, 1_700_000_000_000, "ü".encode(), b"\xff", [("ü", b"\x00")]),
]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_decoded_as_kafka_python_decodes_them(codec):
    """kxtx's own record decoder against kafka-python's reader, on batches of every codec."""
    from kxtx.records.batchrecords import _decode

    ours = _decode(_built(codec, _RECORDS))
    theirs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in _built(codec, _RECORDS)]
    assert ours == theirs == [(o, ts, k, v, h) for o, ts, k, v, h in _RECORDS]
