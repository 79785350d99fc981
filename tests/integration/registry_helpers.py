"""Schemas, records and reads shared by the schema registry tests (tests/registry.py starts the
registry)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests import registry as regmod

AVRO_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "amount", "type": ["null", "double"], "default": None},
    ],
}
#: a compatible evolution of AVRO_V1 (a field with a default)
AVRO_V2 = {**AVRO_V1, "fields": [*AVRO_V1["fields"], {"name": "note", "type": "string", "default": ""}]}
JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "amount": {"type": ["number", "null"]},
    },
    "required": ["id", "name"],
}
PROTO = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string name = 2;
  double amount = 3;
}
"""
SCHEMAS = {
    "avro": ("order.avsc", json.dumps(AVRO_V1)),
    "jsonschema": ("order.json", json.dumps(JSON_SCHEMA)),
    "protobuf": ("order.proto", PROTO),
}


def docs(n: int, start: int = 0) -> list[dict]:
    return [{"id": i, "name": f"n{i}", "amount": i * 1.5} for i in range(start, start + n)]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def subjects(reg: regmod.Registry) -> list[str]:
    with urllib.request.urlopen(reg.url + "/subjects", timeout=10) as f:
        return json.loads(f.read()) or []


def schema_file(tmp_path: Path, fmt: str, text: str | None = None) -> Path:
    name, default = SCHEMAS[fmt]
    path = tmp_path / name
    path.write_text(text if text is not None else default)
    return path


def records_of(run_kxtx, topic: str, fmt: str, env: dict) -> list[dict]:
    r = run_kxtx(
        "dump", "partition", topic, "--records", "--value-format", fmt, "-o", "jsonl", env=env, expect=0
    )
    return [row for row in map(json.loads, r.stdout.splitlines()) if row["kind"] == "record"]


#: what the pipe tests' UDFs return (pipe_udfs.registry_*), in each format
OUT_AVRO = {
    "type": "record",
    "name": "Enriched",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "total", "type": "double"},
    ],
}
OUT_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Enriched",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "total": {"type": "number"}},
    "required": ["id", "name", "total"],
}
OUT_PROTO = """syntax = "proto3";
package shop;
message Enriched {
  int64 id = 1;
  string name = 2;
  double total = 3;
}
"""
OUT_SCHEMAS = {
    "avro": ("enriched.avsc", json.dumps(OUT_AVRO)),
    "jsonschema": ("enriched.json", json.dumps(OUT_JSON)),
    "protobuf": ("enriched.proto", OUT_PROTO),
}


def out_schema_file(tmp_path: Path, fmt: str, text: str | None = None) -> Path:
    name, default = OUT_SCHEMAS[fmt]
    path = tmp_path / name
    path.write_text(text if text is not None else default)
    return path


# --- the interop round trips (produce -> pipe -> dump, read back by confluent-kafka's serdes) ------
#: the input and output schemas above with a nullable `note`: a proto3 `optional` field in Protobuf,
#: whose presence (unset, set to "", set) must survive each step
NOTE = {"name": "note", "type": ["null", "string"], "default": None}
INTEROP_IN = {
    "avro": ("order.avsc", json.dumps({**AVRO_V1, "fields": [*AVRO_V1["fields"], NOTE]})),
    "jsonschema": (
        "order.json",
        json.dumps(
            {**JSON_SCHEMA, "properties": {**JSON_SCHEMA["properties"], "note": {"type": ["string", "null"]}}}
        ),
    ),
    "protobuf": ("order.proto", PROTO.replace("}\n", "  optional string note = 4;\n}\n")),
}
INTEROP_OUT = {
    "avro": ("enriched.avsc", json.dumps({**OUT_AVRO, "fields": [*OUT_AVRO["fields"], NOTE]})),
    "jsonschema": (
        "enriched.json",
        json.dumps(
            {**OUT_JSON, "properties": {**OUT_JSON["properties"], "note": {"type": ["string", "null"]}}}
        ),
    ),
    "protobuf": ("enriched.proto", OUT_PROTO.replace("}\n", "  optional string note = 4;\n}\n")),
}


def interop_docs(n: int) -> list[dict]:
    """docs(n) with a note: null (unset), "" (set, empty) or a text, by turns."""
    return [{**d, "note": [None, "", f"x{d['id']}"][d["id"] % 3]} for d in docs(n)]


def interop_enriched(rows: list[dict]) -> list[dict]:
    """What pipe_udfs.registry_interop makes of interop_docs."""
    return [
        {"id": d["id"], "name": d["name"].upper(), "total": d["amount"] * 2, "note": d["note"]} for d in rows
    ]


def interop_file(tmp_path: Path, schemas: dict, fmt: str) -> Path:
    name, text = schemas[fmt]
    path = tmp_path / name
    path.write_text(text)
    return path


def proto_class(text: str, message: int = 0):
    """The message class of a .proto text's message number `message`, built at run time as kxtx
    builds its own (protoc as a library, then message_factory), where a user has protoc's
    generated code."""
    import base64

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from kxtx.schemas.protocodec import compile_proto

    serialized, _ = compile_proto(text)
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"{fdp.package}.{fdp.message_type[message].name}")
    )


def confluent_read(url: str, fmt: str, topic: str, values: list[bytes], proto: str | None = None) -> list:
    """`values` as confluent-kafka's own deserializers read them: dicts for Avro and JSON Schema
    (the writer's schema fetched from the registry at `url` by the schema id in each value),
    messages of `proto`'s first message for Protobuf (from the generated class, as a user reads
    them; the registry is not asked)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": url, "timeout": 10})
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        de = AvroDeserializer(client)
    elif fmt == "jsonschema":
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        de = JSONDeserializer(None, schema_registry_client=client)
    else:
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

        assert proto is not None
        de = ProtobufDeserializer(proto_class(proto), {"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [de(v, ctx) for v in values]


def as_dict(message) -> dict:
    """A Protobuf message as dump shows it: every field, None where a field with presence is unset."""
    return {
        f.name: getattr(message, f.name) if not f.has_presence or message.HasField(f.name) else None
        for f in message.DESCRIPTOR.fields
    }


class Vanishing:
    """A loopback forwarder in front of `registry` that, at the first request whose bytes match
    `trigger` (a regex), stops the registry and closes every connection and its own listener, so
    the client finds nothing there any more: a registry gone at a chosen point of a run, exactly
    (a kill on a timer lands anywhere)."""

    def __init__(self, registry: regmod.Registry, trigger: bytes) -> None:
        import re
        import socket
        import threading

        self.registry, self.trigger = registry, re.compile(trigger)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.gone = threading.Event()
        self._sockets: list = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.server.accept()
            except OSError:  # closed: the registry is gone
                return
            upstream = socket.create_connection(("127.0.0.1", self.registry.port))
            with self._lock:
                self._sockets += [client, upstream]
            for args in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._forward, args=args, daemon=True).start()

    def _forward(self, src, dst, requests: bool) -> None:
        try:
            while data := src.recv(65536):
                if requests and self.trigger.search(data):
                    self.vanish()
                    return
                dst.sendall(data)
        except OSError:
            pass

    def vanish(self) -> None:
        import socket

        self.registry.stop()
        self.gone.set()
        with self._lock:
            for s in [self.server, *self._sockets]:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
