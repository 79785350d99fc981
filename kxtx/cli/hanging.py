"""`kxtx find-hanging`, `kxtx abort-hanging`, `kxtx abort`: hanging transactions, found and aborted.

They share the scope options, the rows and their rendering, hence one module.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli.common import (
    MaxTimeoutOpt,
    Options,
    PartitionOpt,
    Shared,
    TopicOpt,
    command,
)
from kxtx.cli.output import annotate, emit_rows
from kxtx.cli.plan import marker_plan, run
from kxtx.errors import unseen_exit
from kxtx.exitcodes import ExitCode
from kxtx.parsers import parse_minutes
from kxtx.wording import plural

if TYPE_CHECKING:
    from kxtx.client.admin import Cluster
    from kxtx.client.settings import Settings
    from kxtx.ops.hanging import Report
    from kxtx.ops.model import HangingTxn, HeldLso

BrokerIdOpt = Annotated[
    int | None,
    typer.Option(
        "--broker-id", help="Partitions with a replica on this broker, asking it for its producer state."
    ),
]
DropCommittedOpt = Annotated[
    bool,
    typer.Option(
        "--drop-committed",
        help="Abort even an open transaction its coordinator committed (its COMMIT marker was lost): "
        "its records are dropped. By default such a partition is left for repair-markers.",
    ),
]
COLUMNS = [
    "topic",
    "partition",
    "leader",
    "producer_id",
    "producer_epoch",
    "start_offset",
    "age",
    "transactional_id",
    "coordinator_state",
    "lso",
    "high_watermark",
    "held_back",
    "blocked_groups",
]
PLAN_COLUMNS = [
    "topic",
    "partition",
    "producer_id",
    "producer_epoch",
    "coordinator_epoch",
    "start_offset",
    "transactional_id",
    "leader",
    "lso",
    "high_watermark",
    "held_back",
]
RESULT_COLUMNS = [
    "topic",
    "partition",
    "producer_id",
    "producer_epoch",
    "start_offset",
    "outcome",
    "detail",
    "leader",
    "lso_after",
    "high_watermark",
]


@dataclasses.dataclass(frozen=True)
class HangingScope(Options):
    """find-hanging's and abort-hanging's scope options."""

    topic: TopicOpt = None
    partition: PartitionOpt = None
    broker_id: BrokerIdOpt = None
    max_transaction_timeout: MaxTimeoutOpt = None


def _scan(settings: Settings, scope: HangingScope) -> tuple[Cluster, Report]:
    """Run find-hanging and log its warnings (stderr); the caller decides the exit code."""
    from kxtx.cli.progress import sweep
    from kxtx.client.admin import Cluster
    from kxtx.log import logger
    from kxtx.ops.hanging import Scope, find_hanging

    cluster = Cluster(settings)
    line = sweep("find-hanging: DescribeProducers")
    try:
        report = find_hanging(
            cluster,
            Scope(scope.topic, scope.partition, scope.broker_id),
            parse_minutes(scope.max_transaction_timeout),
            progress=line.calls if line else None,
        )
    finally:
        if line:
            line.done()
    for tp, why in sorted(report.errors.items()):
        logger.warning(f"{tp[0]}:{tp[1]} not checked: {why}")
    for w in report.warnings:
        logger.warning(w)
    return cluster, report


#: stderr names at most this many held LSOs one by one (-o json has them all, under "lso_held")
HELD_LINES = 20


def say_held(held: list[HeldLso]) -> int:
    """Why each LSO that is not hanging is stuck, one stderr line per transaction that needs a look
    (a count for live producers' transactions in progress), and every row under "lso_held" in the
    json document. Returns how many need a look."""
    from kxtx.ops.decide import HOLD_IN_PROGRESS, fmt_age
    from kxtx.timefmt import iso_ms

    annotate("lso_held", [{**dataclasses.asdict(h), "ends_time": iso_ms(h.ends_ms)} for h in held])
    look = [h for h in held if h.kind != HOLD_IN_PROGRESS]
    for h in look[:HELD_LINES]:
        who = f" ({h.transactional_id!r})" if h.transactional_id else ""
        act = f"; ends it now: {h.action}" if h.action else ""
        act += f" ({h.owner_hint})" if h.owner_hint else ""
        typer.echo(
            f"kxtx: {h.topic}:{h.partition}: LSO held at {h.start_offset} by producer {h.producer_id} "
            f"epoch {h.producer_epoch}{who}, idle {fmt_age(h.idle_ms)}: {h.kind}: {h.detail}{act}",
            err=True,
        )
    if len(look) > HELD_LINES:
        typer.echo(
            f"kxtx: ... and {len(look) - HELD_LINES} more (-o json lists them under lso_held)", err=True
        )
    live = len(held) - len(look)
    if live:
        typer.echo(
            f"kxtx: {plural(live, 'open transaction')} of live producers in progress (normal)", err=True
        )
    return len(look)


def _checked(report: Report) -> str:
    """How many partitions were checked: all, or "N of M" with the rest named above."""
    total = report.partitions_checked
    if not report.errors:
        return f"{plural(total, 'partition')} checked"
    return f"{total - len(report.errors)} of {plural(total, 'partition')} checked, {len(report.errors)} not (above)"


def _row(h: HangingTxn) -> dict:
    from kxtx.ops.decide import fmt_age
    from kxtx.timefmt import iso_ms

    row: dict[str, object] = {}
    for name, value in dataclasses.asdict(h).items():
        if name == "last_timestamp":  # a time: in ms and ISO, named as in every command
            row.update(last_timestamp_ms=value, last_time=iso_ms(value))
        else:
            row[name] = value
    row["age"] = fmt_age(h.age_ms)
    return row


@command(rows="hanging")
def find_hanging(
    *,
    scope: HangingScope,
    shared: Shared,
) -> None:
    """Find open transactions that no coordinator will ever end (Kafka's KIP-664 algorithm).

    Exit 0 when nothing hangs, 3 when something does, 75 when partitions could not be checked (no
    leader, a broker down: named on stderr) and nothing was found elsewhere, 1 on error. An open
    transaction that holds an LSO without hanging by Kafka's definition (abandoned, a lost marker,
    not yet past the timeout) is named on stderr with why, when it ends and the command that ends it
    now, and leaves the exit code as it is. -o json: the rows are under "hanging", the others under
    "lso_held"."""
    settings = shared.settings()
    cluster, report = _scan(settings, scope)
    cluster.close()
    emit_rows(
        [_row(h) for h in report.hanging],
        shared.fmt,
        COLUMNS,
        title=f"hanging transactions ({plural(report.partitions_checked, 'partition')} checked)",
    )
    look = say_held(report.held)
    if report.hanging:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    # Without a terminal the rows are JSON lines: none at all would say nothing to someone reading.
    # Held LSOs that are not hanging leave the exit code as it is: 0 means nothing hangs.
    held = f"; {plural(look, 'stuck LSO')} not hanging by Kafka's definition (above)" if look else ""
    typer.echo(f"kxtx: nothing hangs ({_checked(report)}){held}", err=True)
    if report.errors:  # "nothing hangs" is not known there: 75, the same run again may see them
        raise typer.Exit(unseen_exit(list(report.errors.values())))


@command(rows="transactions", dry_run=True, yes=True)
def abort_hanging(
    *,
    scope: HangingScope,
    drop_committed: DropCommittedOpt = False,
    shared: Shared,
) -> None:
    """Find hanging transactions, show the plan, then abort each one with a marker.

    An open transaction its coordinator committed (a lost COMMIT marker, see audit-markers) is not
    aborted, unless --drop-committed: kxtx says to run repair-markers instead. --dry-run stops
    after the plan (exit 3 when it is not empty). Without a terminal, --yes is required (else exit
    2, nothing changed). Exit 0 only when every targeted partition is no longer hanging afterwards;
    3 when a committed one was left for repair-markers; 75 when the only ones left are partitions
    whose leader moved mid-run (run it again). -o json: the rows (the plan, or the results) are
    under "transactions"."""
    from kxtx.ops import abort

    settings = shared.settings()
    cluster, report = _scan(settings, scope)
    with cluster:
        kept = [] if drop_committed else _keep_committed(cluster, report)
        look = say_held(report.held)
        if not report.hanging:
            if not kept:
                held = f" ({plural(look, 'stuck LSO')} not hanging: above)" if look else ""
                typer.echo(f"kxtx: nothing hangs; nothing to abort{held}", err=True)
            emit_rows([], shared.fmt, RESULT_COLUMNS, title="abort results")
            code = (
                ExitCode.PROBLEM_FOUND
                if kept
                else unseen_exit(list(report.errors.values()))
                if report.errors
                else ExitCode.OK
            )
            raise typer.Exit(code)
        targets = abort.targets_from_hanging(report.hanging)
        evidence = {h.tp: h for h in report.hanging}
        plan = [
            {"kind": "plan", **t.plan_row(), **_offsets(evidence.get(t.expected.tp)), "action": "abort"}
            for t in targets
        ]
        run(marker_plan(cluster, targets, plan, (PLAN_COLUMNS, RESULT_COLUMNS)), shared)
        if kept:  # aborted what could be; the committed ones still hang, waiting for repair-markers
            raise typer.Exit(ExitCode.PROBLEM_FOUND)


def _keep_committed(cluster: Cluster, report: Report) -> list:
    """Take the hanging rows whose coordinator committed them out of `report.hanging` (aborting
    would drop committed records), each with a warning naming what to run instead; returns them."""
    from kxtx.log import logger
    from kxtx.ops.audit import committed_by_coordinator

    committed = committed_by_coordinator(cluster, report.hanging)
    kept = [h for h in report.hanging if h.tp in committed]
    report.hanging = [h for h in report.hanging if h.tp not in committed]
    for h in kept:
        logger.warning(_left_for_repair(h.topic, h.partition, h.producer_id, committed[h.tp]))
    return kept


def _left_for_repair(topic: str, partition: int, producer_id: int, why: str) -> str:
    return (
        f"{topic}:{partition} producer {producer_id}: not aborted: {why}; aborting would drop committed "
        f"records. Run `kxtx repair-markers --topic {topic} --partition {partition}` to write its COMMIT "
        "(or --drop-committed to abort it anyway)"
    )


def _offsets(h: HangingTxn | None) -> dict:
    if h is None:
        return {}
    return {"lso": h.lso, "high_watermark": h.high_watermark, "held_back": h.held_back}


@command(rows="transactions", dry_run=True, yes=True)
def abort_cmd(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic of the open transaction.")],
    partition: Annotated[int, typer.Option("--partition", "-p", help="Partition of the open transaction.")],
    start_offset: Annotated[
        int | None, typer.Option("--start-offset", help="First offset of the open transaction.")
    ] = None,
    producer_id: Annotated[
        int | None, typer.Option("--producer-id", help="Instead of --start-offset: its producer id.")
    ] = None,
    producer_epoch: Annotated[
        int | None, typer.Option("--producer-epoch", help="With --producer-id: the epoch for the marker.")
    ] = None,
    coordinator_epoch: Annotated[
        int | None,
        typer.Option(
            "--coordinator-epoch", help="With --producer-id (default: the partition's; < 0 becomes 0)."
        ),
    ] = None,
    drop_committed: DropCommittedOpt = False,
    *,
    shared: Shared,
) -> None:
    """Abort one open transaction on one partition (needs ALTER or CLUSTER_ACTION on the Cluster).

    Same preview, confirmation and checks as abort-hanging, and the same refusal of a transaction its
    coordinator committed (exit 3, unless --drop-committed); exit 0 when it is no longer open. -o json:
    the rows (the plan, or the result) are under "transactions"."""
    from kxtx.client.admin import Cluster
    from kxtx.errors import UsageError
    from kxtx.ops import abort

    by_pid = producer_id is not None or producer_epoch is not None or coordinator_epoch is not None
    if (start_offset is None) == (not by_pid) or (by_pid and (producer_id is None or producer_epoch is None)):
        raise UsageError(
            "give either --start-offset, or --producer-id with --producer-epoch "
            "(and optionally --coordinator-epoch)"
        )
    settings = shared.settings()
    with Cluster(settings) as cluster:
        t = abort.manual_target(
            cluster, (topic, partition), start_offset, producer_id, producer_epoch, coordinator_epoch
        )
        if not drop_committed:
            from kxtx.ops.audit import committed_open

            why = committed_open(cluster, t.expected)
            if why:
                from kxtx.log import logger

                logger.warning(_left_for_repair(topic, partition, t.expected.producer_id, why))
                emit_rows([], shared.fmt, RESULT_COLUMNS, title="abort results")
                raise typer.Exit(ExitCode.PROBLEM_FOUND)
        o = cluster.offsets([t.expected.tp])[t.expected.tp]
        plan = [
            {
                "kind": "plan",
                **t.plan_row(),
                "lso": o.lso,
                "high_watermark": o.high_watermark,
                "held_back": o.held_back,
                "action": "abort",
            }
        ]
        run(marker_plan(cluster, [t], plan, (PLAN_COLUMNS, RESULT_COLUMNS)), shared)
