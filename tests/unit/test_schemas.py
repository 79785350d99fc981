"""The schema registry's pure parts, without a registry: the wire format, the codecs, CSV typing,
schema choices, subject names, and the registry's settings."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
import sys

import pytest

from kxtx.client import registry
from kxtx.client.settings import resolve
from kxtx.errors import ConfigError, UsageError
from kxtx.schemas import codecs, framing, protocodec
from kxtx.schemas.codecs import Mismatch
from kxtx.schemas.serde import parse_choice, subject_name

pytest.importorskip("fastavro")


# --- the wire format ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("schema_id", "payload", "framed"),
    [
        (1, b"", b"\x00\x00\x00\x00\x01"),
        (258, b"ab", b"\x00\x00\x00\x01\x02ab"),
        (2**31 - 1, b"\x00", b"\x00\x7f\xff\xff\xff\x00"),
    ],
)
def test_frame_and_schema_id(schema_id, payload, framed):
    assert framing.frame(schema_id, payload) == framed
    assert framing.schema_id(framed) == schema_id


@pytest.mark.parametrize(
    ("data", "why"),
    [(b"", "0 bytes: too short"), (b"\x00\x00\x01", "3 bytes: too short"), (b'{"a": 1}', "first byte 123")],
)
def test_bytes_that_are_not_framed(data, why):
    with pytest.raises(framing.NotFramed, match=why):
        framing.schema_id(data)


@pytest.mark.parametrize(
    ("n", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x02"),
        (-1, b"\x01"),
        (63, b"\x7e"),
        (64, b"\x80\x01"),
        (-65, b"\x81\x01"),
        (300, b"\xd8\x04"),
    ],
)
def test_zigzag_varints(n, encoded):
    assert framing.varint(n) == encoded
    assert framing.read_varint(encoded + b"rest", 0) == (n, len(encoded))


@pytest.mark.parametrize(
    ("indexes", "encoded"),
    [([0], b"\x00"), ([1], b"\x02\x02"), ([0, 2], b"\x04\x00\x04"), ([3, 1, 0], b"\x06\x06\x02\x00")],
)
def test_protobuf_message_indexes(indexes, encoded):
    assert framing.message_indexes(indexes) == encoded
    assert framing.read_message_indexes(encoded + b"msg", 0) == (indexes, len(encoded))


@pytest.mark.parametrize(
    ("data", "why"),
    [(b"\x80", "runs past the end"), (b"\x02\x01", "negative index"), (b"\xfe\x01", "not a plausible")],
)
def test_bad_message_indexes(data, why):
    with pytest.raises(framing.NotFramed, match=why):
        framing.read_message_indexes(data, 0)


# --- Avro ----------------------------------------------------------------------------------------
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "customer",
            "type": {"type": "record", "name": "Customer", "fields": [{"name": "name", "type": "string"}]},
        },
        {"name": "amount", "type": ["null", "double"], "default": None},
        {"name": "paid", "type": "boolean", "default": False},
    ],
}


def test_avro_round_trip_and_bytes_as_avro_writes_them():
    c = codecs.AvroCodec(json.dumps(ORDER))
    obj = {"id": 7, "customer": {"name": "x"}, "amount": 1.5, "paid": True}
    data = c.encode(obj)
    assert data[:4] == b"\x0e\x02x\x02"  # long 7 zig-zag, string "x", union branch 1
    assert c.decode(data) == obj
    assert c.name == "shop.Order"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"id": "x", "customer": {"name": "a"}}, "field id: expected long, got 'x'"),
        ({"id": 1, "customer": {"name": 5}}, "field customer.name: expected string, got 5"),
        ({"id": 1}, "field customer: missing (expected shop.Customer)"),
        (
            {"id": 1, "customer": {"name": "a"}, "amount": "much"},
            "field amount: expected null or double, got 'much'",
        ),
        ("not a record", "expected shop.Order, got 'not a record'"),
    ],
)
def test_avro_names_the_field_that_does_not_fit(obj, message):
    with pytest.raises(Mismatch, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        codecs.AvroCodec(json.dumps(ORDER)).encode(obj)


TAGGED = {
    "type": "record",
    "name": "Tagged",
    "namespace": "shop",
    "fields": [
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
        {
            "name": "lines",
            "type": {
                "type": "array",
                "items": {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"}]},
            },
            "default": [],
        },
        {"name": "counts", "type": {"type": "map", "values": "long"}, "default": {}},
        {"name": "maybe", "type": ["null", {"type": "array", "items": "int"}], "default": None},
    ],
}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"tags": [1]}, "field tags[0]: expected string, got 1"),
        ({"tags": ["a", "b", None]}, "field tags[2]: expected string, got None"),
        ({"lines": [{"sku": "a"}, {"sku": 2}]}, "field lines[1].sku: expected string, got 2"),
        ({"lines": [{}]}, "field lines[0].sku: missing (expected string)"),
        ({"counts": {"a": 1, "b": "x"}}, "field counts['b']: expected long, got 'x'"),
        ({"maybe": [1, "two"]}, "field maybe[1]: expected int, got 'two'"),
        ({"maybe": "x"}, "field maybe: expected null or array, got 'x'"),
    ],
)
def test_avro_names_the_item_of_an_array_or_map_that_does_not_fit(obj, message):
    with pytest.raises(Mismatch, match="^" + re.escape(message) + "$"):
        codecs.AvroCodec(json.dumps(TAGGED)).encode(obj)


def test_avro_bad_schema_and_bad_bytes():
    with pytest.raises(Mismatch, match="not a valid Avro schema"):
        codecs.AvroCodec('{"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]}')
    with pytest.raises(Mismatch, match="not an Avro record of this schema"):
        codecs.AvroCodec(json.dumps(ORDER)).decode(b"\x0e")


def test_avro_references_resolve_named_types():
    ref = json.dumps(
        {
            "type": "record",
            "name": "Money",
            "namespace": "shop",
            "fields": [{"name": "cents", "type": "long"}],
        }
    )
    schema = json.dumps(
        {
            "type": "record",
            "name": "Line",
            "namespace": "shop",
            "fields": [{"name": "price", "type": "shop.Money"}],
        }
    )
    c = codecs.AvroCodec(schema, {"money.avsc": ref})
    assert c.decode(c.encode({"price": {"cents": 5}})) == {"price": {"cents": 5}}


# --- JSON Schema ---------------------------------------------------------------------------------
JSON_ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["id"],
}


def test_json_schema_round_trip_and_what_does_not_fit():
    c = codecs.JsonSchemaCodec(json.dumps(JSON_ORDER))
    assert c.decode(c.encode({"id": 1, "tags": ["a"]})) == {"id": 1, "tags": ["a"]}
    with pytest.raises(Mismatch, match="^field id: 'x' is not of type 'integer'"):
        c.encode({"id": "x"})
    with pytest.raises(Mismatch, match="^field tags.1: 2 is not of type 'string'"):
        c.encode({"id": 1, "tags": ["a", 2]})
    with pytest.raises(Mismatch, match=r"^field \(document\): 'id' is a required property"):
        c.encode({})
    with pytest.raises(Mismatch, match="not a valid JSON Schema"):
        codecs.JsonSchemaCodec('{"type": 5}')


# --- Protobuf ------------------------------------------------------------------------------------
def _order_proto() -> str:
    """A serialized FileDescriptorProto, as a registry gives it with format=serialized."""
    pb2 = pytest.importorskip("google.protobuf.descriptor_pb2")
    f = pb2.FileDescriptorProto(name="order.proto", package="shop", syntax="proto3")
    f.dependency.append("google/protobuf/timestamp.proto")
    m = f.message_type.add(name="Order")
    t = pb2.FieldDescriptorProto
    m.field.add(name="id", number=1, type=t.TYPE_INT64, label=t.LABEL_OPTIONAL)
    m.field.add(name="tags", number=2, type=t.TYPE_STRING, label=t.LABEL_REPEATED)
    m.field.add(name="status", number=3, type=t.TYPE_ENUM, type_name=".shop.Status", label=t.LABEL_OPTIONAL)
    m.field.add(
        name="at",
        number=4,
        type=t.TYPE_MESSAGE,
        type_name=".google.protobuf.Timestamp",
        label=t.LABEL_OPTIONAL,
    )
    inner = m.nested_type.add(name="Line")
    inner.field.add(name="sku", number=1, type=t.TYPE_STRING, label=t.LABEL_OPTIONAL)
    e = f.enum_type.add(name="Status")
    e.value.add(name="NEW", number=0)
    e.value.add(name="PAID", number=1)
    f.message_type.add(name="Other").field.add(name="x", number=1, type=t.TYPE_INT32, label=t.LABEL_OPTIONAL)
    return base64.b64encode(f.SerializeToString()).decode()


def test_protobuf_round_trip_with_64_bit_ints_enums_and_well_known_types():
    c = codecs.ProtobufCodec(_order_proto())
    assert c.name == "shop.Order" and c.indexes == [0]
    obj = {"id": 2**40, "tags": ["a", "b"], "status": "PAID", "at": "2026-11-28T10:00:00Z"}
    data = c.encode(obj)
    assert c.decode(data) == {**obj, "id": 2**40}  # an int, not the JSON mapping's string
    assert c.decode(c.encode({"id": 1})) == {"id": 1, "tags": [], "status": "NEW", "at": None}
    with pytest.raises(Mismatch, match="^field id: "):
        c.encode({"id": "abc"})
    with pytest.raises(Mismatch, match="has no field named"):
        c.encode({"nope": 1})


def test_protobuf_message_indexes_pick_the_message():
    c = codecs.ProtobufCodec(_order_proto())
    other = codecs.ProtobufCodec(_order_proto(), message="Other")
    assert other.indexes == [1]
    assert c.decode(other.encode({"x": 3}), [1]) == {"x": 3}
    assert c.decode(b"\x0a\x01z", [0, 0]) == {"sku": "z"}  # Order.Line, a nested message
    with pytest.raises(Mismatch, match=r"message indexes \[5\]"):
        c.decode(b"", [5])
    with pytest.raises(Mismatch, match="no message 'Nope'"):
        codecs.ProtobufCodec(_order_proto(), message="Nope")


def test_proto_text_compiled_here_with_its_imports():
    """For registries that serve .proto text only (Apicurio): compiled with protoc as a library."""
    pytest.importorskip("grpc_tools")
    money = 'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n'
    order = (
        'syntax = "proto3";\npackage shop;\nimport "money.proto";\nimport "google/protobuf/timestamp.proto";\n'
        "message Order { int64 id = 1; Money price = 2; google.protobuf.Timestamp at = 3; }\n"
    )
    main, refs = protocodec.compile_proto(order, {"money.proto": money})
    assert list(refs) == ["money.proto"]
    c = codecs.ProtobufCodec(main, refs)
    obj = {"id": 1, "price": {"cents": 250}, "at": "2026-11-28T10:00:00Z"}
    assert c.decode(c.encode(obj)) == obj
    with pytest.raises(Mismatch, match="does not compile"):
        protocodec.compile_proto('syntax = "proto3";\nmessage { broken')


# --- CSV typing and output -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("row", "typed"),
    [
        (
            {"id": "1", "customer": "x", "amount": "2.5", "paid": "true"},
            {"id": 1, "customer": "x", "amount": 2.5, "paid": True},
        ),
        ({"id": "1", "amount": "", "paid": "0"}, {"id": 1, "amount": None, "paid": False}),
        ({"id": "1", "other": "kept as text"}, {"id": 1, "other": "kept as text"}),
    ],
)
def test_csv_rows_typed_by_the_avro_schema(row, typed):
    assert codecs.typed_row(codecs.AvroCodec(json.dumps(ORDER)).fields(), row) == typed


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "one"}, "field id: expected long, got 'one'"),
        ({"paid": "maybe"}, "field paid: expected boolean, got 'maybe'"),
    ],
)
def test_csv_columns_that_do_not_fit(row, message):
    with pytest.raises(Mismatch, match=message):
        codecs.typed_row(codecs.AvroCodec(json.dumps(ORDER)).fields(), row)


def test_typed_scalar_for_primitive_key_schemas():
    assert codecs.typed_scalar(codecs.AvroCodec('"long"'), "42") == 42
    assert codecs.typed_scalar(codecs.AvroCodec('"string"'), "42") == "42"
    assert codecs.typed_scalar(codecs.JsonSchemaCodec('{"type": "integer"}'), "42") == 42
    with pytest.raises(Mismatch, match="expected long, got 'x'"):
        codecs.typed_scalar(codecs.AvroCodec('"long"'), "x")


def test_jsonable():
    when = dt.datetime(2026, 11, 28, 10, 0, tzinfo=dt.timezone.utc)
    got = codecs.jsonable(
        {"b": b"\x00\x01", "d": decimal.Decimal("1.10"), "t": when, "l": [dt.date(2026, 1, 2)]}
    )
    assert got == {"b": "AAE=", "d": "1.10", "t": "2026-11-28T10:00:00+00:00", "l": ["2026-01-02"]}


# --- schema choices and subjects -----------------------------------------------------------------
def test_schema_choices(tmp_path):
    avsc = tmp_path / "o.avsc"
    avsc.write_text("{}")
    assert parse_choice("latest", "--value-schema").version == "latest"
    assert parse_choice("3", "--value-schema").version == 3
    assert parse_choice("id:42", "--value-schema").schema_id == 42
    c = parse_choice(str(avsc), "--value-schema")
    assert (c.path, c.kind) == (str(avsc), codecs.AVRO)
    with pytest.raises(UsageError, match="no such file"):
        parse_choice(str(tmp_path / "missing.proto"), "--key-schema")
    with pytest.raises(UsageError, match="expected latest, a version number, id:N, or a schema file"):
        parse_choice("orders.txt", "--out-schema")


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        ("orders.proto", "orders.proto", None),
        ("orders.proto:interop.Order", "orders.proto", "interop.Order"),
        ("orders.proto:Order", "orders.proto", "Order"),
        ("dir:x/orders.proto:a.b.Order", "dir:x/orders.proto", "a.b.Order"),  # the last colon splits
        ("ORDERS.PROTO:Order", "ORDERS.PROTO", "Order"),
    ],
)
def test_a_proto_file_may_name_its_message(tmp_path, monkeypatch, spec, path, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text('syntax = "proto3";\n')
    c = parse_choice(spec, "--value-schema")
    assert (c.path, c.kind, c.message) == (path, codecs.PROTOBUF, message)
    assert c.describe() == spec


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("orders.proto:", "name the message after the colon"),
        ("missing.proto:shop.Order", "--value-schema missing.proto: no such file"),
        ("orders.avsc:shop.Order", "expected latest, a version number, id:N, or a schema file"),
    ],
)
def test_a_proto_message_spec_that_is_wrong(tmp_path, monkeypatch, spec, error):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.proto").write_text('syntax = "proto3";\n')
    with pytest.raises(UsageError, match=error):
        parse_choice(spec, "--value-schema")


_TWO = """syntax = "proto3";
package interop;
// message Commented { }
/* message Hidden {
} */
message Customer {
  string name = 1;
  message Address { string city = 1; }  // nested: not a top-level message
  option (x) = "{ message Quoted {";
}
enum Kind { A = 0; }
message Order { int64 id = 1; oneof p { string card = 2; } }
"""


@pytest.mark.parametrize(
    ("text", "wanted", "chosen"),
    [
        (_TWO, None, "interop.Customer"),
        (_TWO, "interop.Order", "interop.Order"),
        (_TWO, "Order", "interop.Order"),
        (_TWO, ".interop.Order", "interop.Order"),
        (_TWO, "interop.Address", None),  # nested
        (_TWO, "Customer.Address", None),
        (_TWO, "other.Order", None),
        ("message A {}\nmessage B {}\n", "B", "B"),  # no package
        ('syntax = "proto3";\n', None, None),
    ],
)
def test_the_top_level_messages_of_a_proto_file(text, wanted, chosen):
    from kxtx.schemas import protofile

    assert protofile.choose(text, wanted) == chosen
    if text is _TWO:
        assert protofile.messages(text) == ["interop.Customer", "interop.Order"]


def test_an_encoder_encodes_the_message_it_was_given():
    """What `kxtx pipe --out-schema FILE.proto:pkg.Message` ships to Spark's workers."""
    import pickle

    from kxtx.schemas.serde import Encoder

    fdp = _order_proto()
    enc = pickle.loads(pickle.dumps(Encoder(7, codecs.PROTOBUF, fdp, {}, b"H", "Other")))
    assert enc.encode({"x": 3}) == b"H" + codecs.ProtobufCodec(fdp, message="Other").encode({"x": 3})
    with pytest.raises(Mismatch, match="has no field named"):
        enc.encode({"id": 1})  # Order's field: not Other's


@pytest.mark.parametrize(
    ("strategy", "is_key", "record", "subject"),
    [
        ("topic", False, None, "orders-value"),
        ("topic", True, "shop.Order", "orders-key"),
        ("record", False, "shop.Order", "shop.Order"),
        ("topic-record", True, "shop.Order", "orders-shop.Order"),
    ],
)
def test_subject_naming_strategies(strategy, is_key, record, subject):
    assert subject_name(strategy, "orders", is_key, record) == subject


def test_record_strategies_need_a_record_name():
    with pytest.raises(UsageError, match="needs a schema with a record name"):
        subject_name("record", "orders", False, None)


# --- the registry's settings ---------------------------------------------------------------------
def test_registry_settings_come_from_flags_env_and_file_and_stay_out_of_librdkafka(tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(
        "bootstrap.servers=b:9092\nschema.registry.url=http://file:8081\nbasic.auth.credentials.source=USER_INFO\n"
        "basic.auth.user.info=fileuser:filesecret\n"
    )
    s = resolve(command_config=str(props), env={})
    assert s.registry == {
        "schema.registry.url": "http://file:8081",
        "schema.registry.basic.auth.user.info": "fileuser:filesecret",
    }
    assert not any(k.startswith(("schema.", "basic.")) for k in s.confluent())
    s = resolve(command_config=str(props), env={"KXTX_SCHEMA_REGISTRY_URL": "http://env:8081"})
    assert s.registry["schema.registry.url"] == "http://env:8081"
    s = resolve(
        command_config=str(props),
        env={"KXTX_SCHEMA_REGISTRY_URL": "http://env:8081"},
        registry_url="https://flag:8081",
        overrides={"schema.registry.ssl.ca.location": "/ca.pem"},
    )
    cfg = s.registry_config("--value-schema")
    assert cfg.url == "https://flag:8081"
    assert cfg.client_conf()["ssl.ca.location"] == "/ca.pem"
    assert cfg.client_conf()["basic.auth.user.info"] == "fileuser:filesecret"
    assert s.redacted()["schema.registry.basic.auth.user.info"] == "***"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"schema.registry.nope": "1"}, "unknown schema registry setting 'schema.registry.nope'"),
        ({"schema.registry.ssl.truststore.location": "/t.jks"}, "give the CA as PEM"),
        ({"schema.registry.basic.auth.user.info": "nocolon"}, "expected USER:PASSWORD"),
        ({"basic.auth.credentials.source": "SASL_INHERIT"}, "kxtx takes only USER_INFO"),
    ],
)
def test_registry_settings_that_cannot_work(overrides, message):
    with pytest.raises(ConfigError, match=message):
        resolve(overrides=overrides, env={})


def test_a_command_without_a_registry_says_how_to_give_one():
    # an option that needs another one: a usage error (exit 2), as the README's exit codes say
    with pytest.raises(
        UsageError, match="--value-format avro needs a schema registry: pass --schema-registry URL"
    ):
        resolve(env={}).registry_config("--value-format avro")
    with pytest.raises(ConfigError, match=r"expected http\(s\)://HOST\[:PORT\]"):
        resolve(env={}, registry_url="ftp://x").registry_config("--out-schema")


def test_credentials_in_the_url_are_never_shown():
    assert registry.shown("https://user:s3cret@reg:8081/x") == "https://***@reg:8081/x"
    assert registry.shown("http://a:1,https://u:p@b") == "http://a:1,https://***@b"
    from kxtx.client.properties import scrub

    resolve(env={}, registry_url="https://user:s3cret-pass@reg:8081")
    assert "s3cret-pass" not in scrub("failed: https://user:s3cret-pass@reg:8081")


def test_http_errors_become_kxtx_errors():
    cfg = registry.RegistryConfig("http://reg:8081", (("schema.registry.basic.auth.user.info", "u:p"),))
    auth = registry.translate(cfg, "looking up x", 401, 40101, "Unauthorized")
    assert isinstance(auth, registry.RegistryError) and auth.exit_code == 1
    assert "authentication failed (HTTP 401)" in str(auth) and "u:p" not in str(auth)
    down = registry.translate(cfg, "schema id 3", 503, 50003, "busy")
    assert isinstance(down, registry.RegistryUnavailable) and down.exit_code == 75
    missing = registry.translate(cfg, "subject s version latest", 404, 40401, "Subject not found")
    assert missing.status == 404 and "Subject not found" in str(missing)


# --- batches ---------------------------------------------------------------------------------------
def test_avro_batches_give_what_one_record_at_a_time_gives():
    from kxtx.client.registry import RegistryConfig
    from kxtx.schemas.serde import Encoder, Reader, _Known

    order = json.dumps(ORDER)
    objs = [
        {
            "id": i,
            "customer": {"name": "é" * (i % 70)},
            "amount": None if i % 3 else i / 3,
            "paid": i % 2 == 0,
        }
        for i in range(300)
    ]
    enc = Encoder(7, codecs.AVRO, order, {}, framing.header(7))
    framed = enc.encode_many(objs)
    assert framed == [enc.encode(o) for o in objs]
    reader = Reader(
        RegistryConfig("http://127.0.0.1:9", (), 1.0), codecs.AVRO, {7: _Known(codecs.AVRO, order, {})}
    )
    assert reader.decode_values(framed) == objs == [reader.decode(v).value for v in framed]
    with pytest.raises(Mismatch):
        enc.encode_many([*objs[:5], {"id": "x"}])
    with pytest.raises(ValueError):  # a tombstone, another schema id, a value not framed: one by one
        reader.decode_values([*framed[:2], None])
    with pytest.raises(ValueError):
        reader.decode_values([framed[0], framing.frame(8, b"\x02")])
    with pytest.raises(ValueError):
        reader.decode_values([b"plain"])
    with pytest.raises(Mismatch):  # a truncated record in the batch
        reader.decode_values([framed[0], framed[1][:-3]])


def test_the_pipe_mapper_names_the_record_a_batch_cannot_take():
    """A batch that does not decode or encode in one pass goes record by record: each failure is
    its own record's (the contract path)."""
    from kxtx.client.registry import RegistryConfig
    from kxtx.pipe.worker import transform as tf
    from kxtx.schemas.serde import Encoder, Reader, _Known

    order = json.dumps(ORDER)
    enc = Encoder(7, codecs.AVRO, order, {}, framing.header(7))
    reader = Reader(
        RegistryConfig("http://127.0.0.1:9", (), 1.0), codecs.AVRO, {7: _Known(codecs.AVRO, order, {})}
    )
    values = [enc.encode({"id": i, "customer": {"name": "n"}}) for i in range(4)]
    values[2] = values[2][:6]  # truncated

    def udf(o):
        return {**o, "id": "bad"} if o["id"] == 3 else o

    out = tf.make_mapper(udf, "python", "avro", False, reader, enc).map_values(values, 10)
    rows = out.to_pydict()
    assert rows["error"][0] is None and rows["error"][1] is None
    assert "decoding the input" in rows["error"][2] and "not an Avro record" in rows["error"][2]
    assert "does not fit the output schema: field id: expected long, got 'bad'" in rows["error"][3]
    assert reader.decode(rows["value"][1]).value["id"] == 1


def test_produce_schema_options_checked_only_when_given():
    from kxtx.produce.schemas import SchemaOptions

    SchemaOptions().check(None)  # no schema, the default strategy: nothing to check
    with pytest.raises(UsageError, match="subject"):
        SchemaOptions(strategy="nope").check(None)
    with pytest.raises(UsageError, match="--register needs a schema file"):
        SchemaOptions(register=True).check(None)


def test_a_registry_without_its_extra_names_the_install_line_that_works(monkeypatch):
    """kxtx is not on PyPI: the hint is this installation's own line, not `pip install 'kxtx[registry]'`."""
    from tests.conftest import ROOT

    monkeypatch.setitem(sys.modules, "confluent_kafka.schema_registry", None)
    with pytest.raises(ConfigError, match=r"^the schema registry needs kxtx's `registry` extra") as err:
        registry.connect(registry.RegistryConfig("http://127.0.0.1:1"))
    assert f"(pip install -e '{ROOT}[registry]')" in str(err.value)


@pytest.mark.parametrize(
    "args",
    [
        ("produce", "{file}", "-t", "t", "--value-schema", "latest"),
        ("dump", "partition", "t:0", "--records", "--value-format", "avro"),
    ],
)
def test_an_option_that_needs_a_registry_without_one_is_exit_2(tmp_path, args):
    from tests import cli

    data = tmp_path / "in.jsonl"
    data.write_text('{"a": 1}\n')
    argv = [a.format(file=data) for a in args]
    r = cli.run(*argv, "-b", "127.0.0.1:1", "--timeout", "2", env={"KXTX_SCHEMA_REGISTRY_URL": ""}, expect=2)
    assert r.stderr.strip().endswith(
        "needs a schema registry: pass --schema-registry URL, set KXTX_SCHEMA_REGISTRY_URL, or put "
        "schema.registry.url in --command-config"
    )


def _presence_proto() -> str:
    """proto3 with fields of explicit presence: `optional string note = 3` (a synthetic oneof) and
    a real oneof `pay`, beside a plain string (implicit presence) and a message field."""
    pb2 = pytest.importorskip("google.protobuf.descriptor_pb2")
    f = pb2.FileDescriptorProto(name="presence.proto", package="shop", syntax="proto3")
    m = f.message_type.add(name="Order")
    t = pb2.FieldDescriptorProto
    m.field.add(name="name", number=1, type=t.TYPE_STRING, label=t.LABEL_OPTIONAL)
    m.field.add(name="note", number=2, type=t.TYPE_STRING, label=t.LABEL_OPTIONAL, oneof_index=1)
    m.field.add(name="qty", number=3, type=t.TYPE_INT32, label=t.LABEL_OPTIONAL, oneof_index=2)
    m.field.add(name="card", number=4, type=t.TYPE_STRING, label=t.LABEL_OPTIONAL, oneof_index=0)
    m.field.add(name="cash", number=5, type=t.TYPE_INT64, label=t.LABEL_OPTIONAL, oneof_index=0)
    m.field[1].proto3_optional = m.field[2].proto3_optional = True
    m.oneof_decl.add(name="pay")  # synthetic oneofs come after the real ones
    m.oneof_decl.add(name="_note")
    m.oneof_decl.add(name="_qty")
    return base64.b64encode(f.SerializeToString()).decode()


_UNSET = {"note": None, "qty": None, "card": None, "cash": None}


@pytest.mark.parametrize(
    ("obj", "decoded", "present"),
    [
        ({"name": "a"}, {"name": "a", **_UNSET}, set()),
        ({"name": "a", "note": None, "qty": None}, {"name": "a", **_UNSET}, set()),
        # a present field at its default value stays present: the point of explicit presence
        ({"note": "", "qty": 0}, {"name": "", **_UNSET, "note": "", "qty": 0}, {"note", "qty"}),
        ({"note": "x", "qty": 5}, {"name": "", **_UNSET, "note": "x", "qty": 5}, {"note", "qty"}),
        ({"card": ""}, {"name": "", **_UNSET, "card": ""}, {"card"}),
        ({"cash": 7, "card": None}, {"name": "", **_UNSET, "cash": 7}, {"cash"}),
        ({"card": None, "cash": 0}, {"name": "", **_UNSET, "cash": 0}, {"cash"}),
        # an implicit-presence field at its default is not on the wire, and decodes as its default
        ({"name": ""}, {"name": "", **_UNSET}, set()),
    ],
)
def test_protobuf_fields_with_presence_unset_decode_as_none_and_none_encodes_unset(obj, decoded, present):
    from google.protobuf import message_factory

    c = codecs.ProtobufCodec(_presence_proto())
    data = c.encode(obj)
    msg = message_factory.GetMessageClass(c.file.message_types_by_name["Order"]).FromString(data)
    assert {f for f in ("note", "qty", "card", "cash") if msg.HasField(f)} == present
    assert c.decode(data) == decoded
    assert c.encode(c.decode(data)) == data  # a pass through changes nothing


@pytest.mark.parametrize(
    ("how", "part", "data", "shown", "error"),
    [
        ("avro", "value", b"\x00\x00\x00", "AAAA", "3 bytes: too short"),
        ("auto", "value", b"\x00\x00\x00", "\x00\x00\x00", "3 bytes: too short"),
        ("auto", "value", b"text", "text", None),
        ("auto", "value", b"\x01ab", "\x01ab", None),
        ("avro", "value", b"plain", "cGxhaW4=", "first byte 112"),
        ("avro", "key", b"\x00\x00\x00\x07", "\x00\x00\x00\x07", None),  # an int key, as text
    ],
)
def test_dump_rows_of_values_that_are_not_framed(how, part, data, shown, error):
    """Before any registry call: framing alone decides (the registry's URL is never asked)."""
    from kxtx.schemas.rows import decoder

    got, extra = decoder(registry.RegistryConfig("http://127.0.0.1:9"), how)(data, part)
    assert got == shown
    if error is None:
        assert extra == {}
    else:
        assert error in extra[f"{part}_error"] and extra[f"{part}_error"].startswith("not framed")
