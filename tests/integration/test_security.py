"""Every command over SASL_SSL/SCRAM (`kxtx sandbox start --security sasl_ssl`), configured only by the
Java client.properties the sandbox prints: as admin (super user) each succeeds; as the limited user
each fails cleanly where an ACL is missing, naming the operation and the resource, with exit 1 and
nothing half-done; find-hanging marks possible false positives for the limited user only; no
password ever appears in the output, even with --debug.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests import cli
from tests.conftest import json_doc
from tests.integration.kafka_io import read_committed, values
from tests.integration.pipe_helpers import pipe_args
from tests.integration.security_helpers import (
    assert_no_secret,
    rows,
    sasl_ssl_broker,
    write_lines,
)

pytestmark = pytest.mark.kafka

#: find-hanging looks at open transactions idle for longer than this (minutes)
MAX_TIMEOUT = "1"


@pytest.fixture(scope="module")
def sec(brokers):
    return sasl_ssl_broker(brokers)


@pytest.fixture(scope="module")
def scene(sec):
    """A topic with a truly hanging transaction and a live one; the limited user may READ/DESCRIBE
    the topic but not DESCRIBE either transactional id."""
    topic = sec.create_topic(f"h-{uuid.uuid4().hex[:6]}")
    sec.grant("limited", "topic", topic, "READ", "DESCRIBE")
    hang_id, live_id = f"tx-hang-{topic}", f"tx-live-{topic}"
    hang_start = sec.make_hanging(hang_id, topic)
    live_start = sec.make_live(live_id, topic)
    return {
        "topic": topic,
        "hang_id": hang_id,
        "live_id": live_id,
        "hang_start": hang_start,
        "live_start": live_start,
    }


def _fails_naming(sec, result, *phrases):
    """Exit 1, one error line naming the permission, no traceback without --debug, no secret."""
    assert result.returncode == 1, result.stderr
    assert_no_secret(sec, "limited", result)
    error = [line for line in result.stderr.splitlines() if line.startswith("kxtx: error:")]
    assert error, result.stderr
    for phrase in phrases:
        assert phrase in error[-1], error[-1]


# --- admin: every command succeeds ---------------------------------------------------------------------
def test_admin_cluster_and_find_hanging_without_false_positive(sec, scene):
    sec.kxtx("admin", "cluster", "-o", "json", expect=0)
    r = sec.kxtx(
        "admin",
        "find-hanging",
        "-t",
        scene["topic"],
        "--max-transaction-timeout",
        MAX_TIMEOUT,
        "-o",
        "jsonl",
        expect=3,
    )
    found = rows(r)
    # only the truly hanging transaction: the live one is mapped to its (Ongoing) coordinator state
    assert [(x["transactional_id"], x["start_offset"]) for x in found] == [
        (scene["hang_id"], scene["hang_start"])
    ]
    assert not any(x["maybe_false_positive"] for x in found)
    assert "false positive" not in r.stderr
    assert_no_secret(sec, "admin", r)


def test_admin_inspect_and_dump(sec, scene):
    r = sec.kxtx(
        "admin", "inspect", "txn", scene["live_id"], "--max-transaction-timeout", MAX_TIMEOUT, "-o", "json"
    )
    assert json_doc(r)["state"] == "Ongoing"
    r = sec.kxtx(
        "admin",
        "inspect",
        "partition",
        f"{scene['topic']}:0",
        "--max-transaction-timeout",
        MAX_TIMEOUT,
        "-o",
        "json",
    )
    statuses = {x["transactional_id"]: x["status"] for x in json_doc(r)["open_transactions"]}
    assert statuses[scene["live_id"]].startswith("ongoing")
    assert statuses[scene["hang_id"]].startswith("hanging")
    r = sec.kxtx("admin", "dump", "txn-state", "-t", scene["live_id"], "-o", "jsonl", expect=0)
    assert {x["key"]["transactional_id"] for x in rows(r)} == {scene["live_id"]}
    assert_no_secret(sec, "admin", r)
    # the whole log in forked processes: each opens its own SASL_SSL connection with the PEM files
    # the parent wrote, which outlive every worker
    r = sec.kxtx("admin", "dump", "txn-state", "-o", "jsonl", "--workers", "3", expect=0)
    assert scene["live_id"] in {x["key"]["transactional_id"] for x in rows(r)}


def test_admin_produce(sec):
    topic = sec.create_topic()
    r = sec.kxtx("admin", "produce", "-t", topic, write_lines(5), "-o", "json", expect=0)
    assert len(read_committed(sec.bootstrap, topic, conf=sec.conf())) == 5
    assert_no_secret(sec, "admin", r)


def test_admin_pipe_short_run(sec, tmp_path):
    src, dst = sec.create_topic(), sec.create_topic()
    from confluent_kafka import Producer

    p = Producer({**sec.conf("admin"), "log_level": 3})
    for i in range(4):
        p.produce(src, f"v{i}".encode())
    assert p.flush(30) == 0
    udf = tmp_path / "up.py"
    udf.write_text("def upper(value):\n    return value.upper()\n")
    r = sec.kxtx(
        "admin",
        "pipe",
        "--mode",
        "driver",
        *pipe_args(
            src, dst, f"{udf}:upper", f"g-{src}", value_format="string", max_records="4", until_idle="5"
        ),
        "-o",
        "json",
        expect=0,
    )
    assert sorted(values(read_committed(sec.bootstrap, dst, conf=sec.conf()))) == [b"V0", b"V1", b"V2", b"V3"]
    assert_no_secret(sec, "admin", r)


def test_admin_fence_and_abort_hanging(sec):
    topic = sec.create_topic()
    fence_id = f"tx-fence-{topic}"
    sec.make_live(fence_id, topic)
    start = sec.make_hanging(f"tx-abort-{topic}", topic)
    sec.kxtx("admin", "fence", fence_id, "--yes", "-o", "json", expect=0)
    r = sec.kxtx(
        "admin",
        "abort-hanging",
        "-t",
        topic,
        "--max-transaction-timeout",
        MAX_TIMEOUT,
        "--yes",
        "-o",
        "jsonl",
        expect=0,
    )
    lso, _hw = sec.offsets(topic)
    assert lso > start
    assert_no_secret(sec, "admin", r)


# --- limited: each fails cleanly where an ACL is missing --------------------------------------------
def test_limited_find_hanging_marks_possible_false_positives(sec, scene):
    r = sec.kxtx(
        "limited",
        "find-hanging",
        "-t",
        scene["topic"],
        "--max-transaction-timeout",
        MAX_TIMEOUT,
        "-o",
        "jsonl",
        debug=True,
        expect=3,
    )
    found = rows(r)
    # the live transaction looks hanging to this principal (its id is hidden), and is marked
    assert {x["start_offset"] for x in found} == {scene["hang_start"], scene["live_start"]}
    assert all(x["maybe_false_positive"] for x in found)
    assert "may be false positives" in r.stderr
    assert_no_secret(sec, "limited", r)


def test_inspect_partition_marks_false_positives_for_limited_only(sec, scene):
    args = (
        "inspect",
        "partition",
        f"{scene['topic']}:0",
        "--max-transaction-timeout",
        MAX_TIMEOUT,
        "-o",
        "json",
    )
    admin = sec.kxtx("admin", *args, expect=0)
    assert not any(x.get("maybe_false_positive") for x in json.loads(admin.stdout)["open_transactions"])
    assert "maybe_false_positive" not in admin.stderr
    limited = sec.kxtx("limited", *args, debug=True, expect=0)
    opened = json.loads(limited.stdout)["open_transactions"]
    live = next(x for x in opened if x["start_offset"] == scene["live_start"])
    assert live["status"].startswith("hanging") and live["maybe_false_positive"]
    assert "maybe_false_positive" in limited.stderr
    assert_no_secret(sec, "limited", limited)


def test_limited_inspect_txn_names_describe_on_the_id(sec, scene):
    r = sec.kxtx("limited", "inspect", "txn", scene["live_id"], debug=True, expect=1)
    _fails_naming(sec, r, f"DESCRIBE on TransactionalId '{scene['live_id']}'")


def test_limited_dump_names_the_internal_topic(sec, scene):
    r = sec.kxtx("limited", "dump", "txn-state", debug=True, expect=1)
    _fails_naming(sec, r, "DESCRIBE on Topic '__transaction_state'")


def test_limited_abort_hanging_aborts_nothing(sec, scene):
    before = sec.offsets(scene["topic"])
    r = sec.kxtx(
        "limited",
        "abort-hanging",
        "-t",
        scene["topic"],
        "--max-transaction-timeout",
        MAX_TIMEOUT,
        "--yes",
        debug=True,
        expect=1,
    )
    _fails_naming(sec, r, "ALTER on Cluster is required to abort transactions")
    assert sec.offsets(scene["topic"]) == before


def test_limited_manual_abort_and_dump_offsets(sec, scene):
    before = sec.offsets(scene["topic"])
    r = sec.kxtx(
        "limited",
        "abort",
        "--topic",
        scene["topic"],
        "--partition",
        "0",
        "--start-offset",
        str(scene["hang_start"]),
        "--yes",
        debug=True,
        expect=1,
    )
    _fails_naming(sec, r, "ALTER on Cluster is required to abort transactions")
    assert sec.offsets(scene["topic"]) == before
    r = sec.kxtx("limited", "dump", "offsets", debug=True, expect=1)
    _fails_naming(sec, r, "DESCRIBE on Topic '__consumer_offsets'")


def test_limited_fence_names_write_on_the_id(sec):
    topic = sec.create_topic()
    tid = f"tx-other-{topic}"
    sec.make_live(tid, topic)
    sec.grant("limited", "transactional_id", tid, "DESCRIBE")
    r = sec.kxtx("limited", "fence", tid, "--yes", debug=True, expect=1)
    _fails_naming(sec, r, f"WRITE on TransactionalId '{tid}'")


def test_limited_produce_writes_nothing(sec):
    topic = sec.create_topic()
    sec.grant("limited", "topic", topic, "DESCRIBE")
    path = write_lines(5)
    # its own transactional id and checkpoint topic (allowed by the limited. prefix): WRITE is
    # missing, which the topic's authorized operations tell before anything is written (a broker
    # refusing the records under load left only librdkafka's "invalid state" to report)
    r = sec.kxtx(
        "limited",
        "produce",
        "-t",
        topic,
        path,
        "--transactional-id",
        f"limited.{topic}",
        "--checkpoint-topic",
        f"limited.ckpt-{topic}",
        debug=True,
        expect=1,
    )
    _fails_naming(sec, r, f"WRITE on Topic '{topic}'", "nothing was changed")
    assert sec.offsets(topic) == (0, 0)
    # the default transactional id and checkpoint topic are outside its prefix
    writable = sec.create_topic()
    sec.grant("limited", "topic", writable, "WRITE", "DESCRIBE")
    r = sec.kxtx("limited", "produce", "-t", writable, path, debug=True, expect=1)
    _fails_naming(sec, r, "CREATE on Topic 'kxtx-checkpoints'")
    assert sec.offsets(writable) == (0, 0)


def test_limited_pipe_names_the_group(sec, tmp_path):
    src, dst = sec.create_topic(), sec.create_topic()
    sec.grant("limited", "topic", src, "READ", "DESCRIBE")
    sec.grant("limited", "topic", dst, "WRITE", "DESCRIBE")
    udf = tmp_path / "ident.py"
    udf.write_text("def ident(value):\n    return value\n")
    group = f"g-{src}"
    r = sec.kxtx(
        "limited",
        "pipe",
        "--mode",
        "driver",
        *pipe_args(src, dst, f"{udf}:ident", group, transactional_id=f"limited.{src}", until_idle="20"),
        debug=True,
        expect=1,
    )
    _fails_naming(sec, r, f"READ on Group '{group}'")


def test_wrong_password_fails_without_echoing_it(sec, tmp_path):
    props = tmp_path / "bad.properties"
    text = open(sec.properties("limited")).read().replace(sec.password("limited"), "not-the-Passw0rd")
    props.write_text(text)
    r = cli.run(
        *("--debug", "find-hanging", "--command-config", str(props), "--timeout", "5"),
        expect=1,
        clean=True,
        timeout=120,
    )
    assert "check sasl.mechanism, sasl.username and sasl.password" in r.stderr
    assert "not-the-Passw0rd" not in r.stdout + r.stderr


def test_limited_produce_to_a_topic_it_may_not_see_is_an_authorization_error(sec):
    # No ACL at all on the topic: the broker answers its metadata with TOPIC_AUTHORIZATION_FAILED
    # (it hides whether the topic exists). That is a missing permission (exit 1), not a missing
    # topic to create (exit 2).
    topic = sec.create_topic()
    r = sec.kxtx(
        "limited",
        "produce",
        "-t",
        topic,
        write_lines(3),
        "--transactional-id",
        f"limited.{topic}",
        "--checkpoint-topic",
        f"limited.ckpt-{topic}",
        expect=1,
    )
    _fails_naming(sec, r, f"WRITE on Topic '{topic}'", "TOPIC_AUTHORIZATION_FAILED")
    assert "create it first" not in r.stderr and "Traceback" not in r.stderr
    assert sec.offsets(topic) == (0, 0)


@pytest.mark.parametrize("mode", ["driver", "executors"])
def test_limited_pipe_from_a_topic_it_may_not_see_names_the_acl(sec, tmp_path, mode):
    """Both modes check topics before Spark starts (kxtx.pipe.preflight): a topic hidden by a
    missing DESCRIBE permission is named as that, not as a missing topic to create."""
    src, dst = sec.create_topic(), sec.create_topic()
    sec.grant("limited", "topic", dst, "WRITE", "DESCRIBE")
    udf = tmp_path / "ident.py"
    udf.write_text("def ident(value):\n    return value\n")
    r = sec.kxtx(
        "limited",
        "pipe",
        "--mode",
        mode,
        *pipe_args(src, dst, f"{udf}:ident", f"g-{src}", transactional_id=f"limited.{src}", until_idle="5"),
        expect=1,
    )
    _fails_naming(sec, r, f"DESCRIBE on Topic '{src}'", f"READ on Topic '{src}'")
    assert "create it first" not in r.stderr and "Traceback" not in r.stderr


def test_limited_topic_create_names_create_on_the_topic(sec):
    name = f"other-{uuid.uuid4().hex[:6]}"
    r = sec.kxtx("limited", "topic", "create", name, "-p", "2", expect=1)
    _fails_naming(sec, r, f"CREATE on Topic '{name}'")
    assert "Traceback" not in r.stderr
    allowed = f"limited.{uuid.uuid4().hex[:6]}"  # ALL on the limited. prefix
    r = sec.kxtx("limited", "topic", "create", allowed, "-p", "2", "-o", "json")
    assert json_doc(r)["partitions"] == 2
    assert_no_secret(sec, "limited", r)


@pytest.mark.parametrize(
    ("args", "phrases"),
    [
        # the fault matrix's missing-ACL row (issue 59) for the commands the rows above leave out
        (lambda sec, s: ["audit-markers"], ["not authorized", "READ on Topic '__transaction_state'"]),
        (
            lambda sec, s: ["topic", "count", sec.create_topic(f"unread-{uuid.uuid4().hex[:6]}")],
            ["not authorized", "READ on Topic 'unread-"],
        ),
        (lambda sec, s: ["inspect", "group", f"g-{s['topic']}"], ["not authorized", "READ on Group"]),
    ],
    ids=["audit-markers", "topic count", "inspect group"],
)
def test_limited_commands_name_the_permission_they_lack(sec, scene, args, phrases):
    r = sec.kxtx("limited", *args(sec, scene), expect=1)
    assert "Traceback" not in r.stderr
    _fails_naming(sec, r, *phrases)
