"""`kxtx complete TRANSACTIONAL_ID --commit|--abort`: end one open (lingering) transaction as its
producer would (EndTxn with its producer id and epoch; the coordinator writes the markers).

Plan, confirm and act are separate small functions (`_plan`, `_act`, `_report`), so the command can
move onto a shared plan -> confirm -> act module without changing what it does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli.common import (
    Shared,
    command,
)
from kxtx.cli.plan import Done, Plan, run
from kxtx.exitcodes import ExitCode

if TYPE_CHECKING:
    from kxtx.ops.complete import CompleteResult


@command(dry_run=True, yes=True)
def complete(
    transactional_id: Annotated[str, typer.Argument(metavar="TRANSACTIONAL_ID")],
    commit: Annotated[bool, typer.Option("--commit", help="Commit the open transaction.")] = False,
    abort: Annotated[bool, typer.Option("--abort", help="Abort the open transaction.")] = False,
    producer_id: Annotated[
        int | None,
        typer.Option(
            "--producer-id",
            metavar="ID",
            help="The transaction's producer id (from a Flink checkpoint or the job's log); must be the "
            "coordinator's.",
        ),
    ] = None,
    epoch: Annotated[
        int | None,
        typer.Option(
            "--epoch", metavar="N", help="The transaction's producer epoch; must be the coordinator's."
        ),
    ] = None,
    *,
    shared: Shared,
) -> None:
    """Commit or abort one open transaction as its producer would: EndTxn with its producer id and
    epoch, after which the coordinator writes the markers on every partition.

    For a lingering transaction whose writer will not end it (a Flink job stopped between a
    checkpoint's pre-commit and its commit and not started again with its prefix, an abandoned
    two-phase commit). Decide from the writer's own
    state, not from kxtx: the plan shows a hint at the writer from the id's shape. --producer-id and
    --epoch must match the coordinator's open transaction, and the state must be Ongoing: otherwise
    it refuses, saying what the coordinator has (exit 2, nothing changed). Needs WRITE on the
    TransactionalId. Shows the plan; --dry-run stops there (exit 3); without a terminal --yes is
    required. Exit 0 when the coordinator reached CompleteCommit / CompleteAbort and every
    partition's LSO was read and moved; 75 when a partition could not be read (its row says
    `unseen` and how to check its marker later) or the coordinator stayed unavailable; 1 when the
    coordinator did not finish or an LSO did not move."""
    from kxtx.errors import UsageError
    from kxtx.ops import complete as lib

    if commit == abort:
        raise UsageError("name the outcome: --commit or --abort (one of them)")
    with shared.cluster() as cluster:
        # describe, and refuse what does not match, before any plan is shown
        desc = lib.describe(cluster, transactional_id)
        lib.check(desc, producer_id, epoch, commit)
        rows = lib.plan(cluster, desc, commit)
        if rows["owner_hint"]:
            typer.echo(f"kxtx: {transactional_id}: {rows['owner_hint']}", err=True)
        what = "Commit" if commit else "Abort"
        question = (
            f"{what} the open transaction of {transactional_id!r} "
            f"(producer id {desc.producer_id}, epoch {desc.producer_epoch})?"
        )
        title = f"plan: complete {transactional_id} --{rows['outcome']}"
        run(
            Plan(rows, title, question, act=lambda: _done(lib.complete(cluster, desc, commit))),
            shared,
        )


def _done(result: CompleteResult) -> Done:
    """The result, what it could not check (as warnings) and the exit code: 1 when the coordinator
    did not finish or an LSO did not move, 75 (1 for a permission) when a partition was not read."""
    done = Done(result, f"completed {result.transactional_id} ({result.outcome})")
    if result.ok:
        return done
    from kxtx.errors import unseen_exit

    if not result.coordinator_done:
        done.warnings.append(
            f"the coordinator did not reach Complete{result.outcome.title()}: it says {result.after.state}, "
            f"producer id {result.after.producer_id}, epoch {result.after.producer_epoch}"
        )
    for row in result.partitions:
        if row.unseen:
            done.warnings.append(f"{row.topic}:{row.partition}: not seen: {row.unseen}")
        elif row.lso_moved is False:
            done.warnings.append(
                f"{row.topic}:{row.partition}: the LSO did not move ({row.lso_after}); check its marker: "
                f"`kxtx audit-markers --topic {row.topic} --partition {row.partition}`"
            )
    stuck = not result.coordinator_done or any(r.lso_moved is False for r in result.partitions)
    done.exit_code = ExitCode.ERROR if stuck else unseen_exit([r.unseen or "" for r in result.partitions])
    return done
