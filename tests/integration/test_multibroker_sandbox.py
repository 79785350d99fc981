"""The 3-node sandbox: production-shaped replication, node control from the CLI, --security."""

import json

import pytest

from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import wait_until
from tests.integration.test_sandbox import _transactions_round_trip

pytestmark = [pytest.mark.multibroker, pytest.mark.timeout(900)]


def _broker_config(kafka, node: int) -> dict[str, str]:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    res = ConfigResource(ResourceType.BROKER, str(node))
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})  # kept alive until the result is in
    entries = admin.describe_configs([res])[res].result(30)
    return {k: v.value for k, v in entries.items()}


def test_three_nodes_replicate_like_production(cluster3):
    info = cluster3.sandbox.info()
    assert [n.roles for n in info.node_list()] == ["broker,controller"] * 3
    assert cluster3.sandbox.brokers_in_metadata(info) == {1, 2, 3}
    for node in (1, 2, 3):
        conf = _broker_config(cluster3, node)
        assert (
            conf["min.insync.replicas"],
            conf["transaction.state.log.min.isr"],
            conf["transaction.state.log.replication.factor"],
            conf["default.replication.factor"],
            conf["offsets.topic.replication.factor"],
        ) == ("2", "2", "3", "3", "3")
    topic = cluster3.create_topic(replication=-1)  # the broker's default RF
    _transactions_round_trip(cluster3.bootstrap, topic)
    assert ch.isr_full(cluster3, topic) and ch.isr_full(cluster3, "__transaction_state")


def test_cli_node_control_and_failover(cluster3):
    state = cluster3.sandbox.dir
    topic = cluster3.create_topic(replication=3)  # one partition: the round trip checks order
    status = ch.run(cluster3, "sandbox", "status", "--state-dir", str(state), "-o", "json", expect=0)
    assert [(n["id"], n["state"]) for n in json.loads(status.stdout)["nodes"]] == [
        (1, "running"),
        (2, "running"),
        (3, "running"),
    ]
    victim = ch.leaders(cluster3, topic)[0]
    try:
        killed = ch.run(
            cluster3, "sandbox", "kill-node", str(victim), "--state-dir", str(state), "-o", "json", expect=0
        )
        assert json.loads(killed.stdout)["state"] == "stopped", killed.stderr
        # a node is down: a problem found (3)
        status = ch.run(cluster3, "sandbox", "status", "--state-dir", str(state), "-o", "json", expect=3)
        assert {n["id"]: n["state"] for n in json.loads(status.stdout)["nodes"]}[victim] == "stopped"
        # The controller fences the dead broker and moves its leaderships; transactions go on.
        wait_until(
            lambda: ch.leaders(cluster3, topic)[0] not in (victim, -1),
            ch.FENCE_WAIT_S,
            "partition 0 to get a new leader",
            every=0.5,
            tolerate=ch.MOVING,
        )
        _transactions_round_trip(cluster3.bootstrap, topic)
    finally:
        started = ch.run(
            cluster3, "sandbox", "start-node", str(victim), "--state-dir", str(state), "-o", "json"
        )
    assert started.returncode == 0 and json.loads(started.stdout)["state"] == "running", started.stderr
    ch.wait_healthy(cluster3, [topic])

    paused = ch.run(cluster3, "sandbox", "pause-node", "3", "--state-dir", str(state), "-o", "json")
    try:
        assert json.loads(paused.stdout)["state"] == "paused", paused.stderr
    finally:
        resumed = ch.run(cluster3, "sandbox", "resume-node", "3", "--state-dir", str(state), "-o", "json")
    assert json.loads(resumed.stdout)["state"] == "running", resumed.stderr
    stopped = ch.run(cluster3, "sandbox", "stop-node", "3", "--state-dir", str(state), "-o", "json")
    try:
        assert json.loads(stopped.stdout)["state"] == "stopped", stopped.stderr
    finally:
        again = ch.run(cluster3, "sandbox", "start-node", "3", "--state-dir", str(state), "-o", "json")
    assert json.loads(again.stdout)["state"] == "running", again.stderr
    bad = ch.run(cluster3, "sandbox", "kill-node", "7", "--state-dir", str(state), expect=2)
    assert "no node 7" in bad.stderr
    ch.wait_healthy(cluster3, [topic])


def test_three_nodes_with_sasl_ssl(tmp_path):
    """--security with --brokers 3: every node's client listener secured, one client.properties
    naming all three, inter-broker traffic on each node's own internal listener."""
    from tests.conftest import Kafka

    state = tmp_path / "sb"
    kafka = Kafka("", None, None)
    started = ch.run(
        kafka,
        "sandbox",
        "start",
        "--brokers",
        "3",
        "--port",
        "0",
        "--heap",
        "384m",
        "--security",
        "sasl_ssl",
        "--state-dir",
        str(state),
        "-o",
        "json",
        timeout=400,
    )
    try:
        assert started.returncode == 0, started.stderr
        info = json.loads(started.stdout)
        assert len(info["bootstrap"].split(",")) == 3 and len(info["nodes"]) == 3
        props = state / "security" / "admin.properties"
        assert f"bootstrap.servers={info['bootstrap']}" in props.read_text()
        # no node has a plaintext client listener: exit 1
        ch.run(Kafka(info["bootstrap"], None, None), "find-hanging", "--timeout", "10", expect=1)
        found = ch.run(kafka, "find-hanging", "--command-config", str(props), "-o", "json", expect=0)
        assert json.loads(found.stdout)["hanging"] == [], found.stderr
    finally:
        ch.run(kafka, "sandbox", "stop", "--state-dir", str(state))
