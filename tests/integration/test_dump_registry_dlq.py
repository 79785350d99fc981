"""`dump partition --value-format avro` on a dead-letter topic, through the suite's real schema
registry (tests/registry.py): the records there are another topic's, under that topic's schema id
(issue 62). One produce, two dumps."""

from __future__ import annotations

import json

import pytest

from tests.integration.kafka_io import read_committed
from tests.integration.pipe_helpers import produce
from tests.integration.registry_helpers import docs, records_of, schema_file, write_jsonl

pytestmark = [pytest.mark.kafka]


def test_a_dlq_names_no_subject_of_its_own_and_a_cut_body_says_where_it_ends(
    kafka, run_kxtx, schema_registry, tmp_path
):
    orders, dlq = kafka.create_topic(), kafka.create_topic()
    env = {"KXTX_SCHEMA_REGISTRY_URL": schema_registry.url}
    data = write_jsonl(tmp_path / "orders.jsonl", docs(2))
    r = run_kxtx(
        "produce", str(data), "-t", orders, "--value-schema", str(schema_file(tmp_path, "avro")),
        "--register", "-o", "json", env=env,
    )  # fmt: skip
    (written,) = json.loads(r.stdout)["schemas"]
    whole = [rec.value for rec in read_committed(kafka.bootstrap, orders)]
    produce(kafka.bootstrap, dlq, [whole[0], whole[1][:-3]])  # as a DLQ holds them; one cut short

    ok, cut = records_of(run_kxtx, dlq, "avro", env)
    assert ok["value"] == docs(1)[0]
    assert (ok["value_schema_id"], ok["value_subject"]) == (written["schema_id"], None), ok
    assert ok["value_schema_subjects"] == [f"{orders}-value"], ok
    assert cut["value_error"] == (
        "not an Avro record of this schema: the value ends before the record does "
        f"({len(whole[1]) - 3 - 5} bytes after the 5-byte header)"
    ), cut
    assert (cut["value_schema_id"], cut["value_subject"]) == (written["schema_id"], None), cut
    (mine,) = records_of(run_kxtx, orders, "avro", env)[:1]
    assert (mine["value_subject"], "value_schema_subjects" in mine) == (f"{orders}-value", False), mine
