"""Record mapping: key/value/header/partition/timestamp from JSON lines, CSV rows, plain lines."""

import pytest

from kxtx.errors import UsageError
from kxtx.produce.inputs import Line
from kxtx.produce.mapping import (
    BadRecord,
    Mapper,
    MappingSpec,
    Record,
    parse_header_options,
    parse_timestamp,
)


def jl(raw: bytes) -> Line:
    return Line(1, 0, len(raw) + 1, raw)


COLS = ["id", "name", "p", "ts"]


def csv(row, raw=b"raw,row") -> Line:
    return Line(2, 0, 8, raw, row)


@pytest.mark.parametrize(
    "spec, line, expected",
    [
        # plain lines: the line as it is
        (MappingSpec(), jl(b"hello"), Record(None, b"hello", None, None, None)),
        (MappingSpec(headers=(("src", "a"),)), jl(b"x"), Record(None, b"x", [("src", b"a")], None, None)),
        # JSON: line as is, key from a field, dotted path, literal dotted key, numbers as JSON text
        (
            MappingSpec(key_field="id"),
            jl(b'{"id":"k1","v":1}'),
            Record(b"k1", b'{"id":"k1","v":1}', None, None, None),
        ),
        (
            MappingSpec(key_field="c.id"),
            jl(b'{"c":{"id":7}}'),
            Record(b"7", b'{"c":{"id":7}}', None, None, None),
        ),
        (
            MappingSpec(key_field="c.id"),
            jl(b'{"c.id":"lit","c":{"id":7}}'),
            Record(b"lit", b'{"c.id":"lit","c":{"id":7}}', None, None, None),
        ),
        (
            MappingSpec(value_field="v"),
            jl(b'{"v":{"x":[1,"\\u00e9"]}}'),
            Record(None, '{"x":[1,"é"]}'.encode(), None, None, None),
        ),
        (MappingSpec(value_field="v"), jl(b'{"v":"text"}'), Record(None, b"text", None, None, None)),
        (MappingSpec(value_field="v"), jl(b'{"v":true}'), Record(None, b"true", None, None, None)),
        (
            MappingSpec(header_fields=(("h", "a"), ("miss", "nope"))),
            jl(b'{"a":1.5}'),
            Record(None, b'{"a":1.5}', [("h", b"1.5")], None, None),
        ),
        (
            MappingSpec(headers=(("k", "v"),), header_fields=(("h", "a"),)),
            jl(b'{"a":"x"}'),
            Record(None, b'{"a":"x"}', [("k", b"v"), ("h", b"x")], None, None),
        ),
        (
            MappingSpec(partition_field="p", timestamp_field="t"),
            jl(b'{"p":2,"t":1700000000000}'),
            Record(None, b'{"p":2,"t":1700000000000}', None, 2, 1700000000000),
        ),
        (
            MappingSpec(timestamp_field="t"),
            jl(b'{"t":"2024-01-01T00:00:00Z"}'),
            Record(None, b'{"t":"2024-01-01T00:00:00Z"}', None, None, 1704067200000),
        ),
    ],
)
def test_map_json_and_lines(spec, line, expected):
    fmt = "lines" if not spec.fields() and not line.raw.startswith(b"{") else "jsonl"
    assert Mapper(spec, fmt).map(line) == expected


@pytest.mark.parametrize(
    "spec, row, expected",
    [
        (MappingSpec(key_field="id"), ["1", "ann", "0", "5"], Record(b"1", b"raw,row", None, None, None)),
        (MappingSpec(value_field="name"), ["1", "ann", "0", "5"], Record(None, b"ann", None, None, None)),
        (
            MappingSpec(key_field="id", value_as_json=True),
            ["1", "é", "0", "5"],
            Record(b"1", '{"id":"1","name":"é","p":"0","ts":"5"}'.encode(), None, None, None),
        ),
        (
            MappingSpec(partition_field="p", timestamp_field="ts", header_fields=(("name", "name"),)),
            ["1", "ann", "3", "1000"],
            Record(None, b"raw,row", [("name", b"ann")], 3, 1000),
        ),
    ],
)
def test_map_csv(spec, row, expected):
    m = Mapper(spec, "csv")
    m.set_header(COLS)
    assert m.map(csv(row)) == expected


@pytest.mark.parametrize(
    "spec, fmt, line, reason",
    [
        (MappingSpec(), "jsonl", jl(b'{"a":'), "bad JSON"),
        # kxtx's nesting limit, whichever parser would have decided (orjson refuses NaN, json decides)
        (MappingSpec(), "jsonl", jl(b"[" * 100000 + b"NaN" + b"]" * 100000), "nested deeper than 1024"),
        (MappingSpec(), "jsonl", jl(b"[" * 1025 + b"]" * 1025), "nested deeper than 1024 levels"),
        (MappingSpec(), "jsonl", jl(b"[" * 1025 + b"NaN" + b"]" * 1025), "nested deeper than 1024"),
        (MappingSpec(), "jsonl", jl(b'{"a":' * 1200 + b"1" + b"}" * 1200), "nested deeper than 1024"),
        (MappingSpec(key_field="id"), "jsonl", jl(b'{"a":1}'), "missing key field 'id'"),
        (MappingSpec(key_field="id"), "jsonl", jl(b'{"id":null}'), "missing key field 'id'"),
        (MappingSpec(key_field="a.b"), "jsonl", jl(b'{"a":3}'), "missing key field 'a.b'"),
        (MappingSpec(value_field="v"), "jsonl", jl(b"[1,2]"), "missing value field 'v'"),
        # JSON text UTF-8 cannot hold: a bad line, not a crash
        (MappingSpec(key_field="id"), "jsonl", jl(b'{"id":"a\\ud800"}'), "field 'id': a lone surrogate"),
        (MappingSpec(value_field="v"), "jsonl", jl(b'{"v":["\\udc00"]}'), "field 'v': a lone surrogate"),
        (
            MappingSpec(header_fields=(("h", "x"),)),
            "jsonl",
            jl(b'{"x":"\\udfff"}'),
            "field 'x': a lone surrogate",
        ),
        (MappingSpec(partition_field="p"), "jsonl", jl(b'{"p":"x"}'), "partition 'x' is not a number"),
        (MappingSpec(partition_field="p"), "jsonl", jl(b'{"p":-1}'), "partition -1 is negative"),
        (MappingSpec(timestamp_field="t"), "jsonl", jl(b'{"t":"yesterday"}'), "neither epoch ms"),
        (MappingSpec(), "csv", csv(["1", "2"]), "expected 4 CSV columns, got 2"),
        (MappingSpec(), "csv", Line(3, 0, 1, b"x", None, "bad CSV: not UTF-8"), "bad CSV: not UTF-8"),
    ],
)
def test_bad_records(spec, fmt, line, reason):
    m = Mapper(spec, fmt)
    if fmt == "csv":
        m.set_header(COLS)
    with pytest.raises(BadRecord, match=reason.replace("(", r"\(")):
        m.map(line)


@pytest.mark.parametrize(
    "spec, fmt, message",
    [
        (MappingSpec(key_field="id"), "lines", "--key-field needs JSON or CSV input"),
        (MappingSpec(value_as_json=True), "jsonl", "--value-as-json needs CSV input"),
        (MappingSpec(value_as_json=True, value_field="x"), "csv", "exclude each other"),
    ],
)
def test_usage_errors(spec, fmt, message):
    with pytest.raises(UsageError, match=message):
        Mapper(spec, fmt)


def test_csv_unknown_column():
    m = Mapper(MappingSpec(key_field="nope"), "csv")
    with pytest.raises(UsageError, match="--key-field 'nope': no such CSV column"):
        m.set_header(COLS)


@pytest.mark.parametrize(
    "consts, fields, expected",
    [
        (["a=1", "b=x=y"], None, ((("a", "1"), ("b", "x=y")), ())),
        (None, ["src", "h=f.g"], ((), (("src", "src"), ("h", "f.g")))),
    ],
)
def test_header_options(consts, fields, expected):
    assert parse_header_options(consts, fields) == expected


@pytest.mark.parametrize("consts, fields", [(["novalue"], None), (["=v"], None), (None, ["h="])])
def test_header_options_bad(consts, fields):
    with pytest.raises(UsageError):
        parse_header_options(consts, fields)


@pytest.mark.parametrize(
    "value, ms",
    [
        (1700000000000, 1700000000000),
        ("1700000000000", 1700000000000),
        ("2024-01-01T01:00:00+01:00", 1704067200000),
        ("2024-01-01 00:00:00", 1704067200000),
    ],
)
def test_parse_timestamp(value, ms):
    assert parse_timestamp(value) == ms
