"""`__transaction_state`: TransactionLogKey / TransactionLogValue v0 and v1 (spec section 3)."""

from __future__ import annotations

from kxtx.records.model import Record, decode_key, decode_value, key_type, unknown_record
from kxtx.records.wire import Array, Layouts, NullableArray, Struct, Tagged

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

TXN_KEY = Struct("TransactionLogKey", (("transactionalId", "string"),))

_PARTITIONS = Struct("PartitionsSchema", (("topic", "string"), ("partitionIds", Array("int32"))))

TXN_VALUE = Struct(
    "TransactionLogValue",
    (
        ("producerId", "int64"),
        ("producerEpoch", "int16"),
        ("transactionTimeoutMs", "int32"),
        ("transactionStatus", "int8"),
        ("transactionPartitions", NullableArray(_PARTITIONS)),
        ("transactionLastUpdateTimestampMs", "int64"),
        ("transactionStartTimestampMs", "int64"),
    ),
    # Tag-only fields (v1+): written only when they differ from the default.
    tags=(
        Tagged(0, "previousProducerId", "int64", -1),
        Tagged(1, "nextProducerId", "int64", -1),
        Tagged(2, "clientTransactionVersion", "int16", 0),
        Tagged(3, "nextProducerEpoch", "int16", -1),
    ),
)

VALUE_LAYOUTS = Layouts(flexible_from=1).add(0, TXN_VALUE).add(1, TXN_VALUE)


def state_name(code: int) -> str:
    return STATES.get(code, f"Unknown({code})")


def decode(key: bytes | None, value: bytes | None) -> Record:
    """Decode one `__transaction_state` record; never raises."""
    if key_type(key) != 0:
        return unknown_record(TOPIC, key, value)
    rec = decode_key(0, "TransactionLog", TXN_KEY, key, value, TOPIC)
    if rec.key is None:
        return rec
    decode_value(rec, VALUE_LAYOUTS, value, TOPIC)
    if rec.value is not None:
        code = rec.value["transactionStatus"]
        # Name for people, code kept alongside for scripts (and to compare with Kafka's formatter).
        rec.value["transactionStatus"] = state_name(code)
        rec.value["transactionStatusCode"] = code
        if code not in STATES:
            rec.flag(f"{TOPIC}:state:{code}", f"unknown transaction state code {code}")
    return rec
