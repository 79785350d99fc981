"""`kxtx sandbox start|status|stop`: a real single-node KRaft Kafka broker on loopback."""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from kxtx.cli.common import FormatOpt, boundary
from kxtx.cli.output import emit
from kxtx.exitcodes import ExitCode


class Security(str, Enum):
    plaintext = "plaintext"
    sasl_ssl = "sasl_ssl"
    sasl_plaintext = "sasl_plaintext"
    ssl = "ssl"


app = typer.Typer(help="Run a real single-node Apache Kafka (KRaft) broker on loopback.",
                  no_args_is_help=True)

StateDirOpt = Annotated[
    Optional[str],
    typer.Option("--state-dir", metavar="DIR",
                 help="Where the broker keeps config, data and logs. Env: KXTX_SANDBOX_DIR "
                 "(default: ~/.local/state/kxtx/sandbox)."),
]


def _row(info) -> dict:
    return {
        "running": info.running,
        "bootstrap": info.bootstrap,
        "kafka_version": info.kafka_version,
        "pid": info.pid,
        "state_dir": info.state_dir,
        "uptime_s": round(time.time() - info.started_at, 1) if info.running else None,
        "broker_config": info.broker_config,
        **{k: v for k, v in (info.extra or {}).items() if k != "admin_client"},
    }


@app.command()
@boundary
def start(
    kafka_version: Annotated[
        str, typer.Option("--kafka-version", help="Kafka release: 4 (newest 4.x), 3.9 (newest 3.9.x) or exact, e.g. 4.3.1.")
    ] = "4",
    port: Annotated[int, typer.Option("--port", help="Client port on 127.0.0.1 (0 = any free port).")] = 9092,
    broker_config: Annotated[
        Optional[list[str]],
        typer.Option("--broker-config", metavar="KEY=VALUE", help="Extra broker property (repeatable)."),
    ] = None,
    kafka_home: Annotated[
        Optional[str],
        typer.Option("--kafka-home", metavar="DIR", envvar="KXTX_KAFKA_HOME",
                     help="Use an unpacked Apache Kafka distribution instead of jars from Maven Central."),
    ] = None,
    state_dir: StateDirOpt = None,
    security: Annotated[
        Security,
        typer.Option("--security", help="Client listener: plaintext, sasl_ssl / sasl_plaintext (SCRAM "
                     "users admin and limited, authorizer on) or ssl (mutual TLS). Prints a Java "
                     "client.properties per user."),
    ] = Security.plaintext,
    fmt: FormatOpt = None,
) -> None:
    """Start the broker (jars from Maven Central, cached), wait until it answers, print the bootstrap."""
    from kxtx.parsers import parse_kv_list
    from kxtx.sandbox import Sandbox

    listeners = None
    if security is not Security.plaintext:
        from kxtx.sandbox.security import SecureListeners

        listeners = SecureListeners(security.value)
    if not kafka_home:  # a first run fetches the jars for minutes: show what arrives
        from kxtx.sandbox import resolve_distribution

        resolve_distribution(kafka_version, progress=lambda line: typer.echo(f"kxtx: {line}", err=True))
    typer.echo("kxtx: starting the sandbox broker...", err=True)
    info = Sandbox(state_dir).start(
        kafka_version=kafka_version, port=port,
        broker_config=parse_kv_list(broker_config, "--broker-config"), kafka_home=kafka_home,
        listeners=listeners,
    )
    row = _row(info)
    # The one place credentials are printed on purpose: throwaway users of a loopback broker.
    for user, path in (info.extra or {}).get("client_properties", {}).items():
        row[f"{user}.properties"] = Path(path).read_text()
    emit(row, fmt, title="sandbox")
    # For a shell: copy it, or `eval "$(kxtx sandbox start 2>&1 >/dev/null | grep ^export)"`.
    typer.echo(f"export KXTX_BOOTSTRAP_SERVERS={info.bootstrap}", err=True)


@app.command()
@boundary
def status(state_dir: StateDirOpt = None, fmt: FormatOpt = None) -> None:
    """Show whether the sandbox runs. Exit 0 when it runs, 3 when it does not."""
    from kxtx.sandbox import Sandbox

    info = Sandbox(state_dir).info()
    if info is None:
        emit({"running": False, "state_dir": str(Sandbox(state_dir).dir)}, fmt, title="sandbox")
        raise typer.Exit(ExitCode.PROBLEM_FOUND)
    emit(_row(info), fmt, title="sandbox")
    if not info.running:
        raise typer.Exit(ExitCode.PROBLEM_FOUND)


@app.command()
@boundary
def stop(state_dir: StateDirOpt = None, fmt: FormatOpt = None) -> None:
    """Stop the broker and remove its state directory (data, logs, config)."""
    from kxtx.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    info = sandbox.stop()
    emit({"stopped": info is not None, "state_dir": str(sandbox.dir)}, fmt, title="sandbox")
