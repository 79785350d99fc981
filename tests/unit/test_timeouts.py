"""A cluster that is not there. Every command that talks to Kafka ends with exit 69 and one line
naming the address it tried: within seconds when the address refuses (it waited its whole --timeout
and exited 1 before, so a cron script could not tell a down cluster from a bad argument), and within
--timeout, once, when the address accepts connections but never answers (a blackholed broker). No
broker: a refused loopback port and a listener that never answers stand in for them.

Bounds are correctness checks, not speed targets. A refused address must end far below the default
--timeout of 30 s (15 s leaves room for a slow start-up on a loaded machine). A silent one must honour
--timeout T once: before, `inspect txn` and `fence` waited kafka-python's own 30 s bootstrap whatever
--timeout said, and `find-hanging` / `abort-hanging` waited twice (a second call after the first had
timed out); waiting twice takes at least 2T, so the bound is 2T with T = 12 s, far above start-up.
One command at a time: eight Python start-ups at once on a loaded 2-core machine took ~13 s each."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kxtx.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 12

#: Commands that once waited longer than --timeout (see the module docstring).
TIMED = {
    "inspect txn": ["inspect", "txn", "some-id"],
    "fence": ["fence", "some-id", "--yes"],
    "find-hanging": ["find-hanging"],
    "abort-hanging": ["abort-hanging", "--yes"],
}
#: One call of every command that needs the cluster.
COMMANDS = {
    **TIMED,
    "produce": ["produce", "{file}", "-t", "t"],
    "pipe": ["pipe", "--in", "a", "--out", "b", "--group", "g", "--udf", "{udf}"],
    "cluster": ["cluster"],
    "inspect partition": ["inspect", "partition", "t:0"],
    "dump txn-state": ["dump", "txn-state"],
    "dump offsets": ["dump", "offsets"],
    "abort": ["abort", "-t", "t", "-p", "0", "--start-offset", "5", "--yes"],
    "topic create": ["topic", "create", "t"],
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends


def _run(args: list[str], address: str, tmp_path: Path, timeout_s: float | None = None):
    data = tmp_path / "a.jsonl"
    data.write_text('{"a": 1}\n')
    udf = tmp_path / "u.py"
    udf.write_text("def f(v):\n    return v\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KXTX_")}
    argv = [sys.executable, "-m", "kxtx", *(a.format(file=data, udf=f"{udf}:f") for a in args), "-b", address]
    argv += ["--timeout", str(timeout_s)] if timeout_s else []
    started = time.monotonic()
    r = subprocess.run(
        argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180
    )
    return r, time.monotonic() - started


@pytest.mark.parametrize("name", COMMANDS)
def test_a_refused_address_fails_within_seconds_with_exit_69(name, tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    r, took = _run(COMMANDS[name], address, tmp_path)  # the default --timeout: 30 s
    assert r.returncode == ExitCode.UNREACHABLE == 69, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"kxtx: error: connecting to {address}: no broker reachable"), r.stderr
    assert took < 15, f"{name} took {took:.1f} s: {r.stderr}"


@pytest.mark.parametrize("name", [*TIMED, "cluster", "produce"])
def test_a_silent_address_ends_within_the_timeout_once(name, tmp_path):
    with socket.socket() as listener:  # accepts connections, never answers a request
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        r, took = _run(COMMANDS[name], address, tmp_path, TIMEOUT_S)
    assert r.returncode == ExitCode.UNREACHABLE, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    # "no answer within 12 s", or "no broker reachable" when librdkafka gave up on the connection
    assert f"kxtx: error: connecting to {address}: no " in r.stderr, r.stderr
    assert took < 2 * TIMEOUT_S, f"{name} took {took:.1f}s with --timeout {TIMEOUT_S}: {r.stderr}"
