"""Mutual TLS (`kxtx sandbox start --security ssl`): the Java client.properties carries PKCS12 keystores,
which kxtx converts for both client libraries; the certificate's CN is the principal (CN=limited ->
User:limited). Also `sandbox start --security sasl_plaintext` end to end through the CLI."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest

from tests import cli
from tests.conftest import json_doc
from tests.integration.kafka_io import read_committed
from tests.integration.security_helpers import (
    BROKER_CONFIG,
    SecureBroker,
    assert_no_secret,
    rows,
    write_lines,
)

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def tls(brokers):
    k = brokers(BROKER_CONFIG, security="ssl")
    return SecureBroker("ssl", k.bootstrap, k.listeners, k.sandbox, k.version)


def test_client_properties_use_pkcs12_keystores(tls):
    text = Path(tls.properties("admin")).read_text()
    assert "security.protocol=SSL" in text and "ssl.keystore.type=PKCS12" in text
    assert "sasl." not in text


def test_admin_over_mtls(tls):
    topic = tls.create_topic()
    tls.kxtx("admin", "cluster", "-o", "json", expect=0)
    tmp = Path(tempfile.mkdtemp(prefix="kxtx-test-tmp-"))
    r = tls.kxtx(
        "admin", "produce", "-t", topic, write_lines(4), "-o", "json", expect=0, env={"TMPDIR": str(tmp)}
    )
    assert json_doc(r)["records"] == 4
    assert len(read_committed(tls.bootstrap, topic, conf=tls.conf())) == 4
    # the PEM files converted from the keystores are gone with the process, which a finished
    # produce ends without the interpreter's finalisation (kxtx.cli.entry): its atexit handlers ran
    assert not list(tmp.iterdir())
    tmp.rmdir()
    start = tls.make_hanging(f"tx-hang-{topic}", topic)
    # kafka-python (KIP-664 calls) over mutual TLS
    r = tls.kxtx(
        "admin", "find-hanging", "-t", topic, "--max-transaction-timeout", "1", "-o", "jsonl", expect=3
    )
    assert [(x["start_offset"], x["maybe_false_positive"]) for x in rows(r)] == [(start, False)]
    r = tls.kxtx("admin", "dump", "txn-state", "-t", f"tx-hang-{topic}", "-o", "jsonl", expect=0)
    assert rows(r), r.stderr
    r = tls.kxtx(
        "admin",
        "abort-hanging",
        "-t",
        topic,
        "--max-transaction-timeout",
        "1",
        "--yes",
        "-o",
        "jsonl",
        expect=0,
    )
    assert tls.offsets(topic)[0] > start
    assert_no_secret(tls, "admin", r)


def test_limited_certificate_maps_to_user_limited(tls):
    own = tls.create_topic(f"limited.t-{uuid.uuid4().hex[:6]}")
    other = tls.create_topic()
    tls.grant("limited", "topic", other, "DESCRIBE")
    path = write_lines(3)
    # the prefixed ACLs for User:limited apply: the CN became the principal
    tls.kxtx(
        "limited",
        "produce",
        "-t",
        own,
        path,
        "--transactional-id",
        f"limited.{own}",
        "--checkpoint-topic",
        "limited.ckpt",
        "-o",
        "json",
        expect=0,
    )
    r = tls.kxtx(
        "limited",
        "produce",
        "-t",
        other,
        path,
        "--transactional-id",
        f"limited.{other}",
        "--checkpoint-topic",
        "limited.ckpt",
        debug=True,
        expect=1,
    )
    assert f"WRITE on Topic '{other}'" in r.stderr.splitlines()[-1]
    assert tls.offsets(other) == (0, 0)
    assert_no_secret(tls, "limited", r)


def test_without_client_certificate_fails_cleanly(tls, tmp_path):
    props = tmp_path / "nocert.properties"
    props.write_text(
        f"bootstrap.servers={tls.bootstrap}\nsecurity.protocol=SSL\n"
        f"ssl.truststore.location={tls.listeners.dir / 'ca.pem'}\n"
    )
    r = cli.run(
        "cluster", "--command-config", str(props), "--timeout", "5", expect=1, clean=True, timeout=120
    )
    assert r.stderr.startswith("kxtx: error:") and "Traceback" not in r.stderr
    assert "ssl.ca.location and the client certificate" in r.stderr


def test_sandbox_cli_sasl_plaintext(tmp_path):
    """`sandbox start --security` prints a client.properties per user; both work as printed; `stop`
    removes the security material with the rest of the state."""
    state = Path(tempfile.mkdtemp(prefix="kxtx-test-cli-sasl-"))

    def kxtx(*args, config=None, expect=0):
        env = {"KXTX_SANDBOX_DIR": str(state), **({"KXTX_COMMAND_CONFIG": config} if config else {})}
        return cli.run(*args, expect=expect, env=env, clean=True, timeout=240)

    r = kxtx(
        "sandbox",
        "start",
        "--security",
        "sasl_plaintext",
        "--port",
        "0",
        "--kafka-version",
        os.environ.get("KXTX_TEST_KAFKA_VERSION", "4"),
        "-o",
        "json",
    )
    try:
        out = json_doc(r)
        assert out["security"] == "sasl_plaintext"
        for user, mech in (("admin", "SCRAM-SHA-512"), ("limited", "SCRAM-SHA-256")):
            text = out[f"{user}.properties"]
            assert f"sasl.mechanism={mech}" in text and "ScramLoginModule required" in text
            assert f"bootstrap.servers={out['bootstrap']}" in text
            assert Path(out["client_properties"][user]).read_text() == text
        admin_props, limited_props = out["client_properties"]["admin"], out["client_properties"]["limited"]
        kxtx("cluster", "-o", "json", config=admin_props, expect=0)
        kxtx("find-hanging", "-o", "jsonl", config=admin_props, expect=0)  # kafka-python over SASL_PLAINTEXT
        status = kxtx("sandbox", "status", "-o", "json")
        assert "admin_client" not in status.stdout and "password" not in status.stdout
        kxtx("find-hanging", "-o", "jsonl", config=limited_props, expect=0)
    finally:
        kxtx("sandbox", "stop")
    assert not state.exists()
