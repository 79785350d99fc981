"""A real single-node KRaft Apache Kafka broker on loopback, for trying kxtx and for its tests."""

from kxtx.sandbox.broker import Sandbox, SandboxInfo, default_state_dir
from kxtx.sandbox.distribution import KafkaDistribution, resolve_distribution

__all__ = ["KafkaDistribution", "Sandbox", "SandboxInfo", "default_state_dir", "resolve_distribution"]
