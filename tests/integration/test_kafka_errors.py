"""kxtx.client.kafkaerrors's table holds Kafka's own definition of a retriable error: compared, code by
code, with the `Errors` enum in the jars of the broker under test (Kafka 4.x, and 3.9 in the versioned
stage)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kxtx.client import kafkaerrors

pytestmark = pytest.mark.versioned

PROGRAM = Path(__file__).parent / "java" / "KafkaErrors.java"


def kafkas_errors(kafka) -> list[tuple[int, str, bool, bool]]:
    out = subprocess.run(
        kafka.java_tool(str(PROGRAM)), capture_output=True, text=True, timeout=120, check=True
    ).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    return [(int(code), name, ret == "true", meta == "true") for code, name, ret, meta in rows]


def test_the_retriable_table_is_kafkas(kafka):
    errors = kafkas_errors(kafka)
    assert len(errors) > 100  # the whole enum was read
    known = {code for code, *_ in errors}
    retriable = {code: name for code, name, ret, _ in errors if ret}
    stale = {code for code, _, ret, meta in errors if ret and meta}
    table = {c: row for c, row in kafkaerrors.ERRORS.items() if c in known}
    # Every retriable code this Kafka defines is one a later try gets past, and beyond them only a
    # rebalance, which ends by itself (codes newer than this Kafka are left out).
    waits = {c: name for c, (name, kind) in table.items() if kind in kafkaerrors.LATER}
    assert waits == retriable | {27: "REBALANCE_IN_PROGRESS"}
    assert {c for c, (_, kind) in table.items() if kind in kafkaerrors.STALE} == stale
    # Every protocol code in the table has this Kafka's name.
    names = {code: name for code, name, *_ in errors}
    assert {c: name for c, (name, _) in table.items()} == {c: names[c] for c in table}
