"""The sandbox's schema registry (kxtx.sandbox.registry): where its binary is cached, how it is built,
what a machine without Go is told; without starting anything (the README's registry lines run it:
tests/integration/test_examples.py::test_registry_examples)."""

from __future__ import annotations

import os
from dataclasses import asdict

import pytest

from kxtx.errors import KxtxError
from kxtx.sandbox import registry
from kxtx.sandbox.nodes import RegistryInfo, SandboxInfo


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "kxtx"


def _no_go(monkeypatch, tmp_path):
    monkeypatch.setattr(registry.shutil, "which", lambda name: None)
    monkeypatch.setattr(registry, "_GO_FALLBACK", str(tmp_path / "no-go"))


def test_without_go_one_line_names_what_to_install(cache, monkeypatch, tmp_path):
    _no_go(monkeypatch, tmp_path)
    with pytest.raises(KxtxError) as got:
        registry.binary()
    message = str(got.value)
    assert "\n" not in message and message.startswith("go not found on PATH"), message
    assert "install Go" in message and "golang-go" in message and registry.NAME in message


def test_the_cli_says_it_in_one_line_and_exits_non_zero(cache, monkeypatch, tmp_path):
    """Before any broker starts: the Kafka of --kafka-home is only looked at, not run."""
    from typer.testing import CliRunner

    from kxtx.cli.app import app

    _no_go(monkeypatch, tmp_path)
    libs = tmp_path / "kafka" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka_2.13-4.0.0.jar").write_bytes(b"")
    argv = ["sandbox", "start", "--schema-registry", "--port", "0", "--kafka-home", str(libs.parent)]
    r = CliRunner().invoke(app, [*argv, "--state-dir", str(tmp_path / "sb")], prog_name="kxtx")
    assert r.exit_code == 1, r.output
    errors = [line for line in r.output.splitlines() if line.startswith("kxtx: error")]
    assert len(errors) == 1 and "go not found on PATH" in errors[0], r.output
    assert "Traceback" not in r.output and "starting the sandbox" not in r.output, r.output


def test_a_first_build_says_so_once_and_is_cached(cache, monkeypatch, tmp_path):
    """A fake go (the build itself is the test suite's: tests/registry.py builds the real one): the
    module goes to kxtx's cache dir, not ~/go, writable; the progress line comes once."""
    calls = tmp_path / "calls"
    fake = tmp_path / "go"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$PWD|$GOMODCACHE|$GOFLAGS|$*" >> {calls}\n'
        'case "$1" in\n'
        f'  mod) mkdir -p "$GOMODCACHE/{registry.MODULE}@{registry.VERSION}" ;;\n'
        '  env) echo "$GOMODCACHE" ;;\n'
        '  build) echo binary > "$3" ;;\n'
        "esac\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(registry.shutil, "which", lambda name: str(fake))
    heard: list[str] = []
    target = registry.binary(progress=heard.append)
    assert target == cache / "tools" / f"axonops-schema-registry-{registry.VERSION}" / "schema-registry"
    assert target.read_text() == "binary\n" and not target.with_suffix(".partial").exists()
    assert len(heard) == 1 and heard[0].startswith(f"building {registry.NAME} from the Go module proxy")
    lines = [line.split("|") for line in calls.read_text().splitlines()]
    assert [line[3].split()[0] for line in lines] == ["mod", "env", "build"]
    assert all(line[1] == str(cache / "go" / "mod") and "-modcacherw" in line[2] for line in lines)
    assert lines[2][0] == str(cache / "go" / "mod" / f"{registry.MODULE}@{registry.VERSION}")
    assert registry.binary(progress=heard.append) == target and len(heard) == 1  # cached: no word


def test_a_failed_build_is_one_line_and_leaves_nothing_cached(cache, monkeypatch, tmp_path):
    fake = tmp_path / "go"
    fake.write_text(
        "#!/bin/sh\necho 'go: downloading'; echo 'dial tcp: lookup proxy.golang.org: no such host' >&2; exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(registry.shutil, "which", lambda name: str(fake))
    with pytest.raises(KxtxError, match=r"^go mod download .* failed: dial tcp: lookup proxy\.golang\.org"):
        registry.binary()
    assert not registry.cached_binary().exists()


def test_config_listens_on_loopback_in_memory():
    text = registry.config_text(18081)
    assert '  host: "127.0.0.1"\n  port: 18081\n' in text and "  type: memory\n" in text
    assert "security:" not in text
    assert registry.config_text(1, ["  tls:", "    enabled: true"]).endswith(
        "security:\n  tls:\n    enabled: true\n"
    )


def test_the_state_file_keeps_the_registry_and_reads_one_without_it():
    base = {
        "bootstrap": "127.0.0.1:1",
        "kafka_version": "4.0.0",
        "pid": 1,
        "port": 1,
        "controller_port": 2,
        "state_dir": "/x",
        "libs": "/x",
        "started_at": 0.0,
    }
    assert SandboxInfo(**base).registry is None  # a state file from before
    reg = RegistryInfo(url="http://127.0.0.1:3", port=3, pid=os.getpid(), log="/x/r.log", version="v")
    info = SandboxInfo(**base, schema_registry=asdict(reg))
    assert SandboxInfo(**asdict(info)).registry == reg
