"""`kxtx audit-markers`, `kxtx repair-markers`: transaction markers a coordinator decided but a
partition never got (KAFKA-20734, KAFKA-20716), found, classified and written.

They share the scope and window options and the rows, hence one module.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli.common import (
    Options,
    PartitionOpt,
    Shared,
    TopicOpt,
    command,
)
from kxtx.cli.output import emit_rows, is_tty
from kxtx.cli.plan import marker_plan, run
from kxtx.exitcodes import ExitCode
from kxtx.wording import plural

if TYPE_CHECKING:
    from kxtx.client.admin import Cluster
    from kxtx.client.settings import Settings
    from kxtx.ops.audit import Report, Scope, Window
    from kxtx.ops.markers import Finding

SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="TIME",
        help="Only transactions prepared at/after TIME: ISO-8601, epoch ms, or an age like 2h, 7d "
        "(default: all of __transaction_state).",
    ),
]
FromOpt = Annotated[
    int | None,
    typer.Option(
        "--from",
        metavar="OFFSET",
        help="With --topic: read its partitions from this offset (default: from the first offset the "
        "transactions in the window can concern).",
    ),
]

COLUMNS = [
    "topic",
    "partition",
    "kind",
    "transactional_id",
    "producer_id",
    "decided",
    "fate",
    "first_offset",
    "last_offset",
    "records",
    "repairable",
]
PLAN_COLUMNS = [
    "topic",
    "partition",
    "producer_id",
    "producer_epoch",
    "start_offset",
    "transactional_id",
    "marker",
    "leader",
    "lso",
    "high_watermark",
]
RESULT_COLUMNS = [
    "topic",
    "partition",
    "producer_id",
    "marker",
    "outcome",
    "detail",
    "lso_after",
    "high_watermark",
]


def _window(since: str | None, from_offset: int | None, topic: str | None) -> Window:
    from kxtx.errors import UsageError
    from kxtx.ops.audit import Window
    from kxtx.parsers import parse_time

    if from_offset is not None and topic is None:
        raise UsageError("--from needs --topic (an offset means something in one topic's partitions)")
    if from_offset is not None and from_offset < 0:
        raise UsageError(f"--from {from_offset}: an offset is zero or more")
    since_ms = parse_time(since) if since is not None else None
    if since_ms is not None:
        import time

        if since_ms > time.time() * 1000:
            raise UsageError(f"--since {since}: that is in the future")
    return Window(since_ms, from_offset)


@dataclasses.dataclass(frozen=True)
class MarkersScope(Options):
    """audit-markers' and repair-markers' scope options."""

    topic: TopicOpt = None
    partition: PartitionOpt = None
    since: SinceOpt = None
    from_offset: FromOpt = None

    def flags(self) -> str:
        """The options that scope a next command as this run was (--from is this run's own)."""
        flags = f" --topic {self.topic}" if self.topic else ""
        flags += f" --partition {self.partition}" if self.partition is not None else ""
        return flags + (f" --since {self.since}" if self.since else "")


def _run(settings: Settings, options: MarkersScope) -> tuple[Cluster, Scope, Report]:
    """The audit, its warnings logged (stderr), progress shown on a terminal."""
    topic = options.topic
    from kxtx.client.admin import Cluster
    from kxtx.log import logger
    from kxtx.ops.audit import Scope, audit

    scope, window = Scope(topic, options.partition), _window(options.since, options.from_offset, topic)
    cluster = Cluster(settings)
    progress = (lambda what: typer.echo(f"kxtx: {what}", err=True)) if is_tty(sys.stderr) else None
    from kxtx.dump.shards import default_count

    try:
        report = audit(cluster, scope, window, progress, workers=default_count())
    except BaseException:
        cluster.close()
        raise
    for w in report.warnings:
        logger.warning(w)
    for tp, why in sorted(report.unseen.items()):
        logger.warning(f"{tp[0]}:{tp[1]} not checked: {why}")
    if report.decisions == 0 and not report.findings:
        where = f" on {topic}" if topic else ""
        typer.echo(f"kxtx: no transaction ended{where} in the window: nothing to check", err=True)
    return cluster, scope, report


def _row(f: Finding) -> dict:
    from kxtx.ops.markers import MEANING
    from kxtx.timefmt import iso_ms

    row = dataclasses.asdict(f)
    row["meaning"] = MEANING[f.kind]
    row["decided_time"], row["completed_time"] = iso_ms(f.decided_ms), iso_ms(f.completed_ms)
    at = row.pop("prepared_at")
    row["prepared_at"] = None if at is None else {"partition": at[0], "offset": at[1]}
    return row


@command(rows="findings")
def audit_markers(
    *,
    options: MarkersScope,
    shared: Shared,
) -> None:
    """Find transactions whose coordinator decided a marker that a partition never got.

    Holds every transaction the coordinators ended (__transaction_state) against the markers of the
    partitions it wrote to, and classifies each lost marker by what became of its records:
    lost-commit-open and lost-abort-open (still open: the LSO is stuck; repair-markers writes the
    decided marker), lost-abort-committed (aborted records made visible by the producer's next
    commit), lost-commit-aborted (committed records dropped by its next abort), undetermined (open
    records whose decision is not in the history), healed and no-records (nothing to do). Exit 0
    when nothing needs action, 3 when something does, 75 when partitions in scope could not be read
    (no leader: named on stderr) and nothing needs action elsewhere, 1 on error. -o json: the rows
    are under "findings"."""
    from kxtx.ops.markers import NEEDS_ACTION

    settings = shared.settings()
    cluster, _scope, report = _run(settings, options)
    cluster.close()
    emit_rows(
        [_row(f) for f in report.findings],
        shared.fmt,
        COLUMNS,
        title=f"lost markers ({plural(report.decisions, 'transaction')} on "
        f"{plural(report.partitions_checked, 'partition')} checked)",
    )
    checked = f"{plural(report.decisions, 'transaction')} on {plural(report.partitions_checked, 'partition')}"
    act = [f for f in report.findings if f.kind in NEEDS_ACTION]
    if act:
        # what to run next, scoped as this run was
        scope = options.flags()
        typer.echo(
            f"kxtx: {plural(len(act), 'lost marker')} {'needs' if len(act) == 1 else 'need'} action in {checked}: "
            f"`kxtx repair-markers{scope} --dry-run` shows the markers it would write",
            err=True,
        )
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    unseen = f"; {plural(len(report.unseen), 'partition')} not checked (above)" if report.unseen else ""
    if report.decisions:  # (a window without any ended transaction said so already)
        # Without a terminal the rows are JSON lines: none at all would say nothing to someone reading.
        typer.echo(f"kxtx: no lost marker needs action in {checked}{unseen}", err=True)
    _unseen_exit(report)


def _unseen_exit(report: Report) -> None:
    """Exit 75 (1 for a missing permission) when partitions in scope were not read: "nothing
    lost" is not known for them."""
    if report.unseen:
        from kxtx.errors import unseen_exit

        raise typer.Exit(unseen_exit(list(report.unseen.values())))


@command(rows="transactions", dry_run=True, yes=True)
def repair_markers(
    *,
    options: MarkersScope,
    commit: Annotated[
        bool,
        typer.Option(
            "--commit",
            help="With --topic and --partition: commit the undetermined open records there (your "
            "decision, not a coordinator's).",
        ),
    ] = False,
    abort_: Annotated[
        bool,
        typer.Option(
            "--abort", help="With --topic and --partition: abort the undetermined open records there."
        ),
    ] = False,
    shared: Shared,
) -> None:
    """Write the marker each coordinator decided where it was lost and the records are still open.

    Runs audit-markers, plans one marker per partition and producer (COMMIT or ABORT, as the
    coordinator's own records decided), shows the plan, then writes each after re-checking that the
    producer has written nothing since, and checks that the LSO moved. A partition whose open
    records also belong to a transaction still running, or whose decision is unknown, is not
    touched (--commit / --abort name the outcome of undetermined records on one partition). Needs
    ALTER or CLUSTER_ACTION on the Cluster. --dry-run stops after the plan (exit 3 when it is not
    empty); without a terminal, --yes is required (else exit 2). Exit 0 when every planned marker
    was written and the LSO moved; 75 when only partitions whose leader moved are left. -o json:
    the rows (the plan, or the results) are under "transactions"."""
    from kxtx.errors import UsageError
    from kxtx.log import logger
    from kxtx.ops.audit import plan_repairs
    from kxtx.ops.markers import NEEDS_ACTION

    if commit and abort_:
        raise UsageError("--commit and --abort exclude each other")
    explicit = "COMMIT" if commit else "ABORT" if abort_ else None
    if explicit and (options.topic is None or options.partition is None):
        raise UsageError(f"--{explicit.lower()} needs --topic and --partition: it decides for one partition")
    settings = shared.settings()
    cluster, scope, report = _run(settings, options)
    with cluster:
        targets = plan_repairs(cluster, report, explicit, scope)
        for f in report.findings:
            if f.kind in NEEDS_ACTION and not any(
                t.expected.tp == f.tp and t.expected.producer_id == f.producer_id for t in targets
            ):
                logger.warning(
                    f"{f.topic}:{f.partition} producer {f.producer_id}: {f.kind} not repaired: {_why(f)}"
                )
        if not targets:
            typer.echo("kxtx: no lost marker to write", err=True)
            emit_rows([], shared.fmt, RESULT_COLUMNS, title="repair results")
            _unseen_exit(report)
            return
        offsets = report.offsets
        plan = [
            {
                "kind": "plan",
                **t.plan_row(),
                "lso": offsets.get(t.expected.tp, (None, None))[0],
                "high_watermark": offsets.get(t.expected.tp, (None, None))[1],
                "action": f"write {t.marker}",
            }
            for t in targets
        ]
        run(marker_plan(cluster, targets, plan, (PLAN_COLUMNS, RESULT_COLUMNS), "repair"), shared)
        _unseen_exit(report)


def _why(f: Finding) -> str:
    from kxtx.ops.markers import LOST_ABORT_COMMITTED, LOST_COMMIT_ABORTED, UNDETERMINED

    if f.kind in (LOST_ABORT_COMMITTED, LOST_COMMIT_ABORTED):
        return (
            f"its records ({f.records} at offsets {f.first_offset}..{f.last_offset}) were already "
            f"{f.fate} by a later marker; no marker can undo that"
        )
    if f.kind == UNDETERMINED:
        return f"{f.detail}; name the outcome with --commit or --abort (with --topic and --partition)"
    return f.detail or "not repairable"
