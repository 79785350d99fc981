"""Shared fixtures. Integration tests get a real broker: the sandbox (the same code as
`kxtx sandbox`) or an external one from KXTX_TEST_BOOTSTRAP. A missing broker is an error, not a skip."""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kxtx import fast
from tests import cli

ROOT = cli.ROOT


#: Tests of a fast path's own code (kxtx.fast), which KXTX_FAST=0 turns off: skipped then. The
#: `fastpath` tests that hold it against the general path run both ways (scripts/test.sh).
fast_only = pytest.mark.skipif(
    fast.every_path_off(),
    reason="tests a fast path itself, which KXTX_FAST=0 turns off",
)


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
    listeners: object | None = None  # SecureListeners of a secured sandbox

    @property
    def major(self) -> int:
        return int((self.version or "4").split(".")[0])

    def settings(self, **props):
        from kxtx.client.settings import Settings

        return Settings(props={"bootstrap.servers": self.bootstrap, **props}, timeout=30)

    def java_tool(self, main_class: str, *args: str) -> list[str]:
        """argv for a Kafka main class from the broker's own jars."""
        if not self.libs:
            pytest.fail("this test runs Kafka's own tools: needs the sandbox broker, not KXTX_TEST_BOOTSTRAP")
        from kxtx.sandbox import KafkaDistribution
        from kxtx.sandbox.distribution import TOOL_JVM_OPTIONS

        return KafkaDistribution(self.version, Path(self.libs)).java(main_class, *args, jvm=TOOL_JVM_OPTIONS)

    def create_topic(
        self,
        name: str | None = None,
        partitions: int = 1,
        config: dict | None = None,
        replication: int = 1,
        replicas: list[list[int]] | None = None,
    ) -> str:
        """A new topic; `replicas`: each partition's replica list, its preferred leader first."""
        from confluent_kafka.admin import AdminClient, NewTopic

        name = name or f"t-{uuid.uuid4().hex[:10]}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        shape = (
            {"num_partitions": len(replicas), "replication_factor": -1, "replica_assignment": replicas}
            if replicas
            else {"num_partitions": partitions, "replication_factor": replication}
        )
        fut = admin.create_topics([NewTopic(name, config=config or {}, **shape)])[name]
        fut.result(timeout=30)
        _wait_for_leaders(admin, name, len(replicas) if replicas else partitions)
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


#: The test brokers' JIT: C1 only; the protocol and the data are the same, and the brokers take
#: about half the CPU (bench/README.md, "The test suite's brokers").
BROKER_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)
# ... also for the sandboxes the tests start through the CLI (`kxtx sandbox start`, the README's and docs/
# pages' examples), which read it from the environment.
os.environ.setdefault("KXTX_SANDBOX_JVM_OPTIONS", " ".join(BROKER_JVM_OPTIONS))

#: A one-node test broker's idle work: its controller writes a no-op record to the metadata log
#: every 10 s instead of every 0.5 s (KIP-835's liveness signal; nothing in one node waits on it),
#: which saves CPU while the session brokers idle, most of a run (bench/README.md, "The test
#: suite's brokers"). The 3-node clusters keep Kafka's default: their controller failovers are what
#: the fault tests prove.
SINGLE_NODE_CONFIG = {"metadata.max.idle.interval.ms": "10000"}

#: The 3-node cluster of the `multibroker` tests. Verification off: the hanging-transaction tests make
#: truly hanging transactions (see txn_helpers); it changes nothing for clients that follow the protocol.
CLUSTER3_CONFIG = {
    "transaction.partition.verification.enable": "false",
    "transaction.max.timeout.ms": "600000",
}


class Brokers:
    """Every sandbox the tests start, started here: one broker or an N-node cluster (controller quorum,
    RF 3, min.insync.replicas 2 from 3 nodes), optionally with secured listeners (`SecureListeners`
    mode, e.g. "sasl_ssl"). A sandbox is started once per distinct request and shared by everyone who
    asks for the same thing in this process (with pytest-xdist: in this worker); all stop at session end."""

    def __init__(self) -> None:
        self._started: dict[tuple, Kafka] = {}

    @staticmethod
    def _key(broker_config: dict | None, nodes: int, security: str | None, version: str | None) -> tuple:
        version = version or os.environ.get("KXTX_TEST_KAFKA_VERSION", "4")
        return (version, nodes, security, tuple(sorted((broker_config or {}).items())))

    def __call__(
        self,
        broker_config: dict | None = None,
        *,
        nodes: int = 1,
        security: str | None = None,
        version: str | None = None,
    ) -> Kafka:
        key = self._key(broker_config, nodes, security, version)
        if key not in self._started:
            self._started[key] = self._start(key[0], nodes, security, dict(broker_config or {}))
        return self._started[key]

    def stop_cluster3(self) -> None:
        """Stop the `cluster3` cluster (a later request starts a new one)."""
        key = self._key(CLUSTER3_CONFIG, 3, None, None)
        if key in self._started:
            self._stop([self._started.pop(key)])

    def stop_module_brokers(self) -> None:
        """Stop every sandbox but the session broker (`kafka`) and the 3-node cluster (`cluster3`).
        The others (a secured broker, one with verification off, another version) are asked for by
        module-scoped fixtures only, whose tests run one after the other on one worker: kept to the
        session's end, each idled beside the tests that followed (3-4 per worker), where starting
        one again for a later module costs one broker start."""
        keep = {self._key(None, 1, None, None), self._key(CLUSTER3_CONFIG, 3, None, None)}
        extra = [key for key in self._started if key not in keep]
        self._stop([self._started.pop(key) for key in extra])

    @staticmethod
    def _start(version: str, nodes: int, security: str | None, config: dict) -> Kafka:
        from kxtx.sandbox import Sandbox

        listeners = None
        if security:
            from kxtx.sandbox.security import SecureListeners

            listeners = SecureListeners(security)
        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-test-broker-"))
        # One node 768 MiB; a cluster's nodes 384 MiB each: three JVMs next to the session broker
        # and Spark on a CI runner.
        info = sandbox.start(
            kafka_version=version,
            port=0,
            broker_config={**SINGLE_NODE_CONFIG, **config} if nodes == 1 else config,
            heap="768m" if nodes == 1 else "384m",
            listeners=listeners,
            brokers=nodes,
            wait_s=120 if nodes == 1 else 240,
            jvm_options=BROKER_JVM_OPTIONS,
        )
        return Kafka(info.bootstrap, info.kafka_version, info.libs, sandbox, listeners)

    def stop_all(self) -> None:
        started, self._started = list(self._started.values()), {}
        self._stop(started)

    @staticmethod
    def _stop(started: list[Kafka]) -> None:
        """Stop every sandbox, even when stopping one fails (that error is raised after)."""
        errors = []
        for k in started:
            try:
                k.sandbox.stop()  # type: ignore[attr-defined]
            except Exception as e:  # noqa: BLE001 - the others must still stop
                errors.append(e)
        if errors:
            raise errors[0]


#: where the hooks below find the session's Brokers
BROKERS_KEY = pytest.StashKey[Brokers]()


@pytest.fixture(scope="session")
def brokers(request):
    """The sandbox factory (see Brokers): `brokers(config, nodes=3, security="ssl", version="3.9")`."""
    factory = Brokers()
    request.config.stash[BROKERS_KEY] = factory
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture(scope="module", autouse=True)
def _module_brokers(request):
    """At the end of each integration module, stop the sandboxes its module-scoped fixtures asked
    for (Brokers.stop_module_brokers). Autouse, so set up before those fixtures and torn down after."""
    if "integration" not in request.path.parts:
        yield
        return
    factory = request.getfixturevalue("brokers")
    yield
    factory.stop_module_brokers()


@pytest.fixture(scope="module")
def cluster3(brokers):
    """The 3-node cluster of the `multibroker` tests; tests that kill nodes restart them. Shared by
    every module that asks for it (the factory keeps it) until the last of its tests in this process
    has run (pytest_runtest_teardown below); module-scoped so that a later request can start it again."""
    if os.environ.get("KXTX_TEST_BOOTSTRAP"):
        pytest.fail(
            "multibroker tests start their own 3-node sandbox; run them without KXTX_TEST_BOOTSTRAP "
            "or deselect them with -m 'not multibroker'"
        )
    return brokers(CLUSTER3_CONFIG, nodes=3)


@pytest.fixture(scope="session")
def kafka(brokers):
    external = os.environ.get("KXTX_TEST_BOOTSTRAP")
    if external:
        return Kafka(external, os.environ.get("KXTX_TEST_KAFKA_VERSION"), None)
    return brokers()


@pytest.fixture(scope="session")
def spark_session():
    """One local[2] SparkSession for the tests that run the pipe engine in-process
    (`pipe_helpers.run_in_process`): a JVM start is most of a short pipe run's cost. Its users share
    an xdist worker (the "spark-session" group), so the suite starts it once."""
    from kxtx.pipe import spark

    session = spark.start("local[2]")
    yield session
    spark.stop(session)


@pytest.fixture(scope="module")
def schema_registry():
    """A real Schema Registry on a loopback port (tests/registry.py), one per test module."""
    from tests import registry

    r = registry.Registry()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def apicurio():
    """Apicurio Registry (tests/registry.py), another implementation of the registry's API, one per
    test module that asks for it (a JVM: 5-15 s to start)."""
    from tests import registry

    r = registry.Apicurio()
    yield r
    r.stop()


@pytest.fixture(scope="module", params=["axonops", "apicurio"])
def each_registry(request):
    """The test once against AxonOps (`schema_registry`) and once against Apicurio (`apicurio`),
    each started once per module: module-scoped, so pytest runs a module's AxonOps cases, then its
    Apicurio ones. `known_bug` marks a case one of them cannot do."""
    return request.getfixturevalue("schema_registry" if request.param == "axonops" else "apicurio")


def known_bug(request, registry: str, reason: str) -> None:
    """Mark this test xfail(strict) when it runs against `registry` ("axonops", "apicurio") of
    `each_registry`: a case that registry's bug keeps from passing, kept so that a fixed release
    shows up as an XPASS failure."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("each_registry") == registry:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


@pytest.fixture
def topic(kafka) -> str:
    """A fresh single-partition topic."""
    return kafka.create_topic()


def json_doc(r: Any) -> Any:
    """The JSON document a kxtx run printed (`-o json`), after checking the run succeeded (its
    stderr is the failure message)."""
    return json.loads(cli.check(r, 0).stdout)


@pytest.fixture
def run_kxtx(kafka):
    """`cli.run` against the `kafka` broker (KXTX_BOOTSTRAP_SERVERS; `bootstrap=False` leaves it
    empty). It fails unless the exit code is `expect` (0 unless told; `None`: not checked)."""

    def run(*args: str, expect: cli.Expect = 0, bootstrap: bool = True, **kw: Any) -> cli.Result:
        __tracebackhide__ = True
        env = {"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap if bootstrap else "", **(kw.pop("env", None) or {})}
        return cli.run(*args, expect=expect, env=env, **kw)

    return run


#: The multibroker tests run on two workers, each with its own 3-node cluster: on one they took
#: most of their stage, and the rest of the suite could not finish before them (bench/README.md,
#: "The test suite's brokers").
#: Files not named here are in "cluster3". The two halves are about as long (chaos and the produce
#: faults; the pipe faults and the rest).
CLUSTER3_GROUPS = {
    "test_multibroker_pipe.py": "cluster3b",
    "test_multibroker_sandbox.py": "cluster3b",
    "test_multibroker_monitor.py": "cluster3b",
}


def _xdist_group(item: pytest.Item) -> str | None:
    """The tests that must share one pytest-xdist worker (`--dist loadgroup`, set in pyproject.toml),
    because a fixture they share is expensive and would otherwise start once per worker: the
    `multibroker` tests (a 3-node cluster per group of CLUSTER3_GROUPS), the in-process pipe tests
    (one SparkSession), and a module's tests that use one of its module-scoped
    fixtures (a special broker, a Spark cluster or session, a scene of transactions). Other tests go
    to any worker, one at a time."""
    names = getattr(item, "fixturenames", ())
    if item.get_closest_marker("multibroker") or "cluster3" in names:
        return CLUSTER3_GROUPS.get(item.path.name, "cluster3")
    if "spark_session" in names:
        return "spark-session"
    defs = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
    for name in names:
        if any(d.scope in ("module", "class") for d in defs.get(name, ())):
            return item.nodeid.split("::")[0]
    return None


def _cluster3_wanted_later(item: pytest.Item, nextitem: pytest.Item | None) -> bool:
    """Whether a test after `item` in this process uses `cluster3`. An xdist worker runs a test only
    once it knows the next one (or is told to finish), and gets a group's tests all together, so the
    next test decides; a serial run has the whole list."""
    if hasattr(item.config, "workerinput"):
        return nextitem is not None and "cluster3" in nextitem.fixturenames
    later = item.session.items[item.session.items.index(item) + 1 :]
    return any("cluster3" in other.fixturenames for other in later)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After the last test in this process that uses `cluster3`, stop it: its group ends well before
    the stage does, and three idle nodes would use CPU the rest of the stage needs (the stage is
    CPU-bound). Session end stops it anyway, so the last test of all is left to that."""
    yield
    factory = item.config.stash.get(BROKERS_KEY, None)
    if (
        factory is not None
        and nextitem is not None
        and "cluster3" in item.fixturenames
        and not _cluster3_wanted_later(item, nextitem)
    ):
        factory.stop_cluster3()


# First: xdist's own hook reads the xdist_group markers to group the tests.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.kafka)
        group = _xdist_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            groups.setdefault(group, []).append(item)
    if hasattr(config, "workerinput"):
        # A worker hands its tests out in this order (`--no-loadscope-reorder`): the longest groups
        # first (the clusters' fault tests, one worker each), then the other groups, largest
        # first, then single tests that keep every worker busy to the end.
        order = sorted(groups, key=lambda g: (not g.startswith("cluster3"), -len(groups[g])))
        grouped = [item for g in order for item in groups[g]]
        items[:] = grouped + [item for item in items if not item.get_closest_marker("xdist_group")]


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_xdist_suffix(config, items):
    """`--dist loadgroup` sends a test's group to the controller as an `@group` suffix that
    pytest-xdist 3.8 adds to the test's node id in its own hook (which runs before this one). pytest 9.2
    keeps node ids in a structured `_id` that xdist does not update, so the groups are silently lost
    (pytest-xdist issue 1386) and each worker would start its own cluster. Until xdist fixes it, add
    the suffix here when xdist could not."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist workers only
        return
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark and not item.nodeid.endswith(f"@{mark.args[0]}") and hasattr(item, "_id"):
            item._id = type(item._id).parse(f"{item.nodeid}@{mark.args[0]}")
