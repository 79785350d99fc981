"""kxtx.client.kafkaerrors: what an error is to a command, code by code (the table itself is compared
with Kafka's own `Errors` enum in tests/integration/test_kafka_errors.py; every decision on every code
is pinned in test_error_decisions.py)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka import errors as kp_errors

from kxtx.client import kafkaerrors
from kxtx.client.kafkaerrors import Kind, classify, code_of


@pytest.mark.parametrize(
    "code, waits, stale",
    [
        # leaders moving or coming back: refresh metadata, then retry
        (KafkaError.NOT_LEADER_FOR_PARTITION, True, True),  # 6, NOT_LEADER_OR_FOLLOWER
        (KafkaError.LEADER_NOT_AVAILABLE, True, True),
        (KafkaError.FENCED_LEADER_EPOCH, True, True),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, True, True),
        (KafkaError.KAFKA_STORAGE_ERROR, True, True),
        # retriable without a metadata refresh
        (KafkaError.UNKNOWN_LEADER_EPOCH, True, False),
        (KafkaError.OFFSET_NOT_AVAILABLE, True, False),
        (KafkaError.NOT_COORDINATOR, True, False),
        (KafkaError.COORDINATOR_LOAD_IN_PROGRESS, True, False),
        (KafkaError.COORDINATOR_NOT_AVAILABLE, True, False),
        (KafkaError.NOT_ENOUGH_REPLICAS, True, False),
        (KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, True, False),
        (KafkaError.CONCURRENT_TRANSACTIONS, True, False),
        (KafkaError.REQUEST_TIMED_OUT, True, False),
        (KafkaError.UNSTABLE_OFFSET_COMMIT, True, False),
        (KafkaError.REBALANCE_IN_PROGRESS, True, False),
        # librdkafka's "no answer yet"
        (KafkaError._TRANSPORT, True, False),
        (KafkaError._TIMED_OUT, True, False),
        (KafkaError._MSG_TIMED_OUT, True, False),
        (KafkaError._ALL_BROKERS_DOWN, True, False),
        (KafkaError._WAIT_COORD, True, False),
        (KafkaError._UNKNOWN_PARTITION, True, False),
        (KafkaError._NOENT, True, False),  # ListOffsets: "No leaders found"
        # answers that waiting does not change
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, False, False),
        (KafkaError.GROUP_AUTHORIZATION_FAILED, False, False),
        (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, False, False),
        (KafkaError.PRODUCER_FENCED, False, False),
        (KafkaError.INVALID_PRODUCER_EPOCH, False, False),
        (KafkaError._FENCED, False, False),
        (KafkaError.MSG_SIZE_TOO_LARGE, False, False),
        (KafkaError.INVALID_TXN_STATE, False, False),
        (KafkaError.UNKNOWN_MEMBER_ID, False, False),
        (KafkaError.OFFSET_OUT_OF_RANGE, False, False),
        (KafkaError._STATE, False, False),
        (None, False, False),
    ],
)
def test_which_codes_a_later_try_gets_past(code, waits, stale):
    assert (classify(code) in kafkaerrors.LATER) is waits
    assert (classify(code) in kafkaerrors.STALE) is stale


def test_stale_metadata_is_all_retriable():
    assert kafkaerrors.STALE <= kafkaerrors.LATER


@pytest.mark.parametrize(
    "error, kind",
    [
        (6, Kind.STALE_METADATA),
        ("NOT_LEADER_OR_FOLLOWER", Kind.STALE_METADATA),
        (KafkaError(KafkaError.NOT_COORDINATOR), Kind.FAILOVER),
        (KafkaException(KafkaError(KafkaError._FENCED)), Kind.FENCED),
        (kp_errors.ProducerFencedError(), Kind.FENCED),
        (kp_errors.SaslAuthenticationFailedError(), Kind.AUTH),
        (kp_errors.KafkaConnectionError(), Kind.NO_ANSWER),
        ("_ALL_BROKERS_DOWN", Kind.ALL_BROKERS_DOWN),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, Kind.UNKNOWN_TOPIC),
        (KafkaError._UNKNOWN_PARTITION, Kind.RETRY),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, Kind.OTHER),
        ("NOT_A_KAFKA_ERROR", Kind.OTHER),
        (ValueError(), Kind.OTHER),
        (None, Kind.OTHER),
        (True, Kind.OTHER),
    ],
)
def test_classify_reads_codes_names_and_both_libraries(error, kind):
    assert classify(error) is kind


def test_a_name_is_classified_as_its_code():
    """By either library's name for it: librdkafka's (KafkaError.name()) and kafka-python's (its
    error class's `message`)."""
    import inspect

    librdkafka = {v for k, v in vars(KafkaError).items() if isinstance(v, int) and not k.startswith("__")}
    kafka_python = {
        c.errno: c.message
        for c in vars(kp_errors).values()
        if inspect.isclass(c) and isinstance(getattr(c, "errno", None), int)
    }
    for code in range(-200, 200):
        if code in librdkafka:
            assert classify(KafkaError(code).name()) is classify(code), code
        if code in kafka_python:
            assert classify(kafka_python[code]) is classify(code), code


@pytest.mark.parametrize(
    "exc, code",
    [
        (KafkaException(KafkaError(KafkaError.FENCED_LEADER_EPOCH)), 74),
        (KafkaException(KafkaError(KafkaError._TRANSPORT)), -195),
        (kp_errors.NotCoordinatorError(), 16),
        (kp_errors.NotLeaderForPartitionError(), 6),
        (kp_errors.TopicAuthorizationFailedError(), 29),
        # kafka-python's "no answer yet": as librdkafka's codes for the same
        (kp_errors.KafkaConnectionError("111 ECONNREFUSED"), -195),
        (kp_errors.NodeNotReadyError(), -195),
        (kp_errors.KafkaTimeoutError(), -185),
        (kp_errors.RequestTimedOutError(), 7),
        (kp_errors.UnrecognizedBrokerVersion(), None),
        # an OSError's errno is not a Kafka code
        (ConnectionRefusedError(111, "refused"), None),
        (KafkaException("no error object"), None),
        (ValueError(), None),
    ],
)
def test_code_of_reads_both_client_libraries(exc, code):
    assert code_of(exc) == code


@pytest.mark.parametrize(
    "code, failing_over",
    [
        # a fence soon after these is the coordinator's doing (exit 75), not a takeover
        (KafkaError.FENCED_LEADER_EPOCH, True),  # by Kafka's table; not one of librdkafka's names
        (KafkaError.UNKNOWN_LEADER_EPOCH, True),
        (KafkaError.NOT_LEADER_FOR_PARTITION, True),
        (KafkaError.NOT_COORDINATOR, True),
        (KafkaError.COORDINATOR_LOAD_IN_PROGRESS, True),
        (KafkaError.NOT_ENOUGH_REPLICAS, True),
        (KafkaError._TRANSPORT, True),
        (KafkaError._TIMED_OUT, True),
        (KafkaError._MSG_TIMED_OUT, True),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, False),  # the user's to fix
        (KafkaError.PRODUCER_FENCED, False),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, False),
        (KafkaError.INVALID_TXN_STATE, False),
    ],
)
def test_which_errors_are_a_cluster_failing_over(code, failing_over):
    assert (classify(KafkaError(code)) in kafkaerrors.FAILING_OVER) is failing_over


@pytest.mark.parametrize(
    "exc, later",
    [
        # A partition the planner's clients do not know yet (just added) or whose leader moves.
        (KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION)), True),
        (KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)), True),
        (KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE)), True),
        (KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)), True),
        (KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT, "t", retriable=True)), True),
        # A leader that came back (SIGKILLed, restarted): librdkafka calls these not retriable,
        # Kafka's protocol does (issue 29: the planner stopped the pipe with exit 1 on them).
        (KafkaException(KafkaError(KafkaError.FENCED_LEADER_EPOCH)), True),
        (KafkaException(KafkaError(KafkaError.UNKNOWN_LEADER_EPOCH)), True),
        (KafkaException(KafkaError(KafkaError.OFFSET_NOT_AVAILABLE)), True),
        # Nothing a later round changes: the planner stops with the error.
        (KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), False),
        (KafkaException(KafkaError(KafkaError._FENCED, "f", fatal=True)), False),
        (KafkaException("no error object"), False),
        (KafkaException(), False),
    ],
)
def test_which_errors_a_later_try_gets_past_with_librdkafkas_flag(exc, later):
    assert kafkaerrors.later(exc) is later


@pytest.mark.parametrize("attempt,expected", [(0, 0.05), (1, 0.1), (3, 0.4), (4, 0.8), (5, 1.0), (40, 1.0)])
def test_backoff_doubles_to_a_cap(attempt, expected):
    assert kafkaerrors.backoff(attempt) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("error", "moved"),
    [
        (5, True),  # LEADER_NOT_AVAILABLE
        (6, True),  # NOT_LEADER_OR_FOLLOWER
        (74, True),  # FENCED_LEADER_EPOCH
        (-195, True),  # the connection failed: the leader died and has not moved yet
        (29, False),  # TOPIC_AUTHORIZATION_FAILED
        (True, False),
        ("re-check failed: NOT_LEADER_OR_FOLLOWER: This server is not the leader", True),
        ("DescribeProducers: KafkaConnectionError: 111 ECONNREFUSED", True),
        ("NodeNotReadyError: 2", True),
        ("[Error 7] RequestTimedOutError: Request timed out", True),
        ("TOPIC_AUTHORIZATION_FAILED: not authorized", False),
    ],
)
def test_one_vocabulary_for_a_leader_that_moved(error, moved):
    """The Fetch reader and the marker writes ask the same table (issue 60: two local lists before)."""
    from kxtx.client.kafkaerrors import leader_moved

    assert leader_moved(error) is moved


def test_a_leader_that_moved_from_a_kafka_python_exception():
    import kafka.errors as errors

    from kxtx.client.kafkaerrors import leader_moved

    assert leader_moved(errors.NotLeaderForPartitionError()) is True
    assert leader_moved(errors.KafkaConnectionError("refused")) is True
    assert leader_moved(errors.TopicAuthorizationFailedError()) is False
