"""kxtx/pipe/outputs.py `to_records`: a UDF's output table as the records both modes produce."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

pa = pytest.importorskip("pyarrow")

from kxtx.pipe import transform as tf  # noqa: E402
from kxtx.pipe.outputs import Outputs, UdfFailure, to_records  # noqa: E402


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
