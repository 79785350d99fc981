"""The multi-node sandbox's configuration, without starting anything."""

import pytest

from kxtx.sandbox.broker import Sandbox, default_heap
from kxtx.sandbox.nodes import NodeInfo, node_properties, replication_config, voter_count


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


def test_fixed_port_counts_up(tmp_path):
    planned = Sandbox(tmp_path)._plan_nodes(3, 41000)
    assert [n.port for n in planned] == [41000, 41001, 41002]


def test_unknown_node_is_a_usage_error(tmp_path):
    from kxtx.errors import UsageError
    from kxtx.sandbox.broker import SandboxInfo

    info = SandboxInfo(
        "b", "4.3.1", 0, 1, 2, str(tmp_path), "", 0.0, nodes=[NodeInfo(1, 1, 2, str(tmp_path)).__dict__]
    )
    with pytest.raises(UsageError, match="no node 7"):
        info.node(7)
