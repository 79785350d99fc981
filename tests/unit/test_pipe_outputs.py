"""kxtx/pipe/worker/outputs.py `to_records`: a UDF's output table as the records both modes produce."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

pa = pytest.importorskip("pyarrow")

from kxtx.pipe.worker import transform as tf  # noqa: E402
from kxtx.pipe.worker.outputs import Outputs, UdfFailure, plain_records, to_records  # noqa: E402


@dataclass
class Msg:
    """The accessors of a confluent-kafka Message that to_records reads."""

    v: bytes
    k: bytes | None = None
    h: list | None = None
    o: int = 0

    def value(self):
        return self.v

    def key(self):
        return self.k

    def headers(self):
        return self.h

    def topic(self):
        return "in"

    def partition(self):
        return 3

    def offset(self):
        return self.o


def row(idx, value=None, key=None, headers=None, topic=None, error=None):
    """One output row; key/headers given (not None) means the UDF set them."""
    hdrs = None if headers is None else [{"key": k, "value": v} for k, v in headers]
    return (idx, key is not None, key, value, headers is not None, hdrs, topic, error)


def table(rows):
    cols = list(zip(*rows)) if rows else [[] for _ in range(8)]
    return pa.Table.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(cols, tf.output_schema())], schema=tf.output_schema()
    )


MSGS = [Msg(b"a", b"ka", [("h", b"1")], 10), Msg(b"b", None, None, 11)]
DLQ_B = [
    ("kxtx.error", b"boom"),
    ("kxtx.udf", b"f"),
    ("kxtx.source.topic", b"in"),
    ("kxtx.source.partition", b"3"),
    ("kxtx.source.offset", b"11"),
]


@pytest.mark.parametrize(
    "rows, dlq, want",
    [
        # one value per record, nothing else set: the input's key and headers, the default topic
        (
            [row(0, b"A"), row(1, b"B")],
            None,
            Outputs([("out", b"ka", b"A", [("h", b"1")]), ("out", None, b"B", None)], 2),
        ),
        # the UDF sets key, headers, topic (an empty key is a key, not the input's)
        (
            [row(0, b"A", key=b"k2", headers=[("x", b"y")], topic="other"), row(1, b"B", key=b"")],
            None,
            Outputs([("other", b"k2", b"A", [("x", b"y")]), ("out", b"", b"B", None)], 2),
        ),
        # fan-out and drop: record 0 twice, record 1 not at all
        (
            [row(0, b"A1"), row(0, b"A2")],
            None,
            Outputs([("out", b"ka", b"A1", [("h", b"1")]), ("out", b"ka", b"A2", [("h", b"1")])], 2, 0, 1),
        ),
        # a failed record with a DLQ: outputs first, then the input as it came, with why
        (
            [row(0, b"A"), row(1, error="boom")],
            "dead",
            Outputs([("out", b"ka", b"A", [("h", b"1")]), ("dead", None, b"b", DLQ_B)], 1, 1, 0),
        ),
        # the DLQ record keeps the input's own headers first
        (
            [row(0, error="boom"), row(1, b"B")],
            "dead",
            Outputs(
                [
                    ("out", None, b"B", None),
                    ("dead", b"ka", b"a", [("h", b"1")] + DLQ_B[:4] + [("kxtx.source.offset", b"10")]),
                ],
                1,
                1,
                0,
            ),
        ),
        # without a DLQ a failure produces nothing and names the first failed record
        (
            [row(0, b"A"), row(1, error="boom"), row(1, error="again")],
            None,
            Outputs([], failure=UdfFailure("in", 3, 11, "boom", 2)),
        ),
        # everything dropped
        ([], None, Outputs([], 0, 0, 2)),
    ],
)
def test_to_records(rows, dlq, want):
    assert to_records(MSGS, table(rows), "out", dlq, "f") == want


def _drop_second_chunk(d):
    return None if d.get("i") in (2, 3) else d


def _spec_once(v):
    return {"value": v, "key": b"k"} if v == b"3" else v


def _fails_on_2(v):
    if v == b"2":
        raise ValueError("two")
    return v


def _pandas_upper(series):
    return series.str.upper()


#: (UDF, kind, --value-format, input values): map_values against the Arrow batches, each chunk size
MAP_CASES = {
    "plain JSON dicts": (lambda d: {**d, "n": 1}, "row", "json", [b'{"i":%d}' % i for i in range(5)]),
    "a drop in the second chunk only": (
        _drop_second_chunk,
        "row",
        "json",
        [b'{"i":%d}' % i for i in range(5)],
    ),
    "a record spec": (_spec_once, "row", "raw", [b"%d" % i for i in range(5)]),
    "a UDF error": (_fails_on_2, "row", "raw", [b"%d" % i for i in range(5)]),
    "str results": (lambda s: s.upper(), "row", "string", [b"a", "é".encode(), b"c"]),
    "bad UTF-8 and a tombstone": (lambda s: s, "row", "string", [b"ok", b"\xff", None, b"x"]),
    "bad JSON": (lambda d: d, "row", "json", [b"1", b"{bad", b"[2]"]),
    "a list of outputs": (lambda v: [v, v], "row", "raw", [b"a", b"b", b"c"]),
    "a lone surrogate result": (lambda s: "\ud800" if s == "b" else s, "row", "string", [b"a", b"b"]),
    "pandas": (_pandas_upper, "pandas", "string", [b"a", b"b", b"c"]),
}


@pytest.mark.parametrize("chunk", [1, 2, 3, 100])
@pytest.mark.parametrize("case", MAP_CASES.values(), ids=MAP_CASES.keys())
@pytest.mark.parametrize("dlq", [None, "dlq"])
def test_map_values_gives_the_records_the_arrow_batches_give(case, chunk, dlq):
    func, kind, fmt, values = case
    msgs = [Msg(v, b"k%d" % i, [("h", b"%d" % i)] if i % 2 else None, 100 + i) for i, v in enumerate(values)]
    mapper = tf.make_mapper(func, kind, fmt, False)
    table_in = tf.input_table(msgs, False)
    out = pa.Table.from_batches(list(mapper(iter(table_in.to_batches(chunk)))), schema=tf.output_schema())
    want = to_records(msgs, out, "out", dlq, "f")
    got = mapper.map_values([m.value() for m in msgs], chunk)
    got = plain_records(msgs, got, "out") if type(got) is list else to_records(msgs, got, "out", dlq, "f")
    assert got == want


def test_map_values_calls_the_udf_once_per_record():
    calls = []

    def udf(d):
        calls.append(d["i"])
        return None if d["i"] == 3 else d  # a drop: that chunk goes through the contract

    tf.make_mapper(udf, "row", "json", False).map_values([b'{"i":%d}' % i for i in range(7)], 3)
    assert calls == list(range(7))


@pytest.mark.parametrize(
    "fails_at, chunk, calls, mapped",
    [
        (4, 3, 6, 6),  # the failing record's chunk is run to its end, no chunk after it
        (0, 3, 3, 3),
        (7, 3, 9, 9),
        (9, 3, 10, None),  # in the last chunk: nothing left to spare, the outputs as usual
        (None, 3, 10, None),  # no failure: every chunk
    ],
)
def test_map_values_fail_fast_stops_after_the_failing_chunk(fails_at, chunk, calls, mapped):
    """Without a dead-letter topic the batch fails whatever the rest gives: no chunk after the
    one with a failing record is given to the UDF (issue 42 item 6); the failure is the same."""
    seen = []

    def udf(v):
        seen.append(v)
        if v == b"%d" % (fails_at if fails_at is not None else -1):
            raise ValueError("poison")
        return v

    values = [b"%d" % i for i in range(10)]
    msgs = [Msg(v, None, None, 100 + i) for i, v in enumerate(values)]
    mapper = tf.make_mapper(udf, "row", "raw", False)
    if mapped is None:
        out = mapper.map_values(values, chunk, fail_fast=True)
        got = (
            plain_records(msgs, out, "out") if type(out) is list else to_records(msgs, out, "out", None, "f")
        )
    else:
        with pytest.raises(tf.FailedEarly) as early:
            mapper.map_values(values, chunk, fail_fast=True)
        assert early.value.mapped == mapped
        got = to_records(msgs[:mapped], early.value.outputs, "out", None, "f")
    assert len(seen) == calls
    if fails_at is None:
        assert got.failure is None and got.produced == 10
    else:
        assert (got.failure.offset, got.failure.count) == (100 + fails_at, 1)
        assert "ValueError: poison" in got.failure.text


def test_map_values_stops_before_a_chunk_when_told():
    seen, asked = [], []

    def stopped() -> bool:
        asked.append(len(seen))
        return len(seen) >= 4

    mapper = tf.make_mapper(lambda v: seen.append(v) or v, "row", "raw", False)
    with pytest.raises(tf.Stopped):
        mapper.map_values([b"%d" % i for i in range(10)], 2, stopped=stopped)
    assert len(seen) == 4 and asked == [2, 4]  # asked before each chunk but the first


def test_a_partial_udf_failure_says_which_records_it_counted():
    from kxtx.pipe.core import udf_failed

    whole = udf_failed("m:f", "raw", UdfFailure("t", 1, 50, "ValueError: x", 3), "round", "")
    part = udf_failed("m:f", "raw", UdfFailure("t", 1, 50, "ValueError: x", 3, partial=True), "round", "")
    assert "(and 2 more records of this round)" in str(whole)
    assert "(and 2 more of the records of this round it ran on)" in str(part)
