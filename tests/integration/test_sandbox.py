"""The sandbox is a real broker: transactions commit and abort as Kafka defines."""

import time
import uuid

import pytest

from tests import cli


def _read_committed(bootstrap: str, topic: str, expect: int, timeout: float = 20) -> list[bytes]:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(seen) < expect + 1:
            msg = c.poll(0.5)
            if msg is not None and not msg.error():
                seen.append(msg.value())
            elif seen and len(seen) >= expect and msg is None:
                break
    finally:
        c.close()
    return seen


def _transactions_round_trip(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, f"committed-{i}".encode())
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"aborted")
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"after-abort")
    p.commit_transaction(30)
    assert _read_committed(bootstrap, topic, expect=4) == [
        b"committed-0",
        b"committed-1",
        b"committed-2",
        b"after-abort",
    ]


def test_sandbox_runs_real_transactions(kafka, topic):
    _transactions_round_trip(kafka.bootstrap, topic)


@pytest.mark.versioned
def test_sandbox_kafka_39(brokers):
    """3.9's transaction protocol and record formats differ; the sandbox must run it too."""
    k = brokers(version="3.9")  # in the Kafka 3.9 stage: the session broker
    assert k.version.startswith("3.9.")
    _transactions_round_trip(k.bootstrap, k.create_topic())


def test_cli_sandbox_lifecycle(run_kxtx, tmp_path):
    import json

    state = tmp_path / "sb"
    started = run_kxtx("sandbox", "start", "--port", "0", "--state-dir", str(state), "-o", "json", expect=0)
    info = json.loads(started.stdout)
    assert info["running"] is True and info["bootstrap"].startswith("127.0.0.1:")
    # a line a shell can take as it is (README: eval it, or copy it)
    line = f"export KXTX_BOOTSTRAP_SERVERS={info['bootstrap']} KXTX_SANDBOX_DIR={state}"
    assert line in started.stderr.splitlines()
    status = run_kxtx("sandbox", "status", "--state-dir", str(state), "-o", "jsonl", expect=0)
    assert json.loads(status.stdout)["pid"] == info["pid"]
    run_kxtx("sandbox", "stop", "--state-dir", str(state), expect=0)
    assert not state.exists()
    run_kxtx("sandbox", "status", "--state-dir", str(state), expect=3)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a node outlives the `start` that launched it)."""
    from pathlib import Path

    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def test_export_lets_status_and_stop_find_the_sandbox(tmp_path):
    """`eval "$(kxtx sandbox start --port 0 --export --state-dir DIR)"`, then `status` and `stop` with
    no --state-dir find that sandbox; `stop` returns once the JVM is gone; a `stop` that finds no
    sandbox exits 3 and says so."""
    import json
    import os
    import subprocess
    import sys

    state = tmp_path / "sb"
    script = "\n".join(
        [
            "set -e",
            'kxtx() { "$KXTX_TEST_PYTHON" -m kxtx "$@"; }',
            f'eval "$(kxtx sandbox start --port 0 --export --state-dir {state})"',
            "kxtx sandbox status -o json > status.json",
            "kxtx sandbox stop -o json > stop.json",
            "set +e",
            "kxtx sandbox stop -o json > again.json 2> again.err",
            'echo "again: $?" >&2',
        ]
    )
    env = {**os.environ, "KXTX_TEST_PYTHON": sys.executable, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    env.pop("KXTX_SANDBOX_DIR", None)  # only the eval line may set it
    env.pop("KXTX_BOOTSTRAP_SERVERS", None)
    try:
        r = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    finally:
        subprocess.run(
            cli.argv("sandbox", "stop", "--state-dir", str(state)),
            env=env,
            capture_output=True,
            timeout=120,
        )
    assert r.returncode == 0, r.stderr[-3000:]
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["running"] is True and status["state_dir"] == str(state), status
    stop = json.loads((tmp_path / "stop.json").read_text())
    assert stop["stopped"] is True and stop["status"] == "ok", stop
    assert not _alive(status["pid"]), "sandbox stop returned while the broker JVM still runs"
    assert not state.exists()
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["stopped"] is False and again["status"] == "problem_found", again
    assert "again: 3" in r.stderr.splitlines()
    assert f"no sandbox at {state}" in (tmp_path / "again.err").read_text()


def test_a_stop_writes_the_class_archive_and_the_next_start_maps_it(tmp_path, monkeypatch):
    """The first node of a java and jar set writes the class-data archive as it stops (a normal
    exit); the next start maps it, and is the same broker (transactions included)."""
    from pathlib import Path

    from kxtx.fast import jvmcds
    from kxtx.sandbox import Sandbox

    cache = tmp_path / "cache"
    monkeypatch.setattr(jvmcds, "cache_dir", lambda kind: cache / kind)
    monkeypatch.delenv("KXTX_SANDBOX_CDS", raising=False)

    def cmdline(pid: int) -> str:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()

    sandbox = Sandbox(tmp_path / "sb")
    try:
        info = sandbox.start(port=0)
        (node,) = info.node_list()
        assert node.cds_pending and f"-XX:ArchiveClassesAtExit={node.cds_pending}" in cmdline(node.pid)
        sandbox.stop()
        (archive,) = (cache / "kafka-cds").glob("*.jsa")
        assert archive.stat().st_size > 0 and not list((cache / "kafka-cds").glob("*.tmp"))
        info = sandbox.start(port=0)
        (node,) = info.node_list()
        assert node.cds_pending == "" and f"-XX:SharedArchiveFile={archive}" in cmdline(node.pid)
        _transactions_round_trip(info.bootstrap, f"cds-{uuid.uuid4().hex[:8]}")
    finally:
        sandbox.stop()
