"""`kxtx dump partition` on a compacted topic, after the log cleaner ran: batches whose offsets have
gaps (older values of a key removed), aborted transactions' records removed. Truth: Kafka's
DumpLogSegments on the cleaned segment files, and what a confluent-kafka read_committed consumer
reads."""

from __future__ import annotations

import time
import uuid

import pytest

from tests import cli
from tests.integration.kafka_io import read, read_committed, wait_until
from tests.integration.test_dump_partition import _dump, _kafka_dump_log, _kafkas, _ours

pytestmark = pytest.mark.versioned

KEYS, ROUNDS, ABORTED_ROUNDS = 8, 6, (2, 4)


@pytest.fixture(scope="module")
def compacted(kafka):
    """Rounds of 2 * KEYS + 1 records, one transaction each (rounds 2 and 4 aborted), idempotent writes of
    the same keys between them; each round in its own segment (segment.ms), then a last record so
    the last round's segment is no longer the active one; then wait for the cleaner (it wakes every
    log.cleaner.backoff.ms, 15 s by default) until the log holds fewer records than written."""
    from confluent_kafka import Producer

    topic = kafka.create_topic(
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
            "delete.retention.ms": "86400000",  # markers stay: the log is stable once cleaned
        }
    )
    conf = {"bootstrap.servers": kafka.bootstrap, "linger.ms": 50, "compression.type": "lz4"}
    txn = Producer({**conf, "transactional.id": f"dpc-{uuid.uuid4().hex[:8]}"})
    txn.init_transactions(30)
    plain = Producer({**conf, "enable.idempotence": True})
    for r in range(ROUNDS):
        txn.begin_transaction()
        for k in range(KEYS):
            txn.produce(topic, key=b"k%d" % k, value=b"txn round %d key %d" % (r, k), partition=0)
        # a key of this round only, in the middle of its batch: what compaction leaves of the batch
        txn.produce(topic, key=b"round%d" % r, value=b"txn round %d only" % r, partition=0)
        for k in range(KEYS):
            txn.produce(topic, key=b"k%d" % k, value=b"txn round %d again %d" % (r, k), partition=0)
        txn.flush(30)
        (txn.abort_transaction if r in ABORTED_ROUNDS else txn.commit_transaction)(30)
        for k in range(0, KEYS, 2):
            plain.produce(topic, key=b"k%d" % k, value=b"plain round %d key %d" % (r, k), partition=0)
        plain.flush(30)
        time.sleep(0.3)  # the next append rolls the segment
    plain.produce(topic, key=b"last", value=b"rolls the segment", partition=0)
    plain.flush(30)
    written = ROUNDS * (2 * KEYS + 1 + KEYS // 2) + 1

    def cleaned():
        s = _summary(kafka, topic)
        return s if s["records"] < written else None

    last = [wait_until(cleaned, 180, "the log cleaner to compact the topic", every=2)]

    # The cleaner swaps cleaned segments in groups and may take another pass: read until two reads
    # in a row agree (comparing with the first read instead timed out whenever a pass followed it).
    def settled():
        now = _summary(kafka, topic)
        same, last[0] = now == last[0], now
        return same

    wait_until(settled, 120, "a stable cleaned log", every=1)
    return topic


def _summary(kafka, topic: str) -> dict:
    return cli.run("dump", "partition", topic, "-o", "json", "-b", kafka.bootstrap, timeout=120).json[
        "summary"
    ][0]


def test_compacted_batches_agree_with_kafka_dump_log_segments(run_kxtx, kafka, compacted):
    doc = _dump(run_kxtx, compacted)
    ours, (s,) = doc["batches"], doc["summary"]
    gaps = [b for b in ours if not b["control"] and b["count"] < b["last_offset"] - b["base_offset"] + 1]
    assert gaps, "no batch lost records to compaction"
    assert [_ours(b) for b in ours] == [_kafkas(b) for b in _kafka_dump_log(kafka, compacted)]
    assert s["records"] == sum(b["count"] for b in ours if not b["control"])
    assert s["markers"] == sum(b["count"] for b in ours if b["control"])


def test_compacted_read_committed_count_equals_a_consumer(run_kxtx, kafka, compacted):
    doc = _dump(run_kxtx, compacted, "--records")
    (s,) = doc["summary"]
    theirs = read_committed(kafka.bootstrap, compacted)
    assert s["read_committed"] == len(theirs) and s["lso"] == s["hw"]
    ours = [r for b in doc["batches"] for r in b.get("records", [])]
    assert len(ours) == s["records"]
    visible = sorted((r["key"], r["value"]) for r in ours if r["read_committed"])
    assert visible == sorted((x.key.decode(), x.value.decode()) for x in theirs)


def test_compacted_range_inside_batches_with_gaps(run_kxtx, kafka, compacted):
    """Bounds inside batches whose offsets have gaps: only the records still in the range count."""
    batches = _dump(run_kxtx, compacted)["batches"]
    gaps = [b for b in batches if not b["control"] and b["count"] < b["last_offset"] - b["base_offset"] + 1]
    first, end = gaps[0]["base_offset"] + 1, gaps[-1]["last_offset"]
    doc = _dump(run_kxtx, compacted, "--from", str(first), "--to", str(end), "--records")
    (s,) = doc["summary"]
    everything = read(kafka.bootstrap, compacted, committed=False, offsets=True)
    committed = {(x.key, x.value) for x in read_committed(kafka.bootstrap, compacted)}
    in_range = [(o, r) for o, r in everything if first <= o < end]
    assert [r["offset"] for b in doc["batches"] for r in b.get("records", [])] == [o for o, _ in in_range]
    assert s["records"] == len(in_range)
    # keys are unique after compaction except across transactions' fates: a committed record is
    # read by read_committed exactly when a consumer reads its (key, value)
    assert s["read_committed"] == sum(1 for _o, r in in_range if (r.key, r.value) in committed)
