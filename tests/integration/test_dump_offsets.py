"""`kxtx dump offsets` against a real broker: classic and KIP-848 consumer groups, and transactional
consume-transform-produce commits (committed, aborted, pending).

Truth: list_consumer_group_offsets / describe_consumer_groups (confluent-kafka admin), the consumers
themselves, and Kafka's OffsetsMessageFormatter / GroupMetadataMessageFormatter from the broker's jars."""

from __future__ import annotations

import time
import uuid

import pytest

from kxtx.records.partitioner import partition_for
from kxtx.records.wire import snake
from tests.integration.dump_helpers import (
    assert_agrees,
    dump,
    kafka_formatter,
    key_type,
)
from tests.integration.kafka_io import wait_until

# Record formats and coordinator behaviour differ between 3.9 and 4.x: CI runs these on both.
pytestmark = pytest.mark.versioned

#: Java hashCode Integer.MIN_VALUE: Kafka's coordinator partition is 0.
MIN_HASH_GROUP = "polygenelubricants"


def _fill(kafka, topic: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(n):
        p.produce(topic, b"x%d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def _consume(c, count: int, timeout: float = 60) -> list:
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    assert len(got) >= count, f"consumed {len(got)} of {count} within {timeout}s"
    return got


def _consumer(kafka, group: str, protocol: str, **conf):
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "client.id": f"kxtx-test-{protocol}",
            **conf,
        }
    )


def _committed(kafka, group: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}


def _latest_offsets(rows: list[dict]) -> dict[tuple[str, int], int]:
    return {
        (r["key"]["topic"], r["key"]["partition"]): r["value"]["offset"]
        for r in rows
        if r["type"] == "OffsetCommit"
    }


def test_classic_group_metadata_and_offsets(kafka, run_kxtx):
    topic = kafka.create_topic(partitions=2)
    _fill(kafka, topic, 10, 2)
    c = _consumer(kafka, MIN_HASH_GROUP, "classic")
    try:
        c.subscribe([topic])
        _consume(c, 10)
        c.commit(asynchronous=False)
        rows = dump(run_kxtx, "offsets", "--group", MIN_HASH_GROUP, "--latest")
        member_id = c.memberid()
    finally:
        c.close()
    assert {r["partition"] for r in rows} == {partition_for(MIN_HASH_GROUP, 50)} == {0}
    mine = {k: v for k, v in _latest_offsets(rows).items() if k[0] == topic}  # the group may be reused
    truth = {k: v for k, v in _committed(kafka, MIN_HASH_GROUP).items() if k[0] == topic}
    assert mine == truth == {(topic, 0): 5, (topic, 1): 5}
    group = next(r for r in rows if r["type"] == "GroupMetadata")["value"]
    assert group["protocol_type"] == "consumer" and group["leader"] == member_id
    (member,) = group["members"]
    assert (member["member_id"], member["client_id"]) == (member_id, "kxtx-test-classic")
    assert member["subscription"]["topics"] == [topic]
    assigned = {
        (tp["topic"], p) for tp in member["assignment"]["assigned_partitions"] for p in tp["partitions"]
    }
    assert assigned == {(topic, 0), (topic, 1)}
    # After the member left: the Empty state record (members [], not a tombstone) is the latest.
    after = dump(run_kxtx, "offsets", "--group", MIN_HASH_GROUP, "--latest", "--type", "group-metadata")
    assert after[-1]["value"]["members"] == [] and not after[-1]["tombstone"]


def test_consumer_protocol_group_records(kafka, run_kxtx):
    if kafka.major < 4:
        pytest.skip("KIP-848 consumer groups are GA from Kafka 4.0; the 3.9 run covers classic groups")
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    topic = kafka.create_topic(partitions=2)
    _fill(kafka, topic, 6, 2)
    group = f"dump-848-{uuid.uuid4().hex[:8]}"
    c = _consumer(kafka, group, "consumer")
    try:
        c.subscribe([topic])
        _consume(c, 6)
        c.commit(asynchronous=False)
        member_id = c.memberid()
        rows = dump(run_kxtx, "offsets", "--group", group, "--latest")
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        desc = admin.describe_consumer_groups([group])[group].result(30)
        topic_id = str(admin.describe_topics(TopicCollection([topic]))[topic].result(30).topic_id)
        # confluent-kafka prints standard base64; Kafka (and kxtx) the URL-safe alphabet.
        topic_id = topic_id.replace("+", "-").replace("/", "_")
    finally:
        c.close()
    by_type = {r["type"]: r for r in rows}
    assert by_type["ConsumerGroupMetadata"]["value"]["epoch"] >= 1
    meta = by_type["ConsumerGroupMemberMetadata"]
    assert meta["key"] == {"group_id": group, "member_id": member_id}
    assert meta["value"]["subscribed_topic_names"] == [topic]
    assert meta["value"]["client_id"] == "kxtx-test-consumer"
    assert [m.member_id for m in desc.members] == [member_id]
    current = by_type["ConsumerGroupCurrentMemberAssignment"]["value"]
    assert current["state_name"] == "STABLE"
    assert [(tp["topic_id"], sorted(tp["partitions"])) for tp in current["assigned_partitions"]] == [
        (topic_id, [0, 1])
    ]
    truth = {(tp.topic, tp.partition) for tp in desc.members[0].assignment.topic_partitions}
    assert truth == {(topic, 0), (topic, 1)}
    target = by_type["ConsumerGroupTargetAssignmentMember"]["value"]["topic_partitions"]
    assert [(tp["topic_id"], sorted(tp["partitions"])) for tp in target] == [(topic_id, [0, 1])]
    assert _latest_offsets(rows) == _committed(kafka, group)


@pytest.fixture(scope="module")
def eos(kafka):
    """A consume-transform-produce loop: one committed, one aborted and one still-open transaction."""
    from confluent_kafka import Producer, TopicPartition

    src, out = kafka.create_topic(), kafka.create_topic()
    _fill(kafka, src, 9, 1)
    group = f"dump-eos-{uuid.uuid4().hex[:8]}"
    c = _consumer(kafka, group, "classic", **{"isolation.level": "read_committed"})
    p = Producer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "transactional.id": f"{group}-tx",
            "transaction.timeout.ms": 120000,
        }
    )
    p.init_transactions(30)
    c.subscribe([src])
    ends = []
    for step in ("commit", "abort", "open"):
        msgs = _consume(c, 3)
        p.begin_transaction()
        for m in msgs:
            p.produce(out, m.value().upper())
        end = msgs[-1].offset() + 1
        ends.append(end)
        p.send_offsets_to_transaction([TopicPartition(src, 0, end)], c.consumer_group_metadata(), 30)
        if step == "commit":
            p.commit_transaction(30)
        elif step == "abort":
            p.abort_transaction(30)
    yield {"group": group, "src": src, "ends": ends, "producer": p, "consumer": c}
    c.close()


def test_transactional_offset_commits(kafka, run_kxtx, eos):
    group, src, (committed, aborted, pending) = eos["group"], eos["src"], eos["ends"]
    # Default: what the coordinator materializes, even with an open transaction in the partition.
    rows = dump(run_kxtx, "offsets", "--group", group, "--type", "offset-commit")
    assert [r["value"]["offset"] for r in rows] == [committed]
    assert _committed(kafka, group) == {(src, 0): committed}
    marked = dump(run_kxtx, "offsets", "--group", group, "--topic", src, "--include-uncommitted")
    assert [(r["value"]["offset"], r["txn"]) for r in marked] == [
        (committed, "committed"),
        (aborted, "aborted"),
        (pending, "pending"),
    ]
    # End the open transaction: the pending commit turns into an aborted one.
    eos["producer"].abort_transaction(30)
    wait_until(
        lambda: (
            [
                r["txn"]
                for r in dump(run_kxtx, "offsets", "-g", group, "--topic", src, "--include-uncommitted")
            ][-1]
            == "aborted"
        ),
        30,
        "the pending commit to show as aborted",
        every=0.5,
    )
    latest = dump(run_kxtx, "offsets", "--group", group, "--latest", "--type", "offset-commit")
    assert _latest_offsets(latest) == _committed(kafka, group) == {(src, 0): committed}


def test_agrees_with_kafkas_offset_and_group_formatters(kafka, run_kxtx, eos):
    if _has_open(kafka, eos):  # when run alone, without test_transactional_offset_commits
        eos["producer"].abort_transaction(30)
    formatters = (("OffsetsMessageFormatter", {0, 1}), ("GroupMetadataMessageFormatter", {2}))

    def others() -> list:  # the records of every group but the console consumer's own
        records = dump(run_kxtx, "offsets", "--include-uncommitted")
        return [
            r for r in records if r["key"] and not r["key"].get("group", "").startswith("console-consumer-")
        ]

    # The session broker is this worker's: groups of earlier tests can still change (a member that
    # was killed expires, the coordinator writes the group again) while the formatters read (CI of
    # stop 50: 141 group records from Kafka's formatter against 139 from kxtx's dump before it). Both
    # sides are compared on one state of the log: kxtx's dump before and after the formatters' runs
    # must hold the same records, else all three are taken again.
    for _ in range(3):
        mine = others()
        # The console consumer's own groups appear only in its later runs: left out on both sides.
        read = {
            formatter: [
                t
                for t in kafka_formatter(kafka, "__consumer_offsets", formatter, min_messages=len(mine))
                if not t["key"]["data"]["group"].startswith("console-consumer-")
            ]
            for formatter, _ in formatters
        }
        if others() == mine:
            break
    else:
        pytest.fail("__consumer_offsets changed while Kafka's formatters read it, three times")
    checked = {}
    for formatter, type_ids in formatters:
        theirs = read[formatter]
        ours = [r for r in mine if r["type_id"] in type_ids]
        assert len(theirs) == len(ours), formatter
        key = lambda d: tuple(sorted((snake(k), v) for k, v in d.items()))  # noqa: E731 - Kafka: camelCase
        remaining = {}
        for r in ours:
            remaining.setdefault(key(r["key"]), []).append(r)
        for t in theirs:
            m = remaining[key(t["key"]["data"])].pop(0)  # per key, log order is kept by both
            assert key_type(t) == m["type_id"]
            if t["value"] is None:
                assert m["tombstone"]
            else:
                assert t["value"]["version"] == m["version"]
                assert_agrees(t["value"]["data"], m["value"], f"{formatter} {m['key']}")
            checked[formatter] = checked.get(formatter, 0) + 1
    # at least the eos group's three offset commits and its group records
    assert checked["OffsetsMessageFormatter"] >= 3 and checked["GroupMetadataMessageFormatter"] >= 1


def _has_open(kafka, eos) -> bool:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        tid = f"{eos['group']}-tx"
        return admin.describe_transactions([tid])[tid].state.value == "Ongoing"
    finally:
        admin.close()
