"""What a Kafka error means to kxtx: one table (`ERRORS`), one classification (`classify`), and the
decisions every command takes on it, with the one backoff and the failover limits.

Kafka's own definition decides, not the client library's flag: librdkafka reports some errors that
Kafka's protocol calls retriable as not retriable (FENCED_LEADER_EPOCH after a leader came back, for
one), and kafka-python has its own list. The table holds every code whose exception in Kafka's
`org.apache.kafka.common.protocol.Errors` is a `RetriableException` (as of Kafka 4.4), those that
are an `InvalidMetadataException` as stale metadata; `tests/integration/test_kafka_errors.py`
compares them with the `Errors` of the broker jars under test, so a Kafka release that adds a
retriable code fails a test instead of going unnoticed. The decisions are sets of kinds
(`LATER`, `ASK_AGAIN`, `UNAVAILABLE`, `FAILING_OVER`, `SILENT`); `tests/unit/test_error_decisions.py`
pins each, code by code.

Standard library imports only: Spark workers get this module by value (`kxtx.pipe.worker.SHIPPED_WITH`).
"""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    """What an error is, for every command alike (`classify`)."""

    #: not known yet on the client's side (a partition or coordinator not looked up yet): a later
    #: try gets past it, and it is no sign of a failover
    RETRY = "retry"
    #: the client's metadata is stale (a leader or replica moved or came back with a new epoch, a
    #: topic id changed): refresh it and retry; a cluster failing over
    STALE_METADATA = "stale metadata"
    #: UNKNOWN_TOPIC_OR_PARTITION: stale metadata too in Kafka's protocol, and a later poll or pipe
    #: round gets past it when the topic or partition is new; but no failover, and a one-shot
    #: command reports it at once (a missing topic is the user's to fix, preflight names it)
    UNKNOWN_TOPIC = "unknown topic"
    #: a cluster failing over: a coordinator moving or loading, too few in-sync replicas, a
    #: rebalance, the previous transaction's markers still being written, a message timed out
    FAILOVER = "failover"
    #: no answer: a request timed out, a connection dropped (a later try may get one; reported as
    #: the cluster not answering, not as a failover)
    NO_ANSWER = "no answer"
    #: no broker answers: no answer, and a cluster short of brokers (exit 75, like a failover)
    ALL_BROKERS_DOWN = "all brokers down"
    #: the producer's epoch was bumped by a newer producer with its transactional id: it can do
    #: nothing more (librdkafka's `_FENCED`, and what brokers answer)
    FENCED = "fenced"
    #: the login failed (SASL, or the client certificate)
    AUTH = "authentication"
    #: anything else: waiting does not change it
    OTHER = "other"


#: Error code -> (name, kind), for every error whose kind is not OTHER: Kafka's protocol codes
#: (positive, Kafka's names) and librdkafka's local codes (negative, its names).
ERRORS: dict[int, tuple[str, Kind]] = {
    -195: ("_TRANSPORT", Kind.NO_ANSWER),
    -192: ("_MSG_TIMED_OUT", Kind.FAILOVER),
    -190: ("_UNKNOWN_PARTITION", Kind.RETRY),
    -187: ("_ALL_BROKERS_DOWN", Kind.ALL_BROKERS_DOWN),
    -185: ("_TIMED_OUT", Kind.NO_ANSWER),
    -180: ("_WAIT_COORD", Kind.RETRY),
    -169: ("_AUTHENTICATION", Kind.AUTH),
    # The admin client's ListOffsets, before it asks any broker, looks up each partition's leader
    # in its metadata: while the controller moves one (leader -1) it fails the partition with
    # _NOENT "Failed to query partition leaders: No leaders found" (Kafka's LEADER_NOT_AVAILABLE).
    -156: ("_NOENT", Kind.RETRY),
    -144: ("_FENCED", Kind.FENCED),
    2: ("CORRUPT_MESSAGE", Kind.FAILOVER),
    3: ("UNKNOWN_TOPIC_OR_PARTITION", Kind.UNKNOWN_TOPIC),
    5: ("LEADER_NOT_AVAILABLE", Kind.STALE_METADATA),
    6: ("NOT_LEADER_OR_FOLLOWER", Kind.STALE_METADATA),
    7: ("REQUEST_TIMED_OUT", Kind.NO_ANSWER),
    9: ("REPLICA_NOT_AVAILABLE", Kind.STALE_METADATA),
    13: ("NETWORK_EXCEPTION", Kind.STALE_METADATA),
    14: ("COORDINATOR_LOAD_IN_PROGRESS", Kind.FAILOVER),
    15: ("COORDINATOR_NOT_AVAILABLE", Kind.FAILOVER),
    16: ("NOT_COORDINATOR", Kind.FAILOVER),
    19: ("NOT_ENOUGH_REPLICAS", Kind.FAILOVER),
    20: ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", Kind.FAILOVER),
    # Not retriable in Kafka's hierarchy, yet the cluster's own business that ends by itself.
    27: ("REBALANCE_IN_PROGRESS", Kind.FAILOVER),
    41: ("NOT_CONTROLLER", Kind.FAILOVER),
    47: ("INVALID_PRODUCER_EPOCH", Kind.FENCED),
    51: ("CONCURRENT_TRANSACTIONS", Kind.FAILOVER),
    56: ("KAFKA_STORAGE_ERROR", Kind.STALE_METADATA),
    58: ("SASL_AUTHENTICATION_FAILED", Kind.AUTH),
    70: ("FETCH_SESSION_ID_NOT_FOUND", Kind.FAILOVER),
    71: ("INVALID_FETCH_SESSION_EPOCH", Kind.FAILOVER),
    72: ("LISTENER_NOT_FOUND", Kind.STALE_METADATA),
    74: ("FENCED_LEADER_EPOCH", Kind.STALE_METADATA),
    75: ("UNKNOWN_LEADER_EPOCH", Kind.FAILOVER),
    78: ("OFFSET_NOT_AVAILABLE", Kind.FAILOVER),
    80: ("PREFERRED_LEADER_NOT_AVAILABLE", Kind.STALE_METADATA),
    83: ("ELIGIBLE_LEADERS_NOT_AVAILABLE", Kind.STALE_METADATA),
    84: ("ELECTION_NOT_NEEDED", Kind.STALE_METADATA),
    88: ("UNSTABLE_OFFSET_COMMIT", Kind.FAILOVER),
    89: ("THROTTLING_QUOTA_EXCEEDED", Kind.FAILOVER),
    90: ("PRODUCER_FENCED", Kind.FENCED),
    100: ("UNKNOWN_TOPIC_ID", Kind.STALE_METADATA),
    103: ("INCONSISTENT_TOPIC_ID", Kind.STALE_METADATA),
    106: ("FETCH_SESSION_TOPIC_ID_ERROR", Kind.FAILOVER),
    122: ("SHARE_SESSION_NOT_FOUND", Kind.FAILOVER),
    123: ("INVALID_SHARE_SESSION_EPOCH", Kind.FAILOVER),
    133: ("SHARE_SESSION_LIMIT_REACHED", Kind.FAILOVER),
}
#: The client libraries' own names for codes whose name in Kafka's protocol is another
#: (librdkafka's, kafka-python's): a lookup by name finds what one by code does.
ALIASES = {"INVALID_MSG": 2, "UNKNOWN_TOPIC_OR_PART": 3, "NOT_LEADER_FOR_PARTITION": 6}
_BY_NAME = {name: kind for name, kind in ERRORS.values()} | {a: ERRORS[c][1] for a, c in ALIASES.items()}

#: A later try gets past it: a transactional call retries it, a consumer polls on, a pipe round
#: plans the partition again next time (`later`).
LATER = frozenset(Kind) - {Kind.FENCED, Kind.AUTH, Kind.OTHER}
#: A one-shot command asks again after it while its --timeout lasts (`clients.ride_out`).
ASK_AGAIN = LATER - {Kind.UNKNOWN_TOPIC}
#: Outlasting a command's retries, it stops with exit 75 (`Unavailable`): run it again.
UNAVAILABLE = frozenset({Kind.STALE_METADATA, Kind.FAILOVER, Kind.ALL_BROKERS_DOWN})
#: A cluster failing over as a transactional producer sees it (`failover.Watch`; an aborted
#: transaction's cause): also no answer, since a stalled broker only times out.
FAILING_OVER = UNAVAILABLE | {Kind.NO_ANSWER}
#: The cluster did not answer (`clients.unreachable`): asking again would wait as long again.
SILENT = frozenset({Kind.NO_ANSWER, Kind.ALL_BROKERS_DOWN})
#: Kafka's `InvalidMetadataException`s: the client refreshes its metadata before the retry (the
#: client libraries do; kept for the comparison with Kafka's own table).
STALE = frozenset({Kind.STALE_METADATA, Kind.UNKNOWN_TOPIC})

#: kafka-python's local errors for "no answer yet" (no protocol code: the request never got an
#: answer), as the librdkafka code that means the same: a broker connection refused or dropped (a
#: coordinator or leader that died and has not moved yet), a node not ready, a request timed out.
KAFKA_PYTHON_LOCAL = {
    "KafkaConnectionError": -195,
    "NodeNotReadyError": -195,
    "StaleMetadata": -190,
    "KafkaTimeoutError": -185,
}

#: Errors that mean "this broker does not lead the partition (now), ask its current leader" (or:
#: there is none right now): LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
#: KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH. The one list for the Fetch
#: reader (`kxtx.dump.rawfetch`) and the marker writes (`kxtx.ops.abort`), which look the leader up
#: again; a connection that failed (-195: the leader died and has not moved yet) counts too.
LEADER_MOVED = frozenset({5, 6, 7, 56, 74, 75})
_LEADER_GONE = -195
#: ... as named in a message: the protocol names, and kafka-python's error classes' stems
LEADER_MOVED_NAMES = tuple(ERRORS[c][0] for c in sorted(LEADER_MOVED)) + (
    "NOT_LEADER",
    "NotLeader",
    "LeaderNotAvailable",
    "RequestTimedOut",
    "KafkaStorage",
    "FencedLeaderEpoch",
    "UnknownLeaderEpoch",
    *(name.removesuffix("Error") for name, code in KAFKA_PYTHON_LOCAL.items() if code == _LEADER_GONE),
)


def leader_moved(error: int | str | BaseException) -> bool:
    """Does `error` (a protocol code, a message, or a client exception) say to ask the partition's
    current leader instead?"""
    if isinstance(error, bool):
        return False
    if isinstance(error, int):
        return error in LEADER_MOVED or error == _LEADER_GONE
    if isinstance(error, BaseException):
        code = code_of(error)
        if code is not None:
            return leader_moved(code)
        error = f"{type(error).__name__}: {error}"
    return any(name in error for name in LEADER_MOVED_NAMES)


#: Backoff between two tries of one call (a transactional call, `clients.ride_out`): from the first
#: to the cap, doubling.
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.05, 1.0

#: How long a transactional run (produce, pipe) rides out a cluster failing over before it stops
#: with exit 75, by default: a killed broker is fenced after broker.session.timeout.ms, requests to
#: a stalled one time out after socket.timeout.ms, and only then does the client find the new
#: leader or coordinator. `KXTX_FAILOVER_TIMEOUT` sets it (`Settings.failover`); code that has no
#: Settings (Spark's workers) gets it from the driver or uses this.
FAILOVER_S = 90.0
#: A fence within this many seconds of a failover error counts as part of the failover
#: (`failover.Watch`): not a bound on waiting but how long after the last failover error a
#: coordinator's epoch bump may still arrive, so not tied to `FAILOVER_S` or its setting.
FENCE_WINDOW_S = 120.0


def classify(error: object) -> Kind:
    """The kind of `error`: a code, a name, a confluent-kafka KafkaError or exception, a
    kafka-python error (its local errors as librdkafka's code for the same, `KAFKA_PYTHON_LOCAL`),
    or None (OTHER)."""
    if isinstance(error, str):
        return _BY_NAME.get(error, Kind.OTHER)
    if isinstance(error, BaseException):
        code: object = code_of(error)
    elif callable(getattr(error, "code", None)):
        code = error.code()  # type: ignore[attr-defined]
    else:
        code = error
    if not isinstance(code, int) or isinstance(code, bool):
        return Kind.OTHER
    row = ERRORS.get(code)
    return row[1] if row is not None else Kind.OTHER


def later(error: object) -> bool:
    """A later try can get past `error` (a confluent_kafka KafkaError or KafkaException; anything
    else: no): its kind is one of `LATER` or librdkafka flags it retriable, whatever the other
    says (a partition that is new, a leader that moves or came back with a new epoch)."""
    if isinstance(error, BaseException):
        error = error.args[0] if error.args else None
    if error is None or not callable(getattr(error, "retriable", None)):
        return False
    return bool(error.retriable()) or classify(error) in LATER  # type: ignore[attr-defined]


def backoff(attempt: int) -> float:
    """Seconds to wait before retry number `attempt` (0, 1, ...)."""
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2**attempt)


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
