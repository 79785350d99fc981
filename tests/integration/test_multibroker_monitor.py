"""`kxtx monitor` on the 3-node cluster while one broker is down (issue 25): a collection reports
what it could not see, still reports what the other brokers hold, ends within its bound, and
`monitor serve` keeps answering.

The scene: hanging transactions on an RF-1 topic with one partition on each broker, so the
partition of the broker that is down has no other replica to answer for it."""

from __future__ import annotations

import os
import urllib.request
import uuid

import pytest

from tests import cli
from tests.conftest import json_doc
from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import wait_until
from tests.integration.monitor_helpers import samples, serving
from tests.integration.txn_helpers import kxtx_on, make_hanging

pytestmark = [pytest.mark.multibroker, pytest.mark.timeout(900)]

#: The commands' --timeout in this test; a run that outlives BOUND_S is a hang, not a slow cluster.
TIMEOUT_S = 10
BOUND_S = 120


def _scrape(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=BOUND_S) as r:
        return samples(r.read().decode())


def _collect(kafka, topic: str) -> dict:
    r = kxtx_on(
        kafka,
        "monitor",
        "collect",
        "--topic",
        topic,
        "--timeout",
        str(TIMEOUT_S),
        "-o",
        "json",
        timeout=BOUND_S,
    )
    return json_doc(r)


def _hanging_on(doc: dict) -> set[int]:
    return {h["partition"] for h in doc["hanging"]}


def test_collect_and_serve_while_a_broker_is_down(cluster3):
    from tests.conftest import ROOT

    topic = cluster3.create_topic(
        f"mon3-{uuid.uuid4().hex[:6]}", replicas=[[1], [2], [3]], config={"min.insync.replicas": "1"}
    )
    make_hanging(cluster3.bootstrap, f"mon3-{uuid.uuid4().hex[:6]}", [(topic, p) for p in range(3)])
    before = _collect(cluster3, topic)
    assert before["complete"] and _hanging_on(before) == {0, 1, 2}, before
    victim = 3  # leads partition 2, the only replica of it
    argv = cli.argv("monitor", "serve", "--port", "0", "--min-interval", "0")
    argv += ["--topic", topic, "--timeout", str(TIMEOUT_S), "--scrape-timeout", str(BOUND_S - 10)]
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": cluster3.bootstrap}
    try:
        with serving(argv, env, ROOT) as url:
            assert _scrape(url)[("kxtx_hanging_transactions", ())] == 3
            cluster3.sandbox.kill_node(victim)
            # At once (the controller has not fenced it yet: its metadata still names it the
            # leader, whose address refuses connections), then after the fence (no leader).
            for moment in ("killed", "fenced"):
                if moment == "fenced":
                    wait_until(
                        lambda: ch.leaders(cluster3, topic)[2] < 0,
                        ch.FENCE_WAIT_S,
                        "partition 2 without a leader",
                        every=0.5,
                        tolerate=ch.MOVING,
                    )
                doc = _collect(cluster3, topic)
                assert not doc["complete"], (moment, doc)
                unseen = [u for u in doc["unseen"] if u["what"] == "partitions"]
                assert [u["name"] for u in unseen] == [f"{topic}:2"] and unseen[0]["why"], (moment, doc)
                assert _hanging_on(doc) == {0, 1}, (moment, doc)
                metrics = _scrape(url)  # the exporter still answers, with what it saw
                assert metrics[("kxtx_up", ())] == 1, moment
                assert metrics[("kxtx_collect_unseen", (("what", "partitions"),))] == 1, moment
                # the total is not the part seen: absent (issue 43); the partitions seen still show
                assert ("kxtx_hanging_transactions", ()) not in metrics, moment
                hanging = "kxtx_partition_hanging_transactions"
                assert sum(v for (n, _l), v in metrics.items() if n == hanging) == 2, moment
            check = kxtx_on(
                cluster3,
                "monitor",
                "check",
                "--topic",
                topic,
                "--timeout",
                str(TIMEOUT_S),
                timeout=BOUND_S,
                expect=2,
            )
            assert "1 thing not seen" in check.stdout, check.stdout + check.stderr
    finally:
        cluster3.sandbox.start_node(victim)  # (a no-op if it never went down)
        ch.wait_healthy(cluster3, [])  # (the RF-1 topic is never "fully in sync" with 3)
        wait_until(lambda: min(ch.leaders(cluster3, topic).values()) >= 0, 60, "leaders", tolerate=ch.MOVING)
    kxtx_on(cluster3, "abort-hanging", "--topic", topic, "--yes")
    assert _hanging_on(_collect(cluster3, topic)) == set()
