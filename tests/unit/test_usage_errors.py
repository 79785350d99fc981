"""click's usage errors (typer vendors click) are kxtx's one stderr line, exit 2, as kxtx's own
usage checks are, never typer's usage box (issue 63, item 2). No broker needed: the command line
is refused before anything connects."""

from __future__ import annotations

import pytest

from kxtx.exitcodes import ExitCode
from tests import cli

BOX = ("╭", "│", "Usage:", "Try ")


@pytest.mark.parametrize(
    "args,line",
    [
        (  # a value outside the choices
            ("find-hanging", "-o", "jsn"),
            "kxtx: error: invalid value for '--format' / '-o': 'jsn' is not one of 'table', 'json', "
            "'jsonl' (kxtx find-hanging --help)",
        ),
        (  # not a number
            ("find-hanging", "--timeout", "abc"),
            "kxtx: error: invalid value for '--timeout': 'abc' is not a valid float "
            "(kxtx find-hanging --help)",
        ),
        (  # a missing argument
            ("produce", "-t", "orders"),
            "kxtx: error: missing argument 'FILE...' (kxtx produce --help)",
        ),
        (  # a missing required option
            ("produce", "orders.jsonl"),
            "kxtx: error: missing option '--topic' / '-t' (kxtx produce --help)",
        ),
        (  # an option the command does not have
            ("inspect", "txn", "t1", "--zzz"),
            "kxtx: error: no such option: --zzz (kxtx inspect txn --help)",
        ),
        (  # a command that does not exist
            ("dump", "nosuch"),
            "kxtx: error: no such command 'nosuch' (kxtx dump --help)",
        ),
        (  # a close miss: click's suggestion stays
            ("inspect", "txn", "t1", "--no-scn"),
            "kxtx: error: no such option: --no-scn (Possible options: --no-history, --no-scan) "
            "(kxtx inspect txn --help)",
        ),
        (  # an option without its value (click names no command for it)
            ("monitor", "collect", "--timeout"),
            "kxtx: error: option '--timeout' requires an argument",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args, line):
    r = cli.run(*args, expect=ExitCode.USAGE)
    assert r.stderr.splitlines() == [line]
    assert r.stdout == ""
    assert not any(mark in r.stderr for mark in BOX)


@pytest.mark.parametrize("args", [("--help",), ("find-hanging", "--help"), ("dump", "-h")])
def test_help_is_still_the_help(args):
    r = cli.run(*args, expect=0)
    assert "Usage: kxtx" in r.stdout and r.stderr == ""
