"""kxtx.produce.brokerside's pure part: whether a topic's authorized operations let produce write."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AclOperation as Op

from kxtx.produce.brokerside import may_write


@pytest.mark.parametrize(
    "ops, expected",
    [
        (None, True),  # the broker did not say (before Kafka 2.3): the broker decides
        ([Op.WRITE], True),
        ([Op.READ, Op.WRITE, Op.DESCRIBE], True),
        ([Op.ALL], True),
        ([Op.READ, Op.DESCRIBE], False),
        ([Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER], False),
        ([], False),
    ],
)
def test_may_write(ops, expected):
    assert may_write(ops) is expected
