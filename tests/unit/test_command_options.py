"""`@command` (kxtx.cli.common): the shared options declared once. A command function takes its own
options and `shared: Shared`; the command typer builds has the shared ones appended in one order,
and `shared` carries what was given. No broker: small typer apps run with typer's test runner."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from kxtx.cli.common import MaxTimeoutOpt, Options, OutputFormat, PartitionOpt, Shared, TopicOpt, command
from kxtx.errors import UsageError
from kxtx.exitcodes import ExitCode

SEEN: list[Shared] = []


def app_of(fn) -> typer.Typer:
    app = typer.Typer(add_completion=False)
    app.command()(fn)
    return app


def invoke(app: typer.Typer, *args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def options_of(app: typer.Typer) -> list[str]:
    """The command's option names, in --help's order (the first name of each)."""
    cmd = typer.main.get_command(app)
    return [p.opts[0] for p in cmd.params]


@pytest.fixture(autouse=True)
def seen():
    SEEN.clear()
    yield


def test_shared_options_are_appended_in_one_order():
    @command(registry=True, dry_run=True, yes=True)
    def act(
        name: Annotated[str, typer.Argument()],
        max_transaction_timeout: MaxTimeoutOpt = None,
        *,
        shared: Shared,
    ):
        SEEN.append(shared)

    assert options_of(app_of(act)) == [
        "name",
        "--max-transaction-timeout",
        "--dry-run",
        "--yes",
        "-b",
        "-X",
        "--command-config",
        "--timeout",
        "--schema-registry",
        "--format",
    ]


@pytest.mark.parametrize(
    ("flags", "absent"),
    [
        ({}, {"--dry-run", "--yes", "--schema-registry"}),
        ({"connect": False}, {"-b", "-X", "--command-config", "--timeout", "--schema-registry"}),
        ({"fmt": None}, {"--format"}),
        ({"dry_run": True}, {"--yes"}),
    ],
)
def test_only_the_options_asked_for(flags, absent):
    @command(**flags)
    def act(*, shared: Shared):
        SEEN.append(shared)

    names = set(options_of(app_of(act)))
    assert not names & absent
    assert ("--format" in names) is (flags.get("fmt", True) is not None)


def test_shared_carries_what_was_given():
    @command(dry_run=True, yes=True, registry=True)
    def act(*, shared: Shared):
        SEEN.append(shared)

    result = invoke(
        app_of(act),
        "--dry-run",
        "-y",
        "-b",
        "h1:9092",
        "-b",
        "h2:9092",
        "-X",
        "acks=all",
        "--timeout",
        "7",
        "--schema-registry",
        "http://r:8081",
        "-o",
        "jsonl",
    )
    assert result.exit_code == 0, result.output
    assert [
        Shared(
            fmt=OutputFormat.jsonl,
            dry_run=True,
            yes=True,
            bootstrap=["h1:9092", "h2:9092"],
            config=["acks=all"],
            timeout=7.0,
            schema_registry="http://r:8081",
        )
    ] == SEEN
    settings = SEEN[0].settings()
    assert settings.props["bootstrap.servers"] == "h1:9092,h2:9092"
    assert settings.props["acks"] == "all"
    assert settings.timeout == 7.0
    assert settings.registry is not None


def test_settings_are_read_only_when_asked_for(tmp_path):
    """A usage error in the command's own options comes first: a missing --command-config file is
    not read until the command builds its settings."""

    @command()
    def act(*, shared: Shared):
        raise UsageError("the command's own mistake")

    result = invoke(app_of(act), "--command-config", str(tmp_path / "missing.properties"))
    assert result.exit_code == ExitCode.USAGE
    assert "the command's own mistake" in result.output
    assert "missing.properties" not in result.output


def test_it_is_the_error_boundary_with_the_rows_key():
    @command(rows="hanging")
    def act(*, shared: Shared):
        from kxtx.cli.output import emit_rows

        emit_rows([{"topic": "t", "partition": 0}], shared.fmt)
        raise UsageError("stop here")

    result = invoke(app_of(act), "-o", "json")
    assert result.exit_code == ExitCode.USAGE
    doc = json.loads(result.stdout)
    assert doc["exit_code"] == ExitCode.USAGE
    assert doc["hanging"] == [{"topic": "t", "partition": 0}]
    assert "stop here" in doc["error"]


def test_a_format_of_its_own():
    import enum

    class Fmt(str, enum.Enum):
        table = "table"
        prometheus = "prometheus"

    FmtOpt = Annotated[Fmt | None, typer.Option("--format", "-o")]

    @command(fmt=FmtOpt, connect=False)
    def act(*, shared: Shared):
        SEEN.append(shared)

    assert invoke(app_of(act), "-o", "prometheus").exit_code == 0
    assert SEEN[0].fmt is Fmt.prometheus


def test_refuses_a_function_without_shared():
    with pytest.raises(TypeError, match="takes `shared: Shared`"):

        @command()
        def act(name: str):
            pass


def test_refuses_an_option_declared_twice():
    with pytest.raises(TypeError, match=r"declares option\(s\) \['timeout'\]"):

        @command()
        def act(timeout: float = 1.0, *, shared: Shared):
            pass


def test_the_cluster_commands_declare_no_shared_option_themselves():
    """Every command that connects takes its connection options from `@command`: the text of the
    cli modules names none of the aliases (one place declares them)."""
    from pathlib import Path

    import kxtx.cli

    cli = Path(kxtx.cli.__file__).parent
    for path in sorted(cli.glob("*.py")):
        if path.name == "common.py":
            continue
        text = path.read_text()
        for alias in (
            "BootstrapOpt",
            "ConfigOpt",
            "CommandConfigOpt",
            "TimeoutOpt",
            "RegistryOpt",
            "DryRunOpt",
            "YesOpt",
            "FormatOpt",
        ):
            assert not re.search(rf"\b{alias}\b", text), f"{path.name} declares {alias}: use @command"


@dataclasses.dataclass(frozen=True)
class Scope(Options):
    topic: TopicOpt = None
    partition: PartitionOpt = None


def test_a_group_of_options_stands_in_its_place_and_arrives_as_one():
    @command(fmt=None, connect=False)
    def act(
        name: Annotated[str, typer.Argument()],
        *,
        scope: Scope,
        last: Annotated[bool, typer.Option("--last")] = False,
        shared: Shared,
    ):
        SEEN.append((name, scope, last))

    app = app_of(act)
    assert options_of(app) == ["name", "--topic", "--partition", "--last"]
    assert invoke(app, "n", "-p", "3", "--last").exit_code == 0
    assert invoke(app, "m").exit_code == 0
    assert [("n", Scope(partition=3), True), ("m", Scope(), False)] == SEEN


def test_refuses_a_group_option_declared_twice():
    with pytest.raises(TypeError, match=r"declares option\(s\) \['topic'\]"):

        @command()
        def act(topic: str = "", *, scope: Scope, shared: Shared):
            pass
