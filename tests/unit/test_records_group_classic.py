"""__consumer_offsets classic records (types 0-2) and the consumer protocol (spec sections 4.2, 5)."""

import pytest

from kxtx.records import decode
from kxtx.records.consumer_protocol import decode_assignment, decode_subscription
from kxtx.records.wire import DecodeError
from tests.unit import record_encoder as e

TOPIC = "__consumer_offsets"
TID = bytes(range(16))


def _offset_key(prefix=1, group="g", topic="t", partition=0):
    return e.key(prefix, e.string(group), e.string(topic), e.i32(partition))


OFFSET_CASES = [
    # (version, value body, expected value)
    (
        0,
        e.i64(42) + e.string("m") + e.i64(1700),
        {"offset": 42, "metadata": "m", "commit_timestamp": 1700, "commit_time": e.iso(1700)},
    ),
    (
        1,
        e.i64(42) + e.string("") + e.i64(1700) + e.i64(-1),
        {
            "offset": 42,
            "metadata": "",
            "commit_timestamp": 1700,
            "commit_time": e.iso(1700),
            "expire_timestamp": -1,
            "expire_time": e.iso(-1),
        },
    ),
    (
        1,
        e.i64(0) + e.string("x") + e.i64(1) + e.i64(604800001),
        {
            "offset": 0,
            "metadata": "x",
            "commit_timestamp": 1,
            "commit_time": e.iso(1),
            "expire_timestamp": 604800001,
            "expire_time": e.iso(604800001),
        },
    ),
    (
        2,
        e.i64(42) + e.string("meta") + e.i64(1700),
        {"offset": 42, "metadata": "meta", "commit_timestamp": 1700, "commit_time": e.iso(1700)},
    ),
    (
        3,
        e.i64(42) + e.i32(5) + e.string("") + e.i64(1700000000000),
        {
            "offset": 42,
            "leader_epoch": 5,
            "metadata": "",
            "commit_timestamp": 1700000000000,
            "commit_time": e.iso(1700000000000),
        },
    ),
    (
        3,
        e.i64(-1) + e.i32(-1) + e.string("ü") + e.i64(0),
        {"offset": -1, "leader_epoch": -1, "metadata": "ü", "commit_timestamp": 0, "commit_time": e.iso(0)},
    ),
    (
        4,
        e.i64(42) + e.i32(5) + e.cstring("") + e.i64(1700) + e.tags(),
        {
            "offset": 42,
            "leader_epoch": 5,
            "metadata": "",
            "commit_timestamp": 1700,
            "commit_time": e.iso(1700),
            "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
        },
    ),
    (
        4,
        e.i64(42) + e.i32(5) + e.cstring("md") + e.i64(1700) + e.tags({0: e.uuid(TID)}),
        {
            "offset": 42,
            "leader_epoch": 5,
            "metadata": "md",
            "commit_timestamp": 1700,
            "commit_time": e.iso(1700),
            "topic_id": e.uuid_text(TID),
        },
    ),
]


@pytest.mark.parametrize("prefix", [0, 1])
@pytest.mark.parametrize("version, body, expected", OFFSET_CASES)
def test_offset_commit_round_trip(prefix, version, body, expected):
    rec = decode(TOPIC, _offset_key(prefix, "grp", "orders", 7), e.value(version, body))
    assert rec.type == ("LegacyOffsetCommit" if prefix == 0 else "OffsetCommit")
    assert rec.key == {"group": "grp", "topic": "orders", "partition": 7}
    assert (rec.version, rec.value, rec.notes) == (version, expected, [])


def test_spec_worked_example_offset_v4_topic_id():
    raw = bytes.fromhex(
        "0004000000000000002a00000005010000018bcfe5680001001000112233445566778899aabbccddeeff"
    )
    rec = decode(TOPIC, bytes.fromhex("000100016700017400000000"), raw)
    assert rec.value["offset"] == 42 and rec.value["topic_id"] == e.uuid_text(
        bytes.fromhex("00112233445566778899aabbccddeeff")
    )


def test_offset_tombstone():
    rec = decode(TOPIC, _offset_key(), None)
    assert rec.tombstone and rec.key == {"group": "g", "topic": "t", "partition": 0}


# --- GroupMetadataValue v0-v4 ---------------------------------------------------------------------------
SUB_V3 = e.i16(3) + e.array([e.string("orders")]) + e.nbytes(None) + e.array([]) + e.i32(5) + e.nstring(None)
ASSIGN_V3 = e.i16(3) + e.array([e.string("orders") + e.array([e.i32(0), e.i32(2)])]) + e.nbytes(None)
SUB_DECODED = {
    "version": 3,
    "topics": ["orders"],
    "user_data_size": None,
    "owned_partitions": [],
    "generation_id": 5,
    "rack_id": None,
}
ASSIGN_DECODED = {
    "version": 3,
    "assigned_partitions": [{"topic": "orders", "partitions": [0, 2]}],
    "user_data_size": None,
}


def _member(v, flexible, sub, assign, instance="inst-1"):
    s, ns, by = (e.cstring, e.cnstring, e.cbytes) if flexible else (e.string, e.nstring, e.bytes_)
    out = s("m-1")
    if v >= 3:
        out += ns(instance)
    out += s("client") + s("/10.0.0.1")
    if v >= 1:
        out += e.i32(300000)
    out += e.i32(45000) + by(sub) + by(assign)
    return out + (e.tags() if flexible else b"")


def _group_value(v, protocol_type="consumer", sub=SUB_V3, assign=ASSIGN_V3, members=1):
    flexible = v >= 4
    s, ns = (e.cstring, e.cnstring) if flexible else (e.string, e.nstring)
    arr = e.carray if flexible else e.array
    out = s(protocol_type) + e.i32(9) + ns("range") + ns("m-1")
    if v >= 2:
        out += e.i64(1700)
    out += arr([_member(v, flexible, sub, assign) for _ in range(members)])
    return e.value(v, out + (e.tags() if flexible else b""))


def _expected_member(v, sub, assign):
    m = {
        "member_id": "m-1",
        "client_id": "client",
        "client_host": "/10.0.0.1",
        "session_timeout": 45000,
        "subscription": sub,
        "assignment": assign,
    }
    if v >= 1:
        m["rebalance_timeout"] = 300000
    if v >= 3:
        m["group_instance_id"] = "inst-1"
    return m


@pytest.mark.parametrize("v", [0, 1, 2, 3, 4])
def test_group_metadata_round_trip_consumer_protocol(v):
    rec = decode(TOPIC, e.key(2, e.string("grp")), _group_value(v))
    assert rec.type == "GroupMetadata" and rec.key == {"group": "grp"} and rec.version == v
    assert rec.notes == []
    expected = {
        "protocol_type": "consumer",
        "generation": 9,
        "protocol": "range",
        "leader": "m-1",
        "members": [_expected_member(v, SUB_DECODED, ASSIGN_DECODED)],
    }
    if v >= 2:
        expected["current_state_timestamp"] = 1700
        expected["current_state_time"] = e.iso(1700)
    assert rec.value == expected


@pytest.mark.parametrize("v", [0, 3, 4])
def test_group_metadata_other_protocol_keeps_bytes(v):
    rec = decode(TOPIC, e.key(2, e.string("grp")), _group_value(v, "connect", b"\x01\x02", b""))
    assert rec.value["members"][0]["subscription"] == b"\x01\x02"
    assert rec.value["members"][0]["assignment"] == b""


def test_empty_group_is_not_a_tombstone():
    raw = e.value(
        3, e.string("consumer") + e.i32(10) + e.nstring(None) + e.nstring(None) + e.i64(5) + e.array([])
    )
    rec = decode(TOPIC, e.key(2, e.string("grp")), raw)
    assert not rec.tombstone and rec.value["members"] == [] and rec.value["protocol"] is None


def test_group_tombstone():
    rec = decode(TOPIC, e.key(2, e.string("grp")), None)
    assert rec.tombstone and rec.type == "GroupMetadata"


def test_bad_consumer_protocol_bytes_are_flagged_and_kept():
    rec = decode(TOPIC, e.key(2, e.string("grp")), _group_value(3, sub=b"\x00\x00\xff"))
    assert rec.value["members"][0]["subscription"] == b"\x00\x00\xff"
    assert rec.problem == "__consumer_offsets:consumer-protocol:subscription"


# --- ConsumerProtocolSubscription / Assignment v0-v3 (+ newer versions read as v3) ----------------------
OWNED = e.array([e.string("orders") + e.array([e.i32(1)])])


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"", None),
        (
            e.i16(0) + e.array([e.string("a"), e.string("b")]) + e.nbytes(b"xyz"),
            {"version": 0, "topics": ["a", "b"], "user_data_size": 3},
        ),
        (
            e.i16(1) + e.array([e.string("a")]) + e.nbytes(None) + OWNED,
            {
                "version": 1,
                "topics": ["a"],
                "user_data_size": None,
                "owned_partitions": [{"topic": "orders", "partitions": [1]}],
            },
        ),
        (
            e.i16(2) + e.array([e.string("a")]) + e.nbytes(b"") + OWNED + e.i32(-1),
            {
                "version": 2,
                "topics": ["a"],
                "user_data_size": 0,
                "owned_partitions": [{"topic": "orders", "partitions": [1]}],
                "generation_id": -1,
            },
        ),
        (SUB_V3, SUB_DECODED),
        (
            bytes.fromhex("0003 00000001 0006")
            + b"orders"
            + bytes.fromhex("ffffffff 00000000 00000005 ffff"),
            SUB_DECODED,
        ),
        (
            e.i16(3) + e.array([]) + e.nbytes(None) + e.array([]) + e.i32(1) + e.nstring("rack-a"),
            {
                "version": 3,
                "topics": [],
                "user_data_size": None,
                "owned_partitions": [],
                "generation_id": 1,
                "rack_id": "rack-a",
            },
        ),
        (
            e.i16(7) + SUB_V3[2:] + b"future-fields",  # above v3: parse as v3, ignore the rest
            {**SUB_DECODED, "version": 7},
        ),
    ],
)
def test_subscription(raw, expected):
    assert decode_subscription(raw) == expected


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_versions(version):
    raw = e.i16(version) + ASSIGN_V3[2:]
    assert decode_assignment(raw) == {**ASSIGN_DECODED, "version": version}


def test_assignment_spec_example_and_future_version():
    raw = (
        bytes.fromhex("0003 00000001 0006") + b"orders" + bytes.fromhex("00000002 00000000 00000002 ffffffff")
    )
    assert decode_assignment(raw) == ASSIGN_DECODED
    assert decode_assignment(e.i16(4) + raw[2:] + b"\x00")["assigned_partitions"] == [
        {"topic": "orders", "partitions": [0, 2]}
    ]
    assert decode_assignment(b"") is None
    assert decode_assignment(e.i16(0) + e.array([]) + e.nbytes(b"1234"))["user_data_size"] == 4


NULL_ARRAY = e.i32(-1)


@pytest.mark.parametrize(
    "decoder, raw, expected",
    [
        # a null array (count -1) is shown as [] at every level, never None or an error
        (
            decode_subscription,
            e.i16(1) + NULL_ARRAY + e.nbytes(None) + NULL_ARRAY,
            {"version": 1, "topics": [], "user_data_size": None, "owned_partitions": []},
        ),
        (
            decode_assignment,
            e.i16(0) + NULL_ARRAY + e.nbytes(b""),
            {"version": 0, "assigned_partitions": [], "user_data_size": 0},
        ),
        (
            decode_assignment,
            e.i16(3) + e.array([e.string("orders") + NULL_ARRAY]) + e.nbytes(None),
            {
                "version": 3,
                "assigned_partitions": [{"topic": "orders", "partitions": []}],
                "user_data_size": None,
            },
        ),
        # truncated: the count promises more elements than there are bytes left
        (
            decode_assignment,
            e.i16(3) + e.i32(9) + e.string("orders"),
            "array count 9 larger than the 8 bytes left",
        ),
        # truncated inside the partitions array of the only topic
        (decode_assignment, ASSIGN_V3[:-6], "truncated at byte 22: need 4 more"),
        # a negative version is no version: named with what was decoded
        (decode_subscription, e.i16(-1) + NULL_ARRAY + e.nbytes(None), "negative subscription version -1"),
        (decode_assignment, e.i16(-2) + NULL_ARRAY + e.nbytes(None), "negative assignment version -2"),
    ],
)
def test_consumer_protocol_null_and_truncated_arrays(decoder, raw, expected):
    if isinstance(expected, str):
        with pytest.raises(DecodeError, match=f"^{expected}$"):
            decoder(raw)
    else:
        assert decoder(raw) == expected
