"""kxtx.client.kafkaerrors: which errors a command waits out, code by code (the table itself is compared
with Kafka's own `Errors` enum in tests/integration/test_kafka_errors.py)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka import errors as kp_errors

from kxtx.client import kafkaerrors
from kxtx.client.kafkaerrors import code_of, stale_metadata, worth_waiting


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
def test_which_errors_a_command_waits_out(code, waits, stale):
    assert worth_waiting(code) is waits
    assert stale_metadata(code) is stale


def test_stale_metadata_codes_are_all_retriable():
    assert set(kafkaerrors.STALE_METADATA) <= set(kafkaerrors.RETRIABLE)


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
    from kxtx.client import failover

    assert failover.failing_over(KafkaError(code)) is failing_over
