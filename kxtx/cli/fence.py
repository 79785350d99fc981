"""`kxtx fence TRANSACTIONAL_ID`: end a stuck application's open transaction (Kafka 4.1's
forceTerminateTransaction): the coordinator bumps the epoch, aborts it and fences the live producer."""

from __future__ import annotations

from typing import Annotated

import typer

from kxtx.cli.common import Shared, command
from kxtx.cli.plan import Done, Plan, run
from kxtx.exitcodes import ExitCode


@command(dry_run=True, yes=True)
def fence(
    transactional_id: Annotated[str, typer.Argument(metavar="TRANSACTIONAL_ID")], *, shared: Shared
) -> None:
    """Fence a transactional id: abort its open transaction and fence the producer using it.

    For an ongoing transaction of a dead or stuck application; a hanging partition the coordinator
    no longer tracks needs `kxtx abort-hanging`. Needs WRITE on the TransactionalId. Shows the plan;
    --dry-run stops there (exit 3: there is something to fence); without a terminal --yes is
    required. Exit 0 when the LSO of every partition it held was read and moved; 75 when a
    partition could not be read (no leader, a broker down: its row says `unseen`, and how to check
    its marker later); 1 when one was read and did not move."""
    from kxtx.ops import fence as lib

    with shared.cluster() as cluster:
        desc = lib.describe(cluster, transactional_id)

        def act() -> Done:
            result = lib.fence(cluster, desc)
            done = Done(result, f"fenced {transactional_id}")
            if not result.ok:
                from kxtx.errors import unseen_exit

                done.warnings = [
                    f"{row.topic}:{row.partition}: not seen: {row.unseen}"
                    for row in result.partitions
                    if row.unseen
                ]
                stuck = [r for r in result.partitions if r.lso_moved is False]
                done.exit_code = (
                    ExitCode.ERROR if stuck else unseen_exit([r.unseen or "" for r in result.partitions])
                )
            return done

        # The plan is one object, never empty: fencing always bumps the epoch, so --dry-run exits 3.
        plan = Plan(
            lib.plan(cluster, desc),
            title=f"plan: fence {transactional_id}",
            question=f"Fence {transactional_id!r} and abort its open transaction?",
            act=act,
        )
        run(plan, shared)
