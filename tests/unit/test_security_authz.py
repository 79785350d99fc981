"""Authorization errors name the operation and the resource; secrets never reach a message."""

from __future__ import annotations

import pytest

from kxtx.client import authz
from kxtx.client.clients import translate
from kxtx.errors import AuthorizationError, KafkaOperationError


def _confluent(code_name: str, text: str = "Broker: authorization failed"):
    from confluent_kafka import KafkaError, KafkaException

    return KafkaException(KafkaError(getattr(KafkaError, code_name), text))


def _kafka_python(cls_name: str):
    import kafka.errors as errors

    return getattr(errors, cls_name)()


@pytest.mark.parametrize(
    "exc, doing, need, expected",
    [
        (
            _confluent("TOPIC_AUTHORIZATION_FAILED"),
            "reading metadata of 'orders'",
            None,
            "DESCRIBE on Topic 'orders'",
        ),
        (_confluent("TOPIC_AUTHORIZATION_FAILED"), "fetching orders", None, "READ on Topic 'orders'"),
        (
            _confluent("TOPIC_AUTHORIZATION_FAILED"),
            "committing",
            authz.Need("WRITE", "Topic", "out"),
            "WRITE on Topic 'out'",
        ),
        (
            _confluent("TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
            "initialising transactions (transactional id tx-1)",
            None,
            "WRITE on TransactionalId 'tx-1'",
        ),
        (
            _confluent("GROUP_AUTHORIZATION_FAILED"),
            "committing offsets of group 'g1'",
            None,
            "READ on Group 'g1'",
        ),
        # the need whose resource matches the error wins over others the caller listed
        (
            _confluent("GROUP_AUTHORIZATION_FAILED"),
            "sending offsets",
            [authz.Need("WRITE", "Topic", "t"), authz.Need("READ", "Group", "g2")],
            "READ on Group 'g2'",
        ),
        (
            _kafka_python("TransactionalIdAuthorizationFailedError"),
            "DescribeTransactions tx-9",
            None,
            "DESCRIBE on TransactionalId 'tx-9'",
        ),
        (
            _kafka_python("ClusterAuthorizationFailedError"),
            "WriteTxnMarkers",
            None,
            "ALTER on Cluster is required to write transaction markers",
        ),
        (
            _kafka_python("ClusterAuthorizationFailedError"),
            "DescribeConfigs broker 1",
            None,
            "DESCRIBE_CONFIGS on Cluster",
        ),
        (_kafka_python("TopicAuthorizationFailedError"), "DescribeProducers t:0", None, "READ on Topic"),
    ],
)
def test_authorization_errors_name_operation_and_resource(exc, doing, need, expected):
    err = translate(exc, doing, need=need)
    assert isinstance(err, AuthorizationError) and err.exit_code == 1
    assert expected in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize(
    "ops, any_of, raises",
    [
        (None, ["ALTER", "CLUSTER_ACTION"], False),
        ({"DESCRIBE", "ALTER"}, ["ALTER", "CLUSTER_ACTION"], False),
        ({"ALL"}, ["ALTER"], False),
        ({"DESCRIBE"}, ["ALTER", "CLUSTER_ACTION"], True),
        (set(), ["DESCRIBE_CONFIGS"], True),
    ],
)
def test_check_cluster_ops(ops, any_of, raises):
    if raises:
        with pytest.raises(AuthorizationError, match=f"{any_of[0]} on Cluster is required to abort"):
            authz.check_cluster_ops(ops, any_of, "abort transactions")
    else:
        authz.check_cluster_ops(ops, any_of, "abort transactions")


def test_require_says_nothing_changed():
    msg = str(authz.require(authz.Need("WRITE", "TransactionalId", "x"), "fence it"))
    assert msg == "not authorized: WRITE on TransactionalId 'x' is required to fence it; nothing was changed"


def test_authentication_failure_and_secret_scrub():
    from kxtx.client.properties import remember_secrets

    remember_secrets({"sasl.password": "hunter2-secret"})
    exc = _confluent("_AUTHENTICATION", "SASL auth failed for hunter2-secret")
    err = translate(exc, "reading metadata")
    assert isinstance(err, KafkaOperationError) and "authentication failed" in str(err)
    assert "hunter2-secret" not in str(err)
