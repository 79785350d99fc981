"""__transaction_state decoding: every layout of spec section 3, built with the test-side encoder."""

import pytest

from kxtx.records import decode
from tests.unit import record_encoder as e

TOPIC = "__transaction_state"
KEY = e.key(0, e.string("txn"))


def _v0_body(pid, epoch, timeout, status, partitions, last, start):
    parts = (
        None
        if partitions is None
        else [e.string(t) + e.array([e.i32(p) for p in ps]) for t, ps in partitions]
    )
    return (
        e.i64(pid)
        + e.i16(epoch)
        + e.i32(timeout)
        + e.i8(status)
        + e.narray(parts)
        + e.i64(last)
        + e.i64(start)
    )


def _v1_body(pid, epoch, timeout, status, partitions, last, start, tagged=None):
    parts = (
        None
        if partitions is None
        else [e.cstring(t) + e.carray([e.i32(p) for p in ps]) + e.tags() for t, ps in partitions]
    )
    return (
        e.i64(pid)
        + e.i16(epoch)
        + e.i32(timeout)
        + e.i8(status)
        + e.cnarray(parts)
        + e.i64(last)
        + e.i64(start)
        + e.tags(tagged)
    )


def _expected(pid, epoch, timeout, status, partitions, last, start):
    from kxtx.records.txn_log import STATES

    return {
        "producer_id": pid,
        "producer_epoch": epoch,
        "transaction_timeout_ms": timeout,
        "transaction_status": STATES[status],
        "transaction_status_code": status,
        "transaction_partitions": None
        if partitions is None
        else [{"topic": t, "partition_ids": ps} for t, ps in partitions],
        "transaction_last_update_timestamp_ms": last,
        "transaction_last_update_time": e.iso(last),
        "transaction_start_timestamp_ms": start,
        "transaction_start_time": e.iso(start),
    }


V1_DEFAULTS = {
    "previous_producer_id": -1,
    "next_producer_id": -1,
    "client_transaction_version": 0,
    "next_producer_epoch": -1,
}

FIELDS = [
    # (pid, epoch, timeout, status, partitions, lastUpdate, start)
    (1000, 3, 60000, 0, None, 1700000000500, -1),
    (1000, 3, 60000, 1, [("t", [0, 1])], 1700000000500, 1700000000000),
    (7, 0, 900000, 2, [("orders", [0, 2]), ("payments", [5])], 5, 4),
    (7, 0, 900000, 3, [], 5, 4),  # TV2 PrepareAbort from Empty: an empty, not null, array
    (2**62, 32767, 2147483647, 4, [("t", [3])], 9, 8),  # 2PC timeout = Int.MaxValue
    (1, 1, 1, 5, [("t", [])], 1, 1),
]


@pytest.mark.parametrize("fields", FIELDS)
def test_v0_round_trip(fields):
    rec = decode(TOPIC, KEY, e.value(0, _v0_body(*fields)))
    assert (rec.type, rec.key, rec.version, rec.notes) == (
        "TransactionLog",
        {"transactional_id": "txn"},
        0,
        [],
    )
    assert rec.value == _expected(*fields)


@pytest.mark.parametrize("fields", FIELDS)
@pytest.mark.parametrize(
    "tagged, extra",
    [
        (None, {}),
        ({2: e.i16(2)}, {"client_transaction_version": 2}),  # 4.0+ TV2 client
        (
            {0: e.i64(41), 1: e.i64(43), 2: e.i16(2)},  # 4.3+ writes previous/next producer id
            {"previous_producer_id": 41, "next_producer_id": 43, "client_transaction_version": 2},
        ),
        ({3: e.i16(9)}, {"next_producer_epoch": 9}),  # in the 4.1+ schema, not written yet
    ],
)
def test_v1_round_trip_with_tags(fields, tagged, extra):
    rec = decode(TOPIC, KEY, e.value(1, _v1_body(*fields, tagged=tagged)))
    assert rec.version == 1 and rec.notes == [] and rec.problem is None
    assert rec.value == {**_expected(*fields), **V1_DEFAULTS, **extra}


def test_spec_worked_example_v1():
    raw = bytes.fromhex(
        "0001"
        "00000000000003e8"
        "0003"
        "0000ea60"
        "01"
        "02"
        "0274"
        "03"
        "00000000"
        "00000001"
        "00"
        "0000018bcfe569f4"
        "0000018bcfe56800"
        "01"
        "02"
        "02"
        "0002"
    )
    rec = decode(TOPIC, bytes.fromhex("0000000374786e"), raw)
    assert rec.value["transaction_status"] == "Ongoing"
    assert rec.value["transaction_partitions"] == [{"topic": "t", "partition_ids": [0, 1]}]
    assert rec.value["client_transaction_version"] == 2


def test_unknown_tag_is_kept_as_hex():
    rec = decode(TOPIC, KEY, e.value(1, _v1_body(*FIELDS[1], tagged={9: b"\xab\xcd"})))
    assert rec.value["_unknown_tags"] == {"9": "abcd"}
    assert rec.problem is None


def test_tombstone_means_expired_id():
    rec = decode(TOPIC, KEY, None)
    assert rec.tombstone and rec.value is None and rec.key == {"transactional_id": "txn"}


@pytest.mark.parametrize(
    "key, value, problem",
    [
        (e.key(1, e.string("x")), e.value(0, b""), "__transaction_state:type:1"),
        (b"\x00", None, "__transaction_state:short-key"),
        (KEY, e.value(2, b"\x00" * 8), "__transaction_state:TransactionLog:v2"),
        (KEY, e.value(0, _v0_body(*FIELDS[1])[:-3]), "__transaction_state:TransactionLog:v0:bad"),
        (KEY, e.value(0, _v0_body(*FIELDS[1]) + b"\x00"), "__transaction_state:TransactionLog:v0:bad"),
        (KEY, b"\x00", "__transaction_state:TransactionLog:short-value"),
        (e.key(0, e.i16(50)), e.value(0, b""), "__transaction_state:TransactionLog:bad-key"),
        (KEY, e.value(0, _v0_body(1, 1, 1, 9, None, 1, 1)), "__transaction_state:state:9"),
    ],
)
def test_undecodable_records_never_raise(key, value, problem):
    rec = decode(TOPIC, key, value)
    assert rec.problem == problem
    assert rec.notes
    if rec.value is None and value is not None and problem != "__transaction_state:TransactionLog:bad-key":
        assert rec.raw_value == value.hex()
