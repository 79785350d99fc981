"""The one way the tests start the CLI: `kxtx` as a subprocess of this interpreter (stdin not a
terminal, as in cron), the way a user's shell would.

    r = cli.run("topic", "list", "-o", "json", env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap})
    r.json  # parsed stdout; `run` already failed the test, with the stderr, if the exit was not 0

`expect` is the exit code the test expects (0 unless told; an ExitCode works too); a run that ends
with another fails the test there, naming the command, the code and the end of its stderr.
`expect=None` checks nothing, for tests that assert on the exit code themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: How the tests start kxtx: the installed package, under the interpreter running the tests.
KXTX = (sys.executable, "-m", "kxtx")

#: How much of a failed run's stderr a failure shows (its end: where the error is).
STDERR_TAIL = 3000

#: ... and of its stdout (a Nagios line, the end of a summary).
STDOUT_TAIL = 1000

Expect = int | Collection[int] | None


def argv(*args: str) -> list[str]:
    """The command line of `kxtx ARGS` (for the few tests that hand it to another launcher)."""
    return [*KXTX, *map(str, args)]


def environ(env: Mapping[str, str] | None = None, *, clean: bool = False) -> dict[str, str]:
    """This process's environment plus `env`; `clean` drops the KXTX_* variables first (a run
    configured only by its command line or its own settings)."""
    base = {k: v for k, v in os.environ.items() if not (clean and k.startswith("KXTX_"))}
    return {**base, **(env or {})}


@dataclass
class Result:
    """A finished run: what `subprocess.run` returns, plus stdout parsed on demand."""

    args: list[str]
    returncode: int
    stdout: Any  # str, or bytes for a run given bytes as input
    stderr: Any

    @cached_property
    def json(self) -> Any:
        """stdout as one JSON document (`-o json`)."""
        return json.loads(self.stdout)

    @cached_property
    def rows(self) -> list[Any]:
        """stdout as JSON lines (`-o jsonl`), blank lines skipped."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def expect(self, code: Expect = 0) -> Result:
        """Fail the test unless the run ended with `code` (one code or several); returns self."""
        __tracebackhide__ = True
        check(self, code)
        return self


def _tail(name: str, out: str | bytes | None, most: int) -> str:
    text = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
    return f"{name}{' (end)' if len(text) > most else ''}:\n{text[-most:]}"


def check(r: Any, expect: Expect = 0) -> Any:
    """Fail the test, with the command and the end of its stderr, unless `r` (a Result or a
    CompletedProcess) ended with `expect`; returns `r`. None checks nothing."""
    __tracebackhide__ = True
    if expect is None:
        return r
    wanted = {int(expect)} if isinstance(expect, int) else {int(c) for c in expect}
    if r.returncode not in wanted:
        words = [str(a) for a in r.args]
        command = " ".join(["kxtx", *words[len(KXTX) :]] if words[: len(KXTX)] == list(KXTX) else words)
        codes = " or ".join(map(str, sorted(wanted)))
        pytest.fail(
            f"{command}\nexited {r.returncode}, expected {codes}; {_tail('stderr', r.stderr, STDERR_TAIL)}"
            + (f"\n{_tail('stdout', r.stdout, STDOUT_TAIL)}" if r.stdout else ""),
            pytrace=False,
        )
    return r


def run(
    *args: str,
    expect: Expect = 0,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    clean: bool = False,
    timeout: float = 300,
    cwd: str | Path = ROOT,
) -> Result:
    """`kxtx ARGS` to the end, its output captured (text, or bytes when `input` is bytes); `env` is
    added to this process's environment (see `environ`). Fails the test unless it exits `expect`."""
    __tracebackhide__ = True
    cmd = argv(*args)
    text = not isinstance(input, bytes)
    p = subprocess.run(
        cmd,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=text,
        timeout=timeout,
        env=environ(env, clean=clean),
        cwd=cwd,
    )
    return Result(cmd, p.returncode, p.stdout, p.stderr).expect(expect)


def start(
    *args: str,
    env: Mapping[str, str] | None = None,
    clean: bool = False,
    cwd: str | Path = ROOT,
    **popen: Any,
) -> subprocess.Popen:
    """`kxtx ARGS` in the background, for tests that signal it or read it while it runs; `popen`
    goes to subprocess.Popen (stdout, stderr, text, start_new_session...). Nothing is captured
    unless asked: a pipe nobody reads could fill and block the run."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen(argv(*args), env=environ(env, clean=clean), cwd=cwd, **popen)


def finish(proc: subprocess.Popen, expect: Expect = 0, timeout: float | None = None) -> Result:
    """Wait for a run `start` began (its output read if it was piped) and check its exit code as
    `run` does."""
    __tracebackhide__ = True
    out, err = proc.communicate(timeout=timeout)
    return Result(list(proc.args), proc.returncode, out, err).expect(expect)  # type: ignore[arg-type]
