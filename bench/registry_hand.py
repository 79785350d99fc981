"""The hand-written reference loops of bench_registry.py: what a user writes with confluent-kafka's
own serdes instead of kxtx. Run by the bench as a process of its own (its CPU and RSS are measured
like kxtx's).

    python bench/registry_hand.py produce FILE TOPIC REGISTRY_URL SCHEMA_FILE BOOTSTRAP
    python bench/registry_hand.py pipe IN OUT REGISTRY_URL OUT_SCHEMA_FILE BOOTSTRAP RECORDS

produce: each JSON line json.loads'ed, AvroSerializer'd and produced, 50,000 records per transaction
(kxtx produce's default). pipe: consume (read_committed) -> AvroDeserializer -> the UDF ->
AvroSerializer -> produce, the consumed offsets sent in the same transaction (KIP-447), one
transaction per 10,000-record consume() batch, until RECORDS records were moved.
"""

from __future__ import annotations

import json
import sys
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from registry_udfs import enrich

PER_TXN = 50_000


def producer(bootstrap: str) -> Producer:
    p = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"hand-{uuid.uuid4().hex[:8]}", "linger.ms": 20}
    )
    p.init_transactions(30)
    return p


def produce(path: str, topic: str, url: str, schema_file: str, bootstrap: str) -> None:
    sr = SchemaRegistryClient({"url": url, "timeout": 30})
    ser = AvroSerializer(
        sr, open(schema_file).read(), conf={"auto.register.schemas": False, "use.latest.version": True}
    )
    ctx = SerializationContext(topic, MessageField.VALUE)
    p = producer(bootstrap)
    n = 0
    p.begin_transaction()
    with open(path, "rb") as f:
        for line in f:
            value = ser(json.loads(line), ctx)
            while True:
                try:
                    p.produce(topic, value)
                    break
                except BufferError:
                    p.poll(0.05)
            n += 1
            if n % PER_TXN == 0:
                p.commit_transaction(60)
                p.begin_transaction()
    p.commit_transaction(60)


def pipe(src: str, out: str, url: str, schema_file: str, bootstrap: str, records: int) -> None:
    sr = SchemaRegistryClient({"url": url, "timeout": 30})
    de = AvroDeserializer(sr)
    ser = AvroSerializer(
        sr, open(schema_file).read(), conf={"auto.register.schemas": False, "use.latest.version": True}
    )
    in_ctx, out_ctx = (
        SerializationContext(src, MessageField.VALUE),
        SerializationContext(out, MessageField.VALUE),
    )
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"hand-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([src])
    p = producer(bootstrap)
    moved = 0
    while moved < records:
        msgs = c.consume(10_000, 1.0)
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            if m.error():
                raise SystemExit(str(m.error()))
            value = ser(enrich(de(m.value(), in_ctx)), out_ctx)
            while True:
                try:
                    p.produce(out, value, m.key())
                    break
                except BufferError:
                    p.poll(0.05)
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(60)
        moved += len(msgs)
    c.close()


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        produce(*sys.argv[2:7])
    else:
        pipe(*sys.argv[2:7], int(sys.argv[7]))
