"""One sandbox node: its ports, its server.properties, its process.

A sandbox of N nodes runs a KRaft controller quorum inside the first nodes (process.roles =
broker,controller: one JVM per node, which keeps 3 nodes well under 4 GiB) and plain brokers after
them. Three voters when N >= 3, so any one node can be killed and the quorum keeps a majority; one
voter below that (two voters would make either node's loss stop the quorum, which is worse than one).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kxtx.errors import UsageError
from kxtx.sandbox.distribution import KafkaDistribution

#: Settings suited to transactions on loopback. Unknown keys are ignored by older brokers.
BASE_CONFIG = {
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "num.partitions": "1",
    # Groups form at once: nothing to wait for with one test consumer.
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
}


def voter_count(nodes: int) -> int:
    return 3 if nodes >= 3 else 1


def replication_config(nodes: int) -> dict[str, str]:
    """Production-shaped durability: RF = min(3, N); min.insync.replicas = 2 from 3 nodes on."""
    rf = str(min(3, nodes))
    isr = "2" if nodes >= 3 else "1"
    return {
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": isr,
        "default.replication.factor": rf,
        "min.insync.replicas": isr,
    }


@dataclass
class NodeInfo:
    id: int
    port: int
    controller_port: int | None  # None: broker only
    dir: str
    pid: int = 0
    #: a secured sandbox's plaintext inter-broker listener (0 when there is none)
    internal_port: int = 0
    #: the class-data archive this node's JVM writes as it exits ("" when it maps one or none)
    cds_pending: str = ""

    @property
    def roles(self) -> str:
        return "broker,controller" if self.controller_port else "broker"

    @property
    def config(self) -> Path:
        return Path(self.dir) / "server.properties"

    @property
    def log(self) -> Path:
        return Path(self.dir) / "broker.log"


def node_properties(node: NodeInfo, voters: str, nodes: int) -> dict[str, str]:
    props = dict(BASE_CONFIG)
    props.update(replication_config(nodes))
    listeners = f"PLAINTEXT://127.0.0.1:{node.port}"
    if node.controller_port:
        listeners += f",CONTROLLER://127.0.0.1:{node.controller_port}"
    props.update(
        {
            "process.roles": node.roles,
            "node.id": str(node.id),
            "controller.quorum.voters": voters,
            "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(Path(node.dir) / "data"),
        }
    )
    return props


def launch(cmd: list[str], node: NodeInfo) -> int:
    """Start the node's JVM in its own session (it outlives the CLI) and return its pid."""
    # The child keeps its own descriptor; the parent's copy is closed when the block ends.
    with open(node.log, "ab") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    return proc.pid


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed node whose parent (e.g. the test process that started it) has not reaped it yet.
    return _proc_state(pid) not in ("Z", "X")


def _proc_state(pid: int) -> str:
    """The process state letter from /proc (Linux); "" where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[0]


def paused(pid: int) -> bool:
    """True when the process is stopped by SIGSTOP (state T)."""
    return _proc_state(pid) in ("T", "t")


def send(pid: int, sig: int) -> None:
    """Signal the node's whole process group (the JVM is its leader)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def terminate(pid: int, wait_s: float) -> bool:
    """SIGTERM (a controlled shutdown: leaders move away first), SIGKILL after wait_s; whether it
    took the SIGKILL."""
    return bool(terminate_all([pid], wait_s))


def terminate_all(pids: list[int], wait_s: float) -> list[int]:
    """SIGTERM to each; SIGKILL to those still alive after wait_s, which are returned."""
    pids = [p for p in pids if alive(p)]
    for pid in pids:
        if paused(pid):
            send(pid, signal.SIGCONT)  # a stopped JVM cannot act on SIGTERM
        send(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    killed = [pid for pid in pids if alive(pid)]
    for pid in killed:
        kill(pid)
    return killed


def kill(pid: int) -> None:
    send(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _reap(pid: int) -> None:
    """Collect a child that exited (when this process started it), so it does not look alive."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


@dataclass(frozen=True)
class SecurityInfo:
    """What a secured sandbox keeps in its state (`SandboxInfo.extra`, written by
    kxtx.sandbox.security): the client listener's security, each user's Java client.properties and
    principal, and the admin's librdkafka config (for the readiness probe and the ACLs; never shown)."""

    security: str
    client_properties: dict[str, str]
    principals: dict[str, str]
    admin_client: dict[str, str]


@dataclass(frozen=True)
class RegistryInfo:
    """The sandbox's schema registry (`kxtx sandbox start --schema-registry`): where it listens,
    its process (the leader of its own process group), its log."""

    url: str
    port: int
    pid: int
    log: str
    version: str


@dataclass
class SandboxInfo:
    bootstrap: str
    kafka_version: str
    pid: int  # node 1's (the only node of a one-node sandbox)
    port: int  # node 1's
    controller_port: int
    state_dir: str
    libs: str
    started_at: float
    broker_config: dict[str, str] = field(default_factory=dict)
    #: True when every node runs
    running: bool = True
    #: a secured sandbox's `SecurityInfo` as a dict (the state file's form; read it as `security`)
    extra: dict = field(default_factory=dict)
    nodes: list[dict] = field(default_factory=list)
    heap: str = "1g"
    #: JVM options added to every node's (kept here so a restarted node runs with them too)
    jvm_options: list[str] = field(default_factory=list)
    #: the schema registry beside the nodes (`RegistryInfo` as a dict; empty when there is none)
    schema_registry: dict = field(default_factory=dict)

    @property
    def security(self) -> SecurityInfo | None:
        """What a secured sandbox added (None for a plaintext one)."""
        return SecurityInfo(**self.extra) if self.extra else None

    @property
    def registry(self) -> RegistryInfo | None:
        return RegistryInfo(**self.schema_registry) if self.schema_registry else None

    @property
    def distribution(self) -> KafkaDistribution:
        return KafkaDistribution(self.kafka_version, Path(self.libs))

    def node_list(self) -> list[NodeInfo]:
        return [NodeInfo(**n) for n in self.nodes]

    def node(self, node_id: int) -> NodeInfo:
        for n in self.node_list():
            if n.id == node_id:
                return n
        ids = ", ".join(str(n.id) for n in self.node_list())
        raise UsageError(f"no node {node_id} in the sandbox at {self.state_dir} (nodes: {ids})")


#: Where free_port looks first: below the kernel's ephemeral range (and above the ports services
#: commonly take), then above it.
PORT_FLOOR = 20000
#: Linux's default ephemeral range, when /proc does not say.
EPHEMERAL_DEFAULT = (32768, 60999)
_handed_out: set[int] = set()


def ephemeral_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    try:
        low, high = (int(x) for x in Path(path).read_text().split())
    except (OSError, ValueError):
        return EPHEMERAL_DEFAULT
    return low, high


def port_ranges(ephemeral: tuple[int, int], floor: int = PORT_FLOOR) -> list[range]:
    """The ports outside the ephemeral range `ephemeral` (inclusive bounds), from `floor` up."""
    low, high = ephemeral
    return [r for r in (range(floor, min(low, 65536)), range(max(high + 1, floor), 65536)) if len(r)]


def free_port() -> int:
    """A loopback port free now, for a program (a JVM) that binds it a few seconds later.

    Taken outside the kernel's ephemeral range: a port bind(0) returns comes from that range, where
    the kernel also picks the local ports of outgoing connections, and on a busy machine (a test
    suite's clients, brokers and Spark) one of them took it before the JVM bound it, so the node
    exited at start-up with "Address already in use". Random, so concurrent sandboxes rarely pick
    the same; never twice in one process."""
    import random

    candidates = [p for r in port_ranges(ephemeral_range()) for p in random.sample(r, min(len(r), 50))]
    random.shuffle(candidates)
    for port in candidates:
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    with socket.socket() as s:  # every range is the ephemeral one (or busy): any free port
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM binds its listeners
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
