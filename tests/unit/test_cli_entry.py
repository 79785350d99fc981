"""A stop signal in kxtx's first fraction of a second (imports, before any command's own handling):
one line, exit 128 + n, no traceback (issue 11, item 2: "any moment")."""

import os
import signal
import subprocess
import time

import pytest

from tests import cli


def _caught(pid: int, sig: int) -> bool:
    """Has process `pid` installed a handler for `sig` (the SigCgt mask of /proc/PID/status)?"""
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = next(int(ln.split()[1], 16) for ln in f if ln.startswith("SigCgt:"))
    except (FileNotFoundError, StopIteration, ProcessLookupError):
        return False
    return bool(mask >> (sig - 1) & 1)


def _signal_while_starting(sig: int, delay: float) -> tuple[int, str, str]:
    # The root's help imports every command (--version, which imports none, is over too soon);
    # the signal goes in as soon as kxtx's entry catches SIGTERM (Python itself catches only
    # SIGINT), i.e. during the imports that follow.
    proc = cli.start("--help", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not _caught(proc.pid, signal.SIGTERM) and proc.poll() is None:
        assert time.monotonic() < deadline, "kxtx never caught SIGTERM while starting"
        time.sleep(0.0005)
    time.sleep(delay)
    if proc.poll() is None:
        os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05])  # at once, in the imports, later on
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_starting_is_one_line(sig, delay):
    for _ in range(5):
        # The start takes ~0.3 s. A run that printed the help had finished first: that proves
        # nothing (and a signal during the interpreter's own shutdown, after Python has put the
        # default handlers back, ends it with the signal's status: nothing was left to do then).
        code, out, err = _signal_while_starting(sig, delay)
        if not out:
            break
    name = signal.Signals(sig).name
    assert code == 128 + sig, err
    assert err == f"kxtx: stopped by {name} while starting\n"


def test_a_stop_by_signal_ignores_further_ones_until_the_exit():
    """After the stop line, Python's finalization puts SIG_DFL back for its own handlers (not for
    SIG_IGN): an impatient second Ctrl-C would end kxtx with -2 instead of 130."""
    import typer

    from kxtx.cli.common import stopped

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with pytest.raises(typer.Exit) as info:
            stopped("stopped by SIGINT after 3 rows", 130)
        assert info.value.exit_code == 130
        assert {s: signal.getsignal(s) for s in before} == dict.fromkeys(before, signal.SIG_IGN)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


@pytest.mark.parametrize("closed", [1, 2])
def test_a_closed_stdout_or_stderr_drops_the_output_without_a_traceback(tmp_path, closed):
    """`kxtx ... >&-` (or `2>&-`) in a cron line: Python gives None for that stream; the run does its
    work and exits as it would have (here a dry run's json document and its exit 0)."""
    data = tmp_path / "in.jsonl"
    data.write_text('{"id": 1}\n')
    other = tmp_path / "other.txt"
    with open(other, "wb") as out:
        r = subprocess.run(
            cli.argv("produce", data, "-t", "t", "--dry-run", "-o", "json"),
            stdout=out if closed == 2 else None,
            stderr=out if closed == 1 else None,
            preexec_fn=lambda: os.close(closed),
            timeout=60,
        )
    assert r.returncode == 0
    written = other.read_text()
    assert "Traceback" not in written and "Error" not in written
    if closed == 2:
        assert '"status": "ok"' in written
