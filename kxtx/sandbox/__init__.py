"""A real single-node KRaft Apache Kafka broker on loopback, for trying kxtx and for its tests."""

from kxtx.sandbox.broker import Sandbox, default_state_dir
from kxtx.sandbox.distribution import KafkaDistribution, resolve_distribution
from kxtx.sandbox.nodes import SandboxInfo

__all__ = ["KafkaDistribution", "Sandbox", "SandboxInfo", "default_state_dir", "resolve_distribution"]
