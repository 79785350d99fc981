"""Hanging transactions seen by a principal with limited ACLs (SASL/SCRAM sandbox, StandardAuthorizer).

`limited` may do anything on resources prefixed `limited.` only: it can READ the topic, but the broker
silently hides the transactional id `other-...` from it, so find-hanging must warn that its rows may
be false positives; and it has no ALTER/CLUSTER_ACTION on the Cluster, so abort must say exactly that.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests import cli
from tests.conftest import json_doc
from tests.integration.kafka_io import wait_until
from tests.integration.txn_helpers import make_hanging

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def secure(brokers):
    k = brokers({"transaction.partition.verification.enable": "false"}, security="sasl_plaintext")
    return k.bootstrap, k.listeners


def kxtx_as(secure, user, *args, expect=0):
    bootstrap, listeners = secure
    xs = [a for k, v in listeners.client_config(user).items() for a in ("-X", f"{k}={v}")]
    return cli.run(*args, "-b", bootstrap, *xs, expect=expect, clean=True, timeout=180)


def _hanging_topic(secure, prefix: str) -> tuple[str, str]:
    """(the internal listener, a new one-partition topic with a leader), made through the internal
    listener: PLAINTEXT with a super-user principal, for set-up only."""
    from confluent_kafka.admin import AdminClient, NewTopic

    _bootstrap, listeners = secure
    internal = f"127.0.0.1:{listeners.internal_port}"
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": internal})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    wait_until(
        lambda: admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader >= 0,
        30,
        f"a leader of {topic}",
        tolerate=(KeyError,),
    )
    return internal, topic


def test_limited_principal_gets_warnings_and_the_missing_permission(secure):
    internal, topic = _hanging_topic(secure, "limited.hang")
    _p, starts = make_hanging(internal, f"other-{uuid.uuid4().hex[:6]}", [(topic, 0)])

    r = kxtx_as(
        secure,
        "limited",
        "find-hanging",
        "--topic",
        topic,
        "--max-transaction-timeout",
        "15",
        "-o",
        "jsonl",
        expect=3,
    )
    (row,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert row["start_offset"] == starts[(topic, 0)]
    assert row["transactional_id"] is None  # hidden from this principal
    assert row["maybe_false_positive"] is True
    assert "false positives" in r.stderr

    # kxtx monitor, as the same principal: the same partition, the same warning in its document
    r = kxtx_as(
        secure,
        "limited",
        "monitor",
        "collect",
        "--topic",
        topic,
        "--max-transaction-timeout",
        "15",
        "-o",
        "json",
    )
    doc = json_doc(r)
    assert [(p["topic"], p["hanging_transactions"]) for p in doc["partitions"]] == [(topic, 1)]
    assert any("false positives" in w for w in doc["warnings"]), doc["warnings"]
    r = kxtx_as(
        secure, "limited", "monitor", "check", "--topic", topic, "--max-transaction-timeout", "15", expect=2
    )
    assert r.stdout.startswith("KXTX CRITICAL - hanging transactions 1"), r.stdout

    r = kxtx_as(
        secure,
        "limited",
        "abort-hanging",
        "--topic",
        topic,
        "--max-transaction-timeout",
        "15",
        "--yes",
        "-o",
        "jsonl",
        expect=1,
    )
    assert "ALTER on Cluster is required" in r.stderr and "nothing was changed" in r.stderr

    r = kxtx_as(
        secure,
        "admin",
        "abort-hanging",
        "--topic",
        topic,
        "--max-transaction-timeout",
        "15",
        "--yes",
        "-o",
        "jsonl",
        expect=0,
    )
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert out[-1]["outcome"] == "aborted"
    kxtx_as(secure, "admin", "find-hanging", "--topic", topic, "-o", "jsonl", expect=0)


def _acls(internal: str, create: bool) -> None:
    """READ and DESCRIBE on __transaction_state for `limited` (the audit reads the coordinators'
    decisions there) and READ on its reader's consumer group, granted or taken back by the internal
    super user."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": internal})
    user, topic, group = "User:limited", ResourceType.TOPIC, ResourceType.GROUP
    literal, prefixed, allow = (
        ResourcePatternType.LITERAL,
        ResourcePatternType.PREFIXED,
        AclPermissionType.ALLOW,
    )
    args = [
        (topic, "__transaction_state", literal, user, "*", op, allow)
        for op in (AclOperation.READ, AclOperation.DESCRIBE)
    ]
    # the throwaway consumer group of kxtx's __transaction_state reader
    args.append((group, "kxtx-dump-", prefixed, user, "*", AclOperation.READ, allow))
    if create:
        futs = admin.create_acls([AclBinding(*a) for a in args], request_timeout=30).values()
    else:
        futs = admin.delete_acls([AclBindingFilter(*a) for a in args], request_timeout=30).values()
    for f in futs:
        f.result(timeout=30)


def test_repair_names_the_cluster_permission_it_lacks_and_writes_nothing(secure):
    """A principal that may read everything the audit needs but has neither ALTER nor CLUSTER_ACTION
    on the Cluster: repair-markers names both and writes nothing; the super user's repair then ends
    the open records."""
    from tests.integration.kafka_io import end_offsets

    internal, topic = _hanging_topic(secure, "limited.repair")
    make_hanging(internal, f"limited.r-{uuid.uuid4().hex[:6]}", [(topic, 0)])
    before = end_offsets(internal, topic)
    _acls(internal, create=True)
    try:
        audit = kxtx_as(secure, "limited", "audit-markers", "--topic", topic, "-o", "jsonl", expect=3)
        assert [json.loads(x)["kind"] for x in audit.stdout.splitlines()] == ["undetermined"]
        args = ["repair-markers", "--topic", topic, "--partition", "0", "--abort", "--yes", "-o", "jsonl"]
        r = kxtx_as(secure, "limited", *args, expect=1)
        assert "ALTER on Cluster is required" in r.stderr and "CLUSTER_ACTION" in r.stderr, r.stderr
        assert "nothing was changed" in r.stderr, r.stderr
        assert end_offsets(internal, topic) == before  # nothing written: the LSO stayed
    finally:
        _acls(internal, create=False)
    r = kxtx_as(secure, "admin", *args, expect=0)
    assert [json.loads(x).get("outcome") for x in r.stdout.splitlines()][-1] == "aborted"
    kxtx_as(secure, "admin", "audit-markers", "--topic", topic, expect=0)
