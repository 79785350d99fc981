"""`kxtx produce` hands its fast paths' records to librdkafka in batches (kxtx.client.fast.batch): against
a real broker, the same input gives the same records, in the same partitions and order, and the
same summary, as record by record (KXTX_PRODUCE_BATCH=0), through full local queues, several
transactions, bad and blank lines, and a topic the producer has not seen before."""

from __future__ import annotations

import json

import pytest

from kxtx import fast
from tests.integration.kafka_io import read
from tests.integration.produce_helpers import summary

# fast and general paths compared: CI runs them again with KXTX_FAST=0 (kxtx.fast)
pytestmark = [pytest.mark.kafka, pytest.mark.fastpath]

#: a local queue far smaller than a batch, so that batches stop at a full queue and go on
SMALL_QUEUE = ("-X", "queue.buffering.max.messages=300")


def _lines(n: int) -> bytes:
    docs = [json.dumps({"id": f"k{i % 41}", "n": i, "pad": "x" * (i % 97)}).encode() for i in range(n)]
    # a bad line and a blank one inside, where the batches are
    return b"\n".join(docs[:1500] + [b'{"bad', b""] + docs[1500:]) + b"\n"


def _csv(n: int) -> bytes:
    return b"id,n\n" + b"".join(b"k%d,%d\n" % (i % 41, i) for i in range(n))


@pytest.mark.parametrize(
    "name, partitions, data, args",
    [
        ("plain", 1, _lines(4000), ()),
        ("plain, 3 partitions", 3, _lines(4000), ()),
        ("keyed JSON", 6, _lines(4000), ("-k", "id")),
        ("keyed CSV", 6, _csv(4000), ("-k", "id")),
    ],
)
def test_batches_write_what_record_by_record_writes(kafka, run_kxtx, tmp_path, name, partitions, data, args):
    path = tmp_path / ("in.csv" if "CSV" in name else "in.jsonl")
    path.write_bytes(data)
    got = {}
    for batches in ("1", "0"):
        topic = kafka.create_topic(partitions=partitions)
        p = run_kxtx(
            "produce",
            str(path),
            "-t",
            topic,
            *args,
            "-n",
            "700",
            "--on-error",
            "skip",
            *SMALL_QUEUE,
            "--transactional-id",
            f"batch-{batches}-{topic}",
            env={"KXTX_PRODUCE_BATCH": batches},
            expect=0,
        )
        result = summary(p)
        for k in ("topic", "transactional_id", "elapsed_s", "records_per_s"):
            result.pop(k)
        records = read(kafka.bootstrap, topic)
        # unkeyed records go to one partition a block, from a random one: compare the sequence
        per_partition = sorted(
            ([(r[1], r[2]) for r in records if r[0] == q] for q in range(partitions)), key=len
        )
        # read() keeps each partition's order, not an order across partitions: a stable sort
        keyed = sorted(((r[0], r[1], r[2]) for r in records), key=lambda r: r[0]) if args else per_partition
        got[batches] = (result, keyed, sorted(r[2] for r in records))
    assert got["1"][2] == got["0"][2]  # the same records
    if args or partitions == 1 or fast.enabled("produce"):
        # in the same partitions (keyed) and order; unkeyed to several partitions only where the
        # fast path sends each block to one (KXTX_FAST=0: librdkafka's sticky partitioner, whose
        # choice depends on timing)
        assert got["1"][1] == got["0"][1]
    if not args:  # unkeyed: which partition a block went to is random, so are the counts per partition
        for result, _, _ in got.values():
            result.pop("partitions")
    assert got["1"][0] == got["0"][0]
    assert got["1"][0]["records"] == 4000 and got["1"][0]["transactions"] == 6
