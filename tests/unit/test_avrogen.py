"""The column-wise Avro encoder (kxtx.schemas.fast.avrogen) against fastavro: the same bytes for every
type it takes and its boundaries; `Slow` (fastavro decides) for everything else."""

from __future__ import annotations

import io
import json
import random
import struct

import pytest

from kxtx.schemas import codecs, framing
from kxtx.schemas.fast import avrogen

fastavro = pytest.importorskip("fastavro")

HEAD = framing.header(42)

VALUES = {
    "string": ["", "a", "é" * 70, "x" * 8191, "x" * 8192, "\U0001f600" * 5000, "tab\tnl\n"],
    "bytes": [b"", b"\x00", b"\xff" * 8191, b"y" * 8192, b"z" * 70000],
    "long": [
        0,
        1,
        -1,
        63,
        -64,
        64,
        8191,
        -8192,
        8192,
        2**27,
        -(2**27),
        2**28,
        2**31,
        2**40,
        -(2**41),
        2**53,
        2**63 - 1,
        -(2**63),
    ],
    "int": [0, -1, 63, -64, 8192, 2**27, 2**31 - 1, -(2**31)],
    "boolean": [True, False],
    "double": [0.0, -0.0, -1.5, 1e308, 5e-324, float("inf"), float("-inf")],
    "float": [0.0, 1.5, -2.25, 3.4e38, float("inf")],
    "null": [None],
}


def schema(*fields) -> dict:
    return {
        "type": "record",
        "name": "R",
        "namespace": "t",
        "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(fields)],
    }


def fastavro_bytes(s: dict, objs: list) -> list[bytes]:
    parsed = fastavro.parse_schema(s)
    out = []
    for o in objs:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, o)
        out.append(HEAD + buf.getvalue())
    return out


def columns(s: dict) -> avrogen.ColumnEncoder:
    enc = avrogen.compile_encoder(fastavro.parse_schema(s))
    assert enc is not None
    return enc


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_each_type_and_its_boundaries_as_fastavro_writes_them(kind):
    s = schema(kind)
    objs = [{"f0": v} for v in VALUES[kind]]
    assert columns(s).encode_many(objs, HEAD) == fastavro_bytes(s, objs)
    for v in VALUES[kind]:  # one alone: a column's single value takes the table's paths too
        assert columns(s).encode_many([{"f0": v}], HEAD) == fastavro_bytes(s, [{"f0": v}])


@pytest.mark.parametrize("kind", sorted(set(VALUES) - {"null"}))
@pytest.mark.parametrize("null_first", [True, False])
def test_unions_of_null_and_one_type(kind, null_first):
    s = schema(["null", kind] if null_first else [kind, "null"])
    mixed = [{"f0": v} for v in VALUES[kind] for v in (v, None)]
    for objs in (mixed, [{"f0": v} for v in VALUES[kind]], [{"f0": None}] * 3):
        assert columns(s).encode_many(objs, HEAD) == fastavro_bytes(s, objs)


def test_a_column_of_three_and_four_byte_longs():
    s = schema("long")
    objs = [{"f0": v} for v in (8192, -8193, 2**27 - 1, -(2**27), 100_000)]
    assert columns(s).encode_many(objs, HEAD) == fastavro_bytes(s, objs)


#: every supported kind, nullable ones among them
KINDS = ["string", "long", ["null", "string"], "double", "boolean", ["int", "null"], "bytes", "float", "null"]


def random_records(kinds: list, n: int, seed: int) -> list[dict]:
    """n records of `kinds`' fields f0, f1, ..., values drawn from VALUES (null 40 % where allowed)."""
    rnd = random.Random(seed)

    def value(kind):
        if isinstance(kind, list):
            return None if rnd.random() < 0.4 else value(next(k for k in kind if k != "null"))
        return rnd.choice(VALUES[kind])

    return [{f"f{i}": value(k) for i, k in enumerate(kinds)} for _ in range(n)]


def test_many_fields_many_records_random():
    s = schema(*KINDS)
    objs = [r | {"extra": 1} for r in random_records(KINDS, 3000, 7)]
    assert columns(s).encode_many(objs, HEAD) == fastavro_bytes(s, objs)
    assert columns(schema()).encode_many([{}, {"a": 1}], HEAD) == [HEAD, HEAD]


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("long", True),  # fastavro takes a bool as 1, but the column encoder takes exact ints only
        ("long", 1.0),
        ("long", 2**63),
        ("long", -(2**63) - 1),
        ("long", 2**64),
        ("long", -(2**64)),
        ("int", 2**31),
        ("int", -(2**31) - 1),
        ("string", b"x"),
        ("string", 1),
        ("string", "\ud800"),  # a lone surrogate: not UTF-8
        ("bytes", "x"),
        ("bytes", bytearray(b"x")),
        ("boolean", 1),
        ("double", 1),
        ("float", 1e39),
        ("null", 0),
        (["null", "long"], "x"),
        (["null", "long"], True),
    ],
)
def test_values_it_leaves_to_fastavro(kind, value):
    s = schema(kind)
    with pytest.raises(avrogen.Slow):
        first = VALUES[kind][0] if isinstance(kind, str) else None  # a good one, then the bad one
        columns(s).encode_many([{"f0": first}, {"f0": value}], HEAD)
    codec = codecs.AvroCodec(json.dumps(s))
    objs = [{"f0": value}]
    try:
        expected = fastavro_bytes(s, objs)
    except Exception:  # noqa: BLE001 - fastavro refuses it: so must the codec's batch path
        with pytest.raises(codecs.Mismatch):
            codec.encode_many(objs, HEAD)
    else:  # fastavro takes it (a bool as a long, an int as a double): the codec gives its bytes
        assert codec.encode_many(objs, HEAD) == expected


class Text(str):
    pass


def test_missing_fields_defaults_and_subclasses_go_to_fastavro():
    s = schema("string", "long")
    s["fields"][1]["default"] = 5
    with pytest.raises(avrogen.Slow):
        columns(s).encode_many([{"f0": "a"}], HEAD)  # f1 missing: its default is fastavro's to write
    with pytest.raises(avrogen.Slow):
        columns(s).encode_many([{"f0": Text("a"), "f1": 1}], HEAD)
    with pytest.raises(avrogen.Slow):
        columns(s).encode_many([["a", 1]], HEAD)  # not a mapping
    codec = codecs.AvroCodec(json.dumps(s))
    objs = [{"f0": "a"}, {"f0": Text("b"), "f1": 2}]
    assert codec.encode_many(objs, HEAD) == fastavro_bytes(s, objs)


@pytest.mark.parametrize(
    "field_type",
    [
        {"type": "record", "name": "N", "fields": [{"name": "x", "type": "long"}]},
        {"type": "array", "items": "long"},
        {"type": "map", "values": "long"},
        {"type": "enum", "name": "E", "symbols": ["A"]},
        {"type": "fixed", "name": "F", "size": 2},
        {"type": "long", "logicalType": "timestamp-millis"},
        {"type": "string", "logicalType": "uuid"},
        ["null", "string", "long"],
        ["string", "long"],
    ],
)
def test_schemas_it_does_not_take(field_type):
    assert avrogen.compile_encoder(fastavro.parse_schema(schema(field_type))) is None


def test_schemas_it_takes_beside_fastavros_parse():
    assert avrogen.compile_encoder("string") is None  # not a record
    s = schema({"type": "string", "avro.java.string": "String"}, {"type": "long"})
    objs = [{"f0": "a", "f1": 1}]
    assert columns(s).encode_many(objs, HEAD) == fastavro_bytes(s, objs)
    assert avrogen.compile_encoder(s) is not None  # a schema fastavro did not parse


# --- the decoder -----------------------------------------------------------------------------------
def decoder(s: dict):
    dec = avrogen.compile_decoder(fastavro.parse_schema(s))
    assert dec is not None
    return dec


def fastavro_read(s: dict, payload: bytes):
    return fastavro.schemaless_reader(io.BytesIO(payload), fastavro.parse_schema(s), None)


@pytest.mark.parametrize(
    ("kind", "union"),
    # every kind alone and in a union with null, either way round (null with null is no schema)
    [(k, u) for k in sorted(VALUES) for u in (None, "null-first", "null-last") if not (u and k == "null")],
)
def test_the_decoder_reads_what_fastavro_reads(kind, union):
    t = kind if not union else (["null", kind] if union == "null-first" else [kind, "null"])
    s = schema(t, "long")
    values = [*VALUES[kind], *([None] if union else [])]
    payloads = [p[len(HEAD) :] for p in fastavro_bytes(s, [{"f0": v, "f1": 7} for v in values])]
    dec = decoder(s)
    for payload in payloads:
        assert dec(payload) == fastavro_read(s, payload)
        assert repr(dec(payload)) == repr(fastavro_read(s, payload))  # -0.0, nan-free: the same floats


def test_many_fields_decoded_in_order():
    s = schema(*KINDS)
    payloads = [p[len(HEAD) :] for p in fastavro_bytes(s, random_records(KINDS, 500, 11))]
    dec = decoder(s)
    got = list(map(dec, payloads))
    assert got == [fastavro_read(s, p) for p in payloads]
    assert [list(g) for g in got] == [[f"f{i}" for i in range(len(KINDS))]] * len(got)


@pytest.mark.parametrize(
    ("fields", "payload"),
    [
        (["string"], b""),  # nothing
        (["string"], b"\x06ab"),  # a length past the end
        (["string"], b"\x04ab\x00"),  # a byte past the record
        (["string"], b"\x03a"),  # a negative length (-2 zig-zagged)
        (["string"], b"\x04\xff\xfe"),  # not UTF-8
        (["long"], b"\x80"),  # a varint cut short
        (["long"], b"\xff" * 10 + b"\x01"),  # past ten bytes
        (["long"], b"\xff" * 9 + b"\x03"),  # ten bytes, past 64 bits
        (["int"], b"\x80\x80\x80\x80\x10"),  # 2**32 zig-zagged: past an int
        (["boolean"], b"\x02"),  # a boolean byte other than 0 and 1
        (["double"], b"\x00" * 7),
        (["float"], b"\x00" * 3),
        ([["null", "long"]], b"\x04\x02"),  # a union branch that is not there
    ],
)
def test_the_decoder_refuses_bytes_that_are_not_one_record(fields, payload):
    with pytest.raises((avrogen.Slow, IndexError, UnicodeDecodeError, struct.error)):
        decoder(schema(*fields))(payload)


def test_the_codec_reads_with_fastavro_what_the_decoder_refuses():
    """A batch with one payload the decoder does not take: fastavro reads the batch (here a
    boolean byte 2, which fastavro reads as it reads it), or the batch is a Mismatch."""
    s = schema("boolean", "long")
    codec = codecs.AvroCodec(json.dumps(s))
    good = codec.encode_many([{"f0": True, "f1": 1}, {"f0": False, "f1": 2}])
    assert codec.decode_many(good) == [{"f0": True, "f1": 1}, {"f0": False, "f1": 2}]
    odd = [*good, b"\x02\x06"]
    try:
        expected = [fastavro_read(s, p) for p in odd]
    except Exception:  # noqa: BLE001
        with pytest.raises(codecs.Mismatch):
            codec.decode_many(odd)
    else:
        assert codec.decode_many(odd) == expected
    with pytest.raises(codecs.Mismatch):
        codec.decode_many([*good, good[0][:-1]])


def test_the_codec_decodes_one_record_as_fastavro_does():
    """`AvroCodec.decode` (dump partition, a pipe's record-by-record path) takes the generated
    decoder too: the same records, and fastavro's reading or its error for what it refuses."""
    s = schema(*KINDS)
    codec = codecs.AvroCodec(json.dumps(s))
    payloads = [p[len(HEAD) :] for p in fastavro_bytes(s, random_records(KINDS, 200, 3))]
    assert [codec.decode(p) for p in payloads] == [fastavro_read(s, p) for p in payloads]
    assert codec.decode(payloads[0] + b"\x00") == fastavro_read(s, payloads[0])  # fastavro ignores the rest
    with pytest.raises(codecs.Mismatch, match="not an Avro record of this schema"):
        codec.decode(payloads[0][:3])
