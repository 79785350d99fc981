"""Every decision kxtx takes on a Kafka error, code by code and class by class: which errors a
later try gets past, which a one-shot command asks again after, which are a cluster failing over
(exit 75), which mean no answer, which a fence. `EXPECTED` was generated from the seven classifiers
that stood before the one table (kxtx.client.kafkaerrors.classify) replaced them (worth_waiting,
stale_metadata, waits_out, failing_over_code, failing_over, retriable, rounds.later, and the name
sets of clients.translate and unreachable), so this test proves that the table decides as they did."""

from __future__ import annotations

import inspect

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka import errors as kp_errors

#: every protocol code Kafka defines so far and every librdkafka local code, with room to spare
CODES = range(-200, 200)


def _kp_classes() -> list[type[BaseException]]:
    """kafka-python's error classes (local ones and one per protocol code)."""
    return [c for c in vars(kp_errors).values() if inspect.isclass(c) and issubclass(c, BaseException)]


def _make(cls: type[BaseException]) -> BaseException:
    try:
        return cls()
    except TypeError:  # LogTruncationError wants its offsets
        return cls.__new__(cls)


def _others() -> dict[str, BaseException]:
    """Exceptions from neither client library's table."""
    return {
        "TimeoutError": TimeoutError(),
        "ConnectionRefusedError": ConnectionRefusedError(111, "refused"),
        "ValueError": ValueError("x"),
        "KafkaException(str)": KafkaException("no error object"),
    }


def _codes(decide) -> list[str]:
    return [str(c) for c in CODES if decide(c)]


def _names(decide) -> list[str]:
    """The kafka-python classes and other exceptions for which `decide(exc)` is true."""
    excs = {c.__name__: _make(c) for c in _kp_classes()} | _others()
    return sorted(name for name, exc in excs.items() if decide(exc))


def _translated(exc: BaseException) -> str:
    from kxtx.client.clients import translate

    return type(translate(exc, "doing")).__name__


def _watched(err: KafkaError) -> bool:
    """The failover watch notes `err` as the cluster failing over."""
    from kxtx.client import failover

    watch = failover.Watch()
    watch.note(err)
    return watch.last > float("-inf")


def decisions() -> dict[str, list[str]]:
    """Each decision: the codes (confluent-kafka) and the class names (kafka-python, others) it
    says yes to."""
    from kxtx.client import clients, kafkaerrors
    from kxtx.client import txwriter as tw
    from kxtx.client.kafkaerrors import classify
    from kxtx.pipe.worker import task

    def confluent(c: int) -> KafkaException:
        return KafkaException(KafkaError(c))

    def refused(c: int) -> bool:
        errors = clients.BrokerErrors()
        errors(KafkaError(c))
        return errors.refused is not None

    return {
        # a later try gets past it: a transactional call, a consumer's poll, the next pipe round
        "later_try": _codes(lambda c: classify(c) in kafkaerrors.LATER),
        "txn_call_retries": _codes(lambda c: tw.decide(tw.BEGIN, KafkaError(c), 0, 1) == tw.RETRY),
        "pipe_round_later": _codes(lambda c: kafkaerrors.later(confluent(c))),
        "stale_metadata": _codes(lambda c: classify(c) in kafkaerrors.STALE),
        # a one-shot command asks again (ride_out, dump's consumer)
        "asks_again": _codes(lambda c: classify(confluent(c)) in kafkaerrors.ASK_AGAIN),
        "asks_again_kp": _names(lambda e: classify(e) in kafkaerrors.ASK_AGAIN),
        # a cluster failing over: a fence soon after is the coordinator's (exit 75)
        "failing_over": _codes(lambda c: _watched(KafkaError(c))),
        "abortable_unavailable": _codes(lambda c: tw.Abortable("x", KafkaError(c)).unavailable),
        # what the error becomes at the boundary
        "unavailable": _codes(lambda c: _translated(confluent(c)) == "Unavailable"),
        "unavailable_kp": _names(lambda e: _translated(e) == "Unavailable"),
        "fenced_error": _codes(lambda c: _translated(confluent(c)) == "FencedError"),
        "fenced_error_kp": _names(lambda e: _translated(e) == "FencedError"),
        "authentication": _codes(lambda c: "authentication failed" in str(clients.translate(confluent(c)))),
        "authentication_kp": _names(lambda e: "authentication failed" in str(clients.translate(e))),
        "refused_login": _codes(refused),
        # no answer from the cluster
        "no_answer": _codes(lambda c: clients.unreachable(confluent(c))),
        "no_answer_kp": _names(clients.unreachable),
        # a pipe task's producer can do nothing more with its transactional id
        "task_fenced": _codes(lambda c: task._fenced(KafkaError(c))),
    }


#: decision -> the codes, or class names, it said yes to (space-separated), before the table
EXPECTED: dict[str, str] = {
    "later_try": (
        "-195 -192 -190 -187 -185 -180 -156 2 3 5 6 7 9 13 14 15 16 19 20 27 41 51 56 70 71 72 "
        "74 75 78 80 83 84 88 89 100 103 106 122 123 133"
    ),
    "txn_call_retries": (
        "-195 -192 -190 -187 -185 -180 -156 2 3 5 6 7 9 13 14 15 16 19 20 27 41 51 56 "
        "70 71 72 74 75 78 80 83 84 88 89 100 103 106 122 123 133"
    ),
    "pipe_round_later": (
        "-195 -192 -190 -187 -185 -180 -156 2 3 5 6 7 9 13 14 15 16 19 20 27 41 51 56 "
        "70 71 72 74 75 78 80 83 84 88 89 100 103 106 122 123 133"
    ),
    "stale_metadata": "3 5 6 9 13 56 72 74 80 83 84 100 103",
    "asks_again": (
        "-195 -192 -190 -187 -185 -180 -156 2 5 6 7 9 13 14 15 16 19 20 27 41 51 56 70 71 72 "
        "74 75 78 80 83 84 88 89 100 103 106 122 123 133"
    ),
    "asks_again_kp": (
        "ConcurrentTransactionsError CoordinatorLoadInProgressError "
        "CoordinatorNotAvailableError CorruptRecordError ElectionNotNeededError "
        "EligibleLeadersNotAvailableError FencedLeaderEpochError "
        "FetchSessionIdNotFoundError FetchSessionTopicIdError InconsistentTopicIdError "
        "InvalidFetchSessionEpochError InvalidShareSessionEpochError KafkaConnectionError "
        "KafkaStorageError KafkaTimeoutError LeaderNotAvailableError ListenerNotFoundError "
        "NetworkExceptionError NodeNotReadyError NotControllerError NotCoordinatorError "
        "NotEnoughReplicasAfterAppendError NotEnoughReplicasError "
        "NotLeaderForPartitionError OffsetNotAvailableError "
        "PreferredLeaderNotAvailableError RebalanceInProgressError "
        "ReplicaNotAvailableError RequestTimedOutError ShareSessionNotFoundError "
        "StaleMetadata ThrottlingQuotaExceededError UnknownLeaderEpochError "
        "UnknownTopicIdError UnstableOffsetCommitError"
    ),
    "failing_over": (
        "-195 -192 -187 -185 2 5 6 7 9 13 14 15 16 19 20 27 41 51 56 70 71 72 74 75 78 80 "
        "83 84 88 89 100 103 106 122 123 133"
    ),
    "abortable_unavailable": (
        "-195 -192 -187 -185 2 5 6 7 9 13 14 15 16 19 20 27 41 51 56 70 71 72 74 "
        "75 78 80 83 84 88 89 100 103 106 122 123 133"
    ),
    "unavailable": (
        "-192 -187 2 5 6 9 13 14 15 16 19 20 27 41 51 56 70 71 72 74 75 78 80 83 84 88 89 "
        "100 103 106 122 123 133"
    ),
    "unavailable_kp": (
        "ConcurrentTransactionsError CoordinatorLoadInProgressError "
        "CoordinatorNotAvailableError CorruptRecordError ElectionNotNeededError "
        "EligibleLeadersNotAvailableError FencedLeaderEpochError "
        "FetchSessionIdNotFoundError FetchSessionTopicIdError InconsistentTopicIdError "
        "InvalidFetchSessionEpochError InvalidShareSessionEpochError KafkaStorageError "
        "LeaderNotAvailableError ListenerNotFoundError NetworkExceptionError "
        "NotControllerError NotCoordinatorError NotEnoughReplicasAfterAppendError "
        "NotEnoughReplicasError NotLeaderForPartitionError OffsetNotAvailableError "
        "PreferredLeaderNotAvailableError RebalanceInProgressError "
        "ReplicaNotAvailableError ShareSessionNotFoundError ThrottlingQuotaExceededError "
        "UnknownLeaderEpochError UnknownTopicIdError UnstableOffsetCommitError"
    ),
    "fenced_error": "-144 47 82 90",
    "fenced_error_kp": "FencedInstanceIdError InvalidProducerEpochError ProducerFencedError",
    "authentication": "-169 58",
    "authentication_kp": "SaslAuthenticationFailedError",
    "refused_login": "-181 -169 58",
    "no_answer": "-195 -187 -185 7",
    "no_answer_kp": (
        "InvalidSessionTimeoutError InvalidTransactionTimeoutError KafkaTimeoutError "
        "RequestTimedOutError TimeoutError"
    ),
    "task_fenced": "-144 47 49 90",
}


@pytest.mark.parametrize("decision", sorted(EXPECTED))
def test_every_decision_is_as_before(decision):
    assert decisions()[decision] == EXPECTED[decision].split()


def test_every_decision_is_pinned():
    assert sorted(decisions()) == sorted(EXPECTED)


def test_the_librdkafka_flag_alone_makes_a_transactional_call_retry():
    from kxtx.client.kafkaerrors import later

    assert all(later(KafkaError(c, retriable=True)) for c in CODES)
