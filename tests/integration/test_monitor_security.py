"""`kxtx monitor collect` and `kxtx monitor serve` over SASL_SSL/SCRAM (`kxtx sandbox start --security
sasl_ssl`), configured only by `--command-config` (the user's Java client.properties): the hanging
transaction and the group are seen as on a plain listener, and no secret (the SASL password, the
trust store's password) is in any metric, in stdout, in stderr or in a log line, even with --debug.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
import uuid

import pytest

from tests import cli
from tests.conftest import ROOT
from tests.integration.kafka_io import commit_retrying
from tests.integration.monitor_helpers import samples
from tests.integration.security_helpers import sasl_ssl_broker

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def sec(brokers):
    return sasl_ssl_broker(brokers)


@pytest.fixture(scope="module")
def scene(sec):
    """A topic with a truly hanging transaction, and a group that committed offset 0 there."""
    from confluent_kafka import Consumer, TopicPartition

    topic = sec.create_topic(f"mon-sec-{uuid.uuid4().hex[:6]}")
    start = sec.make_hanging(f"tx-mon-hang-{topic}", topic)
    group = f"mon-sec-g-{topic}"
    c = Consumer({**sec.conf("admin"), "group.id": group, "log_level": 3})
    try:
        commit_retrying(c, [TopicPartition(topic, 0, 0)])
    finally:
        c.close()
    return {"topic": topic, "start": start, "group": group}


def _argv(sec, user: str, *args: str) -> tuple[list[str], dict]:
    """The CLI with --debug, configured by `--command-config` alone (no KXTX_* variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KXTX_")}
    argv = cli.argv("--debug", *args, "--command-config", sec.properties(user))
    return argv, env


def _no_secret(sec, *texts: str) -> None:
    secrets = {*sec.secrets("admin"), sec.listeners.store_password} - {""}
    assert secrets, "no secret to look for"
    for secret in secrets:
        assert all(secret not in text for text in texts), "a secret leaked"


def _seen(text: str, topic: str, group: str) -> None:
    """The scene in an exposition text: one hanging transaction on topic:0, the group's lag read."""
    s = samples(text)
    assert s[("kxtx_up", ())] == 1
    assert s[("kxtx_hanging_transactions", ())] == 1
    assert s[("kxtx_partition_hanging_transactions", (("partition", "0"), ("topic", topic)))] == 1
    assert ("kxtx_consumergroup_lag_records", (("group", group), ("topic", topic))) in s
    assert all(v == 0 for (name, _l), v in s.items() if name == "kxtx_collect_unseen")


def test_collect_over_sasl_shows_the_scene_and_no_secret(sec, scene):
    argv, env = _argv(sec, "admin", "monitor", "collect", "--topic", scene["topic"], "-o", "prometheus")
    r = cli.check(subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=180))
    _seen(r.stdout, scene["topic"], scene["group"])
    assert "kxtx: info:" in r.stderr, "no debug log: nothing was checked"
    _no_secret(sec, r.stdout, r.stderr)


def test_serve_over_sasl_shows_the_scene_and_no_secret(sec, scene, tmp_path):
    argv, env = _argv(
        sec, "admin", "monitor", "serve", "--port", "0", "--min-interval", "0", "--topic", scene["topic"]
    )
    log = tmp_path / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True, env=env, cwd=ROOT
        )
    try:
        deadline = time.monotonic() + 60
        while "kxtx: serving http://" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        url = next(x for x in log.read_text().splitlines() if x.startswith("kxtx: serving")).split()[-1]
        bodies = []
        for _ in range(2):  # two real collections (--min-interval 0)
            with urllib.request.urlopen(url, timeout=120) as resp:
                bodies.append(resp.read().decode())
        for body in bodies:
            _seen(body, scene["topic"], scene["group"])
        assert samples(bodies[-1])[("kxtx_collections_total", ())] == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 143
        out = proc.stdout.read() if proc.stdout else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    logs = log.read_text()
    assert "kxtx: info:" in logs, "no debug log: nothing was checked"
    _no_secret(sec, *bodies, out, logs)


@pytest.fixture(scope="module")
def half_granted(sec):
    """A topic `limited` may DESCRIBE but not READ: its producers (DescribeProducers needs READ)
    and its records (the lag scan's Fetch) cannot be read, its offsets and metadata can. On it 5
    plain records (0-4), a truly hanging transaction (5-6) and a group of `limited`'s that committed
    offset 1: lag 4 offsets below the LSO (5), within --lag-scan-max, so read record by record."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = sec.create_topic(f"mon-half-{uuid.uuid4().hex[:6]}")
    sec.grant("limited", "topic", topic, "DESCRIBE")
    p = Producer({**sec.conf("admin"), "log_level": 3})
    for i in range(5):
        p.produce(topic, f"r{i}".encode(), partition=0)
    assert p.flush(60) == 0
    sec.make_hanging(f"tx-mon-half-{topic}", topic)
    group = f"limited.mon-half-{topic}"
    c = Consumer({**sec.conf("admin"), "group.id": group, "log_level": 3})
    try:
        commit_retrying(c, [TopicPartition(topic, 0, 1)])
    finally:
        c.close()
    return {"topic": topic, "group": group}


def test_producers_and_lag_a_principal_may_not_read_are_unseen(sec, half_granted):
    """Issue 43: the hanging count of a collection that could not read a partition's producers,
    and a lag whose scan failed, are absent (before: `kxtx_hanging_transactions 0` and the lag by
    offsets, 4, as if read), and a threshold on them is not OK."""
    topic, group = half_granted["topic"], half_granted["group"]
    args = ("monitor", "collect", "--topic", topic, "--group", group)
    r = sec.kxtx("limited", *args, "-o", "json", expect=0)
    doc = json.loads(r.stdout)
    assert doc["complete"] is False
    assert sorted((u["what"], u["name"]) for u in doc["unseen"]) == [
        ("lag", f"{group} {topic}:0"),
        ("partitions", f"{topic}:0"),
    ], doc["unseen"]
    assert doc["hanging_transactions"] is None and doc["max_group_lag_records"] is None, doc
    [row] = doc["groups"]
    assert row["committed"] == 1 and row["lso"] == 5 and row["lag_records"] is None, row
    r = sec.kxtx("limited", *args, "-o", "prometheus", expect=0)
    s = samples(r.stdout)
    assert s[("kxtx_up", ())] == 1
    assert s[("kxtx_collect_unseen", (("what", "partitions"),))] == 1
    assert s[("kxtx_collect_unseen", (("what", "lag"),))] == 1
    assert ("kxtx_hanging_transactions", ()) not in s
    labels = (("group", group), ("topic", topic))
    assert ("kxtx_consumergroup_lag_records", labels) not in s
    assert s[("kxtx_consumergroup_hw_lag_records", labels)] == 6  # read: high watermark 7 - 1
    for threshold in ("lag=3", "hanging=5"):  # true: lag 4, 1 hanging: over the first, not the second
        r = sec.kxtx(
            "limited", "monitor", "check", "--topic", topic, "--group", group, "--crit", threshold, expect=3
        )
        assert r.stdout.startswith("KXTX UNKNOWN - "), (threshold, r.stdout, r.stderr)
    # as admin, the same collection reads it all: the figures the limited one could not read
    r = sec.kxtx("admin", *args, "-o", "prometheus")
    s = samples(r.stdout)
    assert s[("kxtx_hanging_transactions", ())] == 1 and s[("kxtx_consumergroup_lag_records", labels)] == 4
