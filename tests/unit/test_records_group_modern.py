"""__consumer_offsets types 3-23 (KIP-848 consumer, share and streams groups; spec 4.3-4.6).

Each case builds one value layout with the test-side encoder, including the tags of later releases
and the incompatible older v0 bodies (3.7 consumer-group early access, 4.0 share groups)."""

import pytest

from kxtx.records import decode
from tests.unit import record_encoder as e

TOPIC = "__consumer_offsets"
T1, T2 = bytes(range(16)), bytes(range(16, 32))
U1, U2 = e.uuid_text(T1), e.uuid_text(T2)
C, CA, T = e.cstring, e.carray, e.tags


def gk(t):
    return e.key(t, e.string("grp"))


def mk(t):
    return e.key(t, e.string("grp"), e.string("mem"))


def tp(uuid, parts, tagged=None):
    return e.uuid(uuid) + CA([e.i32(p) for p in parts]) + T(tagged)


def tasks(sub, parts, tagged=None):
    return C(sub) + CA([e.i32(p) for p in parts]) + T(tagged)


def topic_meta(uuid, name, n):
    return e.uuid(uuid) + C(name) + e.i32(n) + CA([e.i32(0) + CA([C("r1")]) + T()]) + T()


TOPIC_META_OUT = {
    "topic_id": U1,
    "topic_name": "orders",
    "num_partitions": 3,
    "partition_metadata": [{"partition": 0, "racks": ["r1"]}],
}
TP_OUT = {"topic_id": U1, "partitions": [0, 1]}
TP_EPOCHS_OUT = {**TP_OUT, "assignment_epochs": None}
STREAMS_TOPIC = C("chg") + e.i32(4) + e.i16(3) + CA([C("cleanup.policy") + C("compact") + T()]) + T()
STREAMS_TOPIC_OUT = {
    "name": "chg",
    "partitions": 4,
    "replication_factor": 3,
    "topic_configs": [{"key": "cleanup.policy", "value": "compact"}],
}
CLASSIC = e.i32(45000) + CA([C("range") + e.cbytes(b"\x00\x01") + T()]) + T()
MEMBER_BASE = (
    e.cnstring("inst")
    + e.cnstring(None)
    + C("cid")
    + C("/h")
    + CA([C("orders")])
    + e.cnstring(None)
    + e.i32(300000)
    + e.cnstring("uniform")
)
MEMBER_OUT = {
    "instance_id": "inst",
    "rack_id": None,
    "client_id": "cid",
    "client_host": "/h",
    "subscribed_topic_names": ["orders"],
    "subscribed_topic_regex": None,
    "rebalance_timeout_ms": 300000,
    "server_assignor": "uniform",
}

CASES = [
    # (id, key, value body (v0), expected type name, expected value, era note or None)
    ("cg-meta-3.7", gk(3), e.i32(7) + T(), "ConsumerGroupMetadata", {"epoch": 7, "metadata_hash": 0}, None),
    (
        "cg-meta-4.1",
        gk(3),
        e.i32(7) + T({0: e.i64(0x0102030405060708)}),
        "ConsumerGroupMetadata",
        {"epoch": 7, "metadata_hash": 0x0102030405060708},
        None,
    ),
    (
        "cg-partmeta-3.8",
        gk(4),
        CA([topic_meta(T1, "orders", 3)]) + T(),
        "ConsumerGroupPartitionMetadata",
        {"topics": [TOPIC_META_OUT]},
        None,
    ),
    (
        "cg-partmeta-3.7",
        gk(4),
        e.i32(5) + CA([topic_meta(T1, "orders", 3)]) + T(),
        "ConsumerGroupPartitionMetadata",
        {"epoch": 5, "topics": [TOPIC_META_OUT]},
        "3.7",
    ),
    (
        "cg-member-3.8",
        mk(5),
        MEMBER_BASE + T(),
        "ConsumerGroupMemberMetadata",
        {**MEMBER_OUT, "classic_member_metadata": None},
        None,
    ),
    (
        "cg-member-classic",
        mk(5),
        MEMBER_BASE + T({0: e.tagged_struct(CLASSIC)}),
        "ConsumerGroupMemberMetadata",
        {
            **MEMBER_OUT,
            "classic_member_metadata": {
                "session_timeout_ms": 45000,
                "supported_protocols": [{"name": "range", "metadata": b"\x00\x01"}],
            },
        },
        None,
    ),
    (
        "cg-member-3.7",
        mk(5),
        MEMBER_BASE
        + CA([C("uniform") + e.i16(0) + e.i16(1) + e.i8(0) + e.i16(1) + e.cbytes(b"x") + T()])
        + T(),
        "ConsumerGroupMemberMetadata",
        {
            **MEMBER_OUT,
            "assignors": [
                {
                    "name": "uniform",
                    "minimum_version": 0,
                    "maximum_version": 1,
                    "reason": 0,
                    "version": 1,
                    "metadata": b"x",
                }
            ],
        },
        "3.7",
    ),
    (
        "cg-target-meta",
        gk(6),
        e.i32(4) + T(),
        "ConsumerGroupTargetAssignmentMetadata",
        {"assignment_epoch": 4, "assignment_timestamp": 0, "assignment_time": e.iso(0)},
        None,
    ),
    (
        "cg-target-meta-4.3",
        gk(6),
        e.i32(4) + T({0: e.i64(1700)}),
        "ConsumerGroupTargetAssignmentMetadata",
        {"assignment_epoch": 4, "assignment_timestamp": 1700, "assignment_time": e.iso(1700)},
        None,
    ),
    (
        "cg-target-member",
        mk(7),
        CA([tp(T1, [0, 1])]) + T(),
        "ConsumerGroupTargetAssignmentMember",
        {"topic_partitions": [TP_OUT]},
        None,
    ),
    (
        "cg-target-member-3.7",
        mk(7),
        e.i8(0) + CA([tp(T1, [0, 1])]) + e.i16(1) + e.cbytes(b"") + T(),
        "ConsumerGroupTargetAssignmentMember",
        {"error": 0, "topic_partitions": [TP_OUT], "metadata_version": 1, "metadata_bytes": b""},
        "3.7",
    ),
    (
        "cg-current",
        mk(8),
        e.i32(5) + e.i32(4) + e.i8(1) + CA([tp(T1, [0, 1])]) + CA([]) + T(),
        "ConsumerGroupCurrentMemberAssignment",
        {
            "member_epoch": 5,
            "previous_member_epoch": 4,
            "state": 1,
            "state_name": "UNREVOKED_PARTITIONS",
            "assigned_partitions": [TP_EPOCHS_OUT],
            "partitions_pending_revocation": [],
        },
        None,
    ),
    (
        "cg-current-4.3",
        mk(8),
        e.i32(5)
        + e.i32(4)
        + e.i8(0)
        + CA([tp(T1, [0, 1], {0: e.cnarray([e.i32(3), e.i32(5)])})])
        + CA([tp(T2, [2])])
        + T(),
        "ConsumerGroupCurrentMemberAssignment",
        {
            "member_epoch": 5,
            "previous_member_epoch": 4,
            "state": 0,
            "state_name": "STABLE",
            "assigned_partitions": [{**TP_OUT, "assignment_epochs": [3, 5]}],
            "partitions_pending_revocation": [{"topic_id": U2, "partitions": [2], "assignment_epochs": None}],
        },
        None,
    ),
    (
        "cg-current-3.7",
        mk(8),
        e.i32(5)
        + e.i32(4)
        + e.i32(6)
        + CA([tp(T1, [0, 1])])
        + CA([])
        + CA([tp(T2, [2])])
        + e.i8(0)
        + e.i16(1)
        + e.cbytes(b"")
        + T(),
        "ConsumerGroupCurrentMemberAssignment",
        {
            "member_epoch": 5,
            "previous_member_epoch": 4,
            "target_member_epoch": 6,
            "assigned_partitions": [TP_OUT],
            "partitions_pending_revocation": [],
            "partitions_pending_assignment": [{"topic_id": U2, "partitions": [2]}],
            "error": 0,
            "metadata_version": 1,
            "metadata_bytes": b"",
        },
        "3.7",
    ),
    (
        "share-partmeta-4.0",
        gk(9),
        CA([topic_meta(T1, "orders", 3)]) + T(),
        "ShareGroupPartitionMetadata",
        {"topics": [TOPIC_META_OUT]},
        "4.0",
    ),
    (
        "share-member",
        mk(10),
        e.cnstring("rack") + C("cid") + C("/h") + CA([C("a"), C("b")]) + T(),
        "ShareGroupMemberMetadata",
        {"rack_id": "rack", "client_id": "cid", "client_host": "/h", "subscribed_topic_names": ["a", "b"]},
        None,
    ),
    (
        "share-meta-4.1",
        gk(11),
        e.i32(3) + e.i64(99) + T(),
        "ShareGroupMetadata",
        {"epoch": 3, "metadata_hash": 99},
        None,
    ),
    ("share-meta-4.0", gk(11), e.i32(3) + T(), "ShareGroupMetadata", {"epoch": 3}, "4.0"),
    (
        "share-target-meta",
        gk(12),
        e.i32(2) + T({0: e.i64(5)}),
        "ShareGroupTargetAssignmentMetadata",
        {"assignment_epoch": 2, "assignment_timestamp": 5, "assignment_time": e.iso(5)},
        None,
    ),
    (
        "share-target-member",
        mk(13),
        CA([tp(T1, [0, 1])]) + T(),
        "ShareGroupTargetAssignmentMember",
        {"topic_partitions": [TP_OUT]},
        None,
    ),
    (
        "share-current",
        mk(14),
        e.i32(2) + e.i32(1) + e.i8(2) + CA([tp(T1, [0, 1])]) + T(),
        "ShareGroupCurrentMemberAssignment",
        {
            "member_epoch": 2,
            "previous_member_epoch": 1,
            "state": 2,
            "state_name": "UNRELEASED_PARTITIONS",
            "assigned_partitions": [TP_OUT],
        },
        None,
    ),
    (
        "share-state-4.1",
        gk(15),
        CA([e.uuid(T1) + C("orders") + CA([e.i32(0)]) + T()])
        + CA([])
        + CA([e.uuid(T2) + C("old") + T()])
        + T(),
        "ShareGroupStatePartitionMetadata",
        {
            "initializing_topics": [{"topic_id": U1, "topic_name": "orders", "partitions": [0]}],
            "initialized_topics": [],
            "deleting_topics": [{"topic_id": U2, "topic_name": "old"}],
        },
        None,
    ),
    (
        "share-state-4.0",
        gk(15),
        CA([e.uuid(T1) + C("orders") + CA([e.i32(0), e.i32(1)]) + T()]) + CA([]) + T(),
        "ShareGroupStatePartitionMetadata",
        {
            "initialized_topics": [{"topic_id": U1, "topic_name": "orders", "partitions": [0, 1]}],
            "deleting_topics": [],
        },
        "4.0",
    ),
    (
        "cg-regex",
        e.key(16, e.string("grp"), e.string("orders.*")),
        CA([C("orders"), C("orders-eu")]) + e.i64(12) + e.i64(1700) + T(),
        "ConsumerGroupRegularExpression",
        {"topics": ["orders", "orders-eu"], "version": 12, "timestamp": 1700, "time": e.iso(1700)},
        None,
    ),
    (
        "streams-meta-4.1",
        gk(17),
        e.i32(3) + e.i64(7) + T(),
        "StreamsGroupMetadata",
        {
            "epoch": 3,
            "metadata_hash": 7,
            "validated_topology_epoch": -1,
            "last_assignment_configs": None,
            "stored_description_topology_epoch": -1,
            "failed_description_topology_epoch": -1,
        },
        None,
    ),
    (
        "streams-meta-4.4",
        gk(17),
        e.i32(3)
        + e.i64(7)
        + T({0: e.i32(2), 1: e.cnarray([C("num.standby") + C("1") + T()]), 2: e.i32(5), 3: e.i32(6)}),
        "StreamsGroupMetadata",
        {
            "epoch": 3,
            "metadata_hash": 7,
            "validated_topology_epoch": 2,
            "last_assignment_configs": [{"key": "num.standby", "value": "1"}],
            "stored_description_topology_epoch": 5,
            "failed_description_topology_epoch": 6,
        },
        None,
    ),
    (
        "streams-member",
        mk(19),
        e.cnstring(None)
        + e.cnstring("r")
        + C("cid")
        + C("/h")
        + e.i32(1000)
        + e.i32(2)
        + C("proc")
        + e.i8(1)
        + C("host")
        + e.u16(65535)
        + T()
        + CA([C("k") + C("v") + T()])
        + T(),
        "StreamsGroupMemberMetadata",
        {
            "instance_id": None,
            "rack_id": "r",
            "client_id": "cid",
            "client_host": "/h",
            "rebalance_timeout_ms": 1000,
            "topology_epoch": 2,
            "process_id": "proc",
            "user_endpoint": {"host": "host", "port": 65535},
            "client_tags": [{"key": "k", "value": "v"}],
        },
        None,
    ),
    (
        "streams-member-no-endpoint",
        mk(19),
        e.cnstring(None)
        + e.cnstring(None)
        + C("cid")
        + C("/h")
        + e.i32(1)
        + e.i32(2)
        + C("p")
        + e.i8(-1)
        + CA([])
        + T(),
        "StreamsGroupMemberMetadata",
        {
            "instance_id": None,
            "rack_id": None,
            "client_id": "cid",
            "client_host": "/h",
            "rebalance_timeout_ms": 1,
            "topology_epoch": 2,
            "process_id": "p",
            "user_endpoint": None,
            "client_tags": [],
        },
        None,
    ),
    (
        "streams-target-meta",
        gk(20),
        e.i32(8) + T(),
        "StreamsGroupTargetAssignmentMetadata",
        {"assignment_epoch": 8, "assignment_timestamp": 0, "assignment_time": e.iso(0)},
        None,
    ),
    (
        "streams-target-member",
        mk(21),
        CA([tasks("0", [0, 1])]) + CA([]) + CA([tasks("1", [2])]) + T(),
        "StreamsGroupTargetAssignmentMember",
        {
            "active_tasks": [{"subtopology_id": "0", "partitions": [0, 1]}],
            "standby_tasks": [],
            "warmup_tasks": [{"subtopology_id": "1", "partitions": [2]}],
        },
        None,
    ),
    (
        "streams-current",
        mk(22),
        e.i32(4)
        + e.i32(3)
        + e.i8(1)
        + CA([tasks("0", [0], {0: e.cnarray([e.i32(4)])})])
        + CA([])
        + CA([])
        + CA([tasks("1", [1])])
        + CA([])
        + CA([])
        + T(),
        "StreamsGroupCurrentMemberAssignment",
        {
            "member_epoch": 4,
            "previous_member_epoch": 3,
            "state": 1,
            "state_name": "STABLE",
            "active_tasks": [{"subtopology_id": "0", "partitions": [0], "assignment_epochs": [4]}],
            "standby_tasks": [],
            "warmup_tasks": [],
            "active_tasks_pending_revocation": [
                {"subtopology_id": "1", "partitions": [1], "assignment_epochs": None}
            ],
            "standby_tasks_pending_revocation": [],
            "warmup_tasks_pending_revocation": [],
        },
        None,
    ),
    (
        "streams-topology",
        gk(23),
        e.i32(2)
        + CA(
            [
                C("0")
                + CA([C("in")])
                + CA([])
                + CA([STREAMS_TOPIC])
                + CA([C("rep")])
                + CA([STREAMS_TOPIC])
                + CA([CA([e.i16(0)]) + CA([]) + CA([e.i16(0)]) + T()])
                + T()
            ]
        )
        + T(),
        "StreamsGroupTopology",
        {
            "epoch": 2,
            "subtopologies": [
                {
                    "subtopology_id": "0",
                    "source_topics": ["in"],
                    "source_topic_regex": [],
                    "state_changelog_topics": [STREAMS_TOPIC_OUT],
                    "repartition_sink_topics": ["rep"],
                    "repartition_source_topics": [STREAMS_TOPIC_OUT],
                    "copartition_groups": [
                        {"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": [0]}
                    ],
                }
            ],
        },
        None,
    ),
]


@pytest.mark.parametrize("key, body, name, expected, era", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_modern_record_round_trip(key, body, name, expected, era):
    rec = decode(TOPIC, key, e.value(0, body))
    assert rec.type == name and rec.version == 0 and rec.problem is None
    assert rec.value == expected
    assert rec.notes == ([f"decoded with the {era} layout"] if era else [])


@pytest.mark.parametrize("t", [3, 4, 6, 9, 11, 12, 15, 17, 20, 23])
def test_group_keyed_tombstones(t):
    rec = decode(TOPIC, gk(t), None)
    assert rec.tombstone and rec.key == {"group_id": "grp"}


@pytest.mark.parametrize("t", [5, 7, 8, 10, 13, 14, 19, 21, 22])
def test_member_keyed_tombstones(t):
    rec = decode(TOPIC, mk(t), None)
    assert rec.tombstone and rec.key == {"group_id": "grp", "member_id": "mem"}


def test_spec_worked_example_consumer_group_metadata():
    rec = decode(TOPIC, bytes.fromhex("0003000167"), bytes.fromhex("0000000000070100080102030405060708"))
    assert rec.key == {"group_id": "g"} and rec.value == {"epoch": 7, "metadata_hash": 0x0102030405060708}


@pytest.mark.parametrize(
    "key, value, problem",
    [
        (gk(18), e.value(0, e.i32(1) + T()), "__consumer_offsets:type:18"),  # never released
        (gk(24), e.value(0, T()), "__consumer_offsets:type:24"),
        (gk(-2), None, "__consumer_offsets:type:-2"),
        (gk(3), e.value(1, e.i32(1) + T()), "__consumer_offsets:ConsumerGroupMetadata:v1"),
        (gk(3), e.value(0, e.i32(1)), "__consumer_offsets:ConsumerGroupMetadata:v0:bad"),  # no tag section
        (gk(11), e.value(0, e.i32(3) + e.i32(0) + T()), "__consumer_offsets:ShareGroupMetadata:v0:bad"),
        (e.key(1, e.string("g")), e.value(3, b""), "__consumer_offsets:OffsetCommit:bad-key"),
        (
            e.key(1, e.string("g"), e.string("t"), e.i32(0)),
            e.value(5, b""),
            "__consumer_offsets:OffsetCommit:v5",
        ),
    ],
)
def test_unknown_or_bad_records_keep_raw_bytes(key, value, problem):
    rec = decode(TOPIC, key, value)
    assert rec.problem == problem and rec.notes
    assert rec.raw_key == key.hex() or rec.key is not None
    if value is not None and rec.value is None:
        assert rec.raw_value == value.hex()


def test_unknown_tag_in_nested_struct_is_kept():
    body = e.i32(5) + e.i32(4) + e.i8(0) + CA([tp(T1, [0], {7: b"\x01"})]) + CA([]) + T({5: b"zz"})
    rec = decode(TOPIC, mk(8), e.value(0, body))
    assert rec.problem is None
    assert rec.value["assigned_partitions"][0]["_unknown_tags"] == {"7": "01"}
    assert rec.value["_unknown_tags"] == {"5": "7a7a"}


def _names(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _names(v)
    elif isinstance(value, list):
        for v in value:
            yield from _names(v)


def test_every_decoded_name_is_snake_case():
    """One naming convention in all kxtx output: the decoders rename Kafka's camelCase schema fields."""
    import re

    for _id, key, body, _name, _expected, _era in CASES:
        rec = decode(TOPIC, key, e.value(0, body))
        bad = [
            n
            for n in _names({"key": rec.key, "value": rec.value})
            if not re.fullmatch(r"_?[a-z0-9]+(_[a-z0-9]+)*", n)
        ]
        assert not bad, (rec.type, bad)
