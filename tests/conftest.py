"""Shared fixtures. Integration tests get a real broker: the sandbox (the same code as
`kxtx sandbox`) or an external one from KXTX_TEST_BOOTSTRAP. A missing broker is an error, not a skip."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _children_get_default_stop_signals() -> None:
    """A suite started in the background by a non-interactive shell (`bash .ci/run &`) or under
    nohup inherits SIGINT/SIGHUP *ignored*, and every kxtx it starts would too: kxtx keeps an
    ignored signal ignored (nohup's contract), so the tests that stop kxtx with Ctrl-C or SIGHUP
    would wait in vain. A no-op handler here keeps ignoring them in this process while the
    processes it starts begin with the default (handlers, unlike SIG_IGN, do not survive exec)."""
    import signal

    for sig in (signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, lambda signum, frame: None)


_children_get_default_stop_signals()


@dataclass
class Kafka:
    bootstrap: str
    version: str | None  # None for an external broker of unknown version
    libs: str | None  # Kafka jars, for running Kafka's own tools (None for an external broker)
    sandbox: object | None = None

    @property
    def major(self) -> int:
        return int((self.version or "4").split(".")[0])

    def settings(self, **props):
        from kxtx.settings import Settings

        return Settings(props={"bootstrap.servers": self.bootstrap, **props}, timeout=30)

    def java_tool(self, main_class: str, *args: str) -> list[str]:
        """argv for a Kafka main class from the broker's own jars."""
        if not self.libs:
            pytest.fail("this test runs Kafka's own tools: needs the sandbox broker, not KXTX_TEST_BOOTSTRAP")
        from kxtx.sandbox import KafkaDistribution

        return KafkaDistribution(self.version, Path(self.libs)).java(main_class, *args)

    def create_topic(
        self, name: str | None = None, partitions: int = 1, config: dict | None = None, replication: int = 1
    ) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        name = name or f"t-{uuid.uuid4().hex[:10]}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        fut = admin.create_topics([NewTopic(name, partitions, replication, config=config or {})])[name]
        fut.result(timeout=30)
        _wait_for_leaders(admin, name, partitions)
        return name


def _wait_for_leaders(admin, name: str, partitions: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if (
            md
            and not md.error
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} has no leaders after {timeout}s")


def start_sandbox(broker_config: dict | None = None, version: str | None = None):
    """Start a dedicated sandbox broker (for tests that need special broker settings)."""
    from kxtx.sandbox import Sandbox

    state = tempfile.mkdtemp(prefix="kxtx-test-broker-")
    version = version or os.environ.get("KXTX_TEST_KAFKA_VERSION", "4")
    sandbox = Sandbox(state)
    info = sandbox.start(kafka_version=version, port=0, broker_config=broker_config or {}, heap="768m")
    return Kafka(info.bootstrap, info.kafka_version, info.libs, sandbox)


def start_cluster(nodes: int = 3, broker_config: dict | None = None, version: str | None = None):
    """A dedicated N-node sandbox (controller quorum, RF 3, min.insync.replicas 2 from 3 nodes)."""
    from kxtx.sandbox import Sandbox

    state = tempfile.mkdtemp(prefix="kxtx-test-cluster-")
    version = version or os.environ.get("KXTX_TEST_KAFKA_VERSION", "4")
    sandbox = Sandbox(state)
    # 384 MiB each: three JVMs next to the single-broker fixture and Spark on a CI runner.
    info = sandbox.start(
        kafka_version=version,
        port=0,
        broker_config=broker_config or {},
        heap="384m",
        brokers=nodes,
        wait_s=240,
    )
    return Kafka(info.bootstrap, info.kafka_version, info.libs, sandbox)


@pytest.fixture(scope="session")
def cluster3():
    """A session 3-node cluster for the `multibroker` tests; tests that kill nodes restart them."""
    if os.environ.get("KXTX_TEST_BOOTSTRAP"):
        pytest.fail(
            "multibroker tests start their own 3-node sandbox; run them without KXTX_TEST_BOOTSTRAP "
            "or deselect them with -m 'not multibroker'"
        )
    # Verification off: the hanging-transaction tests make truly hanging transactions (see
    # txn_helpers); it changes nothing for clients that follow the protocol.
    k = start_cluster(
        3, {"transaction.partition.verification.enable": "false", "transaction.max.timeout.ms": "600000"}
    )
    try:
        yield k
    finally:
        k.sandbox.stop()


@pytest.fixture(scope="session")
def kafka():
    external = os.environ.get("KXTX_TEST_BOOTSTRAP")
    if external:
        yield Kafka(external, os.environ.get("KXTX_TEST_KAFKA_VERSION"), None)
        return
    k = start_sandbox()
    try:
        yield k
    finally:
        k.sandbox.stop()


@pytest.fixture
def topic(kafka) -> str:
    """A fresh single-partition topic."""
    return kafka.create_topic()


@pytest.fixture
def run_kxtx(kafka):
    """Run the CLI in a subprocess (stdin/stdout are not TTYs, as in cron)."""

    def run(
        *args: str,
        input: str | bytes | None = None,
        timeout: float = 300,
        env: dict | None = None,
        bootstrap: bool = True,
    ) -> subprocess.CompletedProcess:
        full_env = {
            **os.environ,
            "KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap if bootstrap else "",
            **(env or {}),
        }
        text = not isinstance(input, bytes)
        return subprocess.run(
            [sys.executable, "-m", "kxtx", *args],
            input=input,
            capture_output=True,
            text=text,
            timeout=timeout,
            env=full_env,
            cwd=ROOT,
        )

    return run


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.kafka)
