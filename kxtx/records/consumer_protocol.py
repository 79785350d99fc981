"""ConsumerProtocolSubscription / ConsumerProtocolAssignment (spec section 5).

The bytes classic "consumer" groups store in GroupMetadataValue members. Both are int16-version
prefixed and never flexible; a version above 3 is read as v3 with trailing bytes ignored, as Kafka
does ("new versions cannot remove or reorder any of the existing fields").
"""

from __future__ import annotations

from typing import Any

from kxtx.records.wire import (
    DecodeError,
    array_reader,
    read_int16,
    read_int32,
    read_nullable_bytes,
    read_nullable_string,
    read_string,
)

# A null array (negative count, -1 on the wire) reads as no elements: "topics" and "partitions"
# are always lists.
_read_strings = array_reader(read_string, null_as_empty=True)
_read_partitions = array_reader(read_int32, null_as_empty=True)


def _topic_partitions(b: bytes, p: int) -> tuple[dict[str, Any], int]:
    topic, p = read_string(b, p)
    parts, p = _read_partitions(b, p)
    return {"topic": topic, "partitions": parts}, p


_read_topic_partitions = array_reader(_topic_partitions, null_as_empty=True)


def decode_subscription(raw: bytes) -> dict[str, Any] | None:
    """Topics, user data size and (v1+) owned partitions, (v2+) generation, (v3+) rack.

    Returns None for zero-length bytes ("none"); raises DecodeError when the bytes do not fit."""
    if not raw:
        return None
    version, p = _read_version(raw, "subscription")
    topics, p = _read_strings(raw, p)
    user_data, p = read_nullable_bytes(raw, p)
    out: dict[str, Any] = {
        "version": version,
        "topics": topics,
        "user_data_size": None if user_data is None else len(user_data),
    }
    if version >= 1:
        out["owned_partitions"], p = _read_topic_partitions(raw, p)
    if version >= 2:
        out["generation_id"], p = read_int32(raw, p)
    if version >= 3:
        out["rack_id"], p = read_nullable_string(raw, p)
    _check_end(raw, p, version, "subscription")
    return out


def decode_assignment(raw: bytes) -> dict[str, Any] | None:
    """Assigned partitions per topic and user data size (same layout in v0-v3)."""
    if not raw:
        return None
    version, p = _read_version(raw, "assignment")
    assigned, p = _read_topic_partitions(raw, p)
    user_data, p = read_nullable_bytes(raw, p)
    _check_end(raw, p, version, "assignment")
    return {
        "version": version,
        "assigned_partitions": assigned,
        "user_data_size": None if user_data is None else len(user_data),
    }


def _read_version(raw: bytes, what: str) -> tuple[int, int]:
    """The embedded protocol's int16 version and where the rest starts; a negative one is an error."""
    version, p = read_int16(raw, 0)
    if version < 0:
        raise DecodeError(f"negative {what} version {version}")
    return version, p


def _check_end(raw: bytes, p: int, version: int, what: str) -> None:
    if version <= 3 and p != len(raw):
        raise DecodeError(f"{len(raw) - p} trailing bytes after {what} v{version}")
