"""A sandbox broker with a secured client listener (`kxtx sandbox start --security ...`), its users'
client.properties, ACL and topic helpers as admin, and hanging transactions made over that listener."""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import time
import uuid
from dataclasses import dataclass

from tests import cli

#: As in test_hanging: lets a transactional Produce reach a partition never added to the transaction.
BROKER_CONFIG = {
    "transaction.partition.verification.enable": "false",
    "transaction.max.timeout.ms": "600000",
}


@dataclass
class SecureBroker:
    mode: str
    bootstrap: str
    listeners: object
    sandbox: object
    version: str

    # --- the users ------------------------------------------------------------------------------------
    def properties(self, user: str) -> str:
        return str(self.listeners.dir / f"{user}.properties")

    def password(self, user: str) -> str:
        return self.listeners.passwords[user]

    def secrets(self, user: str) -> list[str]:
        """Strings that must never appear in kxtx's output for this user."""
        out = [self.listeners.passwords[user]] if self.listeners.sasl else []
        if self.mode == "ssl":
            out.append(self.listeners.store_password)
        return out

    def conf(self, user: str = "admin") -> dict:
        return {"bootstrap.servers": self.bootstrap, **self.listeners.client_config(user)}

    def settings(self, user: str = "admin"):
        from kxtx.client.settings import Settings

        return Settings(props=self.conf(user), timeout=30)

    def kxtx(
        self,
        user: str,
        *args: str,
        debug: bool = False,
        expect: cli.Expect = 0,
        input: str | None = None,
        timeout: float = 180,
        env: dict[str, str] | None = None,
    ) -> cli.Result:
        """The CLI as `user`, configured only by that user's Java client.properties (fails unless
        the exit code is `expect`, `None`: not checked); `env`: more environment."""
        __tracebackhide__ = True
        return cli.run(
            *(["--debug"] if debug else []),
            *args,
            expect=expect,
            input=input,
            timeout=timeout,
            env={"KXTX_COMMAND_CONFIG": self.properties(user), **(env or {})},
            clean=True,
        )

    # --- admin helpers -----------------------------------------------------------------------------------
    def admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient({**self.conf("admin"), "log_level": 3})

    def create_topic(self, name: str | None = None, partitions: int = 1) -> str:
        from confluent_kafka.admin import NewTopic

        from tests.conftest import _wait_for_leaders

        name = name or f"t-{uuid.uuid4().hex[:10]}"
        admin = self.admin()
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
        _wait_for_leaders(admin, name, partitions)
        return name

    def grant(
        self, principal_user: str, resource: str, name: str, *operations: str, prefixed: bool = False
    ) -> None:
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        pattern = ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL
        bindings = [
            AclBinding(
                ResourceType[resource.upper()],
                name,
                pattern,
                f"User:{principal_user}",
                "*",
                AclOperation[op],
                AclPermissionType.ALLOW,
            )
            for op in operations
        ]
        admin = self.admin()  # kept alive until the futures resolve
        for fut in admin.create_acls(bindings, request_timeout=30).values():
            fut.result(timeout=30)
        time.sleep(0.5)  # ACLs reach the broker's authorizer through the metadata log

    def offsets(self, topic: str, partition: int = 0) -> tuple[int, int]:
        """(LSO, high watermark) as admin."""
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        admin, out = self.admin(), []
        for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
            tp = TopicPartition(topic, partition)
            out.append(
                admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)[tp].result(30).offset
            )
        return tuple(out)

    def low_level(self):
        """tests' LowLevel protocol helper over this broker's secured listener, as admin."""
        from kafka.admin import KafkaAdminClient

        from tests.integration.txn_helpers import LowLevel

        ll = LowLevel.__new__(LowLevel)
        ll.admin = KafkaAdminClient(**self.settings("admin").kafka_python())
        ll.m = ll.admin._manager
        return ll

    def make_hanging(self, tid: str, topic: str, partition: int = 0, age_ms: int = 3_600_000) -> int:
        """An open transaction the coordinator never hears of (truly hanging); returns its start offset."""
        ll = self.low_level()
        try:
            p = ll.init(tid)
            return ll.produce(
                p,
                topic,
                partition,
                [b"hanging-0", b"hanging-1"],
                timestamp_ms=int(time.time() * 1000) - age_ms,
            )
        finally:
            ll.close()

    def make_live(self, tid: str, topic: str, partition: int = 0, age_ms: int = 120_000) -> int:
        """A live, coordinator-registered open transaction whose last write is `age_ms` old: a
        principal that cannot DESCRIBE `tid` sees it as hanging once past the max timeout."""
        ll = self.low_level()
        try:
            p = ll.init(tid, timeout_ms=600_000)
            ll.add_partitions(p, topic, [partition])
            return ll.produce(p, topic, partition, [b"live-0"], timestamp_ms=int(time.time() * 1000) - age_ms)
        finally:
            ll.close()


def sasl_ssl_broker(brokers) -> SecureBroker:
    """The worker's SASL_SSL/SCRAM sandbox broker with BROKER_CONFIG (shared by the modules that use it)."""
    k = brokers(BROKER_CONFIG, security="sasl_ssl")
    return SecureBroker("sasl_ssl", k.bootstrap, k.listeners, k.sandbox, k.version)


def rows(result: cli.Result) -> list[dict]:
    return result.rows


def assert_no_secret(broker: SecureBroker, user: str, result: cli.Result) -> None:
    text = result.stdout + result.stderr
    for secret in broker.secrets(user):
        assert secret not in text, f"a secret of {user} leaked into the output"


def write_lines(n: int, prefix: str = "r") -> str:
    fd, path = tempfile.mkstemp(suffix=".jsonl", prefix="kxtx-sec-")
    atexit.register(os.unlink, path)
    with os.fdopen(fd, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"{prefix}{i}", "n": i}) + "\n")
    return path
