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
