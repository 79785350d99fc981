"""`kxtx dump partition`: a data partition's batches, transactions and (`--records`) records (options
and rendering; registered on `kxtx dump` by kxtx/cli/dump.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli.common import (
    OutputFormat,
    Shared,
    ValueFormat,
    command,
)
from kxtx.cli.output import choose, emit, emit_row_batches, emit_rows

if TYPE_CHECKING:
    from kxtx.dump.partition import Batch, PartitionDump, Summary
    from kxtx.records.batchrecords import RecordRow
    from kxtx.schemas.rows import RowDecoder

_RECORDS = "Records (--records)"


@command(rows="batches", registry=True)
def partition_cmd(
    target: Annotated[
        str,
        typer.Argument(metavar="TOPIC[:P[,P...]]", help="The topic, and which partitions (default: all)."),
    ],
    start: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="OFFSET|earliest|committed:GROUP",
            help="First offset shown: an offset, earliest (the default), where GROUP has committed, "
            "or lso-N.",
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="OFFSET|lso|hw",
            help="End offset, not included: an offset, lso (last stable offset), lso+N, or hw (high "
            "watermark, the default).",
        ),
    ] = None,
    around: Annotated[
        int | None,
        typer.Option(
            "--around-lso", metavar="N", help="From N offsets before the last stable offset to N after it."
        ),
    ] = None,
    records: Annotated[
        bool,
        typer.Option(
            "--records",
            help="Also show each batch's records in the range (offset, time, key, headers, value), "
            "each with its batch's fate and whether a read_committed consumer reads it.",
            rich_help_panel=_RECORDS,
        ),
    ] = False,
    value_format: Annotated[
        ValueFormat,
        typer.Option(
            "--value-format",
            help="Keys, values and header values as UTF-8 text (undecodable bytes as \\xNN), parsed "
            "JSON (text when not JSON), or raw bytes (base64); avro, protobuf, jsonschema or auto: "
            "decoded through --schema-registry, with each record's schema id and subject.",
            rich_help_panel=_RECORDS,
        ),
    ] = ValueFormat.string,
    width: Annotated[
        int,
        typer.Option(
            "--width",
            metavar="N",
            min=0,
            help="In the table, cut keys, values and headers to N characters (0: never); json and "
            "jsonl are always whole.",
            rich_help_panel=_RECORDS,
        ),
    ] = 16,
    *,
    shared: Shared,
) -> None:
    """Show a data partition's record batches over the wire (no broker disk needed): producer id and
    epoch, sequence, transactional and control flags, markers (COMMIT / ABORT), compression, and
    each transactional batch's fate (committed, aborted, open) and transactional id where it can be
    found, then a summary per partition with what a read_committed consumer reads in the range.
    -o json: the rows are under "batches" (with --records each has its "records"), the summaries
    under "summary"; jsonl: one line per batch (followed by its records), then one per partition
    summary ("kind")."""
    from kxtx.dump.partition import around_lso, parse_from, parse_target, parse_to
    from kxtx.dump.partition_run import dump_partitions
    from kxtx.errors import UsageError

    topic, partitions = parse_target(target)
    if around is not None and (start is not None or end is not None):
        raise UsageError("--around-lso excludes --from and --to")
    texts = around_lso(around) if around is not None else (start or "earliest", end or "hw")
    first, last = parse_from(texts[0]), parse_to(texts[1])
    settings = shared.settings()
    decode = None
    from kxtx.schemas.codecs import REGISTRY_FORMATS

    if value_format.value in REGISTRY_FORMATS:
        from kxtx.schemas.rows import decoder

        decode = decoder(
            settings.registry_config(f"--value-format {value_format.value}"), value_format.value, topic
        )
    dumps = dump_partitions(settings, topic, partitions, first, last, records)
    summaries = [d.summary for d in dumps]
    fmt = choose(shared.fmt)
    if fmt is OutputFormat.json:
        from kxtx.cli.output import Streamed

        # made as they are written: held whole, a partition's records took many times their size
        # (bench/README.md, "`-o json --records` streamed")
        batches = Streamed(
            _with_records(b, rows, records) for b, rows in _batches(dumps, value_format, decode)
        )
        emit({"batches": batches, "summary": summaries}, fmt)
    elif fmt is OutputFormat.jsonl:
        emit_row_batches(([b.row(), *rows] for b, rows in _batches(dumps, value_format, decode)), fmt)
        emit_rows(summaries, fmt)
    else:
        _tables(dumps, summaries, value_format, width, records, decode)


def _batches(
    dumps: list[PartitionDump], how: ValueFormat, decode: RowDecoder | None = None
) -> Iterator[tuple[Batch, list[RecordRow]]]:
    """Per batch, in offset order: the batch and its records' rows (with --records)."""
    from kxtx.records.batchrecords import record_rows

    for d in dumps:
        s = d.summary
        for b in d.batches:
            rows: list[RecordRow] = []
            if b.records is not None:
                rows = record_rows(b.records, b.partition, b.fate, how.value, s.first, s.end, s.lso, decode)
                b.records = None  # written: the batch's bytes can go
            yield b, rows


def _with_records(b: Batch, rows: list[RecordRow], records: bool) -> dict:
    batch = b.row()
    if records and not b.control:
        batch["records"] = rows
    return batch


def _tables(
    dumps: list[PartitionDump],
    summaries: list[Summary],
    how: ValueFormat,
    width: int,
    records: bool,
    decode: RowDecoder | None = None,
) -> None:
    batches: list[dict] = []
    shown: list[dict] = []
    for b, rows in _batches(dumps, how, decode):
        batches.append(_batch_cell(b))
        shown.extend(_record_cell(r, width, decode is not None) for r in rows)
    emit_rows(batches, OutputFormat.table, BATCH_COLUMNS, title="batches")
    if records:
        # columns that would say nothing are left out: 80 columns fit longer keys
        columns = [
            c
            for c in RECORD_COLUMNS
            if (c != "p" or len(dumps) > 1) and (c != "headers" or any(r["headers"] for r in shown))
        ]
        if decode is not None:  # the schema id of each value, or why it could not be decoded
            columns.insert(columns.index("value"), "schema")
        emit_rows(shown, OutputFormat.table, columns, title="records")
    emit_rows([_summary_cell(s) for s in summaries], OutputFormat.table, SUMMARY_COLUMNS, title="summary")


#: 80 columns wide for usual offsets: epochs of markers, times and sizes are in json / jsonl.
BATCH_COLUMNS = ["p", "offsets", "n", "producer", "seq", "kind", "fate", "codec"]
#: The time of day (UTC) only, the date is in json. One partition, no headers and --width 16: 80
#: columns fit keys up to 21 characters (11 with headers); p and headers are shown only when needed.
RECORD_COLUMNS = ["p", "offset", "time", "key", "value", "headers", "fate"]
SUMMARY_COLUMNS = [
    "p",
    "range",
    "lso",
    "hw",
    "records",
    "markers",
    "aborted",
    "open",
    "read_committed",
    "producers",
]


def _batch_cell(b: Batch) -> dict:
    if b.control:
        kind = b.control_type
    else:
        kind = "txn" if b.transactional else ("idempotent" if b.producer_id >= 0 else "plain")
    fate = b.fate or "-"
    if b.fate == "open" and b.transactional_id:
        fate = f"open: {b.transactional_id}"  # what holds the LSO, by name
    return {
        "p": b.partition,
        "offsets": f"{b.base_offset}-{b.last_offset}",
        "n": b.count,
        "producer": f"{b.producer_id}/{b.producer_epoch}" if b.producer_id >= 0 else "-",
        "seq": b.base_sequence if b.base_sequence >= 0 else "-",
        "kind": kind,
        "fate": fate,
        "codec": b.compression,
    }


def _record_cell(row: RecordRow, width: int, schema: bool = False) -> dict:
    headers = ",".join(f"{k}={_text(v)}" for k, v in row["headers"])
    cell = {
        "p": row["partition"],
        "offset": row["offset"],
        "time": (row["time"] or "")[11:23] or None,
        "key": _cut(row["key"], width),
        "value": _cut(row["value"], width),
        "headers": _cut(headers, width) if headers else None,
        "fate": row["fate"],
    }
    if schema:
        extra: dict = row  # type: ignore[assignment]  # the decoder's keys are not in RecordRow
        cell["schema"] = extra.get("value_schema_id")
        if "value_error" in extra:
            cell["value"] = _cut(extra["value_error"], max(width, 40))
    return cell


def _text(value: object) -> str:
    if value is None or isinstance(value, str):
        return "" if value is None else value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: control characters written as escapes in a cell: a NUL or a newline would leave it blank or
#: break the row, an ESC would reach the terminal
_ESCAPES = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))},
    **{ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"},
}


def _cut(value: str, width: int) -> str | None:
    if value is None:
        return None
    text = _text(value).translate(_ESCAPES)
    return text if not width or len(text) <= width else text[: max(width - 1, 0)] + "…"


def _summary_cell(s: Summary) -> dict:
    producers = " ".join(
        f"{p.transactional_id or p.producer_id}:{p.committed}c/{p.aborted}a/{p.open}o" for p in s.producers
    )
    return {
        "p": s.partition,
        "range": f"{s.first}-{s.end}" + (" (start deleted)" if s.deleted else ""),
        "lso": s.lso,
        "hw": s.hw,
        "records": s.records,
        "markers": s.markers,
        "aborted": s.aborted_records,
        "open": s.open_records,
        "read_committed": s.read_committed,
        "producers": producers,
    }
