"""Client exceptions become one-line KxtxErrors of the right class (table-driven, no broker)."""

from __future__ import annotations

import pytest

from kxtx.client.clients import translate
from kxtx.errors import FencedError, KafkaOperationError, Unavailable


def _confluent(code_name: str, text: str = "Broker: some error", fatal: bool = False):
    from confluent_kafka import KafkaError, KafkaException

    return KafkaException(KafkaError(getattr(KafkaError, code_name), text, fatal=fatal))


@pytest.mark.parametrize(
    "code, cls, words",
    [
        ("_FENCED", FencedError, "same transactional id took over (_FENCED)"),
        ("PRODUCER_FENCED", FencedError, "same transactional id took over (PRODUCER_FENCED)"),
        ("INVALID_PRODUCER_EPOCH", FencedError, "same transactional id took over"),
        # static membership: another consumer, not another producer
        ("FENCED_INSTANCE_ID", FencedError, "same group.instance.id joined the group"),
        ("NOT_COORDINATOR", Unavailable, "run the same command again"),
        ("CONCURRENT_TRANSACTIONS", Unavailable, "failing over"),
        ("INVALID_PRODUCER_ID_MAPPING", KafkaOperationError, "Broker: some error"),
        # retriable in Kafka's protocol though librdkafka says not (a leader came back): exit 75
        ("FENCED_LEADER_EPOCH", Unavailable, "run the same command again"),
        ("UNKNOWN_LEADER_EPOCH", Unavailable, "run the same command again"),
        ("OFFSET_NOT_AVAILABLE", Unavailable, "run the same command again"),
        # retriable too, but a missing topic is the user's to fix
        ("UNKNOWN_TOPIC_OR_PART", KafkaOperationError, "Broker: some error"),
    ],
)
def test_translate_names_the_cause(code, cls, words):
    err = translate(_confluent(code, fatal=code == "_FENCED"), "committing")
    assert type(err) is cls
    assert str(err).startswith("committing: ")
    assert words in str(err)
    assert "\n" not in str(err)


def _kp(name: str):
    from kafka import errors

    return getattr(errors, name)()


@pytest.mark.parametrize(
    "exc, waits",
    [
        # confluent-kafka, by Kafka's table whatever librdkafka's retriable flag says
        (_confluent("FENCED_LEADER_EPOCH"), True),
        (_confluent("UNKNOWN_LEADER_EPOCH"), True),
        (_confluent("NOT_LEADER_FOR_PARTITION"), True),
        (_confluent("LEADER_NOT_AVAILABLE"), True),
        (_confluent("OFFSET_NOT_AVAILABLE"), True),
        (_confluent("NOT_COORDINATOR"), True),
        (_confluent("COORDINATOR_LOAD_IN_PROGRESS"), True),
        (_confluent("COORDINATOR_NOT_AVAILABLE"), True),
        (_confluent("NOT_ENOUGH_REPLICAS"), True),
        (_confluent("REBALANCE_IN_PROGRESS"), True),
        (_confluent("_TRANSPORT"), True),
        (_confluent("_TIMED_OUT"), True),
        # kafka-python (KIP-664 admin calls), by the code it carries
        (_kp("CoordinatorLoadInProgressError"), True),
        (_kp("NotCoordinatorError"), True),
        (_kp("NotLeaderForPartitionError"), True),
        (_kp("FencedLeaderEpochError"), True),
        (_kp("CoordinatorNotAvailableError"), True),
        (_kp("KafkaConnectionError"), True),  # a coordinator or leader that died, not moved yet
        (_kp("NodeNotReadyError"), True),
        # answers that do not change by waiting
        (_confluent("UNKNOWN_TOPIC_OR_PART"), False),  # retriable for Kafka, the user's to fix
        (_kp("UnknownTopicOrPartitionError"), False),
        (_confluent("TOPIC_AUTHORIZATION_FAILED"), False),
        (_kp("TransactionalIdAuthorizationFailedError"), False),
        (_kp("TransactionalIdNotFoundError"), False),
        (_confluent("PRODUCER_FENCED"), False),
        (_confluent("INVALID_PRODUCER_EPOCH"), False),
        (ValueError("not a Kafka error"), False),
    ],
)
def test_which_errors_a_command_asks_again_after(exc, waits):
    from kxtx.client.kafkaerrors import ASK_AGAIN, classify

    assert (classify(exc) in ASK_AGAIN) is waits


class Calls:
    """A call that fails with `errors` in turn, then returns "done"."""

    def __init__(self, *errors):
        self.errors, self.count = list(errors), 0

    def __call__(self):
        self.count += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def test_ride_out_asks_again_while_the_cluster_moves():
    from kxtx.client.clients import ride_out

    call = Calls(_kp("CoordinatorLoadInProgressError"), _confluent("FENCED_LEADER_EPOCH"))
    assert ride_out(call, "describing", 30) == "done"
    assert call.count == 3


@pytest.mark.parametrize(
    "error, cls",
    [
        # past the bound: exit 75, naming what it waited for
        (_confluent("NOT_COORDINATOR"), Unavailable),
        (_kp("CoordinatorLoadInProgressError"), Unavailable),
        (_confluent("FENCED_LEADER_EPOCH"), Unavailable),
        # no answer (a paused leader): the cluster answered the client's bootstrap, a broker not
        (_confluent("_TIMED_OUT", "Failed to get watermark offsets: Local: Timed out"), Unavailable),
    ],
)
def test_ride_out_gives_up_at_its_bound_with_exit_75(error, cls):
    from kxtx.client.clients import ride_out

    call = Calls(*[error] * 1000)
    with pytest.raises(cls) as info:
        ride_out(call, "describing", 0.3)
    assert str(info.value).startswith("describing: ") and "run the same command again" in str(info.value)
    assert 2 <= call.count < 1000


def test_ride_out_reports_other_errors_at_once():
    from kxtx.client.clients import ride_out

    call = Calls(_confluent("TOPIC_AUTHORIZATION_FAILED"))
    with pytest.raises(KafkaOperationError):
        ride_out(call, "describing", 30)
    assert call.count == 1
