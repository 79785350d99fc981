"""--timeout bounds every command against a cluster that does not answer, and the error names the
address it tried. No broker: a closed loopback port.

This is a correctness check that the option is honoured, not a speed target: before the fix
`inspect txn` and `fence` waited kafka-python's own 30 s bootstrap whatever --timeout said, and
`find-hanging` / `abort-hanging` waited for the timeout twice (a second call after the first had
timed out). A command that honours --timeout T waits for it once, plus start-up (~1-3 s on a loaded
machine); one that waits twice takes at least 2T. So the bound is 2T, with T large enough (12 s)
that a slow start-up stays far below it: generous slack, yet the old behaviour fails every time.
One command at a time: eight Python start-ups at once on a loaded 2-core machine took ~13 s each."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 12


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends


TIMED = {
    "inspect txn": ["inspect", "txn", "some-id"],
    "fence": ["fence", "some-id", "--yes"],
    "find-hanging": ["find-hanging"],
    "abort-hanging": ["abort-hanging", "--yes"],
}
NAMED = {
    **TIMED,
    "produce": ["produce", "{file}", "-t", "t"],
    "cluster": ["cluster"],
    "inspect partition": ["inspect", "partition", "t:0"],
    "dump": ["dump", "txn-state"],
}


def _run(args: list[str], address: str, timeout_s: float, tmp_path):
    data = tmp_path / "a.jsonl"
    data.write_text('{"a": 1}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("KXTX_")}
    argv = [
        sys.executable,
        "-m",
        "kxtx",
        *(a.format(file=data) for a in args),
        "-b",
        address,
        "--timeout",
        str(timeout_s),
    ]
    started = time.monotonic()
    r = subprocess.run(
        argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180
    )
    return r, time.monotonic() - started


@pytest.mark.parametrize("name", TIMED)
def test_command_waits_for_the_timeout_once(name, tmp_path):
    r, took = _run(TIMED[name], f"127.0.0.1:{_closed_port()}", TIMEOUT_S, tmp_path)
    assert r.returncode == 1, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert took < 2 * TIMEOUT_S, f"{name} took {took:.1f}s with --timeout {TIMEOUT_S}: {r.stderr}"


@pytest.mark.parametrize("name", NAMED)
def test_connection_error_names_the_address(name, tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    r, _ = _run(NAMED[name], address, 2, tmp_path)
    assert r.returncode == 1, r.stderr
    assert address in r.stderr and r.stderr.startswith("kxtx: error:"), r.stderr
