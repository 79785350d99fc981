"""kxtx.cli.plan: the plan -> confirm -> act sequence of every destructive command, in process
(its commands' runs against a broker: tests/integration/test_hanging.py, test_json_documents.py)."""

import json

import pytest
import typer

from kxtx.cli.common import Shared
from kxtx.cli.output import OutputFormat
from kxtx.cli.plan import Done, Plan, run
from kxtx.errors import KxtxError, Refused
from kxtx.exitcodes import ExitCode

JSONL = OutputFormat.jsonl


def _plan(rows, acted: list, **kw) -> Plan:
    def act() -> Done:
        acted.append(1)
        return Done([{"kind": "result", "n": 1}], "results", **kw)

    return Plan(rows, title="plan: x", question="Do it?", act=act)


def _exit(fn) -> int:
    with pytest.raises(typer.Exit) as exc:
        fn()
    return exc.value.exit_code


@pytest.mark.parametrize(
    ("rows", "code"),
    [([{"kind": "plan"}], ExitCode.PROBLEM_FOUND), ([], ExitCode.OK), ({"transactional_id": "t"}, 3)],
    ids=["rows", "empty", "one-object"],
)
def test_a_dry_run_shows_the_plan_and_exits_3_unless_it_is_empty(capsys, rows, code):
    acted: list = []
    assert _exit(lambda: run(_plan(rows, acted), Shared(fmt=JSONL, dry_run=True, yes=False))) == code
    out, err = capsys.readouterr()
    assert acted == [] and "dry run: nothing was changed" in err
    assert [json.loads(x) for x in out.splitlines()] == (rows if isinstance(rows, list) else [rows])


def test_without_a_terminal_and_without_yes_it_refuses_before_acting(capsys):
    acted: list = []
    with pytest.raises(Refused):
        run(_plan([{"kind": "plan"}], acted), Shared(fmt=JSONL, dry_run=False, yes=False))
    assert acted == []


def test_yes_acts_once_and_reports_the_result_after_the_plan(capsys):
    acted: list = []
    run(_plan([{"kind": "plan"}], acted), Shared(fmt=JSONL, dry_run=False, yes=True))
    assert acted == [1]
    assert [json.loads(x)["kind"] for x in capsys.readouterr().out.splitlines()] == ["plan", "result"]


def test_the_result_exit_code_and_warnings_come_last(capsys):
    acted: list = []
    plan = _plan([{"kind": "plan"}], acted, warnings=["w1"], exit_code=ExitCode.RETRY)
    assert _exit(lambda: run(plan, Shared(fmt=JSONL, dry_run=False, yes=True))) == ExitCode.RETRY
    assert acted == [1]


def test_a_failed_preflight_stops_a_real_run_and_only_warns_on_a_dry_run(capsys):
    def preflight() -> None:
        raise KxtxError("ALTER on Cluster is required")

    acted: list = []
    plan = _plan([{"kind": "plan"}], acted)
    plan.preflight = preflight
    with pytest.raises(KxtxError):
        run(plan, Shared(fmt=JSONL, dry_run=False, yes=True))
    assert _exit(lambda: run(plan, Shared(fmt=JSONL, dry_run=True, yes=True))) == ExitCode.PROBLEM_FOUND
    assert acted == []
