"""A UDF's output table as the Kafka records to produce: one pure function for both modes.

Driver mode calls it on the driver for a batch, executors mode in each Spark task for its partition's
round (on a cluster this module is shipped by value: `kxtx.pipe.worker`). It produces nothing
itself: the caller hands each record to its own transactional producer, so what a record, an output
and a dead-letter record are is decided here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kxtx.pipe.worker import transform as tf

if TYPE_CHECKING:
    import pyarrow as pa

#: (topic, key, value, headers): a plain tuple, as cheap to build as a record can be (one per input
#: record and batch on the hot path)
Record = tuple[str, Any, Any, Any]


@dataclass(frozen=True)
class UdfFailure:
    """The first input record the UDF failed on, when there is no dead-letter topic."""

    topic: str
    partition: int
    offset: int
    text: str
    #: how many records of the batch (or round) failed
    count: int
    #: the UDF was not run on all of the batch (it stopped at the first failure): `count` is of
    #: those it was run on
    partial: bool = False


@dataclass(frozen=True)
class Outputs:
    """What a batch becomes: the records in produce order (outputs, then dead-letter records) and
    their counts; or, with `failure` set, nothing at all (the transaction is to be aborted)."""

    records: list[Record]
    produced: int = 0
    dlq: int = 0
    dropped: int = 0
    failure: UdfFailure | None = None


def to_records(msgs: list, out: pa.Table, topic: str, dlq: str | None, udf_name: str) -> Outputs:
    """The records for input messages `msgs` (confluent-kafka Messages, or anything with their
    accessors) given the UDF's output table `out` (`transform.output_schema()`): outputs go to
    `topic` unless they name their own, keep the input's key and headers unless they set their
    own; a record the UDF failed on goes to `dlq` as it came in, with headers saying why, or,
    without `dlq`, fails the batch."""
    values = tf.plain_output(out, len(msgs))
    if values is not None:  # the common case: one value per input record, nothing else set
        return plain_records(msgs, values.to_pylist(), topic)
    rows = out.to_pydict()
    errors = [(i, e) for i, e in zip(rows["idx"], rows["error"]) if e is not None]
    if errors and not dlq:
        i, text = errors[0]
        m = msgs[i]
        return Outputs([], failure=UdfFailure(m.topic(), m.partition(), m.offset(), text, len(errors)))
    records = []
    for idx, key_set, key, value, headers_set, headers, to, error in zip(
        rows["idx"],
        rows["key_set"],
        rows["key"],
        rows["value"],
        rows["headers_set"],
        rows["headers"],
        rows["topic"],
        rows["error"],
    ):
        if error is None:
            m = msgs[idx]
            hdrs = [(h["key"], h["value"]) for h in headers] if headers_set else m.headers()
            records.append((to or topic, key if key_set else m.key(), value, hdrs))
    produced = len(records)
    if dlq:
        records += [
            (dlq, msgs[i].key(), msgs[i].value(), dlq_headers(msgs[i], text, udf_name)) for i, text in errors
        ]
    return Outputs(records, produced, len(errors), len(msgs) - len(set(rows["idx"])))


def plain_records(msgs: list, values: list, topic: str) -> Outputs:
    """One output value per input message, in order: each to `topic` with its input's key and
    headers."""
    records = [(topic, m.key(), v, m.headers()) for m, v in zip(msgs, values)]
    return Outputs(records, produced=len(records))


def dlq_headers(m: Any, error: str, udf_name: str) -> list:  # a Message, or alike (see to_records)
    """The input's headers, then why and where from (what a dead-letter consumer reads)."""
    return list(m.headers() or []) + [
        ("kxtx.error", error.encode("utf-8")),
        ("kxtx.udf", udf_name.encode("utf-8")),
        ("kxtx.source.topic", m.topic().encode("utf-8")),
        ("kxtx.source.partition", str(m.partition()).encode()),
        ("kxtx.source.offset", str(m.offset()).encode()),
    ]
