"""`kxtx complete` as a principal without the ACLs it needs, on the SASL_SSL sandbox (shared with
test_security.py in a worker): one error line naming the missing permission, and the coordinator's
transaction left as it was (checked as admin)."""

from __future__ import annotations

import pytest

from tests.integration.security_helpers import assert_no_secret, sasl_ssl_broker

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def sec(brokers):
    return sasl_ssl_broker(brokers)


def _ongoing(sec, tid: str):
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(**sec.settings("admin").kafka_python())
    try:
        d = admin.describe_transactions([tid])[tid]
    finally:
        admin.close()
    return (getattr(d.state, "value", None) or str(d.state), d.producer_id, d.producer_epoch)


def _error_line(sec, r) -> str:
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert_no_secret(sec, "limited", r)
    errors = [line for line in r.stderr.splitlines() if line.startswith("kxtx: error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


@pytest.mark.parametrize(
    ("granted", "named"),
    [
        (("DESCRIBE",), "WRITE on TransactionalId"),  # it sees the transaction, may not end it
        ((), "DESCRIBE on TransactionalId"),  # it may not even see it
    ],
)
def test_a_missing_acl_is_named_and_nothing_changes(sec, granted, named):
    topic = sec.create_topic(partitions=1)
    tid = f"tx-cpl-{topic}"
    sec.make_live(tid, topic)
    sec.grant("limited", "topic", topic, "DESCRIBE")
    if granted:
        sec.grant("limited", "transactional_id", tid, *granted)
    before = _ongoing(sec, tid)
    assert before[0] == "Ongoing"
    r = sec.kxtx("limited", "complete", tid, "--commit", "--yes", "--timeout", "15", expect=1)
    line = _error_line(sec, r)
    assert f"{named} '{tid}'" in line, line
    assert _ongoing(sec, tid) == before and sec.offsets(topic)[0] == 0
    # admin may: the same line ends it
    sec.kxtx("admin", "complete", tid, "--abort", "--yes", "--timeout", "15", expect=0)
