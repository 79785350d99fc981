"""Create a topic (CreateTopics) and wait until every partition has a leader, so that the next
command (`kxtx produce`, `kxtx pipe`) can use it at once.

Partitions and replication factor default to the broker's `num.partitions` and
`default.replication.factor` (CreateTopics with -1, Kafka 2.4+). Errors: a topic that exists is
`TopicExists` (unless `if_not_exists`); options the broker refuses (partitions, replication factor,
config, name) are usage errors naming its reason; a missing permission names CREATE on the topic.

`count_records`: a topic's records per partition and in total, as `dump partition`'s summary
counts them (markers never counted as records).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kxtx.client import clients
from kxtx.client.authz import Need
from kxtx.client.settings import Settings
from kxtx.errors import KafkaOperationError, KxtxError, UsageError
from kxtx.log import logger

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

#: CreateTopics errors that mean "the request was wrong": exit 2, as a bad option.
_REFUSED = {
    "INVALID_PARTITIONS",
    "INVALID_REPLICATION_FACTOR",
    "INVALID_REPLICA_ASSIGNMENT",
    "INVALID_CONFIG",
    "INVALID_TOPIC_EXCEPTION",
    "TOPIC_EXCEPTION",
    "POLICY_VIOLATION",
    "INVALID_REQUEST",
}


class TopicExists(KxtxError):
    """The topic is there already (exit 1; `--if-not-exists` makes it a success)."""


@dataclass
class TopicSpec:
    name: str
    partitions: int | None = None  # None: the broker's num.partitions
    replication_factor: int | None = None  # None: the broker's default.replication.factor
    config: dict[str, str] = field(default_factory=dict)


def create_topic(
    settings: Settings, spec: TopicSpec, if_not_exists: bool = False, validate_only: bool = False
) -> dict:
    """Create the topic; returns a row saying what exists now (or would, with `validate_only`)."""
    from confluent_kafka.admin import NewTopic

    admin = clients.admin(settings)
    new = NewTopic(
        spec.name,
        num_partitions=spec.partitions or -1,
        replication_factor=spec.replication_factor or -1,
        config=dict(spec.config),
    )
    try:
        admin.create_topics(
            [new],
            operation_timeout=settings.timeout,
            request_timeout=settings.timeout,
            validate_only=validate_only,
        )[spec.name].result(timeout=settings.timeout)
    except Exception as exc:  # noqa: BLE001 - sorted below
        return _failed(admin, settings, spec, exc, if_not_exists)
    if validate_only:
        return _row(
            spec,
            created=False,
            partitions=spec.partitions,
            replication=spec.replication_factor,
            note="valid: the broker would create it (--dry-run: nothing was changed)",
        )
    partitions, replication = _wait_for_leaders(admin, settings, spec.name)
    return _row(spec, created=True, partitions=partitions, replication=replication)


def _failed(
    admin: AdminClient, settings: Settings, spec: TopicSpec, exc: Exception, if_not_exists: bool
) -> dict:
    name = clients.error_name(exc)
    reason = clients.translate(exc) if name in _REFUSED else ""
    if name == "TOPIC_ALREADY_EXISTS":
        partitions, replication = _describe(admin, settings, spec.name)
        if not if_not_exists:
            raise TopicExists(
                f"topic {spec.name!r} already exists ({_plural(partitions, 'partition')}, "
                f"replication factor {replication}); nothing was changed "
                "(--if-not-exists makes this a success)"
            ) from exc
        if spec.partitions and partitions != spec.partitions:
            logger.warning(
                f"topic {spec.name!r} exists with {_plural(partitions, 'partition')}, "
                f"not {spec.partitions} as asked; it was left as it is"
            )
        return _row(
            spec,
            created=False,
            partitions=partitions,
            replication=replication,
            note="exists already; left as it is",
        )
    if name in _REFUSED:
        raise UsageError(
            f"topic {spec.name!r}: the broker refused to create it: {reason} ({name}); nothing was changed"
        ) from exc
    raise clients.translate(
        exc,
        f"creating topic {spec.name!r}",
        need=[Need("CREATE", "Topic", spec.name), Need("CREATE", "Cluster")],
    ) from exc


def _describe(admin: AdminClient, settings: Settings, topic: str) -> tuple[int | None, int | None]:
    """(partitions, replication factor) from the metadata, or Nones when not (yet) visible."""
    wait = settings.timeout
    t = clients.ride_out(
        lambda: admin.list_topics(topic=topic, timeout=wait), f"reading metadata of {topic!r}", wait
    ).topics.get(topic)
    if t is None or t.error is not None or not t.partitions:
        return None, None
    return len(t.partitions), max(len(p.replicas) for p in t.partitions.values())


# admin: an AdminClient; Any because mypy loses the metadata narrowing through `ready` below
def _wait_for_leaders(admin: Any, settings: Settings, topic: str) -> tuple[int | None, int | None]:
    """A new topic's partitions get their leaders a moment after CreateTopics answers; a producer
    started before that waits for them, so wait here, within --timeout."""
    deadline = time.monotonic() + settings.timeout
    while True:
        t = admin.list_topics(topic=topic, timeout=settings.timeout).topics.get(topic)
        ready = (
            t is not None
            and t.error is None
            and t.partitions
            and all(p.leader >= 0 for p in t.partitions.values())
        )
        if ready:
            return len(t.partitions), max(len(p.replicas) for p in t.partitions.values())
        if time.monotonic() >= deadline:
            raise KafkaOperationError(
                f"topic {topic!r} was created, but not all its partitions had a "
                f"leader within {settings.timeout:g}s"
            )
        time.sleep(0.05)


def _row(
    spec: TopicSpec, created: bool, partitions: int | None, replication: int | None, note: str | None = None
) -> dict:
    row = {
        "topic": spec.name,
        "created": created,
        "partitions": partitions,
        "replication_factor": replication,
        "config": dict(spec.config),
    }
    if note:
        row["note"] = note
    return row


def _plural(n: int | None, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


#: The counts of `dump partition`'s summary a count shows, per partition and summed.
COUNTS = (
    "records",
    "read_committed",
    "committed_records",
    "aborted_records",
    "open_records",
    "non_transactional_records",
    "markers",
)


def count_records(
    settings: Settings, topic: str, partitions: list[int] | None = None, unseen: dict[int, str] | None = None
) -> list[dict]:
    """One row per partition from its log start to its high watermark, then a `total` row.
    `records` are the data records a read_uncommitted consumer gets, `read_committed` those a
    read_committed consumer gets now (below the LSO, not aborted); markers are counted apart.
    A partition without a leader is not counted: it goes to `unseen` with why (the total is then
    of the others)."""
    from kxtx.dump.partition import EARLIEST, HW
    from kxtx.dump.partition_run import dump_partitions

    rows: list[dict] = []
    for dump in dump_partitions(settings, topic, partitions, EARLIEST, HW, name=False, unseen=unseen):
        s = dump.summary
        rows.append(
            {
                "kind": "partition",
                "partition": s.partition,
                **{k: getattr(s, k) for k in COUNTS},
                "log_start": s.log_start,
                "lso": s.lso,
                "hw": s.hw,
            }
        )
    total = {k: sum(r[k] for r in rows) for k in COUNTS}
    rows.append({"kind": "total", "partition": None, **total, "log_start": None, "lso": None, "hw": None})
    return rows
