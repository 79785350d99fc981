"""`kxtx pipe`: exactly-once consume → PySpark UDF → produce."""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli.common import (
    REGISTRY_PANEL,
    STATE,
    Shared,
    SubjectStrategyOpt,
    ValueFormat,
    command,
    is_tty,
)
from kxtx.cli.output import emit
from kxtx.cli.progress import Progress
from kxtx.pipe.runconfig import DEFAULT_BATCH_MS, DEFAULT_BATCH_RECORDS, EXECUTOR_BATCH_RECORDS

if TYPE_CHECKING:
    from kxtx.pipe.stats import Progress as PipeProgress

_BATCH = "Batching and stopping"
_UDF = "UDF"
_SPARK = "Spark"
_SR = REGISTRY_PANEL


class InputMode(str, Enum):
    value = "value"
    record = "record"


class Mode(str, Enum):
    auto = "auto"
    driver = "driver"
    executors = "executors"


class StartFrom(str, Enum):
    earliest = "earliest"
    latest = "latest"


@command(registry=True)
def pipe(
    inputs: Annotated[
        list[str],
        typer.Option(
            "--in",
            "-i",
            metavar="TOPIC",
            help="Input topic(s); repeatable or comma-separated; ^regex subscribes by pattern "
            "(Kafka's internal topics left out).",
        ),
    ],
    out: Annotated[
        str, typer.Option("--out", "-t", metavar="TOPIC", help="Default output topic (must exist).")
    ],
    udf: Annotated[
        str,
        typer.Option(
            "--udf",
            metavar="MODULE:FUNCTION",
            rich_help_panel=_UDF,
            help="The transform: module:function or path/to/file.py:function; a plain function, "
            "or a pyspark udf / pandas_udf / arrow_udf object.",
        ),
    ],
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            help="Consumer group; its committed offsets are the progress. Default: kxtx-pipe-OUT-HASH "
            "of the input topics, the output topic and the UDF (not of other options), shown in the "
            "summary: the same line run again resumes where the last run committed.",
        ),
    ] = None,
    transactional_id: Annotated[
        str | None,
        typer.Option(
            "--transactional-id",
            metavar="ID",
            help="Default: kxtx-pipe-GROUP-HASH of the topics (GROUP-HASH for the default group, "
            "itself kxtx-pipe-...). An instance started with the same id "
            "fences the older one. Driver mode: give each of several parallel instances its own "
            "id; executors mode uses ID.TOPIC.PARTITION per input partition.",
        ),
    ] = None,
    start: Annotated[
        StartFrom, typer.Option("--from", help="Where a new group starts.")
    ] = StartFrom.earliest,
    value_format: Annotated[
        ValueFormat,
        typer.Option(
            "--value-format",
            rich_help_panel=_UDF,
            help="What the UDF gets as the value: raw bytes, a UTF-8 string, or parsed JSON (then "
            "returned values are JSON-encoded); avro, protobuf, jsonschema or auto: decoded "
            "through --schema-registry, each record with its own schema.",
        ),
    ] = ValueFormat.raw,
    input_mode: Annotated[
        InputMode,
        typer.Option(
            "--input",
            rich_help_panel=_UDF,
            help="value: the UDF gets the value; record: a dict with key, value, headers, topic, "
            "partition, offset, timestamp.",
        ),
    ] = InputMode.value,
    on_udf_error: Annotated[
        str,
        typer.Option(
            "--on-udf-error",
            metavar="fail|dlq:TOPIC",
            rich_help_panel=_UDF,
            help="fail: abort the transaction and exit 1 naming the record; dlq:TOPIC: write the "
            "input record with kxtx.error headers to TOPIC in the same transaction.",
        ),
    ] = "fail",
    batch_max_records: Annotated[
        int | None,
        typer.Option(
            "--batch-max-records",
            min=1,
            rich_help_panel=_BATCH,
            help=f"executors mode: records per partition and round (one transaction each; default "
            f"{EXECUTOR_BATCH_RECORDS}); driver mode: records per transaction (one Spark job "
            f"each; default {DEFAULT_BATCH_RECORDS}).",
        ),
    ] = None,
    batch_max_ms: Annotated[
        int,
        typer.Option(
            "--batch-max-ms",
            min=1,
            rich_help_panel=_BATCH,
            help="driver mode: commit a partial batch this long after its first record (an "
            "executors-mode round takes what was there when it was planned).",
        ),
    ] = DEFAULT_BATCH_MS,
    until_idle: Annotated[
        str | None,
        typer.Option(
            "--until-idle",
            metavar="SECONDS",
            rich_help_panel=_BATCH,
            help="Stop after no records arrived for this long (e.g. 30, 30s, 5m).",
        ),
    ] = None,
    max_records: Annotated[
        int | None,
        typer.Option(
            "--max-records", min=1, rich_help_panel=_BATCH, help="Stop after this many input records."
        ),
    ] = None,
    master: Annotated[
        str,
        typer.Option(
            "--master",
            metavar="URL",
            rich_help_panel=_SPARK,
            help="Spark master; on a cluster the UDF's file is shipped to the executors.",
        ),
    ] = "local[*]",
    mode: Annotated[
        Mode,
        typer.Option(
            "--mode",
            rich_help_panel=_SPARK,
            help="driver: the driver consumes and produces, Spark runs the UDF; executors: each Spark "
            "task consumes, transforms, produces and commits one input partition in its own "
            "transaction (scales with the cluster); auto: executors (faster on local[...] too, "
            "see the README).",
        ),
    ] = Mode.auto,
    spark_conf: Annotated[
        list[str] | None,
        typer.Option(
            "--spark-conf", metavar="KEY=VALUE", rich_help_panel=_SPARK, help="Spark setting (repeatable)."
        ),
    ] = None,
    spark_ui: Annotated[
        bool,
        typer.Option("--spark-ui", rich_help_panel=_SPARK, help="Start Spark's web UI (off by default)."),
    ] = False,
    out_schema: Annotated[
        str | None,
        typer.Option(
            "--out-schema",
            metavar="SCHEMA",
            rich_help_panel=_SR,
            help="Encode the UDF's results with a schema file (.avsc, .json, .proto: its first "
            "message, or FILE.proto:pkg.Message) registered under the output's subject, or latest, a version, id:N; a result that does not fit "
            "is a UDF error (--on-udf-error).",
        ),
    ] = None,
    register: Annotated[
        bool,
        typer.Option("--register", rich_help_panel=_SR, help="Register the --out-schema file first."),
    ] = False,
    subject_strategy: SubjectStrategyOpt = "topic",
    *,
    shared: Shared,
) -> None:
    """Transform records between topics with a PySpark UDF, exactly once.

    Each transaction holds outputs and the input offsets they came from (KIP-447), so a
    read_committed consumer of the outputs sees every input's output exactly once across crashes,
    restarts, rebalances and zombie instances. By default Spark tasks do the Kafka work, one
    transaction per input partition and round (--mode). Instances with the same --group share the
    input partitions. Needs the spark extra: pip install -e '.\\[spark]' in kxtx's clone.

    Example: kxtx pipe --in orders --out orders-enriched --udf examples/enrich.py:enrich --value-format json --group enricher
    """
    from kxtx.signals import Guard

    # From the first line on, a stop signal only notes itself; the engine acts on it and always
    # reports the same way: the summary on stdout, one line on stderr.
    with Guard() as signals:
        from kxtx.parsers import parse_duration, parse_kv_list, split_csv
        from kxtx.pipe.modes import run
        from kxtx.pipe.runconfig import PipeConfig, parse_on_udf_error
        from kxtx.pipe.stats import PipeInterrupted

        # Checked here, before any connection, and not again: run() takes it as it is.
        cfg = PipeConfig(
            inputs=split_csv(inputs),
            out=out,
            group=group,
            udf=udf,
            transactional_id=transactional_id,
            start=start.value,
            batch_max_records=batch_max_records,
            batch_max_ms=batch_max_ms,
            until_idle=parse_duration(until_idle) if until_idle else None,
            max_records=max_records,
            dlq=parse_on_udf_error(on_udf_error),
            value_format=value_format.value,
            out_schema=out_schema,
            register=register,
            subject_strategy=subject_strategy,
            record_input=input_mode is InputMode.record,
            master=master,
            mode=mode.value,
            spark_conf=parse_kv_list(spark_conf, "--spark-conf"),
            spark_ui=spark_ui,
            debug=STATE.debug,
        ).resolve()
        settings = shared.settings()
        progress = _progress(is_tty(sys.stderr))
        try:
            summary = run(settings, cfg, progress, signals=signals)
        except PipeInterrupted as exc:
            progress.done()
            emit(exc.summary, shared.fmt, title="kxtx pipe")
            raise
        progress.done()
        emit(summary, shared.fmt, title="kxtx pipe")


def _line(p: PipeProgress) -> str:
    lag = "?" if p.lag is None else f"{p.lag:,}"
    return (
        f"{p.records_in:,} in  {p.records_out:,} out  {p.dlq:,} dlq  "
        f"{p.transactions:,} txns  {p.aborted:,} aborted  "
        f"{p.rate:,.0f} rec/s  lag {lag}"
    )


def _progress(tty: bool) -> Progress[PipeProgress]:
    """A rewritten status line on a terminal; otherwise a plain line every 30 s (for logs)."""
    return Progress(_line, tty, every=30)
