"""Start, watch and stop a KRaft sandbox on loopback: one node, or N nodes with a controller quorum.

The sandbox's files (config, data, logs, the state file) live in a state directory, one
`node-<id>/` folder per node; `stop` removes it. The same code serves `kxtx sandbox` and the tests.
Node control (`stop_node`, `start_node`, `kill_node`, `pause_node`) rehearses failover: a stopped
node keeps its data and rejoins with it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from kxtx import fast
from kxtx.errors import KxtxError, UsageError
from kxtx.fast import jvmcds
from kxtx.sandbox import nodes as _nodes
from kxtx.sandbox import registry as _registry
from kxtx.sandbox.distribution import TOOL_JVM_OPTIONS, KafkaDistribution, require_tool, resolve_distribution
from kxtx.sandbox.nodes import NodeInfo, RegistryInfo, SandboxInfo, free_port

if TYPE_CHECKING:
    from kxtx.sandbox.security import SecureListeners

STATE_FILE = "sandbox.json"
#: extra JVM options for every node (`kxtx sandbox start`)
JVM_OPTIONS_ENV = "KXTX_SANDBOX_JVM_OPTIONS"
#: "off" turns the nodes' class-data archive off (kxtx.fast.jvmcds; on by default)
#: Most nodes a loopback sandbox starts (each is a JVM; beyond this a laptop only swaps).
MAX_NODES = 9


def default_state_dir() -> Path:
    if os.environ.get("KXTX_SANDBOX_DIR"):
        return Path(os.environ["KXTX_SANDBOX_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kxtx" / "sandbox"


def env_jvm_options() -> list[str]:
    """$KXTX_SANDBOX_JVM_OPTIONS, split as a shell would (e.g. "-XX:TieredStopAtLevel=1")."""
    value = os.environ.get(JVM_OPTIONS_ENV, "")
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise UsageError(f"{JVM_OPTIONS_ENV}: {exc}: {value!r}") from None


def default_heap(nodes: int) -> str:
    """1 GiB for one node; 512 MiB each from two on (3 nodes stay well under 4 GiB resident)."""
    return "1g" if nodes <= 1 else "512m"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def node_state(node: NodeInfo) -> str:
    """running | paused (SIGSTOP) | starting (process up, port closed) | stopped."""
    if not _nodes.alive(node.pid):
        return "stopped"
    if _nodes.paused(node.pid):
        return "paused"
    return "running" if _port_open(node.port) else "starting"


class Sandbox:
    def __init__(self, state_dir: str | os.PathLike | None = None) -> None:
        self.dir = Path(state_dir) if state_dir else default_state_dir()

    # --- queries ---------------------------------------------------------------------------------
    def info(self) -> SandboxInfo | None:
        try:
            data = json.loads((self.dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        info = SandboxInfo(**data)
        if not info.nodes:  # a state file written before multi-node sandboxes
            info.nodes = [asdict(NodeInfo(1, info.port, info.controller_port, str(self.dir), info.pid))]
        info.running = all(node_state(n) == "running" for n in info.node_list())
        if info.registry is not None:
            info.running = info.running and registry_state(info.registry) == "running"
        return info

    def _save(self, info: SandboxInfo) -> None:
        info.pid = info.nodes[0]["pid"]
        tmp = self.dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(info), indent=2))
        os.replace(tmp, self.dir / STATE_FILE)  # a concurrent `status` never reads half a file

    # --- start -----------------------------------------------------------------------------------
    def start(
        self,
        kafka_version: str | None = None,
        port: int = 9092,
        broker_config: dict[str, str] | None = None,
        kafka_home: str | None = None,
        wait_s: float = 120.0,
        heap: str | None = None,
        listeners: SecureListeners | None = None,
        brokers: int = 1,
        jvm_options: tuple[str, ...] | None = None,
        schema_registry: bool = False,
    ) -> SandboxInfo:
        """Start `brokers` nodes and wait until all answer. `port` is node 1's client port (0 = any
        free port; node i gets port + i - 1). `listeners` customises security (see security).
        `jvm_options` (default: $KXTX_SANDBOX_JVM_OPTIONS) go to every node's JVM after kxtx's own
        (a later option wins). `schema_registry` starts a Schema Registry beside them
        (kxtx.sandbox.registry; its binary is built first when it is not cached)."""
        if not 1 <= brokers <= MAX_NODES:
            raise UsageError(f"--brokers {brokers}: choose 1 to {MAX_NODES}")
        existing = self.info()
        if existing and any(node_state(n) != "stopped" for n in existing.node_list()):
            raise KxtxError(
                f"a sandbox is already running at {existing.bootstrap} (state {self.dir}); "
                "stop it first or use another --state-dir"
            )
        dist = resolve_distribution(kafka_version, kafka_home)
        if schema_registry:  # before any JVM starts: a missing Go fails here
            _registry.binary()
        node_list = self._plan_nodes(brokers, port)
        self._reset_dir(node_list)
        voters = ",".join(f"{n.id}@127.0.0.1:{n.controller_port}" for n in node_list if n.controller_port)
        if listeners is not None:
            listeners.prepare(self.dir, [n.port for n in node_list])
        cluster_id = _cluster_id()
        for node in node_list:
            props = _nodes.node_properties(node, voters, brokers)
            if listeners is not None:
                if node.id > 1:
                    listeners.internal_port = 0  # each node its own inter-broker port
                props.update(listeners.broker_properties(self.dir, node.port, node.controller_port))
                node.internal_port = listeners.internal_port
            props.update(broker_config or {})
            node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            self._format_storage(
                dist, node.config, cluster_id, listeners.format_args() if listeners is not None else []
            )
        bootstrap = ",".join(
            (listeners.bootstrap(n.port) if listeners is not None else f"127.0.0.1:{n.port}")
            for n in node_list
        )
        info = SandboxInfo(
            bootstrap=bootstrap,
            kafka_version=dist.version,
            pid=0,
            port=node_list[0].port,
            controller_port=node_list[0].controller_port or 0,
            state_dir=str(self.dir),
            libs=str(dist.libs),
            started_at=time.time(),
            broker_config=dict(broker_config or {}),
            extra=(asdict(listeners.extra()) if listeners is not None else {}),
            heap=heap or default_heap(brokers),
            jvm_options=list(env_jvm_options() if jvm_options is None else jvm_options),
        )
        # Every node at once: a controller waits for a majority of the voters to come up.
        for node in node_list:
            node.pid = _nodes.launch(self._command(info, node), node)
        info.nodes = [asdict(n) for n in node_list]
        self._save(info)
        try:
            self._wait_ready(info, node_list, wait_s)
            if listeners is not None:
                listeners.after_start(info)  # e.g. ACLs, which need a running broker
            if schema_registry:
                info.schema_registry = asdict(self._start_registry())
                self._save(info)
        except BaseException:
            self.stop(remove=False)
            raise
        return info

    def _start_registry(self) -> RegistryInfo:
        """The registry in its own session (it outlives the CLI, as the nodes do), in memory: its
        schemas go when the sandbox stops."""
        folder = self.dir / "schema-registry"
        folder.mkdir(exist_ok=True)
        port = free_port()
        config = folder / "registry.yaml"
        config.write_text(_registry.config_text(port))
        log = folder / "registry.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                _registry.command(config),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=folder,
            )
        url = f"http://127.0.0.1:{port}"
        reg = RegistryInfo(url=url, port=port, pid=proc.pid, log=str(log), version=_registry.VERSION)
        try:
            _registry.wait_ready(url, lambda: not _nodes.alive(proc.pid), log)
        except BaseException:
            _nodes.terminate(proc.pid, 5)
            raise
        return reg

    def _plan_nodes(self, count: int, port: int) -> list[NodeInfo]:
        voters = _nodes.voter_count(count)
        planned: list[NodeInfo] = []
        for i in range(count):
            client = port + i if port else free_port()
            if port and _port_open(client):
                raise UsageError(
                    f"port {client} is already in use on 127.0.0.1; pick another with "
                    f"--port (node i uses port + i - 1), or --port 0"
                )
            planned.append(
                NodeInfo(
                    id=i + 1,
                    port=client,
                    controller_port=free_port() if i < voters else None,
                    dir=str(self.dir / f"node-{i + 1}"),
                )
            )
        return planned

    def _reset_dir(self, node_list: list[NodeInfo]) -> None:
        if self.dir.exists():
            shutil.rmtree(self.dir)
        for node in node_list:
            (Path(node.dir) / "data").mkdir(parents=True)
        (self.dir / "logs").mkdir()

    def _logging_flags(self) -> tuple[str, str]:
        return (
            f"-Dlog4j.configuration=file:{self._log4j1()}",
            f"-Dlog4j2.configurationFile={self._log4j2()}",
        )

    def _command(self, info: SandboxInfo, node: NodeInfo) -> list[str]:
        jvm = (
            f"-Xmx{info.heap}",
            "-Xms128m",
            "-Djava.awt.headless=true",
            # The JIT and GC get fewer threads: N JVMs share a laptop's (or CI runner's) cores.
            "-XX:CICompilerCount=2",
            "-XX:ParallelGCThreads=2",
            "-XX:ConcGCThreads=1",
            f"-Dkafka.logs.dir={self.dir / 'logs'}",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            *self._logging_flags(),
            *self._cds(info, node),
            *info.jvm_options,
        )
        return info.distribution.java("kafka.Kafka", str(node.config), jvm=jvm)

    @staticmethod
    def _cds(info: SandboxInfo, node: NodeInfo) -> list[str]:
        """The node's class-data archive: mapped when one exists for this java and these jars, else
        written by this node as it stops, unless another node is writing it now (all nodes start at
        once). Records on `node` the file its JVM writes (see `_settle_cds`)."""
        node.cds_pending = ""
        if not fast.enabled("sandbox-cds"):
            return []
        try:
            key = jvmcds.archive_key(
                repr(jvmcds.file_stat(require_tool("java"))), repr(sorted(jvmcds.jar_stats(Path(info.libs))))
            )
        except (OSError, KxtxError):
            return []  # the start itself says what is missing
        options, pending = jvmcds.plan_archive(jvmcds.cache_dir("kafka-cds"), key, one_writer=True)
        node.cds_pending = str(pending or "")
        return options

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

    def _format_storage(
        self, dist: KafkaDistribution, config: Path, cluster_id: str, extra_args: Sequence[str] = ()
    ) -> None:
        proc = subprocess.run(
            dist.java(
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cluster_id,
                "-c",
                str(config),
                "--ignore-formatted",
                *extra_args,
                jvm=(*TOOL_JVM_OPTIONS, *self._logging_flags()),
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            raise KxtxError(f"formatting the sandbox storage failed: {tail[0]}")

    def _wait_ready(self, info: SandboxInfo, node_list: list[NodeInfo], wait_s: float) -> None:
        """Until the cluster's metadata lists every node as a broker."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            for node in node_list:
                if not _nodes.alive(node.pid):
                    raise KxtxError(f"node {node.id} exited during start-up; see {node.log}")
            if all(_port_open(n.port) for n in node_list) and self.brokers_in_metadata(info) >= {
                n.id for n in node_list
            }:
                return
            time.sleep(0.5)
        raise KxtxError(
            f"the sandbox did not answer within {wait_s:.0f}s; see the broker.log files under {self.dir}"
        )

    def brokers_in_metadata(self, info: SandboxInfo, timeout: float = 2) -> set[int]:
        """Ids of the brokers the cluster's metadata lists (empty while nothing answers)."""
        from confluent_kafka.admin import AdminClient

        conf: dict[str, str | int | float | bool] = {"bootstrap.servers": info.bootstrap, "log_level": 2}
        if info.security is not None:
            conf.update(info.security.admin_client)
        try:
            md = AdminClient(conf).list_topics(timeout=timeout)
        except Exception:  # noqa: BLE001 - not ready yet
            return set()
        return set(md.brokers)

    # --- node control (failover rehearsals) --------------------------------------------------------
    def _running_info(self) -> SandboxInfo:
        info = self.info()
        if info is None:
            raise KxtxError(f"no sandbox in {self.dir}; start one with `kxtx sandbox start`")
        return info

    def stop_node(self, node_id: int, wait_s: float = 60.0) -> NodeInfo:
        """SIGTERM: a controlled shutdown (the node hands its leaderships over first)."""
        node = self._running_info().node(node_id)
        killed = _nodes.terminate(node.pid, wait_s)
        _settle_cds(node, exited_normally=not killed)
        return node

    def kill_node(self, node_id: int) -> NodeInfo:
        """SIGKILL: a crash. Leaders on the node move only when the controller fences it."""
        node = self._running_info().node(node_id)
        _nodes.kill(node.pid)
        _settle_cds(node, exited_normally=False)
        return node

    def pause_node(self, node_id: int) -> NodeInfo:
        """SIGSTOP: a stall like a long GC pause; `resume_node` (SIGCONT) ends it."""
        node = self._running_info().node(node_id)
        if _nodes.alive(node.pid):
            _nodes.send(node.pid, signal.SIGSTOP)
            deadline = time.monotonic() + 5  # the kernel stops the threads asynchronously
            while not _nodes.paused(node.pid) and time.monotonic() < deadline:
                time.sleep(0.02)
        return node

    def resume_node(self, node_id: int) -> NodeInfo:
        node = self._running_info().node(node_id)
        if _nodes.alive(node.pid):
            _nodes.send(node.pid, signal.SIGCONT)
        return node

    def start_node(self, node_id: int, wait_s: float = 120.0) -> NodeInfo:
        """Start a stopped or killed node again, with its data, and wait until it is a broker again."""
        info = self._running_info()
        node = info.node(node_id)
        if _nodes.alive(node.pid):
            if _nodes.paused(node.pid):
                _nodes.send(node.pid, signal.SIGCONT)
            return node
        node.pid = _nodes.launch(self._command(info, node), node)
        info.nodes = [asdict(node) if n["id"] == node_id else n for n in info.nodes]
        self._save(info)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _nodes.alive(node.pid):
                raise KxtxError(f"node {node_id} exited during start-up; see {node.log}")
            if _port_open(node.port) and node_id in self.brokers_in_metadata(info):
                return node
            time.sleep(0.5)
        raise KxtxError(f"node {node_id} did not rejoin within {wait_s:.0f}s; see {node.log}")

    # --- stop ------------------------------------------------------------------------------------
    def stop(self, remove: bool = True, wait_s: float = 30.0) -> SandboxInfo | None:
        """Stop every node (SIGTERM, SIGKILL after wait_s) and remove the state directory.

        All nodes at once: one by one, the last voters would wait for a quorum that is gone."""
        info = self.info()
        if info:
            nodes = info.node_list()
            pids = [n.pid for n in nodes]
            if info.registry is not None:
                pids.append(info.registry.pid)
            killed = _nodes.terminate_all(pids, wait_s)
            for node in nodes:
                _settle_cds(node, exited_normally=node.pid not in killed)
            left = [p for p in pids if _nodes.alive(p)]
            if left:  # "stopped" must mean the JVMs are gone; keep the state for another try
                raise KxtxError(
                    f"sandbox process(es) {left} still alive after SIGKILL; state kept in {self.dir}"
                )
        if remove and self.dir.exists() and (self.dir / STATE_FILE).exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        return info


def registry_state(reg: RegistryInfo) -> str:
    """running | paused (SIGSTOP) | stopped."""
    if not _nodes.alive(reg.pid):
        return "stopped"
    return "paused" if _nodes.paused(reg.pid) else "running"


def _settle_cds(node: NodeInfo, exited_normally: bool) -> None:
    """Keep the archive a node's JVM wrote as it stopped; drop one it could not finish."""
    if node.cds_pending and not _nodes.alive(node.pid):
        jvmcds.settle(Path(node.cds_pending), exited_normally)


def _cluster_id() -> str:
    import base64

    while True:
        # Like Kafka's Uuid.randomUuid: an id starting with "-" would be read as an option.
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
