"""Client exceptions become one-line KxtxErrors of the right class (table-driven, no broker)."""

from __future__ import annotations

import pytest

from kxtx.clients import translate
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
