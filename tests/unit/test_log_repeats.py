"""The CLI's stderr handler: a warning repeated within a minute is counted, not written again."""

import logging
import time

from kxtx.cli.common import _StderrHandler


def _record(msg: str) -> logging.LogRecord:
    return logging.LogRecord("kxtx", logging.WARNING, __file__, 1, msg, None, None)


def test_a_repeated_warning_is_written_once_with_its_count(capsys, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    h = _StderrHandler()
    for _ in range(6):
        h.emit(_record("ListOffsets L:0: LEADER_NOT_AVAILABLE"))
        clock[0] += 1
    h.emit(_record("another"))
    h.repeats()
    assert capsys.readouterr().err.splitlines() == [
        "kxtx: warning: ListOffsets L:0: LEADER_NOT_AVAILABLE",
        "kxtx: warning: another",
        "kxtx: warning: ListOffsets L:0: LEADER_NOT_AVAILABLE (5 more times)",
    ]


def test_a_warning_that_comes_back_later_is_written_again(capsys, monkeypatch):
    """A long run (a pipe, monitor serve) still hears of a problem that returns after the quiet
    minute, with the count since it was last written."""
    clock = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    h = _StderrHandler()
    h.emit(_record("broker 2 down"))
    clock[0] = 30
    h.emit(_record("broker 2 down"))
    clock[0] = 61
    h.emit(_record("broker 2 down"))
    h.repeats()
    assert capsys.readouterr().err.splitlines() == [
        "kxtx: warning: broker 2 down",
        "kxtx: warning: broker 2 down (2 times)",
    ]


def test_each_command_starts_with_no_warning_held_back(capsys):
    """One process, several commands (the tests run some in process): a warning the last one
    wrote must not hide the next one's first line of it."""
    import logging

    from kxtx.cli.common import _setup_logging

    _setup_logging()
    log = logging.getLogger("kxtx")
    log.warning("the same problem")
    _setup_logging()  # the next command's boundary
    log.warning("the same problem")
    assert capsys.readouterr().err.count("kxtx: warning: the same problem\n") == 2
