"""kxtx.client.kafkaerrors holds Kafka's own definition of a retriable error: compared, code by code, with
the `Errors` enum in the jars of the broker under test (Kafka 4.x, and 3.9 in the versioned stage)."""

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
    # Every retriable code this Kafka defines is in the table under its name, and the table holds
    # no code that this Kafka defines as not retriable (codes newer than this Kafka are left out).
    assert {c: n for c, n in kafkaerrors.RETRIABLE.items() if c in known} == retriable
    assert {c for c in kafkaerrors.STALE_METADATA if c in known} == stale
    # What kxtx waits out beyond Kafka's retriable list is named and known to this Kafka.
    names = {code: name for code, name, *_ in errors}
    assert all(names[c] == n for c, n in kafkaerrors.SETTLES.items())
