"""`kxtx.ops.owners.owner_hint`: which writer an id's shape points at (a hint, never a fact)."""

from __future__ import annotations

import pytest

from kxtx.derived import derived_name
from kxtx.ops.owners import owner_hint
from kxtx.pipe.runconfig import default_transactional_id as pipe_id
from kxtx.pipe.worker.task import transactional_id as pipe_member
from kxtx.produce.checkpoint import default_transactional_id as produce_id

UUID = "8d0f3c2e-5b1a-4c7d-9e2f-0a1b2c3d4e5f"


@pytest.mark.parametrize(
    ("tid", "words"),
    [
        # kxtx's own ids, built by the functions that name them
        (produce_id("orders", ["orders.jsonl"]), ["`kxtx produce`", "'orders'", "do not commit"]),
        (pipe_id("enricher", ["orders"], "out"), ["`kxtx pipe`", "driver mode", "do not commit"]),
        (
            pipe_member(pipe_id("enricher", ["orders"], "out"), "orders.eu", 3),
            ["executors mode", "orders.eu:3", "do not commit"],
        ),
        (
            pipe_id(derived_name("kxtx-pipe-out", ["x"]), ["orders"], "out", derived_group=True),
            ["`kxtx pipe`"],
        ),
        # Kafka Streams EOS-v2, the thread's index or its client id's tail
        (f"my-app-{UUID}-1", ["Kafka Streams exactly_once_v2", "'my-app'", "thread 1", "never commit"]),
        (f"app-{UUID}-StreamThread-12", ["exactly_once_v2", "thread 12", "restarting"]),
        ("wordcount-0_3", ["Kafka Streams exactly_once (v1", "task 0_3", "never commit"]),
        # Flink KafkaSink
        (
            "prefix-0-42",
            [
                "Flink's KafkaSink",
                "'prefix'",
                "subtask 0",
                "checkpoint 42",
                "pre-committed",
                "its sink then aborts it",
            ],
        ),
        ("orders-sink-17-1003", ["Flink", "'orders-sink'", "subtask 17", "checkpoint 1003"]),
        # Spring Kafka's documented prefix
        ("tx-0", ["Spring Kafka", "'tx-'"]),
        ("billing.tx-7", ["Spring Kafka", "'billing.tx-'"]),
    ],
)
def test_recognised(tid: str, words: list[str]) -> None:
    hint = owner_hint(tid)
    assert hint is not None and hint.startswith("looks like "), (tid, hint)
    for w in words:
        assert w in hint, (tid, w, hint)


@pytest.mark.parametrize(
    "tid",
    [
        "my-app-tx-1x",
        "orders",
        "prefix-0-",
        "-0-42x",
        "kxtx-produce-orders",  # no hash: a user's own id
        f"{UUID}",
        "txn-42",
        "",
    ],
)
def test_not_recognised(tid: str) -> None:
    assert owner_hint(tid) is None
