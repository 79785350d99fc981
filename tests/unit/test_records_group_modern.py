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


TOPIC_META_OUT = {"topicId": U1, "topicName": "orders", "numPartitions": 3,
                  "partitionMetadata": [{"partition": 0, "racks": ["r1"]}]}
TP_OUT = {"topicId": U1, "partitions": [0, 1]}
TP_EPOCHS_OUT = {**TP_OUT, "assignmentEpochs": None}
STREAMS_TOPIC = C("chg") + e.i32(4) + e.i16(3) + CA([C("cleanup.policy") + C("compact") + T()]) + T()
STREAMS_TOPIC_OUT = {"name": "chg", "partitions": 4, "replicationFactor": 3,
                     "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}]}
CLASSIC = e.i32(45000) + CA([C("range") + e.cbytes(b"\x00\x01") + T()]) + T()
MEMBER_BASE = (e.cnstring("inst") + e.cnstring(None) + C("cid") + C("/h") + CA([C("orders")])
               + e.cnstring(None) + e.i32(300000) + e.cnstring("uniform"))
MEMBER_OUT = {"instanceId": "inst", "rackId": None, "clientId": "cid", "clientHost": "/h",
              "subscribedTopicNames": ["orders"], "subscribedTopicRegex": None,
              "rebalanceTimeoutMs": 300000, "serverAssignor": "uniform"}

CASES = [
    # (id, key, value body (v0), expected type name, expected value, era note or None)
    ("cg-meta-3.7", gk(3), e.i32(7) + T(), "ConsumerGroupMetadata", {"epoch": 7, "metadataHash": 0}, None),
    ("cg-meta-4.1", gk(3), e.i32(7) + T({0: e.i64(0x0102030405060708)}), "ConsumerGroupMetadata",
     {"epoch": 7, "metadataHash": 0x0102030405060708}, None),
    ("cg-partmeta-3.8", gk(4), CA([topic_meta(T1, "orders", 3)]) + T(),
     "ConsumerGroupPartitionMetadata", {"topics": [TOPIC_META_OUT]}, None),
    ("cg-partmeta-3.7", gk(4), e.i32(5) + CA([topic_meta(T1, "orders", 3)]) + T(),
     "ConsumerGroupPartitionMetadata", {"epoch": 5, "topics": [TOPIC_META_OUT]}, "3.7"),
    ("cg-member-3.8", mk(5), MEMBER_BASE + T(), "ConsumerGroupMemberMetadata",
     {**MEMBER_OUT, "classicMemberMetadata": None}, None),
    ("cg-member-classic", mk(5), MEMBER_BASE + T({0: e.tagged_struct(CLASSIC)}),
     "ConsumerGroupMemberMetadata",
     {**MEMBER_OUT, "classicMemberMetadata": {
         "sessionTimeoutMs": 45000, "supportedProtocols": [{"name": "range", "metadata": b"\x00\x01"}]}},
     None),
    ("cg-member-3.7", mk(5),
     MEMBER_BASE + CA([C("uniform") + e.i16(0) + e.i16(1) + e.i8(0) + e.i16(1) + e.cbytes(b"x") + T()]) + T(),
     "ConsumerGroupMemberMetadata",
     {**MEMBER_OUT, "assignors": [{"name": "uniform", "minimumVersion": 0, "maximumVersion": 1,
                                   "reason": 0, "version": 1, "metadata": b"x"}]}, "3.7"),
    ("cg-target-meta", gk(6), e.i32(4) + T(), "ConsumerGroupTargetAssignmentMetadata",
     {"assignmentEpoch": 4, "assignmentTimestamp": 0}, None),
    ("cg-target-meta-4.3", gk(6), e.i32(4) + T({0: e.i64(1700)}), "ConsumerGroupTargetAssignmentMetadata",
     {"assignmentEpoch": 4, "assignmentTimestamp": 1700}, None),
    ("cg-target-member", mk(7), CA([tp(T1, [0, 1])]) + T(), "ConsumerGroupTargetAssignmentMember",
     {"topicPartitions": [TP_OUT]}, None),
    ("cg-target-member-3.7", mk(7), e.i8(0) + CA([tp(T1, [0, 1])]) + e.i16(1) + e.cbytes(b"") + T(),
     "ConsumerGroupTargetAssignmentMember",
     {"error": 0, "topicPartitions": [TP_OUT], "metadataVersion": 1, "metadataBytes": b""}, "3.7"),
    ("cg-current", mk(8), e.i32(5) + e.i32(4) + e.i8(1) + CA([tp(T1, [0, 1])]) + CA([]) + T(),
     "ConsumerGroupCurrentMemberAssignment",
     {"memberEpoch": 5, "previousMemberEpoch": 4, "state": 1, "stateName": "UNREVOKED_PARTITIONS",
      "assignedPartitions": [TP_EPOCHS_OUT], "partitionsPendingRevocation": []}, None),
    ("cg-current-4.3", mk(8),
     e.i32(5) + e.i32(4) + e.i8(0) + CA([tp(T1, [0, 1], {0: e.cnarray([e.i32(3), e.i32(5)])})])
     + CA([tp(T2, [2])]) + T(),
     "ConsumerGroupCurrentMemberAssignment",
     {"memberEpoch": 5, "previousMemberEpoch": 4, "state": 0, "stateName": "STABLE",
      "assignedPartitions": [{**TP_OUT, "assignmentEpochs": [3, 5]}],
      "partitionsPendingRevocation": [{"topicId": U2, "partitions": [2], "assignmentEpochs": None}]},
     None),
    ("cg-current-3.7", mk(8),
     e.i32(5) + e.i32(4) + e.i32(6) + CA([tp(T1, [0, 1])]) + CA([]) + CA([tp(T2, [2])]) + e.i8(0)
     + e.i16(1) + e.cbytes(b"") + T(),
     "ConsumerGroupCurrentMemberAssignment",
     {"memberEpoch": 5, "previousMemberEpoch": 4, "targetMemberEpoch": 6,
      "assignedPartitions": [TP_OUT], "partitionsPendingRevocation": [],
      "partitionsPendingAssignment": [{"topicId": U2, "partitions": [2]}], "error": 0,
      "metadataVersion": 1, "metadataBytes": b""}, "3.7"),
    ("share-partmeta-4.0", gk(9), CA([topic_meta(T1, "orders", 3)]) + T(), "ShareGroupPartitionMetadata",
     {"topics": [TOPIC_META_OUT]}, "4.0"),
    ("share-member", mk(10), e.cnstring("rack") + C("cid") + C("/h") + CA([C("a"), C("b")]) + T(),
     "ShareGroupMemberMetadata",
     {"rackId": "rack", "clientId": "cid", "clientHost": "/h", "subscribedTopicNames": ["a", "b"]}, None),
    ("share-meta-4.1", gk(11), e.i32(3) + e.i64(99) + T(), "ShareGroupMetadata",
     {"epoch": 3, "metadataHash": 99}, None),
    ("share-meta-4.0", gk(11), e.i32(3) + T(), "ShareGroupMetadata", {"epoch": 3}, "4.0"),
    ("share-target-meta", gk(12), e.i32(2) + T({0: e.i64(5)}), "ShareGroupTargetAssignmentMetadata",
     {"assignmentEpoch": 2, "assignmentTimestamp": 5}, None),
    ("share-target-member", mk(13), CA([tp(T1, [0, 1])]) + T(), "ShareGroupTargetAssignmentMember",
     {"topicPartitions": [TP_OUT]}, None),
    ("share-current", mk(14), e.i32(2) + e.i32(1) + e.i8(2) + CA([tp(T1, [0, 1])]) + T(),
     "ShareGroupCurrentMemberAssignment",
     {"memberEpoch": 2, "previousMemberEpoch": 1, "state": 2, "stateName": "UNRELEASED_PARTITIONS",
      "assignedPartitions": [TP_OUT]}, None),
    ("share-state-4.1", gk(15),
     CA([e.uuid(T1) + C("orders") + CA([e.i32(0)]) + T()]) + CA([]) + CA([e.uuid(T2) + C("old") + T()]) + T(),
     "ShareGroupStatePartitionMetadata",
     {"initializingTopics": [{"topicId": U1, "topicName": "orders", "partitions": [0]}],
      "initializedTopics": [], "deletingTopics": [{"topicId": U2, "topicName": "old"}]}, None),
    ("share-state-4.0", gk(15),
     CA([e.uuid(T1) + C("orders") + CA([e.i32(0), e.i32(1)]) + T()]) + CA([]) + T(),
     "ShareGroupStatePartitionMetadata",
     {"initializedTopics": [{"topicId": U1, "topicName": "orders", "partitions": [0, 1]}],
      "deletingTopics": []}, "4.0"),
    ("cg-regex", e.key(16, e.string("grp"), e.string("orders.*")),
     CA([C("orders"), C("orders-eu")]) + e.i64(12) + e.i64(1700) + T(), "ConsumerGroupRegularExpression",
     {"topics": ["orders", "orders-eu"], "version": 12, "timestamp": 1700}, None),
    ("streams-meta-4.1", gk(17), e.i32(3) + e.i64(7) + T(), "StreamsGroupMetadata",
     {"epoch": 3, "metadataHash": 7, "validatedTopologyEpoch": -1, "lastAssignmentConfigs": None,
      "storedDescriptionTopologyEpoch": -1, "failedDescriptionTopologyEpoch": -1}, None),
    ("streams-meta-4.4", gk(17),
     e.i32(3) + e.i64(7) + T({0: e.i32(2), 1: e.cnarray([C("num.standby") + C("1") + T()]),
                              2: e.i32(5), 3: e.i32(6)}),
     "StreamsGroupMetadata",
     {"epoch": 3, "metadataHash": 7, "validatedTopologyEpoch": 2,
      "lastAssignmentConfigs": [{"key": "num.standby", "value": "1"}],
      "storedDescriptionTopologyEpoch": 5, "failedDescriptionTopologyEpoch": 6}, None),
    ("streams-member", mk(19),
     e.cnstring(None) + e.cnstring("r") + C("cid") + C("/h") + e.i32(1000) + e.i32(2) + C("proc")
     + e.i8(1) + C("host") + e.u16(65535) + T() + CA([C("k") + C("v") + T()]) + T(),
     "StreamsGroupMemberMetadata",
     {"instanceId": None, "rackId": "r", "clientId": "cid", "clientHost": "/h", "rebalanceTimeoutMs": 1000,
      "topologyEpoch": 2, "processId": "proc", "userEndpoint": {"host": "host", "port": 65535},
      "clientTags": [{"key": "k", "value": "v"}]}, None),
    ("streams-member-no-endpoint", mk(19),
     e.cnstring(None) + e.cnstring(None) + C("cid") + C("/h") + e.i32(1) + e.i32(2) + C("p") + e.i8(-1)
     + CA([]) + T(),
     "StreamsGroupMemberMetadata",
     {"instanceId": None, "rackId": None, "clientId": "cid", "clientHost": "/h", "rebalanceTimeoutMs": 1,
      "topologyEpoch": 2, "processId": "p", "userEndpoint": None, "clientTags": []}, None),
    ("streams-target-meta", gk(20), e.i32(8) + T(), "StreamsGroupTargetAssignmentMetadata",
     {"assignmentEpoch": 8, "assignmentTimestamp": 0}, None),
    ("streams-target-member", mk(21), CA([tasks("0", [0, 1])]) + CA([]) + CA([tasks("1", [2])]) + T(),
     "StreamsGroupTargetAssignmentMember",
     {"activeTasks": [{"subtopologyId": "0", "partitions": [0, 1]}], "standbyTasks": [],
      "warmupTasks": [{"subtopologyId": "1", "partitions": [2]}]}, None),
    ("streams-current", mk(22),
     e.i32(4) + e.i32(3) + e.i8(1) + CA([tasks("0", [0], {0: e.cnarray([e.i32(4)])})])
     + CA([]) + CA([]) + CA([tasks("1", [1])]) + CA([]) + CA([]) + T(),
     "StreamsGroupCurrentMemberAssignment",
     {"memberEpoch": 4, "previousMemberEpoch": 3, "state": 1, "stateName": "STABLE",
      "activeTasks": [{"subtopologyId": "0", "partitions": [0], "assignmentEpochs": [4]}],
      "standbyTasks": [], "warmupTasks": [],
      "activeTasksPendingRevocation": [{"subtopologyId": "1", "partitions": [1], "assignmentEpochs": None}],
      "standbyTasksPendingRevocation": [], "warmupTasksPendingRevocation": []}, None),
    ("streams-topology", gk(23),
     e.i32(2) + CA([C("0") + CA([C("in")]) + CA([]) + CA([STREAMS_TOPIC]) + CA([C("rep")])
                    + CA([STREAMS_TOPIC]) + CA([CA([e.i16(0)]) + CA([]) + CA([e.i16(0)]) + T()]) + T()]) + T(),
     "StreamsGroupTopology",
     {"epoch": 2, "subtopologies": [{
         "subtopologyId": "0", "sourceTopics": ["in"], "sourceTopicRegex": [],
         "stateChangelogTopics": [STREAMS_TOPIC_OUT], "repartitionSinkTopics": ["rep"],
         "repartitionSourceTopics": [STREAMS_TOPIC_OUT],
         "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0]}]}]},
     None),
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
    assert rec.tombstone and rec.key == {"groupId": "grp"}


@pytest.mark.parametrize("t", [5, 7, 8, 10, 13, 14, 19, 21, 22])
def test_member_keyed_tombstones(t):
    rec = decode(TOPIC, mk(t), None)
    assert rec.tombstone and rec.key == {"groupId": "grp", "memberId": "mem"}


def test_spec_worked_example_consumer_group_metadata():
    rec = decode(TOPIC, bytes.fromhex("0003000167"), bytes.fromhex("0000" "00000007" "01" "00" "08" "0102030405060708"))
    assert rec.key == {"groupId": "g"} and rec.value == {"epoch": 7, "metadataHash": 0x0102030405060708}


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
        (e.key(1, e.string("g"), e.string("t"), e.i32(0)), e.value(5, b""), "__consumer_offsets:OffsetCommit:v5"),
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
    assert rec.value["assignedPartitions"][0]["_unknownTags"] == {"7": "01"}
    assert rec.value["_unknownTags"] == {"5": "7a7a"}
