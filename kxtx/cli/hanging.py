"""`kxtx find-hanging`, `kxtx abort-hanging`, `kxtx abort`: hanging transactions, found and aborted.

They share the scope options, the rows and their rendering, hence one module.
"""

from __future__ import annotations

import dataclasses
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
from kxtx.cli.output import emit_rows
from kxtx.errors import carry, partial_of
from kxtx.exitcodes import ExitCode
from kxtx.wording import plural

TopicOpt = Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.")]
PartitionOpt = Annotated[
    int | None, typer.Option("--partition", "-p", help="Only this partition (needs --topic).")
]
BrokerIdOpt = Annotated[
    int | None,
    typer.Option(
        "--broker-id", help="Partitions with a replica on this broker, asking it for its producer state."
    ),
]
MaxTimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--max-transaction-timeout",
        metavar="MINUTES",
        help="Open transactions idle longer than this are checked: minutes, or a duration "
        "such as 90s (default: the broker's transaction.max.timeout.ms, else 15).",
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


def _minutes(text: str | None) -> float | None:
    from kxtx.parsers import parse_duration

    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return parse_duration(text) / 60


def _scan(settings, topic, partition, broker_id, max_timeout):
    """Run find-hanging and log its warnings (stderr); the caller decides the exit code."""
    from kxtx.log import logger
    from kxtx.ops.calls import Cluster
    from kxtx.ops.hanging import Scope, find_hanging

    cluster = Cluster(settings)
    report = find_hanging(cluster, Scope(topic, partition, broker_id), _minutes(max_timeout))
    for tp, why in sorted(report.errors.items()):
        logger.warning(f"{tp[0]}:{tp[1]} not checked: {why}")
    for w in report.warnings:
        logger.warning(w)
    return cluster, report


def _row(h) -> dict:
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


@boundary(rows="hanging")
def find_hanging(
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    broker_id: BrokerIdOpt = None,
    max_transaction_timeout: MaxTimeoutOpt = None,
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
    command_config: CommandConfigOpt = None,
    timeout: TimeoutOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Find open transactions that no coordinator will ever end (Kafka's KIP-664 algorithm).

    Exit 0 when nothing hangs, 3 when something does, 1 on error (including partitions that could
    not be checked when nothing was found elsewhere). -o json: the rows are under "hanging"."""
    settings = connection(bootstrap, config, command_config, timeout)
    cluster, report = _scan(settings, topic, partition, broker_id, max_transaction_timeout)
    cluster.close()
    emit_rows(
        [_row(h) for h in report.hanging],
        fmt,
        COLUMNS,
        title=f"hanging transactions ({plural(report.partitions_checked, 'partition')} checked)",
    )
    if report.hanging:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    # Without a terminal the rows are JSON lines: none at all would say nothing to someone reading.
    typer.echo(f"kxtx: nothing hangs ({plural(report.partitions_checked, 'partition')} checked)", err=True)
    if report.errors:
        raise typer.Exit(ExitCode.ERROR)


@boundary(rows="transactions")
def abort_hanging(
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    broker_id: BrokerIdOpt = None,
    max_transaction_timeout: MaxTimeoutOpt = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
    command_config: CommandConfigOpt = None,
    timeout: TimeoutOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Find hanging transactions, show the plan, then abort each one with a marker.

    --dry-run stops after the plan (exit 3 when it is not empty). Without a terminal, --yes is
    required (else exit 2, nothing changed). Exit 0 only when every targeted partition is no longer
    hanging afterwards; 75 when the only ones left are partitions whose leader moved mid-run (run
    it again). -o json: the rows (the plan, or the results) are under "transactions"."""
    from kxtx.ops import abort

    settings = connection(bootstrap, config, command_config, timeout)
    cluster, report = _scan(settings, topic, partition, broker_id, max_transaction_timeout)
    with cluster:
        if not report.hanging:
            typer.echo("kxtx: nothing hangs; nothing to abort", err=True)
            emit_rows([], fmt, RESULT_COLUMNS, title="abort results")
            raise typer.Exit(ExitCode.ERROR if report.errors else ExitCode.OK)
        targets = abort.targets_from_hanging(report.hanging)
        evidence = {h.tp: h for h in report.hanging}
        plan = [
            {"kind": "plan", **t.plan_row(), **_offsets(evidence.get(t.expected.tp)), "action": "abort"}
            for t in targets
        ]
        _apply(cluster, targets, plan, dry_run, yes, fmt)


def _offsets(h) -> dict:
    if h is None:
        return {}
    return {"lso": h.lso, "high_watermark": h.high_watermark, "held_back": h.held_back}


def _apply(cluster, targets, plan, dry_run, yes, fmt) -> None:
    """The shared preview -> confirm -> act -> report sequence of abort-hanging and abort."""
    from kxtx.errors import KxtxError
    from kxtx.log import logger
    from kxtx.ops import abort

    title = f"plan: abort {plural(len(plan), 'open transaction')} with WriteTxnMarkers"
    # json: the plan is the document until the results replace it (it stays on --dry-run or a refusal)
    emit_rows(plan, fmt, PLAN_COLUMNS, title=title)
    try:
        abort.preflight(cluster)
    except KxtxError as exc:
        if not dry_run:
            raise
        logger.warning(str(exc))
    if dry_run:
        typer.echo("kxtx: dry run: nothing was changed", err=True)
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    these = "this transaction" if len(plan) == 1 else f"these {len(plan)} transactions"
    confirm_or_refuse(yes, f"Abort {these}?")
    try:
        results = abort.execute(cluster, targets)
    except BaseException as exc:  # the partitions done before a failure or stop, as result rows
        carry(exc, _result_rows(partial_of(exc) or []), replace=True)
        raise
    # jsonl carries the plan's rows and then these: `kind` tells them apart
    emit_rows(_result_rows(results), fmt, RESULT_COLUMNS, title="abort results")
    unresolved = [r for r in results if not r.resolved]
    if unresolved:
        # Only leaders that moved mid-run: nothing failed, the next run finds them on the new leader.
        moved = all(r.outcome == "leader moved" for r in unresolved)
        raise typer.Exit(ExitCode.RETRY if moved else ExitCode.ERROR)


def _result_rows(outcomes) -> list[dict]:
    return [{"kind": "result", **dataclasses.asdict(r)} for r in outcomes]


@boundary(rows="transactions")
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
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
    command_config: CommandConfigOpt = None,
    timeout: TimeoutOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Abort one open transaction on one partition (needs ALTER or CLUSTER_ACTION on the Cluster).

    Same preview, confirmation and checks as abort-hanging; exit 0 when it is no longer open. -o json:
    the rows (the plan, or the result) are under "transactions"."""
    from kxtx.errors import UsageError
    from kxtx.ops import abort
    from kxtx.ops.calls import Cluster

    by_pid = producer_id is not None or producer_epoch is not None or coordinator_epoch is not None
    if (start_offset is None) == (not by_pid) or (by_pid and (producer_id is None or producer_epoch is None)):
        raise UsageError(
            "give either --start-offset, or --producer-id with --producer-epoch "
            "(and optionally --coordinator-epoch)"
        )
    settings = connection(bootstrap, config, command_config, timeout)
    with Cluster(settings) as cluster:
        t = abort.manual_target(
            cluster, (topic, partition), start_offset, producer_id, producer_epoch, coordinator_epoch
        )
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
        _apply(cluster, [t], plan, dry_run, yes, fmt)
