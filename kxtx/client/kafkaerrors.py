"""Which Kafka protocol errors are worth waiting out: one table for every command.

Kafka's own definition decides, not the client library's flag: librdkafka reports some errors that
Kafka's protocol calls retriable as not retriable (FENCED_LEADER_EPOCH after a leader came back, for
one), and kafka-python has its own list. `RETRIABLE` holds every code whose exception in Kafka's
`org.apache.kafka.common.protocol.Errors` is a `RetriableException`; `STALE_METADATA` the ones whose
exception is an `InvalidMetadataException` (the client must refresh its metadata before the retry).
Both are taken from Kafka 4.4's `Errors` enum; `tests/integration/test_kafka_errors.py` compares them
with the `Errors` of the broker jars under test, so a Kafka release that adds a retriable code fails
a test instead of going unnoticed.

No imports: Spark workers get this module by value (`kxtx.pipe.worker.SHIPPED_WITH`).
"""

#: Protocol error code -> name, for every code Kafka's protocol defines as retriable.
RETRIABLE = {
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    9: "REPLICA_NOT_AVAILABLE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    41: "NOT_CONTROLLER",
    51: "CONCURRENT_TRANSACTIONS",
    56: "KAFKA_STORAGE_ERROR",
    70: "FETCH_SESSION_ID_NOT_FOUND",
    71: "INVALID_FETCH_SESSION_EPOCH",
    72: "LISTENER_NOT_FOUND",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    78: "OFFSET_NOT_AVAILABLE",
    80: "PREFERRED_LEADER_NOT_AVAILABLE",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    84: "ELECTION_NOT_NEEDED",
    88: "UNSTABLE_OFFSET_COMMIT",
    89: "THROTTLING_QUOTA_EXCEEDED",
    100: "UNKNOWN_TOPIC_ID",
    103: "INCONSISTENT_TOPIC_ID",
    106: "FETCH_SESSION_TOPIC_ID_ERROR",
    122: "SHARE_SESSION_NOT_FOUND",
    123: "INVALID_SHARE_SESSION_EPOCH",
    133: "SHARE_SESSION_LIMIT_REACHED",
}

#: The retriable codes that mean "your metadata is stale: refresh it, then retry" (a leader moved
#: or came back with a new epoch, a replica or topic id changed).
STALE_METADATA = frozenset({3, 5, 6, 9, 13, 56, 72, 74, 80, 83, 84, 100, 103})

#: Not retriable in Kafka's hierarchy, yet the cluster's own business that ends by itself: the group
#: is rebalancing (REBALANCE_IN_PROGRESS, 27). A command waits it out like a retriable error.
SETTLES = {27: "REBALANCE_IN_PROGRESS"}

#: librdkafka's local codes (negative) for "no answer yet": a broker connection dropped, a request
#: or message timed out, the coordinator is still being looked up, a partition is not yet known.
LOCAL_TRANSIENT = {
    -195: "_TRANSPORT",
    -192: "_MSG_TIMED_OUT",
    -190: "_UNKNOWN_PARTITION",
    -187: "_ALL_BROKERS_DOWN",
    -185: "_TIMED_OUT",
    -180: "_WAIT_COORD",
    # The admin client's ListOffsets, before it asks any broker, looks up each partition's leader
    # in its metadata: while the controller moves one (leader -1) it fails the partition with
    # _NOENT "Failed to query partition leaders: No leaders found" (Kafka's LEADER_NOT_AVAILABLE).
    -156: "_NOENT",
}


#: kafka-python's local errors for "no answer yet" (no protocol code: the request never got an
#: answer), as the librdkafka code that means the same: a broker connection refused or dropped (a
#: coordinator or leader that died and has not moved yet), a node not ready, a request timed out.
KAFKA_PYTHON_LOCAL = {
    "KafkaConnectionError": -195,
    "NodeNotReadyError": -195,
    "StaleMetadata": -190,
    "KafkaTimeoutError": -185,
}


def worth_waiting(code: int | None) -> bool:
    """True for an error that a later try can get past while the cluster heals: Kafka's retriable
    codes, a rebalance, and librdkafka's "no answer yet" codes. Whatever the client library's own
    retriable flag says."""
    return code is not None and (code in RETRIABLE or code in SETTLES or code in LOCAL_TRANSIENT)


def stale_metadata(code: int | None) -> bool:
    """True when the client must refresh its metadata before it retries."""
    return code in STALE_METADATA


def code_of(exc: BaseException) -> int | None:
    """The Kafka error code carried by a confluent-kafka exception (`KafkaError.code()`) or a
    kafka-python error (`errno`; its local errors as librdkafka's code, `KAFKA_PYTHON_LOCAL`),
    or None."""
    err = exc.args[0] if exc.args else None
    if err is not None and hasattr(err, "code") and callable(err.code):
        code = err.code()
        return code if isinstance(code, int) else None
    # kafka-python's broker errors carry the protocol code as `errno` (an OSError's errno is not one).
    if type(exc).__module__.startswith("kafka."):
        errno = getattr(exc, "errno", None)
        if isinstance(errno, int) and not isinstance(errno, bool):
            return errno
        return KAFKA_PYTHON_LOCAL.get(type(exc).__name__)
    return None
