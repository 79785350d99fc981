"""`kxtx produce`: exactly-once transactional ingest from files, resumable after a crash."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli.common import (
    REGISTRY_PANEL,
    STATE,
    Shared,
    SubjectStrategyOpt,
    command,
    complete_words,
    is_tty,
)
from kxtx.cli.output import emit
from kxtx.cli.progress import Progress
from kxtx.produce import DEFAULT_RECORDS_PER_TXN
from kxtx.wording import plural

if TYPE_CHECKING:
    from kxtx.produce.counters import Progress as ProduceProgress

_MAP = "Record mapping"
_TXN = "Transactions"
_SR = REGISTRY_PANEL
_SCHEMA_HELP = (
    "a schema file (.avsc Avro, .json JSON Schema, .proto Protobuf: its first message, or "
    "FILE.proto:pkg.Message) registered under the subject, or latest, a version number, id:N of "
    "the subject"
)

_SIZE = re.compile(r"(\d+)\s*([kmg]i?b?|b)?", re.I)
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _bytes(text: str) -> int:
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise typer.BadParameter(f"{text!r}: expected a size like 1048576, 512k, 16MiB")
    return int(m.group(1)) * _UNITS[(m.group(2) or "")[:1].lower()]


@command(registry=True, dry_run=True)
def produce(
    files: Annotated[
        list[str],
        typer.Argument(
            metavar="FILE...", help="Input files; - reads stdin (transactional, but cannot resume)."
        ),
    ],
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic to produce to (must exist).")],
    input_format: Annotated[
        str | None,
        typer.Option(
            "--input-format",
            "-I",
            metavar="jsonl|csv|lines",
            autocompletion=complete_words("jsonl|csv|lines"),
            help="Input format (default: by extension: .jsonl/.ndjson/.json, .csv, else lines; "
            ".gz is decompressed).",
        ),
    ] = None,
    key_field: Annotated[
        str | None,
        typer.Option(
            "--key-field",
            "-k",
            metavar="FIELD",
            rich_help_panel=_MAP,
            help="Key from a JSON field (dotted path ok: customer.id) or CSV column (default: no key).",
        ),
    ] = None,
    value_field: Annotated[
        str | None,
        typer.Option(
            "--value-field",
            metavar="FIELD",
            rich_help_panel=_MAP,
            help="Value = this field only (default: the line as it is).",
        ),
    ] = None,
    value_as_json: Annotated[
        bool,
        typer.Option("--value-as-json", rich_help_panel=_MAP, help="CSV: value = the row as a JSON object."),
    ] = False,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            "-H",
            metavar="NAME=VALUE",
            rich_help_panel=_MAP,
            help="Constant record header (repeatable).",
        ),
    ] = None,
    header_field: Annotated[
        list[str] | None,
        typer.Option(
            "--header-field",
            metavar="[NAME=]FIELD",
            rich_help_panel=_MAP,
            help="Record header from a field; left out when the field is missing (repeatable).",
        ),
    ] = None,
    partition_field: Annotated[
        str | None,
        typer.Option(
            "--partition-field",
            metavar="FIELD",
            rich_help_panel=_MAP,
            help="Partition from a field (default: murmur2_random, the Java client's partitioning "
            "of keys; -X partitioner=... to change).",
        ),
    ] = None,
    timestamp_field: Annotated[
        str | None,
        typer.Option(
            "--timestamp-field",
            metavar="FIELD",
            rich_help_panel=_MAP,
            help="Timestamp from a field: epoch ms or ISO-8601 (default: produce time).",
        ),
    ] = None,
    transactional_id: Annotated[
        str | None,
        typer.Option(
            "--transactional-id",
            metavar="ID",
            rich_help_panel=_TXN,
            help="Default: kxtx-produce-TOPIC-HASH of the input paths, shown in the summary. "
            "Re-running with the same id continues after the last committed transaction.",
        ),
    ] = None,
    records_per_txn: Annotated[
        int,
        typer.Option("--records-per-txn", "-n", min=1, rich_help_panel=_TXN, help="Records per transaction."),
    ] = DEFAULT_RECORDS_PER_TXN,
    bytes_per_txn: Annotated[
        str | None,
        typer.Option(
            "--bytes-per-txn",
            metavar="SIZE",
            rich_help_panel=_TXN,
            help="Also commit once the values reach this size (e.g. 64MiB).",
        ),
    ] = None,
    seconds_per_txn: Annotated[
        float | None,
        typer.Option(
            "--seconds-per-txn",
            metavar="SECONDS",
            rich_help_panel=_TXN,
            help="Also commit once the transaction is this old, so that slow input (a pipe on "
            "stdin) is seen and no transaction outlives transaction.timeout.ms (default 10, at "
            "most half of that).",
        ),
    ] = None,
    all_or_nothing: Annotated[
        bool,
        typer.Option(
            "--all-or-nothing",
            rich_help_panel=_TXN,
            help="The whole input in one transaction (transaction.timeout.ms 15 min unless -X).",
        ),
    ] = False,
    checkpoint_topic: Annotated[
        str,
        typer.Option(
            "--checkpoint-topic",
            metavar="TOPIC",
            rich_help_panel=_TXN,
            help="Compacted topic holding the input positions; created when missing.",
        ),
    ] = "kxtx-checkpoints",
    restart: Annotated[
        bool,
        typer.Option(
            "--restart",
            rich_help_panel=_TXN,
            help="Ignore the checkpoint: produce every input again from its beginning, writing its "
            "committed records a second time (for a file changed in its committed part, which is "
            "refused otherwise).",
        ),
    ] = False,
    on_error: Annotated[
        str,
        typer.Option(
            "--on-error",
            metavar="fail|skip|dlq:TOPIC",
            autocompletion=complete_words("fail|skip|dlq:TOPIC"),
            help="A bad line: fail (exit 1, open transaction aborted), skip (counted, and "
            "recorded in the checkpoint: once fixed in place, the same command loads it, exactly "
            "once), or dlq:TOPIC (raw line plus kxtx.error headers, in the same transaction).",
        ),
    ] = "fail",
    allow_binary: Annotated[
        bool,
        typer.Option(
            "--allow-binary",
            help="Load lines or CSV with a NUL byte in its first 64 KiB (refused otherwise, as a "
            "binary file given by mistake).",
        ),
    ] = False,
    value_schema: Annotated[
        str | None,
        typer.Option(
            "--value-schema",
            metavar="SCHEMA",
            rich_help_panel=_SR,
            help=f"Encode each value with {_SCHEMA_HELP} (Confluent wire format); a line that does "
            "not fit is a bad line.",
        ),
    ] = None,
    key_schema: Annotated[
        str | None,
        typer.Option(
            "--key-schema",
            metavar="SCHEMA",
            rich_help_panel=_SR,
            help="Encode each key (--key-field) the same way, under the TOPIC-key subject.",
        ),
    ] = None,
    subject_strategy: SubjectStrategyOpt = "topic",
    register: Annotated[
        bool,
        typer.Option(
            "--register",
            rich_help_panel=_SR,
            help="Register the schema file under its subject (never done otherwise: an unregistered "
            "file is refused).",
        ),
    ] = False,
    *,
    shared: Shared,
) -> None:
    """Load files into a topic exactly once, in transactions, resumable after a crash.

    Each transaction holds a batch of records and the position reached in each input (written to
    the checkpoint topic). After a crash or Ctrl-C, run the same command again: it continues after
    the last committed record, without duplicates or gaps. A finished command run again writes
    nothing. Librdkafka settings (compression.type, linger.ms, batch.size...) pass through -X.

    Example: kxtx produce orders.jsonl.gz -t orders -k order.id -b localhost:9092
    """
    from kxtx.produce.counters import Summary
    from kxtx.produce.dryrun import DryRunSummary
    from kxtx.produce.dryrun import dry_run as run_dry
    from kxtx.produce.loop import Run
    from kxtx.produce.mapping import MappingSpec, parse_header_options
    from kxtx.produce.options import ProduceOptions
    from kxtx.produce.schemas import SchemaOptions

    schemas = SchemaOptions(value_schema, key_schema, subject_strategy, register)
    schemas.check(key_field)
    consts, from_fields = parse_header_options(header, header_field)
    opts = ProduceOptions(
        topic=topic,
        paths=files,
        input_format=input_format,
        mapping=MappingSpec(
            key_field, value_field, value_as_json, consts, from_fields, partition_field, timestamp_field
        ),
        transactional_id=transactional_id,
        records_per_txn=records_per_txn,
        bytes_per_txn=_bytes(bytes_per_txn) if bytes_per_txn else None,
        seconds_per_txn=seconds_per_txn,
        all_or_nothing=all_or_nothing,
        checkpoint_topic=checkpoint_topic,
        on_error=on_error,
        restart=restart,
        schemas=schemas,
        allow_binary=allow_binary,
    )
    # one rewritten status line on stderr, only when stderr is a terminal
    progress = Progress(_line, tty=True) if is_tty(sys.stderr) else None
    summary: DryRunSummary | Summary
    try:
        if shared.dry_run:
            # the settings are read (-X transaction.timeout.ms bounds --seconds-per-txn), not used
            props = shared.settings().props
            summary = run_dry(opts, progress, props)
        else:
            settings = shared.settings()
            summary = Run(settings, opts, progress).execute()
    finally:
        if progress:
            progress.done()
    if isinstance(summary, Summary) and summary.message:
        typer.echo(f"kxtx: {summary.message}", err=True)
    emit(summary, shared.fmt, title="kxtx produce")
    # committed (or nothing to do): the producer's records are all delivered, the checkpoint reader closed
    STATE.released = isinstance(summary, Summary)
    if isinstance(summary, DryRunSummary) and summary.bad_lines and on_error == "fail":
        from kxtx.errors import InputError
        from kxtx.produce.options import bad_lines_message

        raise InputError(bad_lines_message(summary.errors[0], summary.bad_lines))


def _line(p: ProduceProgress) -> str:
    return (
        f"{plural(p.records, 'record')}  {p.bytes / 1e6:,.1f} MB  "
        f"{p.records_per_s:,.0f} rec/s  {plural(p.transactions, 'transaction')} committed"
    )
