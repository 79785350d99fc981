"""`kxtx monitor collect` and `kxtx monitor check`: transaction health for Prometheus and plugin checks."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated, cast

import typer

from kxtx.cli.common import (
    MaxTimeoutOpt,
    Shared,
    command,
)
from kxtx.parsers import parse_minutes

if TYPE_CHECKING:
    from kxtx.client.settings import Settings
    from kxtx.monitor.snapshot import Snapshot

app = typer.Typer(
    help="Transaction health for monitoring: Prometheus metrics, a textfile for node_exporter, "
    "a Nagios-style check.",
    no_args_is_help=True,
)


class MonitorFormat(str, enum.Enum):
    """kxtx's formats (kxtx.cli.output.OutputFormat) and Prometheus's text exposition."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    prometheus = "prometheus"


TopicOpt = Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic's partitions.")]
GroupOpt = Annotated[
    list[str] | None,
    typer.Option("--group", "-g", help="Only this consumer group (repeatable; default: every group)."),
]
LagScanOpt = Annotated[
    int,
    typer.Option(
        "--lag-scan-max",
        min=0,
        metavar="OFFSETS",
        help="A group this many offsets or fewer below the LSO has its lag counted record by record "
        "(markers and aborted records left out); further behind, by offsets (an upper bound).",
    ),
]


AuditMarkersOpt = Annotated[
    str | None,
    typer.Option(
        "--audit-markers",
        metavar="SINCE",
        help="Also count lost transaction markers by kind (audit-markers) among the transactions "
        "prepared since SINCE: an age like 1h (from each collection's time) or a time. It reads "
        "__transaction_state and the partitions those transactions wrote to: a window of hours, not days.",
    ),
]


def _collect(
    settings: Settings,
    topic: str | None,
    groups: list[str] | None,
    max_transaction_timeout: str | None,
    lag_scan_max: int,
    audit_markers: str | None = None,
    progress: bool = False,
) -> Snapshot:
    """One collection; `progress`: the sweep's line on a terminal's stderr (`monitor collect`, not
    the plugin's check or the exporter's scrapes)."""
    from kxtx.cli.progress import sweep
    from kxtx.client.admin import Cluster
    from kxtx.monitor.snapshot import collect
    from kxtx.parsers import parse_time

    since = parse_time(audit_markers) if audit_markers is not None else None
    line = sweep("monitor collect: DescribeProducers") if progress else None
    try:
        with Cluster(settings) as cluster:
            return collect(
                cluster,
                topic,
                groups or None,
                parse_minutes(max_transaction_timeout),
                lag_scan_max,
                markers_since_ms=since,
                progress=line.calls if line else None,
            )
    finally:
        if line:
            line.done()


#: collect's --format: every command's, and Prometheus's text format
MonitorFormatOpt = Annotated[
    MonitorFormat | None,
    typer.Option(
        "--format",
        "-o",
        help="table, json, jsonl (as every command; default: table on a terminal, jsonl "
        "otherwise, nothing with --textfile) or prometheus (the text exposition format).",
        rich_help_panel="Output",
    ),
]


@app.command("collect")
@command(fmt=MonitorFormatOpt)
def collect_cmd(
    topic: TopicOpt = None,
    group: GroupOpt = None,
    max_transaction_timeout: MaxTimeoutOpt = None,
    lag_scan_max: LagScanOpt = 1000,
    audit_markers: AuditMarkersOpt = None,
    textfile: Annotated[
        str | None,
        typer.Option(
            "--textfile",
            metavar="DIR",
            help="Write the metrics to DIR/kxtx.prom for node_exporter's textfile collector, "
            "atomically (a temporary file in DIR, then a rename); kxtx_up 0 when the collection fails.",
        ),
    ] = None,
    textfile_name: Annotated[
        str, typer.Option("--textfile-name", metavar="NAME", help="The file name in --textfile DIR.")
    ] = "kxtx.prom",
    *,
    shared: Shared,
) -> None:
    """One pass over the cluster: transaction health as a table, json, jsonl, Prometheus's text format
    or a node_exporter textfile.

    Per partition with an open transaction: its HW, LSO, gap, oldest open transaction and its two ages (since it began; since its last write), hanging or not (find-hanging's
    rule); transactional ids per coordinator state with the oldest age per non-final state; per group
    the read_committed lag and the part of the naive lag that is only markers and aborted records
    (the table leaves out the group partitions at lag 0 and counts them); the collection's duration
    and what it could not see. Exit codes as every command (69: no broker)."""
    import time

    from kxtx import __version__
    from kxtx.monitor import exposition

    if textfile is not None:
        exposition.textfile_path(textfile, textfile_name)
    fmt = cast("MonitorFormat | None", shared.fmt)  # MonitorFormatOpt: prometheus too
    settings = shared.settings()
    started = time.monotonic()
    try:
        snap = _collect(
            settings, topic, group, max_transaction_timeout, lag_scan_max, audit_markers, progress=True
        )
    except Exception:
        # the scrape still learns the collection failed, and stale figures are not left behind
        text = exposition.failure(__version__, time.monotonic() - started)
        if textfile is not None:
            exposition.write_textfile(textfile, textfile_name, text)
        if fmt is MonitorFormat.prometheus:
            typer.echo(text, nl=False)
        raise
    if snap.warnings:
        from kxtx.log import logger

        for w in snap.warnings:
            logger.warning(w)
    if textfile is not None:
        exposition.write_textfile(textfile, textfile_name, exposition.exposition(snap, __version__))
        if fmt is None:
            return
    if fmt is MonitorFormat.prometheus:
        typer.echo(exposition.exposition(snap, __version__), nl=False)
        return
    _emit(snap, fmt)


def _emit(snap: Snapshot, fmt: MonitorFormat | None) -> None:
    from kxtx.cli.output import OutputFormat, choose, emit
    from kxtx.monitor.snapshot import document

    out = choose(None if fmt is None else OutputFormat(fmt.value))
    doc = document(snap)
    if out is OutputFormat.table:
        doc = _without_lag_0(doc)
    emit(doc, out, title="kxtx monitor")


def _without_lag_0(doc: dict) -> dict:
    """The table leaves out the group partitions a read_committed consumer has read to the end (at
    20,000 partitions, a thousand rows of lag 0 hid the few behind) and says how many; json, jsonl
    and prometheus keep every one."""
    from kxtx.wording import plural

    behind = [g for g in doc["groups"] if g["lag_records"] != 0]
    left_out = len(doc["groups"]) - len(behind)
    if not left_out:
        return doc
    note = f"{plural(left_out, 'group partition')} not shown (-o json lists them)"
    return {**doc, "groups": behind, "groups_at_lag_0": note}


@app.command("check")
@command(fmt=None)
def check_cmd(
    topic: TopicOpt = None,
    group: GroupOpt = None,
    warn: Annotated[
        list[str] | None,
        typer.Option(
            "--warn",
            "-w",
            metavar="METRIC=RANGE",
            help="WARNING when METRIC (hanging, open-age in seconds, lso-gap, lag, lost-markers with "
            "--audit-markers) lies outside RANGE "
            "([@]start:end, the plugin range syntax; @ alerts inside). Repeatable. lag: the largest "
            "read_committed lag of a group on a topic, summed over its partitions (as "
            "kxtx_consumergroup_lag_records); lso-gap: the largest partition's.",
        ),
    ] = None,
    crit: Annotated[
        list[str] | None,
        typer.Option(
            "--crit",
            "-c",
            metavar="METRIC=RANGE",
            help="CRITICAL likewise (default: hanging=0 and, with --audit-markers, lost-markers=0: any "
            "hanging transaction or lost marker needing action is critical).",
        ),
    ] = None,
    max_transaction_timeout: MaxTimeoutOpt = None,
    lag_scan_max: LagScanOpt = 1000,
    audit_markers: AuditMarkersOpt = None,
    *,
    shared: Shared,
) -> None:
    """A Nagios/Icinga/Sensu-style check: one status line on stdout with perfdata after '|'. Exit codes
    are the plugin API's, unlike every other kxtx command: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (no
    broker, bad thresholds, any error). Part of the cluster not seen (no DESCRIBE): at least WARNING;
    a metric with a threshold that could not be computed (a read failed): UNKNOWN, unless what was
    seen already crosses it.

    \b
    Example: kxtx monitor check --warn open-age=600 --crit hanging=0 --crit lag=10000"""
    from kxtx.monitor import check
    from kxtx.wording import plural

    try:
        warns = check.parse_thresholds(warn, "--warn")
        crits = check.parse_thresholds(crit, "--crit")
        if audit_markers is None and "lost-markers" in {**warns, **crits}:
            from kxtx.errors import UsageError

            raise UsageError("a lost-markers threshold needs --audit-markers SINCE (the window audited)")
        settings = shared.settings()
        snap = _collect(settings, topic, group, max_transaction_timeout, lag_scan_max, audit_markers)
    except Exception as exc:  # noqa: BLE001 - any failure is the plugin API's UNKNOWN, not kxtx's 1 (WARNING)
        from kxtx.client.clients import translate
        from kxtx.client.properties import scrub

        typer.echo(check.unknown(scrub(str(translate(exc)))))
        raise typer.Exit(check.PluginStatus.UNKNOWN) from None
    values, floors = (check.values_of(snap.summary(floor=f)) for f in (False, True))
    incomplete = (
        f"{plural(len(snap.unseen), 'thing')} not seen ({snap.unseen[0]['why']})" if snap.unseen else ""
    )
    status, line = check.verdict(values, warns, crits, incomplete, floors)
    typer.echo(line)
    if status is not check.PluginStatus.OK:
        raise typer.Exit(int(status))


@app.command("serve")
@command(fmt=None)
def serve_cmd(
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="HTTP port (0: any free port).")
    ] = 9464,
    bind: Annotated[
        str,
        typer.Option("--bind", metavar="ADDRESS", help="Address to listen on (0.0.0.0: every interface)."),
    ] = "127.0.0.1",
    min_interval: Annotated[
        float,
        typer.Option(
            "--min-interval",
            metavar="SECONDS",
            min=0,
            help="A scrape within this long of the last collection gets that collection's metrics.",
        ),
    ] = 15.0,
    bound: Annotated[
        float,
        typer.Option(
            "--scrape-timeout",
            metavar="SECONDS",
            min=0.1,
            help="A scrape waits this long for a running collection, then answers kxtx_up 0 (keep it "
            "below Prometheus's scrape_timeout); the collection goes on. No call of a collection waits "
            "longer (nor --timeout); a scrape that finds one running for longer starts a new one "
            "beside it, never more than two at once.",
        ),
    ] = 8.0,
    topic: TopicOpt = None,
    group: GroupOpt = None,
    max_transaction_timeout: MaxTimeoutOpt = None,
    lag_scan_max: LagScanOpt = 1000,
    audit_markers: AuditMarkersOpt = None,
    *,
    shared: Shared,
) -> None:
    """A Prometheus exporter: GET /metrics runs a collection (the metrics of `collect -o prometheus`,
    plus kxtx_collections_total and kxtx_collection_failures_total). A down cluster is kxtx_up 0 and
    the server keeps answering. Stops on SIGTERM or Ctrl-C (exit 143 / 130, as every command).

    \b
    Example: kxtx monitor serve --port 9464 --min-interval 30"""
    import dataclasses

    from kxtx import __version__
    from kxtx.client.clients import reach
    from kxtx.monitor import exposition
    from kxtx.monitor.serve import Exporter, server

    settings = shared.settings()
    # no call of a collection waits longer than a scrape does (a frozen cluster cost each call the
    # whole --timeout)
    settings = dataclasses.replace(settings, timeout=min(settings.timeout, bound))

    def one() -> str:
        reach(settings, again=True)  # a cluster down since the last collection fails it at once
        snap = _collect(settings, topic, group, max_transaction_timeout, lag_scan_max, audit_markers)
        return exposition.exposition(snap, __version__)

    srv = server(Exporter(one, __version__, min_interval, bound), bind, port)
    real_port = srv.server_address[1]
    typer.echo(f"kxtx: serving http://{bind}:{real_port}/metrics", err=True)
    try:
        srv.serve_forever()
    finally:
        srv.server_close()
