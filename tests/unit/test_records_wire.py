"""Primitive encodings (spec 1), the partition formula (spec 6) and control records (spec 7)."""

import pytest

from kxtx.records import wire
from kxtx.records.control import decode_control
from kxtx.records.partitioner import java_string_hash, kafka_abs, partition_for
from tests.unit import record_encoder as e


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16383, 16384, 2**31 - 1, 2**32 - 1, 2**35])
def test_uvarint_round_trip(n):
    raw = e.uvarint(n) + b"tail"
    assert wire.read_uvarint(raw, 0) == (n, len(raw) - 4)


@pytest.mark.parametrize(
    "reader, raw, expected",
    [
        (wire.read_int8, e.i8(-128), -128),
        (wire.read_int16, e.i16(-2), -2),
        (wire.read_uint16, e.u16(65535), 65535),
        (wire.read_int32, e.i32(-(2**31)), -(2**31)),
        (wire.read_int64, e.i64(2**63 - 1), 2**63 - 1),
        (wire.read_bool, b"\x02", True),
        (wire.read_bool, b"\x00", False),
        (wire.read_string, e.string("héllo"), "héllo"),
        (wire.read_nullable_string, e.nstring(None), None),
        (wire.read_compact_string, e.cstring(""), ""),
        (wire.read_compact_nullable_string, e.cnstring(None), None),
        (wire.read_compact_nullable_string, e.cnstring("x" * 200), "x" * 200),  # 2-byte varint length
        (wire.read_bytes, e.bytes_(b"\x00\xff"), b"\x00\xff"),
        (wire.read_nullable_bytes, e.nbytes(None), None),
        (wire.read_compact_bytes, e.cbytes(b""), b""),
        (wire.read_compact_nullable_bytes, b"\x00", None),
        (wire.read_uuid, bytes(16), wire.ZERO_UUID),
        (wire.read_uuid, bytes.fromhex("00112233445566778899aabbccddeeff"), "ABEiM0RVZneImaq7zN3u_w"),
    ],
)
def test_primitives(reader, raw, expected):
    assert reader(raw, 0) == (expected, len(raw))


@pytest.mark.parametrize(
    "reader, raw",
    [
        (wire.read_int32, b"\x00\x00"),
        (wire.read_string, e.i16(5) + b"ab"),
        (wire.read_string, e.i16(-1)),  # null where a string is required
        (wire.read_bytes, e.i32(-5)),
        (wire.read_uvarint, b"\x80\x80"),
        (wire.read_uvarint, b"\xff" * 10),
        (wire.read_uuid, bytes(15)),
        (wire.read_compact_string, b"\x00"),  # compact null where a string is required
    ],
)
def test_malformed_primitives_raise_decode_error(reader, raw):
    with pytest.raises(wire.DecodeError):
        reader(raw, 0)


def test_arrays_and_tag_sections():
    arr = wire.compile_reader(wire.Array("int32"), True)
    assert arr(e.carray([e.i32(1), e.i32(2)]), 0)[0] == [1, 2]
    narr = wire.compile_reader(wire.NullableArray("int32"), False)
    assert narr(e.narray(None), 0) == (None, 4)
    with pytest.raises(wire.DecodeError):
        wire.compile_reader(wire.Array("int32"), False)(e.narray(None), 0)
    with pytest.raises(wire.DecodeError):  # count far beyond the bytes left
        arr(e.uvarint(1000), 0)
    section = e.tags({0: b"a", 300: b"bc"})
    assert wire.read_tag_section(section, 0) == ([(0, b"a"), (300, b"bc")], len(section))


def test_tagged_nullable_struct_presence():
    inner = wire.Struct("S", (("x", "int32"),))
    outer = wire.Struct("O", (), tags=(wire.Tagged(0, "s", wire.NullableStruct(inner), None),))
    present = e.tags({0: e.tagged_struct(e.i32(9) + e.tags())})
    assert wire.decode_exact(outer, True, present) == {"s": {"x": 9}}
    assert wire.decode_exact(outer, True, e.tags({0: b"\x00"})) == {"s": None}
    assert wire.decode_exact(outer, True, e.tags()) == {"s": None}


# --- partition formula ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "coordinator_key, java_hash, partition",
    [
        # Java's String.hashCode is Integer.MIN_VALUE for these: Kafka's Utils.abs maps it to 0.
        ("polygenelubricants", -(2**31), 0),
        ("kxtx-txn-71970-a8k", -(2**31), 0),  # found by kxtx's own search, checked with Java
        ("my-group", -1906497762, 12),
        ("console-consumer-12345", 158455506, 6),
        ("txn-1", 110810510, 10),
        ("grüße-😀", 347391577, 27),  # non-BMP character: two UTF-16 code units (checked with Java)
        ("", 0, 0),
    ],
)
def test_partition_for_matches_java(coordinator_key, java_hash, partition):
    assert java_string_hash(coordinator_key) == java_hash
    assert partition_for(coordinator_key, 50) == partition


def test_kafka_abs_differs_from_python_abs_only_at_min_value():
    assert kafka_abs(-(2**31)) == 0 and abs(-(2**31)) % 50 == 48
    assert kafka_abs(-5) == 5 and kafka_abs(7) == 7
    assert partition_for("polygenelubricants", 1) == 0
    with pytest.raises(ValueError):
        partition_for("x", 0)


# --- control records -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key, value, expected",
    [
        (
            bytes.fromhex("00000001"),
            bytes.fromhex("000000000007"),
            {"key_version": 0, "type_code": 1, "type": "COMMIT", "value_version": 0, "coordinator_epoch": 7},
        ),
        (
            e.i16(0) + e.i16(0),
            e.i16(0) + e.i32(123),
            {"key_version": 0, "type_code": 0, "type": "ABORT", "value_version": 0, "coordinator_epoch": 123},
        ),
        (
            e.i16(3) + e.i16(1),
            e.i16(0) + e.i32(1),  # newer key version: read as the highest known
            {"key_version": 3, "type_code": 1, "type": "COMMIT", "value_version": 0, "coordinator_epoch": 1},
        ),
        (
            e.i16(0) + e.i16(2),
            b"\x00\x01",
            {"key_version": 0, "type_code": 2, "type": "LEADER_CHANGE", "raw_value": "0001"},
        ),
        (e.i16(0) + e.i16(6), None, {"key_version": 0, "type_code": 6, "type": "KRAFT_VOTERS"}),
        (e.i16(0) + e.i16(42), None, {"key_version": 0, "type_code": 42, "type": "UNKNOWN"}),
    ],
)
def test_control_records(key, value, expected):
    assert decode_control(key, value) == expected


@pytest.mark.parametrize(
    "key, value", [(b"\x00\x00", None), (e.i16(-1) + e.i16(1), None), (e.i16(0) + e.i16(1), b"\x00")]
)
def test_bad_control_records_do_not_raise(key, value):
    assert "note" in decode_control(key, value)


@pytest.mark.parametrize(
    "ms", [1, 999, 1000, 1700000000000, 1700000000999, 1763923405123, 4102444800000, 253402300799000]
)
def test_iso_time_agrees_with_datetime(ms):
    from kxtx.timefmt import iso_ms
    from tests.unit.record_encoder import iso

    assert iso_ms(ms) == iso(ms)
    assert iso_ms(ms) == iso_ms(ms)  # cached second, same text


@pytest.mark.parametrize("ms", [None, -1, 0, 253402300800000, 2**62])
def test_no_time_for_kafkas_none_values_and_nonsense(ms):
    from kxtx.timefmt import iso_ms

    assert iso_ms(ms) is None


@pytest.mark.parametrize(
    "camel, snake_name",
    [
        ("transactionalId", "transactional_id"),
        ("partitionIds", "partition_ids"),
        ("topicId", "topic_id"),
        ("transactionStartTimestampMs", "transaction_start_timestamp_ms"),
        ("group", "group"),
        ("snake_already", "snake_already"),
    ],
)
def test_field_names_are_snake_case(camel, snake_name):
    from kxtx.records.wire import snake

    assert snake(camel) == snake_name
