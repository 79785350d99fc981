"""`kxtx dump partition -o json` when its broker stops answering mid-run (the registry gone
mid-dump is in test_schema_registry.py): one whole document with the run's true status, exit 75, no
traceback.

The dump reads the whole range before the document's `batches` are made, so the broker's failure
lands in the reads (the registry's lands while the batches are made). The fault fires on progress:
the broker is frozen (SIGSTOP, the sandbox's pause-node) once the dump has received 1 MB over its
connections to it, inside the first of several 8 MiB Fetches."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from tests import cli
from tests.binaries import need
from tests.integration.pipe_helpers import produce

pytestmark = pytest.mark.kafka

#: values of this partition: 24 MB, three Fetches or more
VALUES, VALUE_BYTES = 24_000, 1000


def received_from(ss: str, port: str, pid: int) -> int:
    """The bytes `pid` has received over its open TCP connections to 127.0.0.1:`port` (ss's
    tcp_info: psutil has no per-socket counts)."""
    out = subprocess.run(
        [ss, "-tinpH", "state", "established", "dst", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total, mine = 0, False
    for line in out.splitlines():
        if not line.startswith((" ", "\t")):  # a connection's line; its tcp_info follows
            mine = f"pid={pid}," in line
        elif mine:
            got = re.search(r"bytes_received:(\d+)", line)
            total += int(got.group(1)) if got else 0
    return total


def test_a_broker_frozen_mid_dump_is_one_whole_json_document_and_exit_75(kafka, tmp_path):
    if kafka.sandbox is None:
        pytest.skip("freezes the broker: needs the sandbox broker, not KXTX_TEST_BOOTSTRAP")
    ss = need("ss")  # how far the dump has read
    topic = kafka.create_topic()
    produce(kafka.bootstrap, topic, [b"%06d" % i + b"v" * (VALUE_BYTES - 6) for i in range(VALUES)])
    port = kafka.bootstrap.split(",")[0].rsplit(":", 1)[1]
    out, err = tmp_path / "dump.out", tmp_path / "dump.err"
    proc = cli.start(
        "dump",
        "partition",
        f"{topic}:0",
        "-o",
        "json",
        "--timeout",
        "3",
        stdout=open(out, "w"),
        stderr=open(err, "w"),
        env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap},
    )
    frozen = False
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if received_from(ss, port, proc.pid) > 1 << 20:
                kafka.sandbox.pause_node(1)
                frozen = True
                break
            time.sleep(0.01)
        assert frozen, f"the dump ended (exit {proc.poll()}) before it had read 1 MB: {err.read_text()}"
        code = proc.wait(120)
    finally:
        if frozen:
            kafka.sandbox.resume_node(1)
        if proc.poll() is None:
            proc.kill()
    stderr = err.read_text()
    assert code == 75, stderr
    assert "Traceback" not in stderr, stderr
    doc = json.loads(out.read_text())  # one whole document, or this raises
    assert (doc["status"], doc["exit_code"]) == ("retry", 75), doc
    assert doc["error"] and f"kxtx: error: {doc['error']}" in stderr, (doc["error"], stderr)
    assert f"fetching {topic}[0]" in doc["error"], doc["error"]
