"""`-o json` is one document per run, whatever the outcome: the boundary (kxtx.cli.common) writes it
with "status", "exit_code" and "error" once the exit code is known, from what the command emitted or
what its exception carried (kxtx.errors.carry). No broker: command bodies that emit and raise as
the real ones do."""

from __future__ import annotations

import json
import signal

import pytest
import typer

from kxtx.cli import output
from kxtx.cli.common import OutputFormat, boundary, exit_code_of
from kxtx.errors import (
    Interrupted,
    KafkaOperationError,
    Refused,
    Unavailable,
    Unreachable,
    carry,
    partial_of,
)
from kxtx.exitcodes import ExitCode, status
from kxtx.signals import STOPS, Stopped

ROWS = [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 1}]
SUMMARY = {"topic": "t", "records": 40, "transactions": 2}


@pytest.fixture(autouse=True)
def handlers():
    """A stop leaves the stop signals ignored (as the process exits): undone after each test."""
    before = {s: signal.getsignal(s) for s in STOPS}
    yield
    for s, handler in before.items():
        signal.signal(s, handler)


def run(body, fmt=OutputFormat.json, rows="rows"):
    """`body(fmt)` as a command under the boundary: its exit code."""

    @boundary(rows=rows)
    def command(fmt=None):
        body(fmt)

    try:
        command(fmt=fmt)
    except typer.Exit as exc:
        return int(exc.exit_code)
    return 0


def streamed_then(exc):
    """Rows that arrive one by one, then `exc` (a failure or a stop mid-stream)."""

    def rows():
        yield from ROWS
        raise exc

    return rows()


def _emit_summary(fmt):
    output.emit(SUMMARY, fmt)


def _emit_rows(fmt):
    output.emit_rows(ROWS, fmt)


def _raise(exc, partial=None):
    def body(fmt):
        raise exc if partial is None else carry(exc, partial)

    return body


def _exit_after_rows(code):
    def body(fmt):
        output.emit_rows(ROWS, fmt)
        raise typer.Exit(code)

    return body


def _stream_then(exc):
    def body(fmt):
        output.emit_rows(streamed_then(exc), fmt)

    return body


def _streamed_then(exc):
    """`dump partition -o json`: a document whose list is made while it is written."""

    def body(fmt):
        output.emit({"batches": output.Streamed(streamed_then(exc)), "summary": SUMMARY}, fmt)

    return body


def _emit_then_error(fmt):  # `produce --dry-run`: the summary, then the bad lines fail the run
    output.emit(SUMMARY, fmt)
    raise KafkaOperationError("3 bad lines")


def _plan_then_result(fmt):  # abort-hanging: the plan, then the results replace it
    output.emit_rows([{"kind": "plan"}], fmt)
    output.emit_rows([{"kind": "result"}], fmt)


def _plan_then_refused(fmt):
    output.emit_rows([{"kind": "plan"}], fmt)
    raise Refused("refusing to act without --yes")


CASES = [
    # id, body, exit code, status, error, the document without the status keys
    ("ok object", _emit_summary, 0, "ok", None, SUMMARY),
    ("ok rows", _emit_rows, 0, "ok", None, {"rows": ROWS}),
    ("ok nothing emitted", lambda fmt: None, 0, "ok", None, {}),
    ("problem found", _exit_after_rows(3), 3, "problem_found", None, {"rows": ROWS}),
    ("exit 75 with rows", _exit_after_rows(75), 75, "retry", None, {"rows": ROWS}),
    (
        "unreachable",
        _raise(Unreachable("no broker answered at 127.0.0.1:1")),
        69,
        "unreachable",
        "no broker answered at 127.0.0.1:1",
        {},
    ),
    (
        "retry with the summary of what was committed",
        _raise(Unavailable("cluster unavailable"), SUMMARY),
        75,
        "retry",
        "cluster unavailable",
        SUMMARY,
    ),
    ("error after the result", _emit_then_error, 1, "error", "3 bad lines", SUMMARY),
    (
        "error mid-stream keeps the rows so far",
        _stream_then(KafkaOperationError("broker gone")),
        1,
        "error",
        "broker gone",
        {"rows": ROWS},
    ),
    (
        "Ctrl-C mid-stream keeps the rows so far",
        _stream_then(KeyboardInterrupt()),
        130,
        "interrupted",
        "interrupted",
        {"rows": ROWS},
    ),
    (
        "a streamed list that fails mid-stream keeps its items so far",
        _streamed_then(Unavailable("schema registry http://r did not answer")),
        75,
        "retry",
        "schema registry http://r did not answer",
        {"batches": ROWS, "summary": SUMMARY},
    ),
    (
        "Ctrl-C in a streamed list",
        _streamed_then(KeyboardInterrupt()),
        130,
        "interrupted",
        "interrupted",
        {"batches": ROWS, "summary": SUMMARY},
    ),
    (
        "a streamed list of a client exception",
        _streamed_then(RuntimeError("boom")),
        1,
        "error",
        "boom",
        {"batches": ROWS, "summary": SUMMARY},
    ),
    (
        "SIGTERM after a clean-up, with its summary",
        _raise(Interrupted("terminated: aborted the open transaction", signal.SIGTERM), SUMMARY),
        143,
        "terminated",
        "terminated: aborted the open transaction",
        SUMMARY,
    ),
    ("SIGHUP", _raise(Stopped(signal.SIGHUP)), 129, "hangup", "hung up", {}),
    ("a client exception", _raise(RuntimeError("boom"), SUMMARY), 1, "error", "boom", SUMMARY),
    ("a plan, then the result", _plan_then_result, 0, "ok", None, {"rows": [{"kind": "result"}]}),
    (
        "a plan, then refused",
        _plan_then_refused,
        2,
        "usage",
        "refusing to act without --yes",
        {"rows": [{"kind": "plan"}]},
    ),
]


@pytest.mark.parametrize("body, code, name, error, rest", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_json_is_one_document_with_its_status(capsys, body, code, name, error, rest):
    assert run(body) == code
    doc = json.loads(capsys.readouterr().out)  # exactly one JSON document, or this raises
    assert {k: doc.pop(k) for k in output.STATUS_KEYS} == {"status": name, "exit_code": code, "error": error}
    assert doc == rest


def test_the_status_keys_come_first(capsys):
    assert run(_emit_summary) == 0
    assert list(json.loads(capsys.readouterr().out))[:3] == list(output.STATUS_KEYS)


@pytest.mark.parametrize("body", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_jsonl_has_rows_only_and_no_status_line(capsys, body):
    run(body, OutputFormat.jsonl)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all("status" not in line for line in lines), lines


@pytest.mark.parametrize(
    "code, name",
    [
        (ExitCode.OK, "ok"),
        (ExitCode.ERROR, "error"),
        (ExitCode.PROBLEM_FOUND, "problem_found"),
        (ExitCode.UNREACHABLE, "unreachable"),
        (ExitCode.RETRY, "retry"),
        (ExitCode.HANGUP, "hangup"),
        (ExitCode.INTERRUPTED, "interrupted"),
        (ExitCode.TERMINATED, "terminated"),
        (-9, "error"),  # a code kxtx does not define
    ],
)
def test_status_names_come_from_the_exit_codes(code, name):
    assert status(code) == name


def test_a_rows_key_per_command(capsys):
    assert run(_emit_rows, rows="hanging") == 0
    assert json.loads(capsys.readouterr().out)["hanging"] == ROWS


def test_broken_pipe_writes_no_document(capsys):
    assert run(_raise(BrokenPipeError())) == ExitCode.BROKEN_PIPE
    assert capsys.readouterr().out == ""


def test_a_command_run_inside_another_leaves_the_document_to_it(capsys):
    """dump's worker processes run their body under a boundary of their own (exit_code_of): the
    outer command's document gets the inner failure's message, once."""

    def inner():
        raise Unavailable("leader moved")

    @boundary
    def outer(fmt=None):
        code = exit_code_of(inner)
        raise typer.Exit(code)

    with pytest.raises(typer.Exit):
        outer(fmt=OutputFormat.json)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["error"]) == ("retry", "leader moved")


def test_json_output_outside_a_command_is_a_bug():
    with pytest.raises(RuntimeError, match="boundary"):
        output.emit(SUMMARY, OutputFormat.json)


@pytest.mark.parametrize(
    "first, then, kept",
    [
        (None, [1], [1]),
        ([1], [2], [1]),  # the innermost knows best
    ],
)
def test_carry_keeps_the_first(first, then, kept):
    exc = ValueError()
    if first is not None:
        carry(exc, first)
    carry(exc, then)
    assert partial_of(exc) == kept
    assert partial_of(carry(exc, ["rows"], replace=True)) == ["rows"]
