"""The decoders' straight-line fast paths (`fast_transaction`, `fast_offset_commit`) agree field for field with the generic schema readers,
and hand anything unusual (None) to them."""

import pytest

from kxtx.records import group_log, txn_log
from kxtx.records.record import decode_key, decode_value
from tests.unit import record_encoder as e


def generic_txn(key, value):
    rec = txn_log.decode(key, value)  # txn_log.decode never takes the fast path
    return rec.key, rec.version, rec.value, rec.notes


def generic_offset(key, value):
    rec = decode_key(1, "OffsetCommit", group_log.OFFSET_KEY, key, value, group_log.TOPIC)
    decode_value(rec, group_log.OFFSET_LAYOUTS, value, group_log.TOPIC)
    return rec.key, rec.version, rec.value, rec.notes


TXN_KEY = e.key(0, e.string("tx-é"))
HEAD = e.i64(42) + e.i16(3) + e.i32(60000)
TIMES = e.i64(1700000000000) + e.i64(1699999999000)


def v0(status, parts):
    items = None if parts is None else [e.string(t) + e.array([e.i32(i) for i in ids]) for t, ids in parts]
    return e.value(0, HEAD + e.i8(status) + e.narray(items) + TIMES)


def v1(status, parts, tags=None):
    items = (
        None
        if parts is None
        else [e.cstring(t) + e.carray([e.i32(i) for i in ids]) + e.tags() for t, ids in parts]
    )
    return e.value(1, HEAD + e.i8(status) + e.cnarray(items) + TIMES + e.tags(tags))


PARTS = [None, [], [("orders", [0, 1, 2])], [("a", []), ("b" * 40, list(range(30)))]]
TAGS = [None, {2: e.i16(2)}, {0: e.i64(7), 1: e.i64(8), 2: e.i16(2), 3: e.i16(5)}]


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("status", range(8))
def test_txn_v0(status, parts):
    value = v0(status, parts)
    assert txn_log.fast_transaction(TXN_KEY, value) == generic_txn(TXN_KEY, value)[:3]


@pytest.mark.parametrize("tags", TAGS)
@pytest.mark.parametrize("parts", PARTS)
def test_txn_v1(parts, tags):
    value = v1(4, parts, tags)
    assert txn_log.fast_transaction(TXN_KEY, value) == generic_txn(TXN_KEY, value)[:3]


def test_txn_cached_sections_agree_in_any_order():
    # the second and later sight of a partition section comes from the cache, found by guessing
    # the length of what follows the timestamps: every mix of sections, trailers and versions
    values = [v1(st, parts, tags) for st in (1, 2) for parts in PARTS for tags in TAGS]
    values += [v0(st, parts) for st in (1, 2) for parts in PARTS]
    for value in values + values[::-1] + values:
        assert txn_log.fast_transaction(TXN_KEY, value) == generic_txn(TXN_KEY, value)[:3]
    cached = v1(1, [("orders", [0, 1, 2])])
    assert txn_log.fast_transaction(TXN_KEY, cached) is not None
    for bad in (cached[:-1], cached + b"\x00", cached[:-1] + b"\x01\x09\x00"):
        assert txn_log.fast_transaction(TXN_KEY, bad) is None  # truncated, trailing byte, unknown tag


def test_txn_tombstone():
    assert (
        txn_log.fast_transaction(TXN_KEY, None)
        == generic_txn(TXN_KEY, None)[:3]
        == ({"transactional_id": "tx-é"}, None, None)
    )


@pytest.mark.parametrize(
    "key, value",
    [
        (TXN_KEY, v1(4, [("t", [1])], {9: b"\x01"})),  # unknown tag
        (TXN_KEY, v1(4, [("t" * 200, [1])])),  # two-byte varint
        (
            TXN_KEY,
            e.value(
                1,
                HEAD
                + e.i8(1)
                + e.cnarray([e.cstring("t") + e.carray([]) + e.tags({1: b"x"})])
                + TIMES
                + e.tags(),
            ),
        ),  # element tags
        (TXN_KEY, v0(9, None)),  # unknown state
        (TXN_KEY, v0(1, None) + b"\x00"),  # trailing byte
        (TXN_KEY, v0(1, [("t", [1])])[:-3]),  # truncated
        (TXN_KEY, e.value(2, b"")),  # unknown version
        (TXN_KEY, b"\x00"),
        (e.key(1, e.string("x")), v0(1, None)),  # another record type
        (TXN_KEY + b"\x00", v0(1, None)),
        (b"\x00", None),
        (None, None),
    ],
)
def test_txn_unusual_goes_generic(key, value):
    assert txn_log.fast_transaction(key, value) is None


OFF_KEY = e.key(1, e.string("grp"), e.string("topic-é"), e.i32(7))


@pytest.mark.parametrize(
    "value",
    [
        e.value(3, e.i64(5) + e.i32(-1) + e.string("") + e.i64(99)),
        e.value(3, e.i64(5) + e.i32(4) + e.string("meta") + e.i64(99)),
        e.value(4, e.i64(5) + e.i32(4) + e.cstring("meta") + e.i64(99) + e.tags()),
        e.value(4, e.i64(5) + e.i32(-1) + e.cstring("") + e.i64(99) + e.tags({0: bytes(range(16))})),
        e.value(
            4, e.i64(5) + e.i32(-1) + e.cstring("") + e.i64(99) + e.tags({0: bytes(range(16))})
        ),  # cached
        None,
    ],
)
def test_offset_commit(value):
    assert group_log.fast_offset_commit(OFF_KEY, value) == generic_offset(OFF_KEY, value)[:3]
    assert group_log.decode(OFF_KEY, value).tombstone == (value is None)


@pytest.mark.parametrize(
    "key, value",
    [
        (OFF_KEY, e.value(1, e.i64(5) + e.string("") + e.i64(99) + e.i64(100))),  # older version
        (OFF_KEY, e.value(4, e.i64(5) + e.i32(4) + e.cstring("m" * 200) + e.i64(99) + e.tags())),
        (OFF_KEY, e.value(4, e.i64(5) + e.i32(4) + e.cstring("m") + e.i64(99) + e.tags({1: bytes(16)}))),
        (OFF_KEY, e.value(4, e.i64(5) + e.i32(4) + e.cstring("m") + e.i64(99) + e.tags({0: bytes(15)}))),
        (
            OFF_KEY,
            e.value(4, e.i64(5) + e.i32(4) + e.cstring("m") + e.i64(99) + e.tags({0: bytes(16)}) + b"\0"),
        ),
        (
            OFF_KEY,
            e.value(4, e.i64(5) + e.i32(4) + e.cstring("m") + e.i64(99) + e.tags({0: bytes(16), 1: b"x"})),
        ),
        (OFF_KEY, e.value(4, e.i64(5) + e.i32(4) + e.cstring("m") + e.i64(99))),  # no tag section
        (OFF_KEY + b"\x00", None),
        (e.key(0, e.string("grp"), e.string("t"), e.i32(7)), None),  # legacy type 0
        (None, None),
    ],
)
def test_offset_unusual_goes_generic(key, value):
    assert group_log.fast_offset_commit(key, value) is None
