"""Value layouts of the KIP-848 consumer, share and streams group records (types 3-23, spec 4.3-4.4).

All values are version 0 and flexible. Where a release changed a v0 body incompatibly (the spec's
warning cases) the newest layout is listed first and older ones follow with the era that wrote them;
`decode_value` accepts the first one that consumes every byte.
"""

from __future__ import annotations

from kxtx.records.wire import Array, Layouts, NullableArray, NullableStruct, Struct, Tagged

S, A = Struct, Array


def _v0(*candidates: tuple[Struct, str | None]) -> Layouts:
    lay = Layouts(flexible_from=0)
    for s, era in candidates:
        lay.add(0, s, era)
    return lay


# --- shared element structs ---------------------------------------------------------------------------
_TP = S("TopicPartition", (("topicId", "uuid"), ("partitions", A("int32"))))
_TP_EPOCHS = S(
    "TopicPartitions",
    (("topicId", "uuid"), ("partitions", A("int32"))),
    tags=(Tagged(0, "assignmentEpochs", NullableArray("int32"), None),),
)
_PART_META = S("PartitionMetadata", (("partition", "int32"), ("racks", A("string"))))
_TOPIC_META = S(
    "TopicMetadata",
    (
        ("topicId", "uuid"),
        ("topicName", "string"),
        ("numPartitions", "int32"),
        ("partitionMetadata", A(_PART_META)),
    ),
)
_TP_INFO = S(
    "TopicPartitionsInfo", (("topicId", "uuid"), ("topicName", "string"), ("partitions", A("int32")))
)
_TOPIC_INFO = S("TopicInfo", (("topicId", "uuid"), ("topicName", "string")))
_TASKS = S("TaskIds", (("subtopologyId", "string"), ("partitions", A("int32"))))
_TASKS_EPOCHS = S(
    "TaskIds",
    (("subtopologyId", "string"), ("partitions", A("int32"))),
    tags=(Tagged(0, "assignmentEpochs", NullableArray("int32"), None),),
)
_KV = S("KeyValue", (("key", "string"), ("value", "string")))
_ASSIGNMENT_TS = (Tagged(0, "assignmentTimestamp", "int64", 0),)

# --- consumer groups (KIP-848) --------------------------------------------------------------------------
CONSUMER_GROUP_METADATA = _v0(
    (
        S("ConsumerGroupMetadataValue", (("epoch", "int32"),), tags=(Tagged(0, "metadataHash", "int64", 0),)),
        None,
    )
)

CONSUMER_GROUP_PARTITION_METADATA = _v0(
    (S("ConsumerGroupPartitionMetadataValue", (("topics", A(_TOPIC_META)),)), None),
    (S("ConsumerGroupPartitionMetadataValue", (("epoch", "int32"), ("topics", A(_TOPIC_META)))), "3.7"),
)

_CLASSIC_PROTOCOL = S("ClassicProtocol", (("name", "string"), ("metadata", "bytes")))
_CLASSIC_MEMBER = S(
    "ClassicMemberMetadata", (("sessionTimeoutMs", "int32"), ("supportedProtocols", A(_CLASSIC_PROTOCOL)))
)
_MEMBER_COMMON = (
    ("instanceId", "nstring"),
    ("rackId", "nstring"),
    ("clientId", "string"),
    ("clientHost", "string"),
    ("subscribedTopicNames", A("string")),
    ("subscribedTopicRegex", "nstring"),
    ("rebalanceTimeoutMs", "int32"),
    ("serverAssignor", "nstring"),
)
_ASSIGNOR_37 = S(
    "Assignor",
    (
        ("name", "string"),
        ("minimumVersion", "int16"),
        ("maximumVersion", "int16"),
        ("reason", "int8"),
        ("version", "int16"),
        ("metadata", "bytes"),
    ),
)
CONSUMER_GROUP_MEMBER_METADATA = _v0(
    (
        S(
            "ConsumerGroupMemberMetadataValue",
            _MEMBER_COMMON,
            tags=(Tagged(0, "classicMemberMetadata", NullableStruct(_CLASSIC_MEMBER), None),),
        ),
        None,
    ),
    (S("ConsumerGroupMemberMetadataValue", _MEMBER_COMMON + (("assignors", A(_ASSIGNOR_37)),)), "3.7"),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = _v0(
    (
        S("ConsumerGroupTargetAssignmentMetadataValue", (("assignmentEpoch", "int32"),), tags=_ASSIGNMENT_TS),
        None,
    )
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = _v0(
    (S("ConsumerGroupTargetAssignmentMemberValue", (("topicPartitions", A(_TP)),)), None),
    (
        S(
            "ConsumerGroupTargetAssignmentMemberValue",
            (
                ("error", "int8"),
                ("topicPartitions", A(_TP)),
                ("metadataVersion", "int16"),
                ("metadataBytes", "bytes"),
            ),
        ),
        "3.7",
    ),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = _v0(
    (
        S(
            "ConsumerGroupCurrentMemberAssignmentValue",
            (
                ("memberEpoch", "int32"),
                ("previousMemberEpoch", "int32"),
                ("state", "int8"),
                ("assignedPartitions", A(_TP_EPOCHS)),
                ("partitionsPendingRevocation", A(_TP_EPOCHS)),
            ),
        ),
        None,
    ),
    (
        S(
            "ConsumerGroupCurrentMemberAssignmentValue",
            (
                ("memberEpoch", "int32"),
                ("previousMemberEpoch", "int32"),
                ("targetMemberEpoch", "int32"),
                ("assignedPartitions", A(_TP)),
                ("partitionsPendingRevocation", A(_TP)),
                ("partitionsPendingAssignment", A(_TP)),
                ("error", "int8"),
                ("metadataVersion", "int16"),
                ("metadataBytes", "bytes"),
            ),
        ),
        "3.7",
    ),
)

CONSUMER_GROUP_REGULAR_EXPRESSION = _v0(
    (
        S(
            "ConsumerGroupRegularExpressionValue",
            (("topics", A("string")), ("version", "int64"), ("timestamp", "int64")),
        ),
        None,
    )
)

# --- share groups ---------------------------------------------------------------------------------------
SHARE_GROUP_PARTITION_METADATA = _v0(
    (S("ShareGroupPartitionMetadataValue", (("topics", A(_TOPIC_META)),)), "4.0")
)

SHARE_GROUP_MEMBER_METADATA = _v0(
    (
        S(
            "ShareGroupMemberMetadataValue",
            (
                ("rackId", "nstring"),
                ("clientId", "string"),
                ("clientHost", "string"),
                ("subscribedTopicNames", A("string")),
            ),
        ),
        None,
    )
)

SHARE_GROUP_METADATA = _v0(
    (S("ShareGroupMetadataValue", (("epoch", "int32"), ("metadataHash", "int64"))), None),
    (S("ShareGroupMetadataValue", (("epoch", "int32"),)), "4.0"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = _v0(
    (S("ShareGroupTargetAssignmentMetadataValue", (("assignmentEpoch", "int32"),), tags=_ASSIGNMENT_TS), None)
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = _v0(
    (S("ShareGroupTargetAssignmentMemberValue", (("topicPartitions", A(_TP)),)), None)
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = _v0(
    (
        S(
            "ShareGroupCurrentMemberAssignmentValue",
            (
                ("memberEpoch", "int32"),
                ("previousMemberEpoch", "int32"),
                ("state", "int8"),
                ("assignedPartitions", A(_TP)),
            ),
        ),
        None,
    )
)

SHARE_GROUP_STATE_PARTITION_METADATA = _v0(
    (
        S(
            "ShareGroupStatePartitionMetadataValue",
            (
                ("initializingTopics", A(_TP_INFO)),
                ("initializedTopics", A(_TP_INFO)),
                ("deletingTopics", A(_TOPIC_INFO)),
            ),
        ),
        None,
    ),
    (
        S(
            "ShareGroupStatePartitionMetadataValue",
            (("initializedTopics", A(_TP_INFO)), ("deletingTopics", A(_TOPIC_INFO))),
        ),
        "4.0",
    ),
)

# --- streams groups (KIP-1071) --------------------------------------------------------------------------
STREAMS_GROUP_METADATA = _v0(
    (
        S(
            "StreamsGroupMetadataValue",
            (("epoch", "int32"), ("metadataHash", "int64")),
            tags=(
                Tagged(0, "validatedTopologyEpoch", "int32", -1),
                Tagged(1, "lastAssignmentConfigs", NullableArray(_KV), None),
                Tagged(2, "storedDescriptionTopologyEpoch", "int32", -1),
                Tagged(3, "failedDescriptionTopologyEpoch", "int32", -1),
            ),
        ),
        None,
    )
)

_ENDPOINT = S("Endpoint", (("host", "string"), ("port", "uint16")))
STREAMS_GROUP_MEMBER_METADATA = _v0(
    (
        S(
            "StreamsGroupMemberMetadataValue",
            (
                ("instanceId", "nstring"),
                ("rackId", "nstring"),
                ("clientId", "string"),
                ("clientHost", "string"),
                ("rebalanceTimeoutMs", "int32"),
                ("topologyEpoch", "int32"),
                ("processId", "string"),
                ("userEndpoint", NullableStruct(_ENDPOINT)),
                ("clientTags", A(_KV)),
            ),
        ),
        None,
    )
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = _v0(
    (
        S("StreamsGroupTargetAssignmentMetadataValue", (("assignmentEpoch", "int32"),), tags=_ASSIGNMENT_TS),
        None,
    )
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = _v0(
    (
        S(
            "StreamsGroupTargetAssignmentMemberValue",
            (("activeTasks", A(_TASKS)), ("standbyTasks", A(_TASKS)), ("warmupTasks", A(_TASKS))),
        ),
        None,
    )
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = _v0(
    (
        S(
            "StreamsGroupCurrentMemberAssignmentValue",
            (
                ("memberEpoch", "int32"),
                ("previousMemberEpoch", "int32"),
                ("state", "int8"),
                ("activeTasks", A(_TASKS_EPOCHS)),
                ("standbyTasks", A(_TASKS_EPOCHS)),
                ("warmupTasks", A(_TASKS_EPOCHS)),
                ("activeTasksPendingRevocation", A(_TASKS_EPOCHS)),
                ("standbyTasksPendingRevocation", A(_TASKS_EPOCHS)),
                ("warmupTasksPendingRevocation", A(_TASKS_EPOCHS)),
            ),
        ),
        None,
    )
)

_TOPIC_CONFIG = S("TopicConfig", (("key", "string"), ("value", "string")))
_STREAMS_TOPIC = S(
    "TopicInfo",
    (
        ("name", "string"),
        ("partitions", "int32"),
        ("replicationFactor", "int16"),
        ("topicConfigs", A(_TOPIC_CONFIG)),
    ),
)
_COPARTITION = S(
    "CopartitionGroup",
    (("sourceTopics", A("int16")), ("sourceTopicRegex", A("int16")), ("repartitionSourceTopics", A("int16"))),
)
_SUBTOPOLOGY = S(
    "Subtopology",
    (
        ("subtopologyId", "string"),
        ("sourceTopics", A("string")),
        ("sourceTopicRegex", A("string")),
        ("stateChangelogTopics", A(_STREAMS_TOPIC)),
        ("repartitionSinkTopics", A("string")),
        ("repartitionSourceTopics", A(_STREAMS_TOPIC)),
        ("copartitionGroups", A(_COPARTITION)),
    ),
)
STREAMS_GROUP_TOPOLOGY = _v0(
    (S("StreamsGroupTopologyValue", (("epoch", "int32"), ("subtopologies", A(_SUBTOPOLOGY)))), None)
)

#: Member state enums (spec 4.5).
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
STREAMS_MEMBER_STATES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"}
