"""The Quix Streams side of bench_registry.py's `quix` case (issue 62): what a Quix user writes for
kxtx's Avro pipe. Run by the bench as a process of its own, with the interpreter given by
`--quix-python` (Quix Streams pins confluent-kafka below kxtx's, so it lives in a venv of its own).

    python bench/registry_quix.py IN OUT REGISTRY_URL OUT_SCHEMA_FILE BOOTSTRAP RECORDS GROUP

An Application with processing_guarantee="exactly-once" (its defaults otherwise: a checkpoint, one
transaction with the consumed offsets, every 5 s), the input read from the earliest offset with
Quix's AvroDeserializer and written with its AvroSerializer (both offloaded to confluent-kafka's
serdes through the registry), the same UDF as kxtx's (bench/registry_udfs.py), the input's keys
kept. `app.run(count=RECORDS)` stops after RECORDS outputs and commits its last checkpoint on the
way out, so the process ends when all RECORDS are committed, as `kxtx pipe --max-records` does.
"""

from __future__ import annotations

import json
import sys

from quixstreams import Application
from quixstreams.models.serializers.avro import AvroDeserializer, AvroSerializer
from quixstreams.models.serializers.schema_registry import SchemaRegistryClientConfig

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from registry_udfs import enrich


def main(src: str, out: str, url: str, schema_file: str, bootstrap: str, records: int, group: str) -> None:
    registry = SchemaRegistryClientConfig(url=url)
    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once",
        loglevel="WARNING",
    )
    source = app.topic(
        src,
        key_deserializer="bytes",
        value_deserializer=AvroDeserializer(schema_registry_client_config=registry),
    )
    sink = app.topic(
        out,
        key_serializer="bytes",
        value_serializer=AvroSerializer(
            json.loads(open(schema_file).read()), schema_registry_client_config=registry
        ),
    )
    app.dataframe(source).apply(enrich).to_topic(sink)
    app.run(count=records, collect=False)


if __name__ == "__main__":
    main(*sys.argv[1:6], int(sys.argv[6]), sys.argv[7])
