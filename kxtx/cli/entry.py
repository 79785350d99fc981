"""The console entry point (`kxtx`, `python -m kxtx`).

Its first act is to cover the start-up (imports, option parsing: ~0.2 s) against stop signals, until
the command's boundary installs its own handling (see `kxtx.signals.while_starting`).

Its last, for a command that finished with nothing left to release (`STATE.released`), is to end
the process without the interpreter's finalisation (see `_end_now`).
"""

from __future__ import annotations


def main() -> None:
    from kxtx import signals

    signals.while_starting()
    _closed_streams_to_devnull()
    from kxtx.cli.app import main as run
    from kxtx.cli.common import STATE

    try:
        run()
    except SystemExit as exc:
        if STATE.released:
            _end_now(exc.code)
        raise


def _closed_streams_to_devnull() -> None:
    """A process started with stdout or stderr closed (`kxtx ... >&-` in a cron line) has
    sys.stdout or sys.stderr None: what kxtx writes there is dropped, as for a table, instead of
    ending in a traceback (an AttributeError on None) after the command's work was done."""
    import os
    import sys

    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the process's stdout, open until exit
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115


def _end_now(code: object) -> None:
    """Exit with `code` at once: run the atexit handlers (the temporary PEM directory, logging's
    flush, coverage's data), flush stdout and stderr (after the handlers: what they write must not
    be lost in a buffer `os._exit` drops), then `os._exit`. Skipped is the interpreter's
    finalisation: tearing down every imported module and destroying the librdkafka clients left to
    the garbage collector, 40-50 ms of a one-record `kxtx produce` (bench/README.md, "What is left
    against kcat"). Returns (the normal exit follows) when that is not safe: a code that is not a
    number, output that cannot be flushed (a closed pipe: Python's own exit reports it), or a
    Python thread still running that the normal exit would wait for."""
    import atexit
    import os
    import sys
    import threading

    if code is None:
        code = 0
    if not isinstance(code, int) or not hasattr(atexit, "_run_exitfuncs"):
        return
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        # a handler's output that cannot be written now: the handlers have run, and a second run
        # by the normal exit would repeat them (deleted files, coverage's data written twice)
        pass
    os._exit(code)
