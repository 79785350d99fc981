"""`__consumer_offsets`: every record type 0-23 (spec section 4), dispatched on the key prefix."""

from __future__ import annotations

import struct
from typing import Any

from kxtx.records import group_modern as m
from kxtx.records.consumer_protocol import decode_assignment, decode_subscription
from kxtx.records.record import Record, decode_key, decode_value, key_type, unknown_record
from kxtx.records.wire import ZERO_UUID, Array, DecodeError, Layouts, Struct, Tagged, uuid_text
from kxtx.timefmt import ISO, iso_ms

TOPIC = "__consumer_offsets"

# --- keys (always non-flexible, body version 0) -------------------------------------------------------
OFFSET_KEY = Struct("OffsetCommitKey", (("group", "string"), ("topic", "string"), ("partition", "int32")))
GROUP_KEY = Struct("GroupMetadataKey", (("group", "string"),))
GROUP_ID_KEY = Struct("GroupIdKey", (("group_id", "string"),))
MEMBER_KEY = Struct("MemberKey", (("group_id", "string"), ("member_id", "string")))
REGEX_KEY = Struct("RegularExpressionKey", (("group_id", "string"), ("regular_expression", "string")))

# --- classic values -----------------------------------------------------------------------------------
_OFFSET_V0 = Struct(
    "OffsetCommitValue", (("offset", "int64"), ("metadata", "string"), ("commit_timestamp", "int64"))
)
_OFFSET_V1 = Struct(
    "OffsetCommitValue",
    (
        ("offset", "int64"),
        ("metadata", "string"),
        ("commit_timestamp", "int64"),
        ("expire_timestamp", "int64"),
    ),
)
_OFFSET_V3 = Struct(
    "OffsetCommitValue",
    (("offset", "int64"), ("leader_epoch", "int32"), ("metadata", "string"), ("commit_timestamp", "int64")),
    tags=(Tagged(0, "topic_id", "uuid", ZERO_UUID),),
)
OFFSET_LAYOUTS = (
    Layouts(flexible_from=4)
    .add(0, _OFFSET_V0)
    .add(1, _OFFSET_V1)
    .add(2, _OFFSET_V0)
    .add(3, _OFFSET_V3)
    .add(4, _OFFSET_V3)
)
# Type 0 (0.8.2 commits): Kafka 4.1+ reads only value v0, older brokers any offset value version.
LEGACY_OFFSET_LAYOUTS = OFFSET_LAYOUTS


def _member(v: int) -> Struct:
    fields = [("member_id", "string")]
    if v >= 3:
        fields.append(("group_instance_id", "nstring"))
    fields += [("client_id", "string"), ("client_host", "string")]
    if v >= 1:
        fields.append(("rebalance_timeout", "int32"))
    fields += [("session_timeout", "int32"), ("subscription", "bytes"), ("assignment", "bytes")]
    return Struct("MemberMetadata", tuple(fields))


def _group(v: int) -> Struct:
    fields: list[tuple[str, Any]] = [
        ("protocol_type", "string"),
        ("generation", "int32"),
        ("protocol", "nstring"),
        ("leader", "nstring"),
    ]
    if v >= 2:
        fields.append(("current_state_timestamp", "int64"))
    fields.append(("members", Array(_member(v))))
    return Struct("GroupMetadataValue", tuple(fields))


GROUP_LAYOUTS = Layouts(flexible_from=4)
for _v in range(5):
    GROUP_LAYOUTS.add(_v, _group(min(_v, 3)))

# type -> (name, key struct, value layouts, category for --type)
TYPES: dict[int, tuple[str, Struct, Layouts, str]] = {
    0: ("LegacyOffsetCommit", OFFSET_KEY, LEGACY_OFFSET_LAYOUTS, "offset-commit"),
    1: ("OffsetCommit", OFFSET_KEY, OFFSET_LAYOUTS, "offset-commit"),
    2: ("GroupMetadata", GROUP_KEY, GROUP_LAYOUTS, "group-metadata"),
    3: ("ConsumerGroupMetadata", GROUP_ID_KEY, m.CONSUMER_GROUP_METADATA, "consumer-group"),
    4: (
        "ConsumerGroupPartitionMetadata",
        GROUP_ID_KEY,
        m.CONSUMER_GROUP_PARTITION_METADATA,
        "consumer-group",
    ),
    5: ("ConsumerGroupMemberMetadata", MEMBER_KEY, m.CONSUMER_GROUP_MEMBER_METADATA, "consumer-group"),
    6: (
        "ConsumerGroupTargetAssignmentMetadata",
        GROUP_ID_KEY,
        m.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        "consumer-group",
    ),
    7: (
        "ConsumerGroupTargetAssignmentMember",
        MEMBER_KEY,
        m.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        "consumer-group",
    ),
    8: (
        "ConsumerGroupCurrentMemberAssignment",
        MEMBER_KEY,
        m.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        "consumer-group",
    ),
    9: ("ShareGroupPartitionMetadata", GROUP_ID_KEY, m.SHARE_GROUP_PARTITION_METADATA, "share-group"),
    10: ("ShareGroupMemberMetadata", MEMBER_KEY, m.SHARE_GROUP_MEMBER_METADATA, "share-group"),
    11: ("ShareGroupMetadata", GROUP_ID_KEY, m.SHARE_GROUP_METADATA, "share-group"),
    12: (
        "ShareGroupTargetAssignmentMetadata",
        GROUP_ID_KEY,
        m.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
        "share-group",
    ),
    13: (
        "ShareGroupTargetAssignmentMember",
        MEMBER_KEY,
        m.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
        "share-group",
    ),
    14: (
        "ShareGroupCurrentMemberAssignment",
        MEMBER_KEY,
        m.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        "share-group",
    ),
    15: (
        "ShareGroupStatePartitionMetadata",
        GROUP_ID_KEY,
        m.SHARE_GROUP_STATE_PARTITION_METADATA,
        "share-group",
    ),
    16: ("ConsumerGroupRegularExpression", REGEX_KEY, m.CONSUMER_GROUP_REGULAR_EXPRESSION, "consumer-group"),
    17: ("StreamsGroupMetadata", GROUP_ID_KEY, m.STREAMS_GROUP_METADATA, "streams-group"),
    # 18 (StreamsGroupPartitionMetadata) existed only on trunk, never in a release: unknown.
    19: ("StreamsGroupMemberMetadata", MEMBER_KEY, m.STREAMS_GROUP_MEMBER_METADATA, "streams-group"),
    20: (
        "StreamsGroupTargetAssignmentMetadata",
        GROUP_ID_KEY,
        m.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA,
        "streams-group",
    ),
    21: (
        "StreamsGroupTargetAssignmentMember",
        MEMBER_KEY,
        m.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER,
        "streams-group",
    ),
    22: (
        "StreamsGroupCurrentMemberAssignment",
        MEMBER_KEY,
        m.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        "streams-group",
    ),
    23: ("StreamsGroupTopology", GROUP_ID_KEY, m.STREAMS_GROUP_TOPOLOGY, "streams-group"),
}
CATEGORIES = ("offset-commit", "group-metadata", "consumer-group", "share-group", "streams-group")
_MEMBER_STATE_TYPES = {8: m.MEMBER_STATES, 14: m.MEMBER_STATES, 22: m.STREAMS_MEMBER_STATES}


def category(type_id: int | None) -> str | None:
    entry = TYPES.get(type_id) if type_id is not None else None
    return entry[3] if entry else None


_H, _I, _Q = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_iso = ISO.get  # ms -> ISO text when already formatted (see kxtx.timefmt)
_EPOCH_META = struct.Struct(">qih")


#: Tag sections ending OffsetCommitValue v4 -> topicId text: none (the default), or only topicId
#: (tag 0, 16 bytes, written by 4.x brokers); a log holds few distinct topic ids, each many times.
_V4_TAILS: dict[bytes, str] = {b"\x00": ZERO_UUID}
_V4_HEAD = struct.Struct(">qiB")  # offset, leaderEpoch, first byte of the metadata's uvarint length


def _v4_topic_id(tail: bytes) -> str | None:
    found = _V4_TAILS.get(tail)
    if found is None and len(tail) == 19 and tail[:3] == b"\x01\x00\x10":
        if len(_V4_TAILS) > 4096:  # bounded: memory stays flat whatever the log holds
            _V4_TAILS.clear()
            _V4_TAILS[b"\x00"] = ZERO_UUID
        found = _V4_TAILS[tail] = uuid_text(tail[3:])
    return found


#: Decoded OffsetCommit keys by their bytes: a log repeats the same group/topic/partition keys over and
#: over, and a dict lookup plus a copy costs a fraction of parsing the key again.
_OFFSET_KEYS: dict[bytes | None, dict] = {}  # looked up with None too: a miss
_KEY_CACHE = 65536


def _offset_key(key: bytes | None) -> dict | None:
    if key is None or key[0] or key[1] != 1:
        return None
    glen = _H.unpack_from(key, 2)[0]
    p = 4 + glen
    tlen = _H.unpack_from(key, p)[0]
    q = p + 2 + tlen
    if glen < 0 or tlen < 0 or q + 4 != len(key):
        return None
    return {
        "group": key[4:p].decode("utf-8", errors="replace"),
        "topic": key[p + 2 : q].decode("utf-8", errors="replace"),
        "partition": _I.unpack_from(key, q)[0],
    }


def fast_offset_commit(key: bytes | None, value: bytes | None) -> tuple[dict, int | None, dict | None] | None:
    """(key fields, version, value fields) of an OffsetCommit record with value v3, or v4 with no tag
    but topicId, or its tombstone: what 2.1+ brokers write by far the most. Straight-line parsing
    for speed (a dump decodes millions); anything unusual returns None (the generic path decides).
    Same fields as the generic path."""
    try:
        key_fields = _OFFSET_KEYS.get(key)
        if key_fields is None:
            key_fields = _offset_key(key)
            if key_fields is None:
                return None
            if len(_OFFSET_KEYS) >= _KEY_CACHE:  # bounded: memory stays flat on any log
                _OFFSET_KEYS.clear()
            _OFFSET_KEYS[key] = key_fields
        key_fields = key_fields.copy()  # each row owns its dict (callers may change rows)
        if value is None:
            return key_fields, None, None
        version = _H.unpack_from(value, 0)[0]
        if version == 3:
            offset, epoch, mlen = _EPOCH_META.unpack_from(value, 2)
            m = 16
            end = m + mlen
            if mlen < 0 or end + 8 != len(value):
                return None
            committed = _Q.unpack_from(value, end)[0]
            value_fields = {
                "offset": offset,
                "leader_epoch": epoch,
                "metadata": value[m:end].decode("utf-8", errors="replace"),
                "commit_timestamp": committed,
                "commit_time": _iso(committed) or iso_ms(committed),
            }
        elif version == 4:
            offset, epoch, mlen = _V4_HEAD.unpack_from(value, 2)
            end = 14 + mlen  # a one-byte uvarint (metadata < 127 bytes) holds length + 1
            if mlen & 0x80 or not mlen:
                return None
            topic_id = _V4_TAILS.get(value[end + 8 :]) or _v4_topic_id(value[end + 8 :])
            if topic_id is None:
                return None
            committed = _Q.unpack_from(value, end)[0]
            value_fields = {
                "offset": offset,
                "leader_epoch": epoch,
                "metadata": value[15:end].decode("utf-8", errors="replace"),
                "commit_timestamp": committed,
                "commit_time": _iso(committed) or iso_ms(committed),
                "topic_id": topic_id,
            }
        else:
            return None
    except (struct.error, IndexError):
        return None
    return key_fields, version, value_fields


def decode(key: bytes | None, value: bytes | None) -> Record:
    """Decode one `__consumer_offsets` record; never raises."""
    t = key_type(key)
    if t == 1:
        found = fast_offset_commit(key, value)
        if found is not None:
            key_fields, version, value_fields = found
            return Record(1, "OffsetCommit", key_fields, version, value_fields, tombstone=value is None)
    entry = TYPES.get(t) if t is not None else None
    if t is None or key is None or entry is None:
        return unknown_record(TOPIC, key, value)
    name, key_struct, layouts, _ = entry
    rec = decode_key(t, name, key_struct, key, value, TOPIC)
    if rec.key is None:
        return rec
    decode_value(rec, layouts, value, TOPIC)
    if rec.value is not None:
        if t == 2:
            _decode_members(rec, rec.value)
        elif t in _MEMBER_STATE_TYPES:
            code = rec.value.get("state")
            if code is not None:
                rec.value["state_name"] = _MEMBER_STATE_TYPES[t].get(code, f"Unknown({code})")
    return rec


def _decode_members(rec: Record, value: dict) -> None:
    """Classic "consumer" groups: subscription/assignment bytes -> topics and partitions (spec 5)."""
    if value.get("protocol_type") != "consumer":
        return  # connect, schema registry, ...: their own formats, left as bytes
    for member in value["members"]:
        for field, fn in (("subscription", decode_subscription), ("assignment", decode_assignment)):
            raw = member[field]
            try:
                member[field] = fn(raw)
            except DecodeError as exc:
                rec.flag(
                    f"{TOPIC}:consumer-protocol:{field}",
                    f"member {member['member_id']}: {field} is not consumer-protocol bytes ({exc})",
                )
