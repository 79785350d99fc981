"""Helpers for the `kxtx dump` integration tests: run the CLI, run Kafka's own formatters, compare."""

from __future__ import annotations

import base64
import json
import re
import subprocess

from kxtx.records.consumer_protocol import decode_assignment, decode_subscription
from kxtx.records.wire import snake

FORMATTERS = "org.apache.kafka.tools.consumer."


def dump(run_kxtx, *args: str) -> list[dict]:
    """`kxtx dump ... -o jsonl` in a subprocess; every row parsed. Fails on a non-zero exit."""
    return run_kxtx("dump", *args, "-o", "jsonl", "--timeout", "30", expect=0, timeout=120).rows


def kafka_formatter(
    kafka, topic: str, formatter: str, isolation: str = "read_uncommitted", min_messages: int = 1
) -> list[dict]:
    """Kafka's console consumer with one of its coordinator-record formatters, over all partitions.

    The formatters print one JSON object per record ({"key": {"type", "data"}, "value": {"version",
    "data"} or null}), not always newline-separated: parsed as a stream.

    `--timeout-ms` ends a run after one poll returns nothing, and the first poll carries the group
    join and the offset lookups of every partition: on a loaded machine it can end a run before the
    broker served a record (CI run of stop 39, Kafka 3.9 while stage 1 ran beside it). So a run that
    processed fewer than `min_messages` records (a count the caller has already seen in the topic)
    is started again, at most three times, each with a longer `--timeout-ms`: three 8 s runs all
    processed nothing in the CI run of stop 49 (Kafka 3.9 at nice 10 beside stage 1)."""
    argv = kafka.java_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        kafka.bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--formatter",
        FORMATTERS + formatter,
        "--isolation-level",
        isolation,
        "--consumer-property",
        "exclude.internal.topics=false",
    )
    for timeout_ms in (8000, 30000, 90000):
        r = subprocess.run(
            [*argv, "--timeout-ms", str(timeout_ms)], capture_output=True, text=True, timeout=300
        )
        total = re.search(r"Processed a total of (\d+) messages", r.stderr)
        assert total, r.stderr[-3000:]
        if int(total.group(1)) >= min_messages:
            break
    else:
        raise AssertionError(
            f"{formatter}: {total.group(0)} in each of 3 runs (the last with a 90 s poll timeout), fewer than {min_messages}"
        )
    out, decoder, i, text = [], json.JSONDecoder(), 0, r.stdout
    while i < len(text):
        if text[i] != "{":  # whitespace, or a notice such as a deprecated-option warning
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl + 1
            continue
        obj, i = decoder.raw_decode(text, i)
        out.append(obj)
    return out


def key_type(formatted: dict) -> int:
    """The record type of a formatter record: `key.type` (4.x) or `key.version` (3.9's name)."""
    key = formatted["key"]
    return key["type"] if "type" in key else key["version"]


def states(rows: list[dict]) -> list[str]:
    """The state sequence with consecutive repeats collapsed (Ongoing repeats per added partition)."""
    out: list[str] = []
    for r in rows:
        s = "(deleted)" if r["tombstone"] else r["value"]["transaction_status"]
        if not out or out[-1] != s:
            out.append(s)
    return out


#: Tagged fields kxtx fills with their defaults; Kafka's JSON omits a tag at its default.
TAG_DEFAULTS = {
    "previous_producer_id": -1,
    "next_producer_id": -1,
    "client_transaction_version": 0,
    "next_producer_epoch": -1,
    "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
}


def assert_agrees(theirs, mine, path: str = "value") -> None:
    """Every field Kafka printed equals kxtx's; fields only kxtx has are tag defaults or extras.
    Kafka prints its schema names (camelCase); kxtx shows the same names in snake_case."""
    if isinstance(theirs, list):
        assert isinstance(mine, list) and len(theirs) == len(mine), f"{path}: {theirs} != {mine}"
        for i, (t, m) in enumerate(zip(theirs, mine)):
            assert_agrees(t, m, f"{path}[{i}]")
        return
    if not isinstance(theirs, dict):
        assert theirs == mine, f"{path}: Kafka {theirs!r} != kxtx {mine!r}"
        return
    for camel, v in theirs.items():
        k = snake(camel)
        where = f"{path}.{k}"
        if k == "transaction_status":
            # Kafka's formatter printed the state's code up to 4.3 and prints its name from 4.4
            mine_v = mine["transaction_status_code" if isinstance(v, int) else "transaction_status"]
            assert mine_v == v, f"{where}: Kafka {v!r} != kxtx {mine_v!r}"
        elif k in ("subscription", "assignment") and isinstance(v, str):
            raw = base64.b64decode(v)
            fn = decode_subscription if k == "subscription" else decode_assignment
            expected = fn(raw) if isinstance(mine[k], dict) or mine[k] is None else raw
            assert mine[k] == expected, f"{where}: {mine[k]} != {expected}"
        else:
            assert k in mine, f"{where}: missing in kxtx output {mine}"
            assert_agrees(v, mine[k], where)
    names = {snake(k) for k in theirs}
    for k, v in mine.items():
        if k not in names and k in TAG_DEFAULTS:
            assert v == TAG_DEFAULTS[k], f"{path}.{k}: Kafka omitted it (default) but kxtx has {v}"
