"""kxtx.cli.entry._end_now: a finished command's process ends without the interpreter's
finalisation, yet with its output flushed and its atexit handlers run; and it does not when that
would lose something."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from kxtx.cli import entry

SCRIPT = """
import atexit, sys, threading
from kxtx.cli import entry
atexit.register(lambda: sys.stdout.write(" atexit ran"))
sys.stdout.write("buffered output")  # not flushed yet: a pipe's stdout is block-buffered
sys.stderr.write("a warning")
entry._end_now({code})
sys.stdout.write(" and the normal exit")
"""


# as in a user's shell: with PYTHONUNBUFFERED (set on CI's machine) nothing waits in a buffer, and
# output lost in one cannot be seen
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _run(code):
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(code=code)], capture_output=True, text=True, env=ENV
    )


@pytest.mark.parametrize("code, status", [(0, 0), (None, 0), (3, 3), (75, 75)])
def test_ends_at_once_flushed_and_with_atexit(code, status):
    r = _run(code)
    assert (r.returncode, r.stdout, r.stderr) == (status, "buffered output atexit ran", "a warning")


def test_a_code_that_is_not_a_number_takes_the_normal_exit():
    r = _run("'a message'")
    assert r.returncode == 0 and r.stdout == "buffered output and the normal exit atexit ran"


def test_a_running_thread_takes_the_normal_exit():
    """The normal exit waits for a non-daemon thread; `_end_now` would cut it off: it returns."""
    release = threading.Event()
    worker = threading.Thread(target=release.wait, daemon=False)
    worker.start()
    try:
        assert entry._end_now(0) is None  # still here
    finally:
        release.set()
        worker.join()
