"""`kxtx topic create NAME`: make the topics the other commands read and write."""

from __future__ import annotations

from typing import Annotated

import typer

from kxtx.cli.common import (
    BootstrapOpt,
    CommandConfigOpt,
    ConfigOpt,
    DryRunOpt,
    FormatOpt,
    TimeoutOpt,
    boundary,
    connection,
)
from kxtx.cli.output import emit

app = typer.Typer(help="Create topics.", no_args_is_help=True)


@app.command("create")
@boundary
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
    dry_run: DryRunOpt = False,
    bootstrap: BootstrapOpt = None,
    config: ConfigOpt = None,
    command_config: CommandConfigOpt = None,
    timeout: TimeoutOpt = None,
    fmt: FormatOpt = None,
) -> None:
    """Create a topic and wait until every partition has a leader.

    Exit 1 when it exists already (unless --if-not-exists) or the principal lacks CREATE; exit 2
    when the broker refuses the partitions, replication factor or a setting. --dry-run asks the
    broker to validate the request and creates nothing.

    Example: kxtx topic create orders -p 6 -c retention.ms=604800000
    """
    from kxtx.parsers import parse_kv_list
    from kxtx.topics import TopicSpec, create_topic

    spec = TopicSpec(name, partitions, replication_factor, parse_kv_list(topic_config, "--topic-config"))
    row = create_topic(
        connection(bootstrap, config, command_config, timeout),
        spec,
        if_not_exists=if_not_exists,
        validate_only=dry_run,
    )
    emit(row, fmt, title=f"topic {name}")
