"""A cluster that is not there. Every command that talks to Kafka ends with exit 69 and one line
naming the address it tried: within seconds when the address refuses (it waited its whole --timeout
and exited 1 before, so a cron script could not tell a down cluster from a bad argument), and within
--timeout, once, when the address accepts connections but never answers (a blackholed broker). No
broker: a refused loopback port and a listener that never answers stand in for them.

Bounds are correctness checks, not speed targets. A refused address must end far below the default
--timeout of 30 s (15 s leaves room for a slow start-up on a loaded machine). A silent one must honour
--timeout T once: before, `inspect txn` and `fence` waited kafka-python's own 30 s bootstrap whatever
--timeout said, and `find-hanging` / `abort-hanging` waited twice (a second call after the first had
timed out); waiting twice takes at least 2T, so the bound is 2T with T = 15 s, far above start-up.
The commands mostly wait, so they run side by side: the refused-address ones four at a time (eight
Python start-ups at once on a loaded 2-core machine took ~13 s each, near their 15 s bound), the
silent-address ones all at once, so the module waits T once rather than once per command (six
start-ups at once stay far below T); the refused ones run while the silent ones wait, once those
are past their start-up (connected to their listener)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from kxtx.exitcodes import ExitCode
from tests import cli

TIMEOUT_S = 15

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
    "complete": ["complete", "some-id", "--commit", "--yes"],
    "topic create": ["topic", "create", "t"],
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends


def _args(args: list[str], address: str, tmp_path: Path, timeout_s: float | None = None) -> list[str]:
    data = tmp_path / "a.jsonl"
    data.write_text('{"a": 1}\n')
    udf = tmp_path / "u.py"
    udf.write_text("def f(v):\n    return v\n")
    argv = [*(a.format(file=data, udf=f"{udf}:f") for a in args), "-b", address]
    return argv + (["--timeout", str(timeout_s)] if timeout_s else [])


def _run(args: list[str], address: str, tmp_path: Path, timeout_s: float | None = None):
    started = time.monotonic()
    r = cli.run(*_args(args, address, tmp_path, timeout_s), expect=None, clean=True, timeout=180)
    return r, time.monotonic() - started


@pytest.fixture(scope="module")
def refused(tmp_path_factory, silent_started):
    """Every command against a refused address (the default --timeout: 30 s), four at a time: they
    mostly wait on start-up and the refusal; per command: (CompletedProcess, seconds, address).
    They run while the silent-address commands (`silent_started`, past their start-up) wait out
    their --timeout: the module waits T once in all, not T after these."""
    from concurrent.futures import ThreadPoolExecutor

    dirs = {name: tmp_path_factory.mktemp("cmd") for name in COMMANDS}  # mktemp is not thread-safe

    def one(name: str):
        address = f"127.0.0.1:{_closed_port()}"
        r, took = _run(COMMANDS[name], address, dirs[name])
        return r, took, address

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(COMMANDS, pool.map(one, COMMANDS)))


@pytest.mark.parametrize("name", COMMANDS)
def test_a_refused_address_fails_within_seconds_with_exit_69(name, refused):
    r, took, address = refused[name]
    assert r.returncode == ExitCode.UNREACHABLE == 69, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"kxtx: error: connecting to {address}: no broker reachable"), r.stderr
    assert took < 15, f"{name} took {took:.1f} s: {r.stderr}"


SILENT = [*TIMED, "cluster", "produce"]


@pytest.fixture(scope="module")
def silent_started(tmp_path_factory):
    """Every SILENT command at once, each against its own listener that accepts connections and
    never answers a request; yields per command (process, its start, address) once each has
    connected (its start-up is over: from then on it only waits, and the refused-address commands
    do not compete with six start-ups), and the exits, timed as they happen."""
    listeners, started, connections = [], {}, []
    ended: dict[str, float] = {}
    try:
        for name in SILENT:
            listener = socket.socket()
            listeners.append(listener)
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            address = f"127.0.0.1:{listener.getsockname()[1]}"
            args = _args(COMMANDS[name], address, tmp_path_factory.mktemp("cmd"), TIMEOUT_S)
            proc = cli.start(*args, clean=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            started[name] = (proc, time.monotonic(), address)
        for name, (proc, _, _) in started.items():
            threading.Thread(target=_time_exit, args=(proc, name, ended), daemon=True).start()
        for listener in listeners:
            listener.settimeout(60)
            with contextlib.suppress(OSError):  # never connected: the test of that command says so
                connections.append(listener.accept()[0])  # held open, never answered
        yield started, ended
    finally:
        for proc, _, _ in started.values():
            if proc.poll() is None:
                proc.kill()
        for sock in [*connections, *listeners]:
            sock.close()


def _time_exit(proc: subprocess.Popen, name: str, ended: dict[str, float]) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=180)  # a one-line stderr: its pipe cannot fill meanwhile
        ended[name] = time.monotonic()


@pytest.fixture(scope="module")
def silent(silent_started):
    """Per SILENT command: (returncode, stderr, seconds from its start to its exit, address)."""
    started, ended = silent_started
    deadline = time.monotonic() + 180
    while len(ended) < len(started) and time.monotonic() < deadline:
        time.sleep(0.05)
    results = {}
    for name, (proc, t0, address) in started.items():
        _, err = proc.communicate(timeout=5)  # raises for a command still running after 180 s
        results[name] = (proc.returncode, err.decode(), ended[name] - t0, address)
    return results


@pytest.mark.parametrize("name", SILENT)
def test_a_silent_address_ends_within_the_timeout_once(name, silent):
    returncode, stderr, took, address = silent[name]
    assert returncode == ExitCode.UNREACHABLE, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr
    # "no answer within 15 s", or "no broker reachable" when librdkafka gave up on the connection
    assert f"kxtx: error: connecting to {address}: no " in stderr, stderr
    assert took < 2 * TIMEOUT_S, f"{name} took {took:.1f}s with --timeout {TIMEOUT_S}: {stderr}"
