"""`kxtx pipe` through a real Schema Registry: input decoded for the UDF, results encoded with the
output's schema, schema evolution in the input, results that do not fit, and a registry that stops
answering, with exactly once checked by counting the output."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from kxtx.client.registry import RegistryError, RegistryUnavailable
from kxtx.exitcodes import ExitCode
from kxtx.pipe.core import UdfFailed
from tests.integration.kafka_io import read_committed
from tests.integration.pipe_helpers import UDFS, committed_offsets, run_in_process
from tests.integration.registry_helpers import (
    AVRO_V2,
    INTEROP_IN,
    INTEROP_OUT,
    OUT_PROTO,
    as_dict,
    confluent_read,
    docs,
    interop_docs,
    interop_enriched,
    interop_file,
    out_schema_file,
    proto_class,
    records_of,
    schema_file,
    write_jsonl,
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def produce(run_kxtx, reg, topic, tmp_path, fmt, rows, schema=None, name="orders.jsonl", *more):
    data = write_jsonl(tmp_path / name, rows)
    schema = schema or schema_file(tmp_path, fmt)
    run_kxtx(
        "produce",
        str(data),
        "-t",
        topic,
        "-k",
        "id",
        "--value-schema",
        str(schema),
        "--register",
        *more,
        env={"KXTX_SCHEMA_REGISTRY_URL": reg.url},
        expect=0,
    )


def enriched(rows: list[dict]) -> list[dict]:
    return [{"id": d["id"], "name": d["name"].upper(), "total": d["amount"] * 2} for d in rows]


@pytest.mark.parametrize("fmt", ["avro", "jsonschema", "protobuf"])
def test_each_format_round_trips_produce_pipe_dump_on_each_registry(
    kafka, spark_session, each_registry, run_kxtx, tmp_path, fmt
):
    """produce -> pipe -> dump against AxonOps and against Apicurio: the UDF gets decoded records
    and its results are encoded with the output's schema; what kxtx wrote, before the pipe and
    after, reads back with confluent-kafka's own deserializers, and dump shows the same. A nullable
    `note` (proto3 `optional`) keeps which records left it unset, set it to "" or to a text:
    `HasField` for Confluent's Protobuf reader, null for Avro, JSON Schema and dump."""
    if fmt == "protobuf":
        pytest.importorskip("grpc_tools")
    url, env = each_registry.url, {"KXTX_SCHEMA_REGISTRY_URL": each_registry.url}
    src, out = kafka.create_topic(partitions=2), kafka.create_topic(partitions=2)
    rows = interop_docs(60)
    produce(run_kxtx, each_registry, src, tmp_path, fmt, rows, interop_file(tmp_path, INTEROP_IN, fmt))
    summary = run_in_process(
        kafka,
        spark_session,
        [src],
        out,
        "registry_interop",
        registry=url,
        value_format=fmt,
        out_schema=str(interop_file(tmp_path, INTEROP_OUT, fmt)),
        register=True,
    )
    assert (summary.records_in, summary.records_out) == (60, 60)
    expected = interop_enriched(rows)

    def by_id(values):
        return sorted(values, key=lambda d: d["id"])

    for topic, schemas, want in [(src, INTEROP_IN, rows), (out, INTEROP_OUT, expected)]:
        records = read_committed(kafka.bootstrap, topic)
        got = confluent_read(url, fmt, topic, [r.value for r in records], schemas[fmt][1])
        if fmt == "protobuf":
            set_ = {m.id for m in got if m.HasField("note")}
            assert set_ == {d["id"] for d in want if d["note"] is not None}, topic
            got = [as_dict(m) for m in got]
        assert by_id(got) == want, topic
        assert {r.key for r in records} == {str(i).encode() for i in range(60)}  # the input's keys

    dumped = records_of(run_kxtx, out, fmt, env)
    assert by_id(r["value"] for r in dumped) == expected
    assert {r["value_subject"] for r in dumped} == {f"{out}-value"}
    assert {r["key"] for r in dumped} == {str(i) for i in range(60)}


def test_a_new_compatible_version_mid_stream_reaches_the_udf_as_written(
    kafka, spark_session, schema_registry, run_kxtx, tmp_path
):
    """Executors mode. v1 is under the topic's subject, which the driver fetches before the run;
    v2 under its record name's subject, whose schema id the workers fetch themselves."""
    src, out = kafka.create_topic(partitions=1), kafka.create_topic()
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(30))
    v2 = tmp_path / "v2.avsc"
    v2.write_text(json.dumps({**AVRO_V2, "namespace": f"shop.{src.replace('-', '_')}"}))
    produce(
        run_kxtx,
        schema_registry,
        src,
        tmp_path,
        "avro",
        [{**d, "note": "v2"} for d in docs(30, 100)],
        v2,
        "v2.jsonl",
        "--subject-strategy",
        "record",
    )
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(30, 200), name="again.jsonl")
    summary = run_in_process(
        kafka,
        spark_session,
        [src],
        out,
        "registry_shape",
        registry=schema_registry.url,
        mode="executors",
        value_format="avro",
        out_schema=str(out_schema_file(tmp_path, "avro")),
        register=True,
    )
    assert summary.records_out == 90
    rows = records_of(run_kxtx, out, "avro", {"KXTX_SCHEMA_REGISTRY_URL": schema_registry.url})
    shapes = {r["value"]["id"]: (r["value"]["total"], r["value"]["name"]) for r in rows}
    assert len(rows) == len(shapes) == 90  # exactly once
    assert all(shapes[i] == (3.0, f"n{i}") for i in [*range(30), *range(200, 230)])
    assert all(shapes[i] == (4.0, "v2") for i in range(100, 130))


def test_a_result_that_does_not_fit_commits_nothing_or_goes_to_the_dlq(
    kafka, spark_session, schema_registry, run_kxtx, tmp_path
):
    src, out, dlq = kafka.create_topic(), kafka.create_topic(), kafka.create_topic()
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(20))
    out_schema = str(out_schema_file(tmp_path, "avro"))
    group = "g-registry-misfit"
    common = dict(
        registry=schema_registry.url, value_format="avro", out_schema=out_schema, register=True, group=group
    )
    with pytest.raises(UdfFailed) as failed:
        run_in_process(kafka, spark_session, [src], out, "registry_bad_total", **common)
    assert "does not fit the output schema: field total: expected double, got 'lots'" in str(failed.value)
    assert read_committed(kafka.bootstrap, out) == []
    assert committed_offsets(kafka.bootstrap, group, src, 1) == [-1001]  # nothing committed

    summary = run_in_process(kafka, spark_session, [src], out, "registry_bad_total", dlq=dlq, **common)
    assert (summary.records_out, summary.dlq) == (19, 1)
    (bad,) = read_committed(kafka.bootstrap, dlq)
    headers = dict(bad.headers)
    assert b"field total: expected double" in headers["kxtx.error"], headers
    assert len(read_committed(kafka.bootstrap, out)) == 19


def test_an_incompatible_output_schema_is_refused_before_the_run(
    kafka, spark_session, schema_registry, run_kxtx, tmp_path
):
    src, out = kafka.create_topic(), kafka.create_topic()
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(5))
    first = out_schema_file(tmp_path, "avro")
    common = dict(registry=schema_registry.url, value_format="avro", register=True, group="g-incompatible")
    run_in_process(kafka, spark_session, [src], out, "registry_enrich", out_schema=str(first), **common)
    incompatible = tmp_path / "incompatible.avsc"
    incompatible.write_text(first.read_text().replace('"type": "double"', '"type": "string"'))
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(5, 50), name="more.jsonl")
    with pytest.raises(RegistryError) as refused:
        run_in_process(
            kafka, spark_session, [src], out, "registry_enrich", out_schema=str(incompatible), **common
        )
    assert refused.value.status == 409, refused.value
    assert f"subject {out}-value" in str(refused.value)
    assert len(read_committed(kafka.bootstrap, out)) == 5  # the second run consumed nothing


def test_a_schema_refused_while_the_jvm_launches_is_the_error_and_no_jvm_is_left(
    kafka, schema_registry, run_kxtx, tmp_path
):
    """`kxtx pipe` launches Spark's JVM while it looks the output schema up (kxtx.pipe.core
    prepare): a refusal is still the run's error and exit code, and the JVM it launched is ended
    before kxtx exits (its command line carries the marker setting)."""
    src, out = kafka.create_topic(), kafka.create_topic()
    marker = f"kxtx-test-{uuid.uuid4().hex[:12]}"
    r = run_kxtx(
        "pipe",
        "--in",
        src,
        "--out",
        out,
        "--udf",
        f"{UDFS}:registry_enrich",
        "--value-format",
        "avro",
        "--out-schema",
        str(out_schema_file(tmp_path, "avro")),
        "--schema-registry",
        schema_registry.url,
        "--until-idle",
        "2",
        "--spark-conf",
        f"spark.kxtx.test.marker={marker}",
        expect=1,
        timeout=180,
    )
    assert f"not registered under subject {out}-value" in r.stderr, r.stderr
    assert "could not start Spark" not in r.stderr
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.returncode == 1, f"a JVM outlived kxtx: {left.stdout}"


def test_a_registry_that_stops_answering_is_exit_75_and_the_rerun_continues_exactly_once(
    kafka, spark_session, schema_registry, run_kxtx, tmp_path
):
    """Driver mode: the driver fetches the schema ids of a batch before it ships it to Spark."""
    src, out = kafka.create_topic(), kafka.create_topic()
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(40))
    common = dict(
        registry=schema_registry.url, value_format="avro", group="g-registry-down", registry_timeout=1.0
    )
    common["failover"] = 5.0  # each batch waits ~4 s for the frozen registry: given up at the second
    assert run_in_process(kafka, spark_session, [src], out, "registry_enrich", **common).records_out == 40
    v2 = tmp_path / "v2.avsc"
    v2.write_text(json.dumps(AVRO_V2))  # a schema id this pipe has not seen: it must ask the registry
    produce(
        run_kxtx,
        schema_registry,
        src,
        tmp_path,
        "avro",
        [{**d, "note": "x"} for d in docs(40, 100)],
        v2,
        "v2.jsonl",
    )
    with schema_registry.paused(), pytest.raises(RegistryUnavailable) as down:
        run_in_process(kafka, spark_session, [src], out, "registry_enrich", **common)
    assert down.value.exit_code == ExitCode.RETRY
    assert f"schema registry {schema_registry.url} did not answer" in str(down.value)
    assert "aborted transactions in " in str(down.value)  # ridden out to KXTX_FAILOVER_TIMEOUT
    assert len(read_committed(kafka.bootstrap, out)) == 40
    summary = run_in_process(kafka, spark_session, [src], out, "registry_enrich", **common)
    assert summary.records_out == 40
    got = sorted(json.loads(r.value)["id"] for r in read_committed(kafka.bootstrap, out))
    assert got == [*range(40), *range(100, 140)]  # every record once: none lost, none twice


def test_a_udf_declares_its_output_schema(kafka, spark_session, schema_registry, run_kxtx, tmp_path):
    src, out = kafka.create_topic(), kafka.create_topic()
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(10))
    summary = run_in_process(
        kafka,
        spark_session,
        [src],
        out,
        "registry_declared",
        registry=schema_registry.url,
        value_format="avro",
        register=True,
    )
    assert summary.records_out == 10
    rows = records_of(run_kxtx, out, "avro", {"KXTX_SCHEMA_REGISTRY_URL": schema_registry.url})
    assert sorted((r["value"] for r in rows), key=lambda d: d["id"]) == enriched(docs(10))
    assert {r["value_subject"] for r in rows} == {f"{out}-value"}


def test_the_driver_fetches_the_input_subjects_schemas_for_the_workers(
    kafka, schema_registry, run_kxtx, tmp_path
):
    """Before a run, the newest versions of each input's TOPIC-value: the workers then need no
    registry client for them. A subject the registry does not have is left to the workers."""
    from kxtx.pipe.runconfig import PipeConfig
    from kxtx.pipe.schemas import serdes

    src, other = kafka.create_topic(), kafka.create_topic()
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(3))
    v2 = tmp_path / "v2.avsc"
    v2.write_text(json.dumps(AVRO_V2))
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(3, 10), v2, "v2.jsonl")
    cfg = PipeConfig(inputs=[src, other], out="elsewhere", group="g", udf="m:f", value_format="avro")
    settings = kafka.settings()
    settings.registry = {"schema.registry.url": schema_registry.url}
    reader, _ = serdes(cfg.resolve(), settings)
    ids = {v: version_id(schema_registry.url, f"{src}-value", v) for v in (1, 2)}
    assert set(reader.known) == set(ids.values())
    assert "note" in reader.known[ids[2]].text and "note" not in reader.known[ids[1]].text


def version_id(url: str, subject: str, version: int) -> int:
    import urllib.request

    with urllib.request.urlopen(f"{url}/subjects/{subject}/versions/{version}", timeout=10) as r:
        return json.load(r)["id"]


PRESENCE_PROTO = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string name = 2;
  optional string note = 3;
  oneof pay {
    string card = 4;
    int64 cash = 5;
  }
}
"""


def test_a_protobuf_pass_through_keeps_which_fields_with_presence_were_set(
    kafka, spark_session, schema_registry, run_kxtx, tmp_path
):
    """An unset proto3 `optional` or oneof member stays unset through the UDF (HasField is False
    for Confluent's own deserializer) and shows as null in dump; a set one, empty string included,
    stays set."""
    pytest.importorskip("grpc_tools")
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    src, out = kafka.create_topic(), kafka.create_topic()
    schema = tmp_path / "order.proto"
    schema.write_text(PRESENCE_PROTO)
    rows = [
        {"id": 0, "name": "unset"},
        {"id": 1, "name": "set", "note": "x", "card": "visa"},
        {"id": 2, "name": "empty", "note": "", "cash": 0},
    ]
    produce(run_kxtx, schema_registry, src, tmp_path, "protobuf", rows, schema)
    summary = run_in_process(
        kafka,
        spark_session,
        [src],
        out,
        "identity",
        registry=schema_registry.url,
        value_format="protobuf",
        out_schema=str(schema),
        register=True,
    )
    assert summary.records_out == 3
    de = ProtobufDeserializer(proto_class(PRESENCE_PROTO), {"use.deprecated.format": False})
    got = {m.id: m for m in (de(r.value, None) for r in read_committed(kafka.bootstrap, out))}
    presence = {i: [f for f in ("note", "card", "cash") if m.HasField(f)] for i, m in got.items()}
    assert presence == {0: [], 1: ["note", "card"], 2: ["note", "cash"]}
    assert got[1].note == "x" and got[2].note == "" and got[2].WhichOneof("pay") == "cash"

    dumped = records_of(run_kxtx, out, "protobuf", {"KXTX_SCHEMA_REGISTRY_URL": schema_registry.url})
    unset = next(r["value"] for r in dumped if r["value"]["id"] == 0)
    assert unset == {"id": 0, "name": "unset", "note": None, "card": None, "cash": None}


def test_out_schema_names_the_message_of_a_proto_file_of_two(
    kafka, spark_session, schema_registry, run_kxtx, tmp_path
):
    """`--out-schema FILE.proto:pkg.Message`: the workers encode that message, not the file's first."""
    src, out = kafka.create_topic(), kafka.create_topic()
    produce(run_kxtx, schema_registry, src, tmp_path, "avro", docs(5))
    two = tmp_path / "two.proto"
    two.write_text('syntax = "proto3";\npackage shop;\nmessage First { bool x = 9; }\n' + OUT_PROTO_BODY)
    summary = run_in_process(
        kafka,
        spark_session,
        [src],
        out,
        "registry_enrich",
        registry=schema_registry.url,
        value_format="avro",
        out_schema=f"{two}:shop.Enriched",
        register=True,
    )
    assert summary.records_out == 5
    rows = records_of(run_kxtx, out, "protobuf", {"KXTX_SCHEMA_REGISTRY_URL": schema_registry.url})
    assert sorted((r["value"] for r in rows), key=lambda d: d["id"]) == enriched(docs(5))


#: OUT_PROTO's message, for a file that declares another message before it
OUT_PROTO_BODY = OUT_PROTO[OUT_PROTO.index("message Enriched") :]
