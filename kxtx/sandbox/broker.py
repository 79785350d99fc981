"""Start, watch and stop one KRaft broker+controller process on loopback.

The broker's files (config, data, log, pid/state) live in a state directory; `stop` removes it.
The same code serves `kxtx sandbox` and the test suite.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kxtx.errors import KxtxError, UsageError
from kxtx.sandbox.distribution import KafkaDistribution, resolve_distribution

STATE_FILE = "sandbox.json"

#: Settings suited to transactions on one node. Unknown keys are ignored by older brokers.
BASE_CONFIG = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # Groups form at once: nothing to wait for with one test consumer.
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
}


def default_state_dir() -> Path:
    if os.environ.get("KXTX_SANDBOX_DIR"):
        return Path(os.environ["KXTX_SANDBOX_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kxtx" / "sandbox"


@dataclass
class SandboxInfo:
    bootstrap: str
    kafka_version: str
    pid: int
    port: int
    controller_port: int
    state_dir: str
    libs: str
    started_at: float
    broker_config: dict[str, str] = field(default_factory=dict)
    running: bool = True
    #: extra data other parts add (e.g. security material paths)
    extra: dict = field(default_factory=dict)

    @property
    def distribution(self) -> KafkaDistribution:
        return KafkaDistribution(self.kafka_version, Path(self.libs))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Sandbox:
    def __init__(self, state_dir: str | os.PathLike | None = None):
        self.dir = Path(state_dir) if state_dir else default_state_dir()

    # --- queries ---------------------------------------------------------------------------------
    def info(self) -> SandboxInfo | None:
        try:
            data = json.loads((self.dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        info = SandboxInfo(**data)
        info.running = _alive(info.pid) and _port_open(info.port)
        return info

    # --- start -----------------------------------------------------------------------------------
    def start(
        self,
        kafka_version: str | None = None,
        port: int = 9092,
        broker_config: dict[str, str] | None = None,
        kafka_home: str | None = None,
        wait_s: float = 120.0,
        heap: str = "1g",
        listeners=None,
    ) -> SandboxInfo:
        """Start the broker and wait until it answers. `listeners` customises security (see security)."""
        existing = self.info()
        if existing and existing.running:
            raise KxtxError(f"a sandbox is already running at {existing.bootstrap} (state {self.dir}); "
                            "stop it first or use another --state-dir")
        dist = resolve_distribution(kafka_version, kafka_home)
        port = port or free_port()
        if _port_open(port):
            raise UsageError(f"port {port} is already in use on 127.0.0.1; pick another with --port")
        cport = free_port()
        self._reset_dir()
        props = self._properties(port, cport, broker_config or {}, listeners)
        config = self.dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        # Written once, used by both the storage formatter and the broker.
        logging_flags = (f"-Dlog4j.configuration=file:{self._log4j1()}",
                         f"-Dlog4j2.configurationFile={self._log4j2()}")
        self._format_storage(dist, config, logging_flags,
                             getattr(listeners, "format_args", lambda: [])())
        jvm = (f"-Xmx{heap}", "-Xms256m", "-Djava.awt.headless=true",
               f"-Dkafka.logs.dir={self.dir / 'logs'}",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", *logging_flags)
        # The child keeps its own descriptor; the parent's copy is closed when the block ends.
        with open(self.dir / "broker.log", "ab") as log:
            proc = subprocess.Popen(
                dist.java("kafka.Kafka", str(config), jvm=jvm),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # survives the CLI process; stopped by `sandbox stop`
            )
        bootstrap = (listeners.bootstrap(port) if listeners else f"127.0.0.1:{port}")
        info = SandboxInfo(
            bootstrap=bootstrap, kafka_version=dist.version, pid=proc.pid, port=port,
            controller_port=cport, state_dir=str(self.dir), libs=str(dist.libs),
            started_at=time.time(), broker_config=dict(broker_config or {}),
            extra=(listeners.extra() if listeners else {}),
        )
        (self.dir / STATE_FILE).write_text(json.dumps(asdict(info), indent=2))
        self._wait_ready(proc, port, wait_s)
        if hasattr(listeners, "after_start"):
            try:
                listeners.after_start(info)  # e.g. ACLs, which need a running broker
            except BaseException:
                self.stop()
                raise
        return info

    def _reset_dir(self) -> None:
        if self.dir.exists():
            shutil.rmtree(self.dir)
        (self.dir / "data").mkdir(parents=True)
        (self.dir / "logs").mkdir()

    def _properties(self, port, cport, extra, listeners) -> dict[str, str]:
        props = dict(BASE_CONFIG)
        props.update({
            "controller.quorum.voters": f"1@127.0.0.1:{cport}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.dir / "data"),
        })
        if listeners:
            props.update(listeners.broker_properties(self.dir, port, cport))
        props.update(extra)
        return props

    def _log4j1(self) -> Path:
        # Kafka 3.x logs through reload4j; 4.x through slf4j-simple (configured by -D flags).
        path = self.dir / "log4j.properties"
        path.write_text(
            "log4j.rootLogger=WARN, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        )
        return path

    def _log4j2(self) -> Path:
        # Kafka 4.x's tools and some of its modules configure log4j2 directly.
        path = self.dir / "log4j2.properties"
        path.write_text(
            "status = warn\nrootLogger.level = warn\nrootLogger.appenderRef.out.ref = OUT\n"
            "appender.out.type = Console\nappender.out.name = OUT\n"
            "appender.out.layout.type = PatternLayout\n"
            "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
        )
        return path

    def _format_storage(self, dist: KafkaDistribution, config: Path, logging_flags: tuple,
                        extra_args=()) -> None:
        cluster_id = _cluster_id()
        proc = subprocess.run(
            dist.java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config),
                      "--ignore-formatted", *extra_args, jvm=logging_flags),
            capture_output=True, text=True, timeout=120,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            raise KxtxError(f"formatting the sandbox storage failed: {tail[0]}")

    def _wait_ready(self, proc: subprocess.Popen, port: int, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise KxtxError(f"the broker exited with code {proc.returncode} during start-up; "
                                f"see {self.dir / 'broker.log'}")
            if _port_open(port) and self._metadata_ok():
                return
            time.sleep(0.5)
        self.stop(remove=False)
        raise KxtxError(f"the broker did not answer within {wait_s:.0f}s; see {self.dir / 'broker.log'}")

    def _metadata_ok(self) -> bool:
        info = self.info()
        from confluent_kafka.admin import AdminClient

        conf = {"bootstrap.servers": info.bootstrap if info else ""}
        conf.update((info.extra or {}).get("admin_client", {}) if info else {})
        try:
            md = AdminClient(conf).list_topics(timeout=2)
        except Exception:  # noqa: BLE001 - not ready yet
            return False
        return bool(md.brokers)

    # --- stop ------------------------------------------------------------------------------------
    def stop(self, remove: bool = True, wait_s: float = 30.0) -> SandboxInfo | None:
        """Stop the broker (SIGTERM, then SIGKILL after wait_s) and remove the state directory."""
        info = self.info()
        if info and _alive(info.pid):
            _terminate(info.pid, wait_s)
        if remove and self.dir.exists() and (self.dir / STATE_FILE).exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        return info


def _terminate(pid: int, wait_s: float) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        _reap(pid)
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _cluster_id() -> str:
    import base64

    while True:
        # Like Kafka's Uuid.randomUuid: an id starting with "-" would be read as an option.
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
