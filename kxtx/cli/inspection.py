"""`kxtx inspect txn ID`, `kxtx inspect partition TOPIC:P`, `kxtx inspect group GROUP`: one
transaction, partition or consumer group, in full."""

from __future__ import annotations

from typing import Annotated

import typer

from kxtx.cli.common import (
    MaxTimeoutOpt,
    OutputFormat,
    Shared,
    TopicOpt,
    command,
    exit_unseen,
)
from kxtx.cli.output import choose, emit, emit_rows
from kxtx.parsers import parse_minutes

app = typer.Typer(
    help="Show one transactional id, partition or consumer group: coordinator and partition views.",
    no_args_is_help=True,
)


@app.command("txn")
@command()
def txn(
    transactional_id: Annotated[str, typer.Argument(metavar="TRANSACTIONAL_ID")],
    no_history: Annotated[
        bool, typer.Option("--no-history", help="Skip reading __transaction_state.")
    ] = False,
    no_scan: Annotated[
        bool,
        typer.Option(
            "--no-scan",
            help="Skip the DescribeProducers sweep over every partition (faster on big "
            "clusters; partitions the coordinator never heard of are then not seen).",
        ),
    ] = False,
    max_transaction_timeout: MaxTimeoutOpt = None,
    *,
    shared: Shared,
) -> None:
    """The coordinator's view, each partition's view (open offset, LSO, high watermark), the history
    from __transaction_state and a one-line verdict. For the id of a kxtx pipe in executors mode, which
    uses one id per input partition (ID.TOPIC.PARTITION), each of those and a verdict for the pipe.
    Exit 1 for an unknown id."""
    from dataclasses import replace

    from kxtx.cli.progress import sweep
    from kxtx.ops.inspection import inspect_txn
    from kxtx.ops.pipeids import PipeView

    line = sweep("inspect txn: DescribeProducers") if not no_scan else None
    try:
        with shared.cluster() as cluster:
            out = inspect_txn(
                cluster,
                transactional_id,
                with_history=not no_history,
                max_timeout_minutes=parse_minutes(max_transaction_timeout),
                scan=not no_scan,
                progress=line.calls if line else None,
            )
    finally:
        if line:
            line.done()
    if not isinstance(out, PipeView) or choose(shared.fmt) is not OutputFormat.table:
        emit(out, shared.fmt, title=f"transaction {transactional_id}")
        if isinstance(out, dict):
            exit_unseen([f"not seen: {line}" for line in out.get("unseen") or []], out.get("unseen") or [])
        return
    # a pipe's ids: its table, then each id's view as `inspect txn ID` shows it (nested tables
    # cannot hold them)
    emit(replace(out, details=[]), shared.fmt, title=f"pipe {transactional_id}")
    for member, view in zip(out.transactional_ids, out.details):
        emit(view, shared.fmt, title=f"transaction {member.transactional_id}")


@app.command("partition")
@command()
def partition(
    topic_partition: Annotated[str, typer.Argument(metavar="TOPIC:PARTITION")],
    max_transaction_timeout: MaxTimeoutOpt = None,
    *,
    shared: Shared,
) -> None:
    """LSO, high watermark, records held back, every open transaction (with its transactional id
    when known, why it holds the LSO and what ends it) and the consumer groups it blocks. What
    could not be read (no leader, a broker down) is named under "unseen", and the exit is 75."""
    from kxtx.errors import UsageError
    from kxtx.ops.inspection import inspect_partition
    from kxtx.parsers import parse_topic_partitions

    tp = parse_topic_partitions(topic_partition)
    if tp.partitions is None or len(tp.partitions) != 1:
        raise UsageError(f"{topic_partition!r}: expected one TOPIC:PARTITION, e.g. orders:3")
    with shared.cluster() as cluster:
        out = inspect_partition(
            cluster, (tp.topic, tp.partitions[0]), max_timeout_minutes=parse_minutes(max_transaction_timeout)
        )
    emit(out, shared.fmt, title=topic_partition)
    unseen = out["unseen"] or {}
    exit_unseen(
        [f"{topic_partition}: {what} not seen: {why}" for what, why in unseen.items()], list(unseen.values())
    )


GROUP_COLUMNS = [
    "topic",
    "partition",
    "committed",
    "lso",
    "high_watermark",
    "lag",
    "naive_lag",
    "markers_and_aborted",
    "blocked_at_lso",
    "held_by",
    "action",
]


@app.command("group")
@command()
def group(
    group_id: Annotated[str, typer.Argument(metavar="GROUP")],
    topic: TopicOpt = None,
    max_transaction_timeout: MaxTimeoutOpt = None,
    *,
    shared: Shared,
) -> None:
    """A consumer group's view, right on transactional topics: per partition its committed offset,
    the LSO and high watermark, the read_committed lag (the records a read_committed consumer still
    receives, counted from the log), the naive lag (high watermark - committed, what
    kafka-consumer-groups.sh shows) and the part of it that is only markers and aborted records,
    and, where the LSO holds the group back, the open transaction that holds it, with why and the
    command that ends it. Exit 75 when something could not be read (named on stderr)."""
    from kxtx.monitor.group import inspect_group

    with shared.cluster() as cluster:
        out = inspect_group(cluster, group_id, topic, parse_minutes(max_transaction_timeout))
    if choose(shared.fmt) is OutputFormat.table:
        rows = [
            {
                **r,
                "held_by": None
                if not r["held_by"]
                else f"{r['held_by']['class']} {r['held_by']['transactional_id']}",
                "action": (r["held_by"] or {}).get("action"),
            }
            for r in out["partitions"]
        ]
        emit_rows(rows, shared.fmt, GROUP_COLUMNS, title=f"group {group_id}")
    else:
        emit(out, shared.fmt, title=f"group {group_id}")
    unseen = out["unseen"] or []
    exit_unseen(
        [f"{u['name']}: {u['what']} not seen: {u['why']}" for u in unseen], [u["why"] for u in unseen]
    )
