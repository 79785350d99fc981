"""`kxtx topic create NAME`: make the topics the other commands read and write. `kxtx topic count
TOPIC`: how many records a topic holds, read_committed and not."""

from __future__ import annotations

from typing import Annotated

import typer

from kxtx.cli.common import (
    Shared,
    command,
    exit_unseen,
)
from kxtx.cli.output import OutputFormat, annotate, choose, emit, emit_rows

app = typer.Typer(help="Create topics; count their records.", no_args_is_help=True)


@app.command("create")
@command(dry_run=True)
def create(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Topic name.")],
    partitions: Annotated[
        int | None,
        typer.Option("--partitions", "-p", min=1, help="Partitions (default: the broker's num.partitions)."),
    ] = None,
    replication_factor: Annotated[
        int | None,
        typer.Option(
            "--replication-factor",
            "-r",
            min=1,
            help="Replicas of each partition (default: the broker's default.replication.factor).",
        ),
    ] = None,
    topic_config: Annotated[
        list[str] | None,
        typer.Option(
            "--topic-config",
            "-c",
            metavar="KEY=VALUE",
            help="Topic setting, e.g. cleanup.policy=compact or retention.ms=86400000 (repeatable); "
            "kafka-topics.sh's --config (-X/--config are client settings, as in every command).",
        ),
    ] = None,
    if_not_exists: Annotated[
        bool,
        typer.Option(
            "--if-not-exists", help="A topic that exists already is a success (exit 0), left as it is."
        ),
    ] = False,
    *,
    shared: Shared,
) -> None:
    """Create a topic and wait until every partition has a leader.

    Exit 1 when it exists already (unless --if-not-exists) or the principal lacks CREATE; exit 2
    when the broker refuses the partitions, replication factor or a setting. --dry-run asks the
    broker to validate the request and creates nothing.

    Example: kxtx topic create orders -p 6 -c retention.ms=604800000
    """
    from kxtx.ops.topics import TopicSpec, create_topic
    from kxtx.parsers import parse_kv_list

    spec = TopicSpec(name, partitions, replication_factor, parse_kv_list(topic_config, "--topic-config"))
    row = create_topic(
        shared.settings(),
        spec,
        if_not_exists=if_not_exists,
        validate_only=shared.dry_run,
    )
    emit(row, shared.fmt, title=f"topic {name}")


@app.command("count")
@command(rows="partitions")
def count(
    target: Annotated[
        str, typer.Argument(metavar="TOPIC[:P,...]", help="Topic, or some of its partitions: orders:0,2.")
    ],
    *,
    shared: Shared,
) -> None:
    """Count a topic's records per partition and in total: all data records (records, as
    read_uncommitted reads them) and what a read_committed consumer reads now (read_committed), with
    committed, aborted, open and non-transactional records apart. Markers are not records (markers
    column). Reads every batch over the wire, as `dump partition` does. The table leads with the
    total; -o json: the rows are under "partitions", the last one the total. Open records' transactions
    are named on stderr (and under "lso_held") with why they hold the LSO and what ends them. A
    partition without a leader is not counted: it is named on stderr (and under "unseen"), and the
    exit is 75."""
    from kxtx.dump.partition import parse_target
    from kxtx.ops.topics import COUNTS, count_records

    topic, partitions = parse_target(target)
    unseen: dict[int, str] = {}
    rows = count_records(shared.settings(), topic, partitions, unseen)
    if choose(shared.fmt) is OutputFormat.table:  # the total first, where a long table does not hide it
        rows = rows[-1:] + rows[:-1]
    emit_rows(rows, shared.fmt, ["kind", "partition", *COUNTS, "lso", "hw"], title=f"records in {topic}")
    held = [r["partition"] for r in rows if r["kind"] == "partition" and r["open_records"]]
    if held:  # why each open record's transaction holds the LSO, and what ends it
        from kxtx.cli.hanging import say_held
        from kxtx.ops.hanging import held_lsos

        with shared.cluster() as cluster:
            say_held(held_lsos(cluster, topic, held))
    if unseen:
        from kxtx.wording import plural

        annotate("unseen", [{"partition": p, "why": why} for p, why in sorted(unseen.items())])
        said = [f"{topic}:{p} not counted: {why}" for p, why in sorted(unseen.items())]
        exit_unseen(
            [*said, f"the total leaves out {plural(len(unseen), 'partition')} not seen"],
            list(unseen.values()),
        )
