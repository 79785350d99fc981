"""`kxtx sandbox start|status|stop|stop-node|start-node|kill-node|pause-node|resume-node`: a real
KRaft Kafka cluster (one node, or N with a controller quorum) on loopback."""

from __future__ import annotations

import shlex
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kxtx.cli.common import OutputFormat, Shared, command
from kxtx.cli.output import emit
from kxtx.exitcodes import ExitCode

if TYPE_CHECKING:
    from kxtx.sandbox.broker import SandboxInfo


class Security(str, Enum):
    plaintext = "plaintext"
    sasl_ssl = "sasl_ssl"
    sasl_plaintext = "sasl_plaintext"
    ssl = "ssl"


app = typer.Typer(
    help="Run a real Apache Kafka (KRaft) cluster on loopback: one node or several.", no_args_is_help=True
)

StateDirOpt = Annotated[
    str | None,
    typer.Option(
        "--state-dir",
        metavar="DIR",
        help="Where the broker keeps config, data and logs. Env: KXTX_SANDBOX_DIR "
        "(default: ~/.local/state/kxtx/sandbox).",
    ),
]


def _row(info: SandboxInfo) -> dict:
    from kxtx.sandbox.broker import node_state, registry_state

    row = {
        "running": info.running,
        "bootstrap": info.bootstrap,
        "kafka_version": info.kafka_version,
        "pid": info.pid,
        "state_dir": info.state_dir,
        "uptime_s": round(time.time() - info.started_at, 1) if info.running else None,
        "broker_config": info.broker_config,
    }
    if info.security is not None:  # not its admin_client: its librdkafka config, with the password
        sec = info.security
        row.update(security=sec.security, client_properties=sec.client_properties, principals=sec.principals)
    reg = info.registry
    if reg is not None:  # started with --schema-registry
        row["schema_registry"] = {
            "url": reg.url,
            "state": registry_state(reg),
            "pid": reg.pid,
            "version": reg.version,
            "log": reg.log,
        }
    row["nodes"] = [
        {
            "id": n.id,
            "state": node_state(n),
            "roles": n.roles,
            "port": n.port,
            "controller_port": n.controller_port,
            "pid": n.pid,
            "log": str(n.log),
        }
        for n in info.node_list()
    ]
    return row


@app.command()
@command(connect=False)
def start(
    kafka_version: Annotated[
        str,
        typer.Option(
            "--kafka-version", help="Kafka release: 4 (newest 4.x), 3.9 (newest 3.9.x) or exact, e.g. 4.3.1."
        ),
    ] = "4",
    port: Annotated[int, typer.Option("--port", help="Client port on 127.0.0.1 (0 = any free port).")] = 9092,
    broker_config: Annotated[
        list[str] | None,
        typer.Option("--broker-config", metavar="KEY=VALUE", help="Extra broker property (repeatable)."),
    ] = None,
    kafka_home: Annotated[
        str | None,
        typer.Option(
            "--kafka-home",
            metavar="DIR",
            envvar="KXTX_KAFKA_HOME",
            help="Use an unpacked Apache Kafka distribution instead of jars from Maven Central.",
        ),
    ] = None,
    state_dir: StateDirOpt = None,
    security: Annotated[
        Security,
        typer.Option(
            "--security",
            help="Client listener: plaintext, sasl_ssl / sasl_plaintext (SCRAM "
            "users admin and limited, authorizer on) or ssl (mutual TLS). Prints a Java "
            "client.properties per user.",
        ),
    ] = Security.plaintext,
    brokers: Annotated[
        int,
        typer.Option(
            "--brokers",
            min=1,
            max=9,
            help="Nodes to run. From 3 on: a 3-node controller "
            "quorum, replication factor 3 and min.insync.replicas=2, as in production.",
        ),
    ] = 1,
    heap: Annotated[
        str | None,
        typer.Option(
            "--heap", metavar="SIZE", help="JVM heap per node (default 1g for one node, 512m each for more)."
        ),
    ] = None,
    schema_registry: Annotated[
        bool,
        typer.Option(
            "--schema-registry",
            help="Also run a Schema Registry (AxonOps, Confluent's API, in memory) on a free "
            "loopback port; sandbox stop stops it. Built once with Go from the Go module proxy "
            "(needs go), cached.",
        ),
    ] = False,
    export: Annotated[
        bool,
        typer.Option(
            "--export",
            help="Print only a line for the shell on stdout, export KXTX_BOOTSTRAP_SERVERS=HOST:PORT "
            "KXTX_SANDBOX_DIR=DIR (and KXTX_SCHEMA_REGISTRY_URL=URL with --schema-registry): "
            'eval "$(kxtx sandbox start --port 0 --export)" starts it and sets them, so later '
            "commands, sandbox status and stop included, find it.",
        ),
    ] = False,
    *,
    shared: Shared,
) -> None:
    """Start the nodes (jars from Maven Central, cached), wait until all answer, print the bootstrap."""
    from kxtx.errors import UsageError
    from kxtx.parsers import parse_kv_list
    from kxtx.sandbox import Sandbox

    if export and shared.fmt is OutputFormat.json:  # stdout is either the shell's line or one document
        raise UsageError("--export and -o json exclude each other: --export prints only the export line")
    listeners = None
    if security is not Security.plaintext:
        from kxtx.sandbox.security import SecureListeners

        listeners = SecureListeners(security.value)
    if not kafka_home:  # a first run fetches the jars for minutes: show what arrives
        from kxtx.sandbox import resolve_distribution

        resolve_distribution(kafka_version, progress=lambda line: typer.echo(f"kxtx: {line}", err=True))
    if schema_registry:  # a first run builds it for minutes: say so (and a missing Go before any JVM)
        from kxtx.sandbox import registry

        registry.binary(progress=lambda line: typer.echo(f"kxtx: {line}", err=True))
    typer.echo(f"kxtx: starting the sandbox ({brokers} node{'s' if brokers > 1 else ''})...", err=True)
    info = Sandbox(state_dir).start(
        kafka_version=kafka_version,
        port=port,
        broker_config=parse_kv_list(broker_config, "--broker-config"),
        kafka_home=kafka_home,
        listeners=listeners,
        brokers=brokers,
        heap=heap,
        schema_registry=schema_registry,
    )
    # The state dir too: without it `sandbox status` and `stop` look in the default one and miss a
    # sandbox started with --state-dir.
    export_line = (
        f"export KXTX_BOOTSTRAP_SERVERS={shlex.quote(info.bootstrap)} "
        f"KXTX_SANDBOX_DIR={shlex.quote(str(Path(info.state_dir).resolve()))}"
    )
    if info.registry is not None:
        export_line += f" KXTX_SCHEMA_REGISTRY_URL={shlex.quote(info.registry.url)}"
    if export:  # stdout is the shell's to eval; progress stayed on stderr
        typer.echo(export_line)
        return
    row = _row(info)
    # The one place credentials are printed on purpose: throwaway users of a loopback broker.
    for user, path in (info.security.client_properties if info.security else {}).items():
        row[f"{user}.properties"] = Path(path).read_text()
    emit(row, shared.fmt, title="sandbox")
    typer.echo(export_line, err=True)  # for a shell: copy it (or start with --export and eval)


@app.command()
@command(connect=False)
def status(state_dir: StateDirOpt = None, *, shared: Shared) -> None:
    """Show the sandbox, each node's state and its schema registry's. Exit 0 when every node (and
    the registry) runs, 3 when one does not."""
    from kxtx.sandbox import Sandbox

    info = Sandbox(state_dir).info()
    if info is None:
        emit({"running": False, "state_dir": str(Sandbox(state_dir).dir)}, shared.fmt, title="sandbox")
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    emit(_row(info), shared.fmt, title="sandbox")
    if not info.running:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


@app.command()
@command(connect=False)
def stop(state_dir: StateDirOpt = None, *, shared: Shared) -> None:
    """Stop every node (and the schema registry), wait until their processes are gone, and remove the state directory (data, logs,
    config). Exit 3 when there is no sandbox at the state directory (nothing was stopped)."""
    from kxtx.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    info = sandbox.stop()
    emit({"stopped": info is not None, "state_dir": str(sandbox.dir)}, shared.fmt, title="sandbox")
    if info is None:  # a script's `stop` must not pass for one that stopped a broker
        typer.echo(
            f"kxtx: no sandbox at {sandbox.dir}: nothing stopped (--state-dir or KXTX_SANDBOX_DIR "
            "names another one)",
            err=True,
        )
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


NodeArg = Annotated[int, typer.Argument(metavar="ID", help="Node id (see `kxtx sandbox status`).")]


def _node_action(state_dir: str | None, node_id: int, action: str, fmt: OutputFormat | None) -> None:
    from kxtx.sandbox import Sandbox
    from kxtx.sandbox.broker import node_state

    sandbox = Sandbox(state_dir)
    node = getattr(sandbox, action)(node_id)
    emit(
        {
            "node": node.id,
            "action": action.replace("_node", ""),
            "state": node_state(node),
            "pid": node.pid,
            "port": node.port,
        },
        fmt,
        title="sandbox node",
    )


#: the node commands: name -> (the Sandbox method, the help line)
NODE_ACTIONS = {
    "stop-node": (
        "stop_node",
        "Stop one node with SIGTERM (controlled shutdown: its leaderships move first); data is kept.",
    ),
    "kill-node": (
        "kill_node",
        "Kill one node with SIGKILL, as a crash; its leaderships move when the controller fences it.",
    ),
    "start-node": (
        "start_node",
        "Start a stopped or killed node again with its data; waits until it is back in the cluster.",
    ),
    "pause-node": ("pause_node", "Freeze one node with SIGSTOP, like a long GC pause, until `resume-node`."),
    "resume-node": ("resume_node", "Let a paused node run again (SIGCONT)."),
}


def _node_command(name: str, action: str, doc: str) -> None:
    def node_command(node_id: NodeArg, state_dir: StateDirOpt = None, *, shared: Shared) -> None:
        _node_action(state_dir, node_id, action, shared.fmt)

    node_command.__doc__ = doc
    node_command.__name__ = node_command.__qualname__ = action
    app.command(name)(command(connect=False)(node_command))


for _name, (_action, _doc) in NODE_ACTIONS.items():
    _node_command(_name, _action, _doc)
