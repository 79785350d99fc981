"""`__transaction_state`: TransactionLogKey / TransactionLogValue v0 and v1 (spec section 3)."""

from __future__ import annotations

import struct

from kxtx.records.record import Record, decode_key, decode_value, key_type, unknown_record
from kxtx.records.wire import Array, Layouts, NullableArray, Struct, Tagged
from kxtx.timefmt import ISO, iso_ms

TOPIC = "__transaction_state"

#: TransactionStatus codes, identical from 0.11 to trunk (spec 3.3).
STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
STATE_CODES = {name.lower(): code for code, name in STATES.items()}

TXN_KEY = Struct("TransactionLogKey", (("transactional_id", "string"),))

_PARTITIONS = Struct("PartitionsSchema", (("topic", "string"), ("partition_ids", Array("int32"))))

TXN_VALUE = Struct(
    "TransactionLogValue",
    (
        ("producer_id", "int64"),
        ("producer_epoch", "int16"),
        ("transaction_timeout_ms", "int32"),
        ("transaction_status", "int8"),
        ("transaction_partitions", NullableArray(_PARTITIONS)),
        ("transaction_last_update_timestamp_ms", "int64"),
        ("transaction_start_timestamp_ms", "int64"),
    ),
    # Tag-only fields (v1+): written only when they differ from the default.
    tags=(
        Tagged(0, "previous_producer_id", "int64", -1),
        Tagged(1, "next_producer_id", "int64", -1),
        Tagged(2, "client_transaction_version", "int16", 0),
        Tagged(3, "next_producer_epoch", "int16", -1),
    ),
)

VALUE_LAYOUTS = Layouts(flexible_from=1).add(0, TXN_VALUE).add(1, TXN_VALUE)


def state_name(code: int) -> str:
    return STATES.get(code, f"Unknown({code})")


_H, _I, _Q = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
#: version, producerId, producerEpoch, transactionTimeoutMs, transactionStatus
_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")  # transactionLastUpdateTimestampMs, transactionStartTimestampMs
#: v1 tag-only fields the fast path reads: tag -> (position in _TAG_DEFAULTS, unpacker, size).
_FAST_TAGS = {0: (0, _Q, 8), 1: (1, _Q, 8), 2: (2, _H, 2), 3: (3, _H, 2)}
#: previousProducerId, nextProducerId, clientTransactionVersion, nextProducerEpoch (TXN_VALUE's order)
_TAG_DEFAULTS = (-1, -1, 0, -1)

_iso = ISO.get  # ms -> ISO text when already formatted (see kxtx.timefmt)

#: Transactional ids by key bytes: each id's key repeats for every state it goes through.
_IDS: dict[bytes | None, str] = {}  # looked up with None too: a miss
#: v1 tag sections by their bytes -> the four tag-only values: few distinct ones (per producer id).
_TAILS: dict[bytes, tuple] = {b"\x00": _TAG_DEFAULTS}
_CACHE = 65536


def fast_transaction(key: bytes | None, value: bytes | None) -> tuple[dict, int | None, dict | None] | None:
    """(key fields, version, value fields) of a well-formed TransactionLog record (value v0/v1 or a
    tombstone, known state): every record a broker writes. Straight-line parsing, each dict built
    once, because a dump decodes hundreds of thousands of them; anything unusual (unknown tags, odd
    lengths, long varints) returns None and `decode` handles it with notes. Same fields as `decode`."""
    try:
        tid = _IDS.get(key)
        if tid is None:
            tid = _transactional_id(key)
            if tid is None:
                return None
        if value is None:
            return {"transactional_id": tid}, None, None
        version, pid, epoch, timeout, code = _HEAD.unpack_from(value, 0)
        name = STATES.get(code)
        if name is None:
            return None
        if version == 1:
            count = value[17]  # the compact array length: 0 = null, 1 = empty (Empty, Complete*)
            parts, p = (None, 18) if count == 0 else ([], 18) if count == 1 else _partitions(value, 1)
        elif version == 0:
            parts, p = _partitions(value, 0)
        else:
            return None
        last, started = _TIMES.unpack_from(value, p)
        tags = None
        if version == 0:
            if p + 16 != len(value):
                return None
        else:
            tail = value[p + 16 :]
            tags = _TAILS.get(tail) or _tags_v1(tail)
            if tags is None:
                return None
        fields = {
            "producer_id": pid,
            "producer_epoch": epoch,
            "transaction_timeout_ms": timeout,
            "transaction_status": name,
            "transaction_partitions": parts,
            "transaction_last_update_timestamp_ms": last,
            "transaction_last_update_time": _iso(last) or iso_ms(last),
            "transaction_start_timestamp_ms": started,
            "transaction_start_time": _iso(started) or iso_ms(started),
        }
        if tags is not None:  # v1's tag-only fields, in TXN_VALUE's order, before the code as in `decode`
            fields["previous_producer_id"] = tags[0]
            fields["next_producer_id"] = tags[1]
            fields["client_transaction_version"] = tags[2]
            fields["next_producer_epoch"] = tags[3]
        fields["transaction_status_code"] = code
        return {"transactional_id": tid}, version, fields
    except (struct.error, IndexError, ValueError):
        return None


def _transactional_id(key: bytes | None) -> str | None:
    if key is None or key[0] or key[1]:
        return None
    n = _H.unpack_from(key, 2)[0]
    if n < 0 or 4 + n != len(key):
        return None
    if len(_IDS) >= _CACHE:  # bounded: memory stays flat on any log
        _IDS.clear()
    tid = _IDS[key] = key[4:].decode("utf-8", errors="replace")
    return tid


#: Partition sections (the bytes from offset 17 to the timestamps) -> parsed list, per value
#: version: a producer writes the same set in each state of a transaction and usually in the next
#: transactions too. Parsed lists are shared between rows, which are read-only.
_SECTIONS: tuple[dict, dict] = ({}, {})
#: Lengths of the bytes after the timestamps (v0: none; v1: the tag section) seen so far: where a
#: section would end is tried for each.
_AFTER: tuple[list, list] = ([0], [1])


def _partitions(value: bytes, version: int) -> tuple[list | None, int]:
    """(transactionPartitions, offset after them) of a value v0/v1 with a non-empty array.

    A cached section is found by guessing where it ends (16 timestamp bytes and a known trailer
    length before the end of the value). A guess that matches is right: the encoding is
    self-delimiting, so parsing from offset 17 would read exactly that section and stop there."""
    sections, after = _SECTIONS[version], _AFTER[version]
    size = len(value)
    for n in after:
        end = size - 16 - n
        found = sections.get(value[17:end])
        if found is not None:
            return found, end
    parts, end = (_partitions_v1 if version else _partitions_v0)(value, 17)
    if len(sections) >= _CACHE:  # bounded: memory stays flat on any log
        sections.clear()
    sections[value[17:end]] = parts
    n = size - 16 - end
    if n >= 0 and n not in after and len(after) < 8:
        after.append(n)
    return parts, end


def _partitions_v0(b: bytes, p: int) -> tuple[list | None, int]:
    """NullableArray(PartitionsSchema), non-flexible: int32 count, per topic int16 string + int32 array."""
    n = _I.unpack_from(b, p)[0]
    p += 4
    if n < 0:
        return None, p
    out = []
    for _ in range(n):
        tlen = _H.unpack_from(b, p)[0]
        if tlen < 0:
            raise ValueError("negative length")
        topic = b[p + 2 : p + 2 + tlen].decode("utf-8", errors="replace")
        p += 2 + tlen
        count = _I.unpack_from(b, p)[0]
        p += 4
        if count < 0 or p + 4 * count > len(b):
            raise ValueError("bad count")
        out.append({"topic": topic, "partition_ids": list(_int32s(count).unpack_from(b, p))})
        p += 4 * count
    return out, p


_INT32S = [struct.Struct(f">{n}i") for n in range(127)]  # compiled once: every count a one-byte
# varint can give (building the format per record costs more than the unpacking)


def _int32s(count: int) -> struct.Struct:
    return _INT32S[count] if count < 127 else struct.Struct(f">{count}i")


def _partitions_v1(b: bytes, p: int) -> tuple[list | None, int]:
    """The same array, flexible (compact lengths, an empty tag section per element); one-byte varints
    only (< 127 topics, partitions, name bytes), longer ones go to the generic reader."""
    n = b[p] - 1
    p += 1
    if n < 0 or b[p - 1] & 0x80:
        if n == -1:
            return None, p
        raise ValueError("long varint")
    out = []
    for _ in range(n):
        tlen = b[p] - 1
        if tlen < 0 or b[p] & 0x80:
            raise ValueError("long varint")
        topic = b[p + 1 : p + 1 + tlen].decode("utf-8", errors="replace")
        p += 1 + tlen
        count = b[p] - 1
        if count < 0 or b[p] & 0x80 or p + 1 + 4 * count > len(b):
            raise ValueError("long varint")
        ids = list(_int32s(count).unpack_from(b, p + 1))
        p += 1 + 4 * count
        if b[p]:  # tagged fields of PartitionsSchema: none are defined
            raise ValueError("element tags")
        p += 1
        out.append({"topic": topic, "partition_ids": ids})
    return out, p


def _tags_v1(tail: bytes) -> tuple | None:
    """The top-level tag section (all of `tail`): the four tag-only values, defaults where absent;
    None for anything else (unknown tags, long varints, bytes left over)."""
    values = list(_TAG_DEFAULTS)
    count = tail[0]
    if count & 0x80:
        return None
    p = 1
    for _ in range(count):
        tag, size = tail[p], tail[p + 1]
        known = _FAST_TAGS.get(tag)
        if known is None or size != known[2]:
            return None
        values[known[0]] = known[1].unpack_from(tail, p + 2)[0]
        p += 2 + size
    if p != len(tail):
        return None
    if len(_TAILS) >= _CACHE:  # bounded
        _TAILS.clear()
        _TAILS[b"\x00"] = _TAG_DEFAULTS
    found = _TAILS[tail] = tuple(values)
    return found


def decode(key: bytes | None, value: bytes | None) -> Record:
    """Decode one `__transaction_state` record; never raises."""
    if key is None or key_type(key) != 0:
        return unknown_record(TOPIC, key, value)
    rec = decode_key(0, "TransactionLog", TXN_KEY, key, value, TOPIC)
    if rec.key is None:
        return rec
    decode_value(rec, VALUE_LAYOUTS, value, TOPIC)
    if rec.value is not None:
        code = rec.value["transaction_status"]
        # Name for people, code kept alongside for scripts (and to compare with Kafka's formatter).
        rec.value["transaction_status"] = state_name(code)
        rec.value["transaction_status_code"] = code
        if code not in STATES:
            rec.flag(f"{TOPIC}:state:{code}", f"unknown transaction state code {code}")
    return rec
