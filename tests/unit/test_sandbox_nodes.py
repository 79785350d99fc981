"""The multi-node sandbox's configuration, without starting anything."""

import pytest

from kxtx.sandbox.broker import Sandbox, default_heap
from kxtx.sandbox.nodes import (
    EPHEMERAL_DEFAULT,
    NodeInfo,
    ephemeral_range,
    node_properties,
    port_ranges,
    replication_config,
    voter_count,
)


@pytest.mark.parametrize(
    "nodes, voters, rf, isr, heap",
    [
        (1, 1, "1", "1", "1g"),
        (2, 1, "2", "1", "512m"),  # two voters would stop the quorum when either goes
        (3, 3, "3", "2", "512m"),
        (5, 3, "3", "2", "512m"),
    ],
)
def test_shape_by_node_count(nodes, voters, rf, isr, heap):
    conf = replication_config(nodes)
    assert voter_count(nodes) == voters and default_heap(nodes) == heap
    assert (
        conf["transaction.state.log.replication.factor"],
        conf["offsets.topic.replication.factor"],
        conf["default.replication.factor"],
    ) == (rf, rf, rf)
    assert (conf["min.insync.replicas"], conf["transaction.state.log.min.isr"]) == (isr, isr)


def test_plan_gives_controllers_then_brokers(tmp_path):
    planned = Sandbox(tmp_path)._plan_nodes(4, 0)
    assert [n.roles for n in planned] == ["broker,controller"] * 3 + ["broker"]
    assert len({n.port for n in planned}) == 4
    props = node_properties(planned[3], "1@127.0.0.1:1", 4)
    assert props["process.roles"] == "broker" and "CONTROLLER" not in props["listeners"]
    assert props["node.id"] == "4" and props["log.dirs"].endswith("node-4/data")


@pytest.mark.parametrize(
    "ephemeral, floor, expected",
    [
        ((32768, 60999), 20000, [range(20000, 32768), range(61000, 65536)]),  # Linux's default
        ((49152, 65535), 20000, [range(20000, 49152)]),  # IANA's (the BSDs, Windows)
        ((1024, 65535), 20000, []),  # all of it ephemeral: bind(0) is all there is
        ((10000, 19999), 20000, [range(20000, 65536)]),  # entirely below the floor
        ((15000, 30000), 20000, [range(30001, 65536)]),
    ],
)
def test_port_ranges_avoid_the_ephemeral_range(ephemeral, floor, expected):
    assert port_ranges(ephemeral, floor) == expected


def test_free_ports_lie_outside_the_ephemeral_range_and_differ(tmp_path):
    low, high = ephemeral_range()
    planned = Sandbox(tmp_path)._plan_nodes(5, 0)
    ports = [n.port for n in planned] + [n.controller_port for n in planned if n.controller_port]
    assert len(set(ports)) == len(ports) == 8
    if port_ranges((low, high)):
        assert not [p for p in ports if low <= p <= high]


def test_ephemeral_range_reads_proc_or_falls_back(tmp_path):
    f = tmp_path / "range"
    f.write_text("40000\t50000\n")
    assert ephemeral_range(str(f)) == (40000, 50000)
    assert ephemeral_range(str(tmp_path / "missing")) == EPHEMERAL_DEFAULT


@pytest.fixture
def three_ports():
    """Three consecutive loopback sockets, bound but not listening, held for the test: a bound port is
    closed to the sandbox's check and is not handed to another process as an ephemeral port. (A fixed
    port such as 41001 lies inside Linux's ephemeral range; a CI run once found it taken.)"""
    import socket

    for _ in range(50):
        held = [socket.socket()]
        held[0].bind(("127.0.0.1", 0))
        base = held[0].getsockname()[1]
        try:
            for offset in (1, 2):
                held.append(socket.socket())
                held[-1].bind(("127.0.0.1", base + offset))
        except OSError:
            for sock in held:
                sock.close()
            continue
        yield held
        for sock in held:
            sock.close()
        return
    pytest.fail("no three consecutive free loopback ports in 50 tries")


def test_fixed_port_counts_up(tmp_path, three_ports):
    base = three_ports[0].getsockname()[1]
    planned = Sandbox(tmp_path)._plan_nodes(3, base)
    assert [n.port for n in planned] == [base, base + 1, base + 2]


def test_fixed_port_in_use_is_a_usage_error_naming_it(tmp_path, three_ports):
    from kxtx.errors import UsageError

    base = three_ports[0].getsockname()[1]
    three_ports[1].listen()
    with pytest.raises(UsageError, match=f"port {base + 1} is already in use"):
        Sandbox(tmp_path)._plan_nodes(3, base)


def test_unknown_node_is_a_usage_error(tmp_path):
    from kxtx.errors import UsageError
    from kxtx.sandbox.nodes import SandboxInfo

    info = SandboxInfo(
        "b", "4.3.1", 0, 1, 2, str(tmp_path), "", 0.0, nodes=[NodeInfo(1, 1, 2, str(tmp_path)).__dict__]
    )
    with pytest.raises(UsageError, match="no node 7"):
        info.node(7)


@pytest.mark.parametrize("extra", [(), ("-XX:TieredStopAtLevel=1",), ("-Xmx2g", "-XX:+UseSerialGC")])
def test_jvm_options_follow_kxtxs_own_and_survive_the_state_file(tmp_path, extra, monkeypatch):
    """A node restarted from the state file (start_node after kill_node) runs with the options the
    sandbox was started with; they come after kxtx's, so that they win (`-Xmx2g` over the heap)."""
    from dataclasses import asdict

    from kxtx.sandbox.nodes import SandboxInfo

    monkeypatch.setattr("kxtx.sandbox.distribution.require_tool", lambda name: name)
    sandbox = Sandbox(tmp_path)
    node = NodeInfo(1, 1, 2, str(tmp_path))
    info = SandboxInfo(
        "b", "4.3.1", 0, 1, 2, str(tmp_path), "", 0.0, nodes=[asdict(node)], jvm_options=list(extra)
    )
    sandbox._save(info)
    again = sandbox.info()
    assert again is not None and again.jvm_options == list(extra)
    argv = sandbox._command(again, node)
    jvm = argv[: argv.index("-cp")]
    assert jvm[0] == "java" and jvm[1] == "-Xmx1g"
    assert tuple(jvm[len(jvm) - len(extra) :]) == extra


def test_storage_format_runs_with_the_tool_jvm_options(tmp_path, monkeypatch):
    from kxtx.sandbox.distribution import TOOL_JVM_OPTIONS, KafkaDistribution

    seen = []
    monkeypatch.setattr("kxtx.sandbox.distribution.require_tool", lambda name: name)
    monkeypatch.setattr(
        "kxtx.sandbox.broker.subprocess.run",
        lambda argv, **kw: seen.append(argv) or type("R", (), {"returncode": 0})(),
    )
    Sandbox(tmp_path)._format_storage(KafkaDistribution("4.3.1", tmp_path), tmp_path / "c", "id")
    (argv,) = seen
    assert tuple(argv[1 : 1 + len(TOOL_JVM_OPTIONS)]) == TOOL_JVM_OPTIONS
    assert argv[argv.index("-cp") + 2 : argv.index("-cp") + 4] == ["kafka.tools.StorageTool", "format"]


@pytest.mark.parametrize(
    "value, want",
    [
        ("", []),
        ("-XX:TieredStopAtLevel=1", ["-XX:TieredStopAtLevel=1"]),
        ("  -Xss1m   -Dx='a b' ", ["-Xss1m", "-Dx=a b"]),
    ],
)
def test_jvm_options_from_the_environment(monkeypatch, value, want):
    from kxtx.sandbox.broker import env_jvm_options

    monkeypatch.setenv("KXTX_SANDBOX_JVM_OPTIONS", value)
    assert env_jvm_options() == want


def test_an_unbalanced_quote_in_the_jvm_options_is_a_usage_error(monkeypatch):
    from kxtx.errors import UsageError
    from kxtx.sandbox.broker import env_jvm_options

    monkeypatch.setenv("KXTX_SANDBOX_JVM_OPTIONS", "-Dx='a")
    with pytest.raises(UsageError, match="KXTX_SANDBOX_JVM_OPTIONS: No closing quotation"):
        env_jvm_options()


@pytest.mark.parametrize("xdg", [False, True])
def test_maven_repository_is_under_kxtxs_cache_dir(tmp_path, monkeypatch, xdg):
    """mvn's downloads land in kxtx's cache dir, which follows HOME / XDG_CACHE_HOME: not in the
    ~/.m2 of the user in the password database (Java's user.home), whatever HOME says."""
    from kxtx.sandbox import distribution

    calls = tmp_path / "argv"
    fake = tmp_path / "mvn"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {calls}\n')
    fake.chmod(0o755)
    monkeypatch.setattr("kxtx.sandbox.distribution.require_tool", lambda name: str(fake))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        cache = tmp_path / "xdg" / "kxtx"
    else:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        cache = tmp_path / "home" / ".cache" / "kxtx"
    distribution._mvn("<project/>", ["dependency:list"], "listing")
    argv = calls.read_text().splitlines()
    assert f"-Dmaven.repo.local={cache / 'maven'}" in argv
    assert argv[-1] == "dependency:list"
    assert distribution.cache_root() == cache / "kafka"
