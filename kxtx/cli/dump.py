"""`kxtx dump txn-state` and `kxtx dump offsets`: decode the internal topics (options and rendering);
`dump partition` lives in dump_partition.py."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli import dump_partition
from kxtx.cli.common import (
    Options,
    OutputFormat,
    Shared,
    command,
    exit_code_of,
)
from kxtx.cli.output import choose, emit_row_batches, emit_rows

app = typer.Typer(
    help="Decode __transaction_state and __consumer_offsets, every record version; show a data "
    "partition's batches and transactions.",
    no_args_is_help=True,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from kxtx.client.settings import Settings
    from kxtx.dump.rows import DumpRow
    from kxtx.dump.runner import DumpRequest
    from kxtx.dump.source import Start

_READ = "Reading"
PartitionOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--partition",
        "-p",
        metavar="N",
        help="Only this partition of the internal topic (repeatable).",
        rich_help_panel=_READ,
    ),
]
FromBeginningOpt = Annotated[
    bool,
    typer.Option(
        "--from-beginning",
        help="Start at the beginning of each partition (the default).",
        rich_help_panel=_READ,
    ),
]
FromOffsetOpt = Annotated[
    int | None,
    typer.Option(
        "--from-offset",
        metavar="OFFSET",
        help="Start at this offset in each partition read.",
        rich_help_panel=_READ,
    ),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="TIME",
        help="Start at the first record at/after TIME: ISO-8601, epoch ms, or an age like 15m, 2h, 1d.",
        rich_help_panel=_READ,
    ),
]
FollowOpt = Annotated[
    bool,
    typer.Option(
        "--follow",
        "-f",
        help="Keep reading new records (default: stop at the end offsets that existed "
        "when the command started).",
        rich_help_panel=_READ,
    ),
]
LimitOpt = Annotated[
    int | None,
    typer.Option("--limit", "-n", metavar="N", help="Stop after N output rows.", rich_help_panel=_READ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        metavar="N",
        min=1,
        help="Processes that read and decode in parallel, each a share "
        "of the partitions (jsonl output of every record only: not with --latest, --limit, --follow, "
        "--include-uncommitted or ids). Rows of a partition stay in order. Default: one per CPU core, "
        "at most 4, where allowed (Linux); 1 = one process.",
        rich_help_panel=_READ,
    ),
]
LatestOpt = Annotated[
    bool,
    typer.Option(
        "--latest",
        help="Fold the log to the current value per key, tombstones applied (what the "
        "coordinator loads), instead of every record.",
        rich_help_panel=_READ,
    ),
]


@dataclasses.dataclass(frozen=True)
class Reading(Options):
    """How both internal-topic dumps read: which partitions, from where, until when, by how many."""

    partition: PartitionOpt = None
    from_beginning: FromBeginningOpt = False
    from_offset: FromOffsetOpt = None
    since: SinceOpt = None
    follow: FollowOpt = False
    limit: LimitOpt = None
    latest: LatestOpt = False
    workers: WorkersOpt = None

    def request(self, topic: str, ids: list[str] | None, **only: object) -> DumpRequest:
        """The dump of `topic` as these options ask, keyed by `ids`, with the command's own filters."""
        from kxtx.dump.runner import DumpRequest

        start = _start(self.from_beginning, self.from_offset, self.since)
        return DumpRequest(
            topic=topic,
            partitions=self.partition,
            ids=ids or [],
            start=start,
            follow=self.follow,
            limit=self.limit,
            latest=self.latest,
            **only,  # type: ignore[arg-type]
        )


def _start(from_beginning: bool, from_offset: int | None, since: str | None) -> Start:
    from kxtx.dump.runner import Start
    from kxtx.errors import UsageError
    from kxtx.parsers import parse_time

    given = [
        n
        for n, v in (
            ("--from-beginning", from_beginning),
            ("--from-offset", from_offset is not None),
            ("--since", since is not None),
        )
        if v
    ]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} exclude each other: choose one start position")
    if from_offset is not None:
        if from_offset < 0:
            raise UsageError("--from-offset must be zero or more")
        return Start("offset", from_offset)
    if since is not None:
        return Start("time", parse_time(since))
    return Start()


@app.command("txn-state")
@command(rows="records")
def txn_state(
    transactional_id: Annotated[
        list[str] | None,
        typer.Option(
            "--transactional-id",
            "-t",
            metavar="ID",
            help="Only this transactional id (repeatable); reads only the partition that holds it.",
        ),
    ] = None,
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            metavar="NAME",
            help="Only records in this state, e.g. Ongoing, PrepareAbort (repeatable, any case).",
        ),
    ] = None,
    producer_id: Annotated[
        list[int] | None,
        typer.Option("--producer-id", metavar="N", help="Only records of this producer id (repeatable)."),
    ] = None,
    *,
    reading: Reading,
    shared: Shared,
) -> None:
    """Decode __transaction_state: every state each transactional id went through (states by name,
    the numeric code in json), expirations as explicit deletions. -o json: the rows are under
    "records"."""
    from kxtx.dump.runner import TXN_TOPIC

    req = reading.request(TXN_TOPIC, transactional_id, states=state or [], producer_ids=producer_id or [])
    _dump(shared.settings(), req, shared.fmt, reading.workers, _txn_cell, TXN_COLUMNS)


@app.command("offsets")
@command(rows="records")
def offsets(
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            help="Only this group (repeatable); reads only the partition that holds it.",
        ),
    ] = None,
    topic: Annotated[
        list[str] | None,
        typer.Option("--topic", metavar="TOPIC", help="Only offset commits for this topic (repeatable)."),
    ] = None,
    record_type: Annotated[
        list[str] | None,
        typer.Option(
            "--type",
            metavar="KIND",
            help="Only these records (repeatable): offset-commit, "
            "group-metadata (classic groups), consumer-group (KIP-848), share-group, streams-group.",
        ),
    ] = None,
    include_uncommitted: Annotated[
        bool,
        typer.Option(
            "--include-uncommitted",
            help="Also show offset commits of open or aborted transactions, "
            "marked pending / aborted in the txn column (reads the raw batches and their markers).",
        ),
    ] = False,
    *,
    reading: Reading,
    shared: Shared,
) -> None:
    """Decode __consumer_offsets: offset commits, classic group metadata (consumer-protocol
    subscriptions and assignments decoded), KIP-848 consumer, share and streams group records.
    By default only what the coordinator materializes (transactional commits once committed). -o json:
    the rows are under "records"."""
    from kxtx.dump.runner import OFFSETS_TOPIC

    req = reading.request(
        OFFSETS_TOPIC,
        group,
        topics=topic or [],
        types=record_type or [],
        include_uncommitted=include_uncommitted,
    )
    _dump(
        shared.settings(),
        req,
        shared.fmt,
        reading.workers,
        _offsets_cell,
        OFFSETS_COLUMNS + (["txn"] if include_uncommitted else []),
    )


# `dump partition`: its own module (kxtx/cli/dump_partition.py), listed after the internal topics.
app.command("partition")(dump_partition.partition_cmd)


# --- rendering -------------------------------------------------------------------------------------------
TXN_COLUMNS = [
    "partition",
    "offset",
    "time",
    "transactional_id",
    "state",
    "producer_id",
    "producer_epoch",
    "timeout_ms",
    "partitions",
    "notes",
]
OFFSETS_COLUMNS = ["partition", "offset", "time", "type", "key", "version", "value"]


#: a row as a table shows it (`_txn_cell`, `_offsets_cell`)
Cell = Callable[["DumpRow"], dict]


def _dump(
    settings: Settings,
    req: DumpRequest,
    fmt: OutputFormat | None,
    workers: int | None,
    cell: Cell,
    columns: list[str],
) -> None:
    """One process, or `workers` each dumping the partitions of its shard to the shared stdout; the
    exit code is the worst of them."""
    from kxtx.dump.runner import partition_count, run_batches, validate

    fmt = choose(fmt)
    count = _worker_count(req, fmt, workers)
    if count > 1:
        validate(req)
        # Asked once, before forking: a cluster that cannot be reached (or a topic the principal
        # may not see) is reported once, not by every process. The admin client is gone (and its
        # librdkafka threads with it) when this returns.
        req.partition_count = partition_count(settings, req.topic)
    if count == 1 or req.partition_count is None:
        _emit_until_stopped(run_batches(settings, req), req, fmt, cell, columns)
        return
    from kxtx.dump.shards import Shards

    shards = Shards.fork(count)
    req.shard = (shards.index, shards.count)

    def body() -> None:
        shards.worker_signals()  # after the boundary has installed its own handlers
        shards.add_rows(_emit(run_batches(settings, req), fmt, cell, columns, shards.writing))

    code = exit_code_of(body)
    if shards.is_worker:
        shards.exit_worker(code)
    code = shards.wait(code)
    if code:
        raise typer.Exit(code)
    if shards.rows() == 0:
        _say_empty()


def _worker_count(req: DumpRequest, fmt: OutputFormat, workers: int | None) -> int:
    from kxtx.dump.runner import shardable
    from kxtx.dump.shards import default_count
    from kxtx.errors import UsageError

    allowed = fmt is OutputFormat.jsonl and shardable(req)
    if workers is None:
        return default_count() if allowed else 1
    if workers > 1 and not allowed:
        raise UsageError(
            f"--workers {workers}: several processes only stream every record as jsonl "
            "(not with --latest, --limit, --follow, --include-uncommitted, ids or "
            "one --partition)"
        )
    return workers


def _emit_until_stopped(
    batches: Iterable[list], req: DumpRequest, fmt: OutputFormat, cell: Cell, columns: list[str]
) -> None:
    """`_emit`, where Ctrl-C / SIGTERM ends the dump with a one-line summary (exit 130 / 143, not
    an error): the normal stop of --follow, which runs until stopped. A table shows the rows read
    so far before the summary, and json's document has them."""
    from kxtx.errors import Interrupted, carry, partial_of
    from kxtx.signals import Stopped, signal_number, stop_of
    from kxtx.wording import plural

    seen = [0]

    def counted() -> Iterator[list]:
        for batch in batches:
            seen[0] += len(batch)
            yield batch

    try:
        _emit(counted(), fmt, cell, columns)
    except (KeyboardInterrupt, Stopped, SystemError) as exc:
        received = stop_of(exc)
        if received is None:
            raise
        signum = signal_number(received)
        rows = plural(seen[0], "row")
        short = "" if req.follow else " before the end offsets: the output is incomplete"
        stop = Interrupted(f"stopped by {signum.name} after {rows}{short}", signum)
        raise carry(stop, partial_of(exc)) from None


def _emit(
    batches: Iterable[list],
    fmt: OutputFormat,
    cell: Cell,
    columns: list[str],
    writing: Callable[[], AbstractContextManager[object]] | None = None,
) -> int:
    """Write the rows; returns how many."""
    from kxtx.fast import gcpause

    fmt = choose(fmt)
    if fmt is OutputFormat.table:
        return _emit_table(batches, cell, columns)
    # Rows are plain dicts without reference cycles, freed by reference counting once written; the
    # cyclic collector would only rescan the dicts a dump allocates for every record, a large share
    # of its time (bench/README.md, "dump").
    with gcpause.paused():
        count = emit_row_batches(batches, fmt, columns, writing=writing)
    if count == 0 and fmt is OutputFormat.jsonl and writing is None:  # (shards: their parent says it)
        _say_empty()
    return count


def _say_empty() -> None:
    """Without a terminal the rows are JSON lines: none at all would say nothing to someone reading."""
    typer.echo("kxtx: no record: nothing in the range read, or none matched the filters", err=True)


def _emit_table(batches: Iterable[list], cell: Cell, columns: list[str] | None) -> int:
    """A table needs every row before it is drawn: on a stop, draw those read so far."""
    from kxtx.signals import Stopped, stop_of

    rows: list = []
    try:
        for batch in batches:
            rows.extend(cell(r) for r in batch)
    except (KeyboardInterrupt, Stopped, SystemError) as exc:
        if stop_of(exc) is not None:
            emit_rows(rows, OutputFormat.table, columns)
        raise
    emit_rows(rows, OutputFormat.table, columns)
    return len(rows)


def _common(row: DumpRow) -> dict:
    out = {"partition": row["partition"], "offset": row["offset"], "time": row["time"], "txn": row.get("txn")}
    if row.get("notes"):
        out["notes"] = "; ".join(row["notes"])
    return out


def _txn_cell(row: DumpRow) -> dict:
    out = _common(row)
    out["transactional_id"] = (row["key"] or {}).get("transactional_id", row.get("raw_key"))
    v = row["value"]
    if row["tombstone"]:
        out["state"] = "(deleted: id expired)"
    elif v is None:
        out["state"] = f"raw {row.get('raw_value')}"
    else:
        parts = v["transaction_partitions"]
        out.update(
            state=v["transaction_status"],
            producer_id=v["producer_id"],
            producer_epoch=v["producer_epoch"],
            timeout_ms=v["transaction_timeout_ms"],
            partitions=None
            if parts is None
            else " ".join(f"{p['topic']}:{','.join(map(str, p['partition_ids']))}" for p in parts),
        )
    return out


def _offsets_cell(row: DumpRow) -> dict:
    out = _common(row)
    out["type"] = row["type"]
    key = row["key"]
    out["key"] = "/".join(str(v) for v in key.values()) if key else row.get("raw_key")
    out["version"] = row["version"]
    v = row["value"]
    if row["tombstone"]:
        out["value"] = "(deleted)"
    elif v is None:
        out["value"] = f"raw {row.get('raw_value')}"
    elif row["type_id"] in (0, 1):
        out["value"] = " ".join(f"{k}={v[k]}" for k in ("offset", "leader_epoch", "metadata") if k in v)
    else:
        out["value"] = json.dumps(_short(v), ensure_ascii=False, default=str)
    return out


def _short(value: object) -> object:
    """Bytes in table cells: their size, not their content."""
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return value
