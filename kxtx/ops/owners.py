"""Who probably owns a transactional id, from its shape alone, and what that means for recovery.

Writers name their transactional ids after a pattern of their own (Flink's KafkaSink, Kafka
Streams, Spring Kafka, kxtx itself). Recognising one says who to ask before an open transaction
is committed or aborted by hand. Anyone may choose any id, so the answer is a hint ("looks like
..."), never a fact: `owner_hint` returns a sentence or None. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


#: what ends a `kxtx pipe` transaction, in either mode
_PIPE_RERUN = (
    "rerunning the same pipe line fences and aborts it and reprocesses from the committed offsets; "
    "do not commit it by hand"
)


def _kxtx_pipe_member(m: re.Match[str]) -> str:
    return (
        f"looks like a `kxtx pipe` id in executors mode (pipe {m['pipe']!r}, input "
        f"{m['topic']}:{m['partition']}): {_PIPE_RERUN}"
    )


def _kxtx_pipe(_m: re.Match[str]) -> str:
    return f"looks like a `kxtx pipe` id (driver mode): {_PIPE_RERUN}"


def _kxtx_produce(m: re.Match[str]) -> str:
    return (
        f"looks like a `kxtx produce` id (topic {m['topic']!r}): rerunning the same produce line aborts "
        "it and continues from its last committed checkpoint; do not commit it by hand"
    )


def _streams(m: re.Match[str]) -> str:
    return (
        f"looks like Kafka Streams exactly_once_v2 (application.id {m['app']!r}, process {m['process']}, "
        f"thread {m['thread']}): never commit it by hand (its input offsets and state stores are "
        "part of it); restarting the application aborts it"
    )


def _streams_alpha(m: re.Match[str]) -> str:
    return (
        f"looks like Kafka Streams exactly_once (v1; application.id {m['app']!r}, task {m['task']}): "
        "never commit it by hand; restarting the application aborts it"
    )


def _flink(m: re.Match[str]) -> str:
    return (
        f"looks like Flink's KafkaSink (prefix {m['prefix']!r}, subtask {m['subtask']}, checkpoint "
        f"{m['checkpoint']}): commit only if that checkpoint completed and pre-committed this "
        "transaction (its producer id and epoch are in the checkpoint's state), and before the job "
        "starts again with this prefix without that state (its sink then aborts it); otherwise abort"
    )


def _spring(m: re.Match[str]) -> str:
    return (
        f"looks like Spring Kafka (transactionIdPrefix {m['prefix']!r} + a counter): the listener "
        "container's transaction also covers the consumed offsets; let the application's restart "
        "abort it unless its own state says the work was done"
    )


#: (id pattern, hint), most specific first: a Streams id also ends in `-N`, like Flink's.
RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    # kxtx.pipe.worker.task.transactional_id: PIPE-ID.TOPIC.PARTITION of a default pipe id
    (
        re.compile(r"(?P<pipe>kxtx-pipe-.+-[0-9a-f]{10})\.(?P<topic>[\w.-]+)\.(?P<partition>\d+)"),
        _kxtx_pipe_member,
    ),
    # kxtx.pipe.runconfig.default_transactional_id: kxtx-pipe-GROUP-HASH10
    (re.compile(r"kxtx-pipe-.+-[0-9a-f]{10}"), _kxtx_pipe),
    # kxtx.produce.checkpoint.default_transactional_id: kxtx-produce-TOPIC-HASH12
    (re.compile(r"kxtx-produce-(?P<topic>.+)-[0-9a-f]{12}"), _kxtx_produce),
    # Kafka Streams EOS-v2: APPLICATION_ID-PROCESS_UUID-THREAD_INDEX (the thread's client id,
    # APP-UUID-StreamThread-N, is accepted too)
    (re.compile(rf"(?P<app>.+)-(?P<process>{_UUID})-(?:StreamThread-)?(?P<thread>\d+)"), _streams),
    # Kafka Streams EOS-alpha (removed in 4.0): APPLICATION_ID-SUBTOPOLOGY_PARTITION
    (re.compile(r"(?P<app>.+)-(?P<task>\d+_\d+)"), _streams_alpha),
    # Flink KafkaSink (TransactionalIdFactory): PREFIX-SUBTASK-CHECKPOINT
    (re.compile(r"(?P<prefix>.+)-(?P<subtask>\d+)-(?P<checkpoint>\d+)"), _flink),
    # Spring Kafka's DefaultKafkaProducerFactory: transactionIdPrefix (documented as `tx-`) + N
    (re.compile(r"(?P<prefix>(?:.*[-_.])?tx-)\d+"), _spring),
)


def owner_hint(transactional_id: str) -> str | None:
    """A hint at the writer of `transactional_id` and what it means for recovery, or None."""
    for pattern, hint in RULES:
        m = pattern.fullmatch(transactional_id)
        if m:
            return hint(m)
    return None
