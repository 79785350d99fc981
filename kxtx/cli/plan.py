"""Plan -> confirm -> act once: the one sequence every destructive command runs.

A destructive command (abort-hanging, abort, repair-markers, fence; any new one too) works out what
it would do, builds a `Plan` and hands it to `run`:

    run(Plan(rows, title="plan: ...", question="Do it?", act=do_it, columns=COLUMNS), shared)

(`shared`: the command's `kxtx.cli.common.Shared`, for --dry-run, --yes and --format)

`run` then, in this order:

1. shows the plan: `rows` (a list of row dicts, rendered with `columns`, or one object) under
   `title`. With -o json the plan is the document until the result replaces it, so it is what a
   --dry-run or a refusal leaves;
2. calls `preflight`, if any (a check that acting would be refused, e.g. a missing permission):
   it raises, except under --dry-run, where its message is only a warning;
3. on --dry-run stops with the one dry-run exit code of every destructive command: 3
   (PROBLEM_FOUND) when the plan has something to do, 0 when it is empty;
4. asks `question` (`confirm_or_refuse`: --yes acts, a terminal asks, otherwise exit 2 and nothing
   changed);
5. calls `act()` once. It does the work and returns a `Done`: the result (rows or one object, the
   json document from then on), its title, the warnings to log after it and the exit code.
   Work done before a failure travels on the exception (`kxtx.errors.carry`), as everywhere;
6. reports: emits the result, logs the warnings, and exits with the code when it is not 0.

What a command says when there is nothing to plan at all (its own message, rows and exit code)
stays in the command, before a Plan is built. `marker_plan` builds the Plan of the commands that
write transaction markers (abort-hanging, abort, repair-markers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import typer

from kxtx.cli.common import confirm_or_refuse
from kxtx.cli.output import emit
from kxtx.errors import carry, partial_of
from kxtx.exitcodes import ExitCode
from kxtx.wording import plural

if TYPE_CHECKING:
    from kxtx.cli.common import Shared
    from kxtx.client.admin import Cluster
    from kxtx.ops.abort import Target


@dataclasses.dataclass
class Done:
    """What `Plan.act` did: `result` (row dicts or one object) shown under `title`, then
    `warnings` logged, then exit `exit_code` (nothing raised for 0)."""

    result: list[Any] | Mapping | Any
    title: str
    columns: list[str] | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    exit_code: int = ExitCode.OK


@dataclasses.dataclass
class Plan:
    """What a destructive command would do (`rows`: row dicts, or one object that always has
    something to do), the `question` that confirms it, and `act`, which does it once."""

    rows: list[dict] | Mapping
    title: str
    question: str
    act: Callable[[], Done]
    columns: list[str] | None = None
    preflight: Callable[[], None] | None = None

    @property
    def empty(self) -> bool:
        return isinstance(self.rows, list) and not self.rows


def run(plan: Plan, shared: Shared) -> None:
    """Show `plan`, stop on --dry-run, confirm, act once, report (the module docstring)."""
    dry_run, fmt = shared.dry_run, shared.fmt
    emit(plan.rows, fmt, plan.columns, title=plan.title)
    if plan.preflight is not None:
        from kxtx.errors import KxtxError
        from kxtx.log import logger

        try:
            plan.preflight()
        except KxtxError as exc:
            if not dry_run:
                raise
            logger.warning(str(exc))  # the plan is still worth seeing
    if dry_run:
        typer.echo("kxtx: dry run: nothing was changed", err=True)
        raise typer.Exit(ExitCode.OK if plan.empty else ExitCode.PROBLEM_FOUND)
    confirm_or_refuse(shared.yes, plan.question)
    done = plan.act()
    emit(done.result, fmt, done.columns, title=done.title)
    if done.warnings:
        from kxtx.log import logger

        for w in done.warnings:
            logger.warning(w)
    if done.exit_code != ExitCode.OK:
        raise typer.Exit(done.exit_code)


def marker_plan(
    cluster: Cluster,
    targets: list[Target],
    rows: list[dict],
    columns: tuple[list[str], list[str]],
    verb: str = "abort",
) -> Plan:
    """The Plan of writing one WriteTxnMarkers per target (`rows`: the plan's rows; `columns`: the
    plan's and the result's table columns; `verb` "repair" for markers of either outcome)."""
    from kxtx.ops import abort

    def act() -> Done:
        try:
            results = abort.execute(cluster, targets)
        except BaseException as exc:  # the partitions done before a failure or stop, as result rows
            carry(exc, _result_rows(partial_of(exc) or []), replace=True)
            raise
        code: int = ExitCode.OK
        unresolved = [r for r in results if not r.resolved]
        if unresolved:
            # Only leaders that moved mid-run: nothing failed, the next run finds them on the new leader.
            moved = all(r.outcome == "leader moved" for r in unresolved)
            code = ExitCode.RETRY if moved else ExitCode.ERROR
        # jsonl carries the plan's rows and then these: `kind` tells them apart
        return Done(_result_rows(results), f"{verb} results", columns[1], exit_code=code)

    these = "this transaction" if len(rows) == 1 else f"these {len(rows)} transactions"
    return Plan(
        rows,
        title=f"plan: {verb} {plural(len(rows), 'open transaction')} with WriteTxnMarkers",
        question=f"{verb.capitalize()} {these}?",
        act=act,
        columns=columns[0],
        preflight=lambda: abort.preflight(cluster, f"{verb} transactions (WriteTxnMarkers)"),
    )


# outcomes: AbortOutcomes; on an error, what `partial_of` carries (typed object there)
def _result_rows(outcomes: Any) -> list[dict]:
    return [{"kind": "result", **dataclasses.asdict(r)} for r in outcomes]
