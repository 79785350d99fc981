"""`kxtx fence TRANSACTIONAL_ID`: end a stuck application's open transaction (Kafka 4.1's
forceTerminateTransaction): the coordinator bumps the epoch, aborts it and fences the live producer."""

from __future__ import annotations

from typing import Annotated

import typer

from kxtx.cli.common import (
    BootstrapOpt,
    CommandConfigOpt,
    ConfigOpt,
    DryRunOpt,
    FormatOpt,
    TimeoutOpt,
    YesOpt,
    boundary,
    confirm_or_refuse,
    connection,
)
from kxtx.cli.output import emit
from kxtx.exitcodes import ExitCode


@boundary
def fence(
    transactional_id: Annotated[str, typer.Argument(metavar="TRANSACTIONAL_ID")],
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
    command_config: CommandConfigOpt = None,
    timeout: TimeoutOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Fence a transactional id: abort its open transaction and fence the producer using it.

    For an ongoing transaction of a dead or stuck application; a hanging partition the coordinator
    no longer tracks needs `kxtx abort-hanging`. Needs WRITE on the TransactionalId. Shows the plan;
    --dry-run stops there (exit 3: there is something to fence); without a terminal --yes is
    required. Exit 0 when the LSO of every partition it held was read and moved; 75 when a
    partition could not be read (no leader, a broker down: its row says `unseen`, and how to check
    its marker later); 1 when one was read and did not move."""
    from kxtx.ops import fence as lib
    from kxtx.ops.calls import Cluster

    with Cluster(connection(bootstrap, config, command_config, timeout)) as cluster:
        desc = lib.describe(cluster, transactional_id)
        # json: the plan is the document until the result replaces it (it stays on --dry-run or a
        # refusal)
        emit(lib.plan(cluster, desc), fmt, title=f"plan: fence {transactional_id}")
        if dry_run:
            typer.echo("kxtx: dry run: nothing was changed", err=True)
            # as every destructive command's dry run: 3, the plan has something to do (fencing
            # always bumps the epoch)
            raise typer.Exit(ExitCode.PROBLEM_FOUND)
        confirm_or_refuse(yes, f"Fence {transactional_id!r} and abort its open transaction?")
        result = lib.fence(cluster, desc)
    emit(result, fmt, title=f"fenced {transactional_id}")
    if result.ok:
        return
    from kxtx.log import logger

    for row in result.partitions:
        if row.unseen:
            logger.warning(f"{row.topic}:{row.partition}: not seen: {row.unseen}")
    from kxtx.errors import unseen_exit

    stuck = [r for r in result.partitions if r.lso_moved is False]
    raise typer.Exit(ExitCode.ERROR if stuck else unseen_exit([r.unseen or "" for r in result.partitions]))
