"""Avro, JSON Schema and Protobuf (`protocodec`) codecs of one schema: Python objects <-> payload
bytes (the part after the wire format's header). No registry here: `serde` finds the schemas.

Each codec raises `Mismatch` for an object that does not fit its schema, with a message naming the
field (`field id: expected long, got 'x'`), and for payload bytes it cannot read. Avro goes through
fastavro directly (confluent-kafka's AvroSerializer adds its own framing and lookups per call, and
is slower: bench/README, "Schema Registry").
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

# module-level: Spark's workers get this module by value, where kxtx itself may not be importable
# (kxtx.pipe.worker.SHIPPED_FOR_SCHEMAS)
from kxtx.fast import enabled as fast_enabled  # the function: shipped by value (kxtx.fast.gcpause)
from kxtx.schemas import framing
from kxtx.schemas.fast import avrogen
from kxtx.schemas.mismatch import Mismatch
from kxtx.schemas.protocodec import ProtobufCodec

AVRO, JSON, PROTOBUF = "AVRO", "JSON", ProtobufCodec.kind
#: --value-format words -> the registry's schemaType
FORMATS = {"avro": AVRO, "jsonschema": JSON, "protobuf": PROTOBUF}
#: every --value-format that decodes through a registry ("auto": whatever each record's schema is)
REGISTRY_FORMATS = (*FORMATS, "auto")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --- Avro ------------------------------------------------------------------------------------------
class AvroCodec:
    kind = AVRO

    def __init__(self, schema: str, references: dict[str, str] | None = None) -> None:
        import fastavro

        self._fastavro = fastavro
        named: dict[str, Any] = {}
        try:
            for ref in (references or {}).values():
                fastavro.parse_schema(json.loads(ref), named)
            self.schema = fastavro.parse_schema(json.loads(schema), named)
            self._named = named
        except (ValueError, TypeError, KeyError) as exc:
            raise Mismatch(f"not a valid Avro schema: {exc}") from None
        self.name: str | None = self.schema.get("name") if isinstance(self.schema, dict) else None
        self._out = io.BytesIO()
        #: (header, sync marker) of the in-memory container files of `decode_many`
        self._container: tuple[bytes, bytes] | None = None
        self._write = fastavro.schemaless_writer
        self._read = fastavro.schemaless_reader
        #: batches of flat records a column at a time (None: fastavro's writer for every batch)
        #: a flat record read by one generated function (None: fastavro's block reader)
        # (the switch point of the Avro fast path, kxtx.schemas.fast; KXTX_FAST=0: fastavro alone)
        quick = fast_enabled("avro")
        self._columns = avrogen.compile_encoder(self.schema) if quick else None
        self._decode_one = avrogen.compile_decoder(self.schema) if quick else None

    def encode(self, obj: Any) -> bytes:
        out = self._out
        out.seek(0)
        out.truncate()
        try:
            self._write(out, self.schema, obj)
        except Exception:  # noqa: BLE001 - fastavro's are TypeError, ValueError, KeyError, ...
            raise Mismatch(self._why(obj)) from None
        return out.getvalue()

    def _why(self, obj: Any) -> str:
        """Which field of `obj` does not fit, as a dotted path from the top record."""
        from fastavro.schema import expand_schema

        try:  # named types inlined: each field's schema then stands alone
            expanded = expand_schema(self.schema)
        except Exception:  # noqa: BLE001 - a type from a reference: say less
            return f"does not fit the Avro schema {self.name or ''}".rstrip()
        path, value, schema = self._locate(obj, expanded, [])
        where = f"field {'.'.join(path)}: " if path else ""
        if value is _MISSING:
            return f"{where}missing (expected {_avro_type(schema)})"
        return f"{where}expected {_avro_type(schema)}, got {_short(value)}"

    def _locate(self, obj: Any, schema: Any, path: list[str]) -> tuple[list[str], Any, Any]:
        """(the path, the value, its schema) of the innermost value that does not fit: a record's
        field, an array's item (`tags[0]`), a map's value (`counts['b']`)."""
        from fastavro.validation import validate

        if isinstance(schema, list):  # a union: the one branch of the value's shape, if any
            shaped = [s for s in schema if isinstance(obj, _SHAPES.get(_avro_kind(s) or "", ()))]
            if len(shaped) != 1:
                return path, obj, schema
            found = self._locate(obj, shaped[0], path)
            return found if found[0] != path else (path, obj, schema)
        kind = _avro_kind(schema)
        if kind == "record" and isinstance(obj, dict):
            for f in schema["fields"]:
                value = obj.get(f["name"], f.get("default", _MISSING))
                if value is _MISSING:
                    return [*path, f["name"]], _MISSING, f["type"]
                if not validate(value, f["type"], raise_errors=False):
                    return self._locate(value, f["type"], [*path, f["name"]])
        items: Any = None
        if kind == "array" and isinstance(obj, list):
            items, inner = enumerate(obj), schema["items"]
        elif kind == "map" and isinstance(obj, dict):
            items, inner = ((repr(k), v) for k, v in obj.items()), schema["values"]
        for at, value in items or ():
            if not validate(value, inner, raise_errors=False):
                where = [*path[:-1], f"{path[-1] if path else ''}[{at}]"]
                return self._locate(value, inner, where)
        return path, obj, schema

    def encode_many(self, objs: list, head: bytes = b"") -> list[bytes]:
        """`head` + each object's encoding: a column at a time for a flat record schema
        (kxtx.schemas.fast.avrogen), else written one after another into one buffer and cut apart
        (either faster than `encode` per object: bench/README, "Schema Registry"). Mismatch from
        the first object that does not fit, without saying which: `encode` each to find it."""
        if self._columns is not None:
            try:
                return self._columns.encode_many(objs, head)
            except avrogen.Slow:  # a value of another type, a missing field...: fastavro decides
                pass
        out, write, schema = io.BytesIO(), self._write, self.schema
        ends = [0]
        tell, end = out.tell, ends.append
        try:
            for obj in objs:
                out.write(head)
                write(out, schema, obj)
                end(tell())
        except Exception:  # noqa: BLE001 - fastavro's are TypeError, ValueError, KeyError, ...
            raise Mismatch("a record does not fit the Avro schema") from None
        data = out.getvalue()
        return [data[ends[i] : ends[i + 1]] for i in range(len(objs))]

    def decode_many(self, payloads: list) -> list:
        """Each payload decoded: by the generated decoder of a flat record schema
        (kxtx.schemas.fast.avrogen), else in one pass of fastavro's block reader: the payloads become
        the one block of an in-memory Avro container file (its datums are the same bytes), which
        fastavro reads in C (either faster than `decode` per payload: bench/README). Mismatch
        when any does not decode, without saying which: `decode` each to find it."""
        import os

        if not payloads:
            return []
        if self._decode_one is not None:
            try:
                return list(map(self._decode_one, payloads))
            except Exception:  # noqa: BLE001 - not one record each, or a value fastavro reads otherwise
                pass
        if self._container is None:
            buf, sync = io.BytesIO(), os.urandom(16)
            self._fastavro.writer(buf, self.schema, [], codec="null", sync_marker=sync)
            self._container = (buf.getvalue(), sync)
        header, sync = self._container
        body = b"".join(payloads)
        varint = framing.varint
        data = b"".join((header, varint(len(payloads)), varint(len(body)), body, sync))
        try:
            out = list(self._fastavro.reader(io.BytesIO(data)))
        except Exception:  # noqa: BLE001 - a payload that is not a datum of this schema
            raise Mismatch("a record is not an Avro record of this schema") from None
        if len(out) != len(payloads):
            raise Mismatch("a record is not an Avro record of this schema")
        return out

    def decode(self, payload: bytes) -> Any:
        if self._decode_one is not None:  # a flat record: the generated decoder, as decode_many
            try:
                return self._decode_one(payload)
            except Exception:  # noqa: BLE001 - fastavro below reads it or says why not
                pass
        buf = io.BytesIO(payload)
        try:
            return self._read(buf, self.schema, None)
        except Exception as exc:  # noqa: BLE001 - truncated or foreign bytes
            # fastavro's EOFError often has no message, and a number cut short is an IndexError
            if isinstance(exc, EOFError) or (isinstance(exc, IndexError) and buf.tell() >= len(payload)):
                why = (
                    "the value ends before the record does "
                    f"({len(payload)} byte{'' if len(payload) == 1 else 's'} after the "
                    f"{framing.HEADER}-byte header)"
                )
            else:
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise Mismatch(f"not an Avro record of this schema: {why}") from None

    def fields(self) -> dict[str, Any] | None:
        """Top-level field name -> its Avro type, for a record schema (CSV columns are text)."""
        if isinstance(self.schema, dict) and self.schema.get("type") == "record":
            return {f["name"]: f["type"] for f in self.schema["fields"]}
        return None


_MISSING = object()
#: the Python values of Avro's complex types, to find a union's branch by a value's shape
_SHAPES: dict[str, Any] = {"record": dict, "map": dict, "array": list}


def _avro_kind(t: Any) -> str | None:
    return t.get("type") if isinstance(t, dict) else None


def _avro_type(t: Any) -> str:
    if isinstance(t, list):
        return " or ".join(_avro_type(x) for x in t)
    if isinstance(t, dict):
        return str(t.get("logicalType") or t.get("name") or t.get("type"))
    return str(t).rpartition(".")[2]


# --- JSON Schema -----------------------------------------------------------------------------------
class JsonSchemaCodec:
    kind = JSON

    def __init__(self, schema: str, references: dict[str, str] | None = None) -> None:
        from jsonschema import validators
        from jsonschema.exceptions import SchemaError

        try:
            doc = json.loads(schema)
            cls = validators.validator_for(doc)
            cls.check_schema(doc)
        except (ValueError, SchemaError) as exc:
            raise Mismatch(f"not a valid JSON Schema: {str(exc).splitlines()[0]}") from None
        registry = None
        if references:
            from referencing import Registry, Resource

            registry = Registry().with_resources(
                (name, Resource.from_contents(json.loads(text))) for name, text in references.items()
            )
        self.schema = doc
        self.name = doc.get("title") if isinstance(doc, dict) else None
        self._validator = cls(doc, registry=registry) if registry is not None else cls(doc)
        try:
            import orjson

            self._dumps: Callable[[Any], bytes] = orjson.dumps
            self._loads: Callable[[bytes], Any] = orjson.loads
        except ImportError:  # pragma: no cover
            self._dumps = lambda o: json.dumps(o, separators=(",", ":")).encode()
            self._loads = json.loads

    def check(self, obj: Any) -> None:
        error = next(self._validator.iter_errors(obj), None)
        if error is not None:
            from jsonschema.exceptions import best_match

            error = best_match(self._validator.iter_errors(obj)) or error
            path = ".".join(str(p) for p in error.absolute_path) or "(document)"
            raise Mismatch(f"field {path}: {error.message}")

    def encode(self, obj: Any) -> bytes:
        self.check(obj)
        return self._dumps(obj)

    def decode(self, payload: bytes) -> Any:
        try:
            return self._loads(payload)
        except ValueError as exc:
            raise Mismatch(f"not a JSON document: {exc}") from None

    def fields(self) -> dict[str, Any] | None:
        props = self.schema.get("properties") if isinstance(self.schema, dict) else None
        return (
            {k: v.get("type") for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict)
            else None
        )


def codec(
    kind: str, schema: str, references: dict[str, str] | None = None, message: str | None = None
) -> Any:
    """The codec of a registry schema: `kind` is its schemaType (AVRO when the registry gives none)."""
    kind = (kind or AVRO).upper()
    if kind == AVRO:
        return AvroCodec(schema, references)
    if kind == JSON:
        return JsonSchemaCodec(schema, references)
    if kind == PROTOBUF:
        return ProtobufCodec(schema, references, message)
    raise Mismatch(f"schema type {kind!r} is not one kxtx reads (AVRO, JSON, PROTOBUF)")


# --- CSV columns to typed values -------------------------------------------------------------------
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def _convert(text: str, t: Any) -> Any:  # noqa: C901 - one branch per scalar type
    if isinstance(t, list):  # an Avro union, or a JSON Schema type list
        if text == "" and ("null" in t):
            return None
        last: Exception | None = None
        for one in t:
            if one == "null":
                continue
            try:
                return _convert(text, one)
            except (ValueError, TypeError) as exc:
                last = exc
        raise last or ValueError("no type")
    if isinstance(t, dict):
        t = t.get("type")
        return _convert(text, t)
    if t in ("int", "long", "integer", 3, 4, 5, 6, 13, 15, 16, 17, 18):  # protobuf int kinds too
        return int(text)
    if t in ("float", "double", "number", 1, 2):
        return float(text)
    if t in ("boolean", 8):
        low = text.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError("not a boolean")
    if t == "null":
        if text == "":
            return None
        raise ValueError("not empty")
    return text


def typed_scalar(codec: Any, text: Any) -> Any:
    """A CSV column as the type of a primitive schema (Avro "long", JSON Schema {"type": "integer"});
    text as it is for any other schema."""
    if not isinstance(text, str):
        return text
    t: Any = None
    if codec.kind == AVRO and not (isinstance(codec.schema, dict) and codec.schema.get("type") == "record"):
        t = codec.schema
    elif codec.kind == JSON and isinstance(codec.schema, dict):
        t = codec.schema.get("type")
    if t is None or t == "object":
        return text
    try:
        return _convert(text, t)
    except (ValueError, TypeError):
        raise Mismatch(f"expected {_type_name(t)}, got {_short(text)}") from None


def _type_name(t: Any) -> str:
    if isinstance(t, list):
        return " or ".join(_type_name(x) for x in t)
    if isinstance(t, dict):
        return str(t.get("type"))
    return str(t)


def typed_row(fields: dict[str, Any] | None, row: dict[str, str]) -> dict[str, Any]:
    """A CSV row (column -> text) with each column the schema names converted to its type."""
    if not fields:
        return row
    out: dict[str, Any] = {}
    for name, text in row.items():
        t = fields.get(name)
        if t is None:
            out[name] = text
            continue
        try:
            out[name] = _convert(text, t)
        except (ValueError, TypeError):
            raise Mismatch(f"field {name}: expected {_type_name(t)}, got {_short(text)}") from None
    return out


# --- for output --------------------------------------------------------------------------------------
def jsonable(obj: Any) -> Any:
    """A decoded record as JSON can show it: bytes as base64, decimals and UUIDs as text, times
    as ISO-8601."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if isinstance(obj, (decimal.Decimal, uuid.UUID)):
        return str(obj)
    if isinstance(obj, (_dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    return obj
