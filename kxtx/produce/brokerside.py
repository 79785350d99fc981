"""Broker-side helpers for `kxtx produce`: topic checks, the checkpoint topic (created on demand,
compacted), and reading the last committed checkpoint with a read_committed consumer."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kxtx.client import authz, clients
from kxtx.client.settings import Settings
from kxtx.errors import KafkaOperationError, NoSuchTopic, UsageError
from kxtx.log import logger
from kxtx.produce.checkpoint import Checkpoint

if TYPE_CHECKING:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, TopicDescription

#: librdkafka's default message.max.bytes; a record is also limited by the topic's max.message.bytes.
CLIENT_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int
    max_record_bytes: int


def describe_topic(
    admin: AdminClient, settings: Settings, topic: str, what: str = "topic", keyed: bool | None = None
) -> TopicInfo:
    """Partition count and the record size limit; a missing topic, or one the principal may not
    WRITE, is an error naming it. `keyed` False: the records have no key, which a compacted topic
    refuses (None: not checked)."""
    t = _describe(admin, settings, topic, what)
    if t is None:
        raise NoSuchTopic(topic)
    limit = int(settings.props.get("message.max.bytes", CLIENT_MAX_BYTES))
    configs = _topic_configs(admin, settings, topic)
    if topic_limit := configs.get("max.message.bytes"):
        limit = min(limit, int(topic_limit))
    policy = configs.get("cleanup.policy") or ""
    if keyed is False and "compact" in policy.split(","):
        # the broker refuses a keyless record there ("Broker failed to validate record"), which
        # aborts the transaction every time it is retried
        raise UsageError(
            f"{what} {topic!r} has cleanup.policy={policy}: a compacted topic needs a key for every "
            "record; name the key field with -k (JSON or CSV input); nothing was written"
        )
    return TopicInfo(topic, len(t.partitions), limit)


def _describe(
    admin: AdminClient,
    settings: Settings,
    topic: str,
    what: str,
    write: bool = True,
    hidden_is_missing: bool = False,
) -> TopicDescription | None:
    """The topic's partitions (one Metadata request, as list_topics), or None when it does not
    exist (or, `hidden_is_missing`, the principal may not DESCRIBE it). `write`: raise when the
    principal may not WRITE it (its operations come with the answer).

    Checked before anything is written: a broker refusing the records instead fails the
    transaction, and librdkafka then reports the records as purged and the abort as "invalid
    state" while the refusal itself reaches only its log (seen under load with 5 records)."""
    from confluent_kafka import KafkaException, TopicCollection

    try:
        described = admin.describe_topics(
            TopicCollection([topic]), include_authorized_operations=True, request_timeout=settings.timeout
        )
        t = described[topic].result()
    except KafkaException as exc:
        name = clients.error_name(exc)
        if name == "UNKNOWN_TOPIC_OR_PART" or (hidden_is_missing and name == "TOPIC_AUTHORIZATION_FAILED"):
            return None
        if name in authz.AUTHZ_ERRORS:
            # The broker answers so for a topic the principal may not DESCRIBE (existing or not): it
            # lacks WRITE (which implies DESCRIBE), not a topic.
            raise authz.explain(
                name, f"producing to {what} {topic!r}", [authz.Need("WRITE", "Topic", topic)]
            ) from None
        raise clients.translate(exc, f"reading metadata of {topic!r}") from exc
    if write and not may_write(t.authorized_operations):
        raise authz.require(authz.Need("WRITE", "Topic", topic), f"produce to {what} {topic!r}")
    return t


def may_write(ops: Iterable[Any] | None) -> bool:
    """Whether a topic's authorized operations (AclOperation values) allow producing to it. None:
    unknown (a broker before KIP-430, Kafka 2.3, does not say), left to the broker to decide."""
    return ops is None or bool({op.name for op in ops} & {"WRITE", "ALL"})


def _topic_configs(admin: AdminClient, settings: Settings, topic: str) -> dict[str, str | None]:
    """The topic's max.message.bytes and cleanup.policy, {} when they cannot be read."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    try:
        res = ConfigResource(ResourceType.TOPIC, topic)
        entries = admin.describe_configs([res])[res].result(timeout=settings.timeout)
        return {k: entries[k].value for k in ("max.message.bytes", "cleanup.policy") if k in entries}
    except Exception:  # noqa: BLE001 - optional: without DescribeConfigs the client limit applies
        return {}


def ensure_checkpoint_topic(admin: AdminClient, settings: Settings, topic: str) -> bool:
    """Create the compacted checkpoint topic if missing. Returns True if it was created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    # Missing, or hidden from a principal without DESCRIBE: creating it names what is missing.
    if _describe(admin, settings, topic, "checkpoint topic", hidden_is_missing=True) is not None:
        return False
    # One partition is enough: one small record per transaction, compacted to one per id.
    new = NewTopic(topic, num_partitions=1, replication_factor=-1, config={"cleanup.policy": "compact"})
    try:
        admin.create_topics([new], operation_timeout=settings.timeout)[topic].result(timeout=settings.timeout)
    except KafkaException as exc:
        if clients.error_name(exc) != "TOPIC_ALREADY_EXISTS":  # created by a concurrent run
            raise clients.translate(exc, f"creating checkpoint topic {topic!r}") from exc
    return True


#: How long to wait for another producer's open transaction on the checkpoint topic to end (a
#: crashed producer's transaction ends after its transaction.timeout.ms, 60 s by default).
LSO_WAIT_S = 75.0


def _high_watermarks(admin: AdminClient, settings: Settings, topic: str) -> dict[int, tuple[int, int]]:
    """(low, high) per partition, where high counts open transactions too: a read_committed
    consumer would report the last stable offset instead, which another producer's open
    transaction can hold below our own last committed checkpoint. Asked through the admin client,
    which is connected already (a new consumer costs ~50 ms before its first answer)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    t = _describe(admin, settings, topic, "checkpoint topic", write=False)
    parts = sorted(p.id for p in t.partitions) if t is not None else []
    if not parts:
        return {}
    try:
        asked = [
            admin.list_offsets(
                {TopicPartition(topic, p): spec for p in parts},
                isolation_level=IsolationLevel.READ_UNCOMMITTED,
                request_timeout=settings.timeout,
            )
            for spec in (OffsetSpec.earliest(), OffsetSpec.latest())
        ]
        low, high = ({tp.partition: f.result().offset for tp, f in futures.items()} for futures in asked)
    except Exception as exc:
        raise clients.translate(exc, f"reading the offsets of {topic!r}") from exc
    return {p: (low[p], high[p]) for p in parts}


def _checkpoint_reader(settings: Settings) -> Consumer:
    # Created right before use: one created earlier (to connect during init_transactions) often
    # stalled before its first fetch (bench/README.md, "Behind produce's constants").
    return clients.consumer(
        settings,
        **{
            "group.id": "kxtx-produce-checkpoint-reader",  # never joined or committed (assign only)
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            # End of partition is reported by a fetch that finds nothing new: do not let it wait.
            "fetch.wait.max.ms": 10,
        },
    )


def read_checkpoint(
    settings: Settings, topic: str, transactional_id: str, admin: AdminClient
) -> Checkpoint | None:
    """The last committed checkpoint of `transactional_id`: read_committed, up to the high
    watermark as it is now (`admin`: a connected admin client).

    Call after init_transactions(): that completes or aborts our own earlier transaction, so every
    checkpoint this id committed is below the high watermark and becomes readable once other
    producers' open transactions before it end."""
    todo = {p: hl for p, hl in _high_watermarks(admin, settings, topic).items() if hl[1] > hl[0]}
    if not todo:
        return None
    consumer = _checkpoint_reader(settings)
    try:
        return _read(consumer, settings, topic, transactional_id, todo)
    finally:
        consumer.close()


def _read(
    consumer: Any,  # a Consumer: Any, its stubs make a fetched Message's offset Optional
    settings: Settings,
    topic: str,
    transactional_id: str,
    todo: dict,
) -> Checkpoint | None:
    from confluent_kafka import KafkaError, TopicPartition

    consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in todo.items()])
    found: bytes | None = None
    where = ""
    key = transactional_id.encode("utf-8")
    started = time.monotonic()
    warned = False
    while todo:
        waited = time.monotonic() - started
        if waited > max(LSO_WAIT_S, settings.timeout):
            raise KafkaOperationError(
                f"checkpoint topic {topic!r} partitions {sorted(todo)}: an open transaction of "
                f"another producer kept them unreadable for {waited:.0f}s (read_committed); "
                "try again later, or look for it with kxtx find-hanging"
            )
        if waited > 3 and not warned:
            warned = True
            logger.warning(
                f"waiting for another producer's open transaction on checkpoint "
                f"topic {topic!r} to end (up to {LSO_WAIT_S:.0f}s)"
            )
        # consume() waits for the whole timeout unless the batch fills: wait for the first
        # message only, then take what has arrived
        first = consumer.poll(0.05)
        for msg in [first, *consumer.consume(1000, timeout=0)] if first is not None else ():
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                    # librdkafka looks up the group's coordinator although this reader only
                    # assigns partitions: a principal needs no ACL on that group.
                    continue
                if err.code() != KafkaError._PARTITION_EOF:
                    raise clients.translate(Exception(err), f"reading checkpoint topic {topic!r}")
                if msg.offset() >= todo.get(msg.partition(), (0, 0))[1]:
                    todo.pop(msg.partition(), None)
                continue
            if msg.key() == key:
                found, where = msg.value(), f"{topic}/{msg.partition()}@{msg.offset()}"
            if msg.offset() + 1 >= todo.get(msg.partition(), (0, 0))[1]:
                todo.pop(msg.partition(), None)
    if found is None:  # never written, or deleted with a tombstone
        return None
    return Checkpoint.from_bytes(found, where)
