"""kxtx's metrics through a real Prometheus (Debian's `prometheus` package) and node_exporter
(`prometheus-node-exporter`): Prometheus scrapes `kxtx monitor serve` (job kxtx) and node_exporter's
textfile collector reading what `kxtx monitor collect --textfile` wrote (job node), every second. A
hanging transaction (txn_helpers.make_hanging, on the worker's broker with partition verification off,
as test_monitor.py) must show through Prometheus's query API on the right partition in both jobs,
then go to 0 after `kxtx abort-hanging --yes`. And `promtool check metrics` (Prometheus's naming
lint) passes on what a real collection exposes.

Skipped when the programs are absent, except under CI (tests/binaries.py), which installs them.
"""

from __future__ import annotations

import os
import subprocess
import urllib.request
import uuid

import pytest

from tests import cli
from tests.binaries import need
from tests.conftest import ROOT
from tests.integration.kafka_io import wait_until
from tests.integration.monitor_helpers import node_exporter, prometheus, query, serving
from tests.integration.txn_helpers import hanging_broker, kxtx_on, make_hanging

pytestmark = pytest.mark.kafka

JOBS = ("kxtx", "node")


@pytest.fixture(scope="module")
def broker(brokers):
    return hanging_broker(brokers)


def _serve_argv(topic: str, scrape_timeout: str = "0.9") -> list[str]:
    # Prometheus gives a scrape 1 s: a collection that takes longer answers kxtx_up 0 after 0.9 s and
    # is served, done, to the next scrape within --min-interval.
    serve = [
        "monitor",
        "serve",
        "--port",
        "0",
        "--topic",
        topic,
        "--scrape-timeout",
        scrape_timeout,
        "--min-interval",
        "2",
    ]
    return cli.argv(*serve)


def _by_job(base: str, promql: str) -> dict[str, dict[str, float]]:
    """{job: {partition label or "": value}} of an instant query."""
    out: dict[str, dict[str, float]] = {}
    for r in query(base, promql):
        out.setdefault(r["metric"]["job"], {})[r["metric"].get("partition", "")] = float(r["value"][1])
    return out


def _until(base: str, expected: dict[str, dict], what: str) -> None:
    """Poll the query API (bounded) until every query gives its expected {job: ...} at once (a
    scrape that found kxtx_up 0 hides the other series for a second); on timeout, show the last."""
    last: dict[str, dict] = {}

    def check() -> bool:
        last.update({promql: _by_job(base, promql) for promql in expected})
        return last == expected

    try:
        wait_until(check, 60, what, every=0.5)
    except AssertionError:
        assert last == expected, what
        raise


def test_prometheus_sees_a_hanging_transaction_until_abort_hanging(broker, tmp_path):
    for program in ("prometheus", "prometheus-node-exporter"):
        need(program)
    topic = broker.create_topic(f"mon-prom-{uuid.uuid4().hex[:6]}", partitions=2)
    make_hanging(broker.bootstrap, f"mon-prom-{uuid.uuid4().hex[:6]}", [(topic, 1)])
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()

    def collect_textfile() -> None:
        kxtx_on(broker, "monitor", "collect", "--topic", topic, "--textfile", str(textfiles), expect=0)

    try:
        collect_textfile()
        env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": broker.bootstrap}
        hanging = f'kxtx_partition_hanging_transactions{{topic="{topic}"}}'
        with (
            serving(_serve_argv(topic), env, ROOT) as url,
            node_exporter(textfiles, tmp_path / "node_exporter.log") as node,
            prometheus({"kxtx": url.split("/")[2], "node": node}, tmp_path / "prometheus") as base,
        ):
            # both jobs: 1 hanging on partition 1, partition 0 (nothing open) absent
            by_job = {job: {"1": 1.0} for job in JOBS}
            each = {job: {"": 1.0} for job in JOBS}
            seen = {hanging: by_job, "kxtx_hanging_transactions": each, "kxtx_up": each}
            _until(base, seen, "the hanging partition from both jobs")
            kxtx_on(broker, "abort-hanging", "--topic", topic, "--yes", expect=0)
            collect_textfile()
            # the partition has nothing open any more: its series goes, the total goes to 0
            zero = {job: {"": 0.0} for job in JOBS}
            gone = {hanging: {}, "kxtx_hanging_transactions": zero, "kxtx_up": each}
            _until(base, gone, "0 hanging in both jobs after abort-hanging")
    finally:  # the worker's broker is shared with test_hanging.py: leave nothing hanging behind
        kxtx_on(broker, "abort-hanging", "--topic", topic, "--yes", expect=0)


def test_promtool_check_metrics_on_a_real_collection(broker):
    """Prometheus's naming lint on `collect -o prometheus` with every family populated (an open
    hanging transaction: the partition families) and on serve's /metrics (its counters too)."""
    promtool = need("promtool")
    topic = broker.create_topic(f"mon-lint-{uuid.uuid4().hex[:6]}")
    make_hanging(broker.bootstrap, f"mon-lint-{uuid.uuid4().hex[:6]}", [(topic, 0)])
    try:
        r = kxtx_on(broker, "monitor", "collect", "--topic", topic, "-o", "prometheus", expect=0)
        assert f'kxtx_partition_hanging_transactions{{topic="{topic}",partition="0"}} 1' in r.stdout
        texts = [r.stdout]
        env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": broker.bootstrap}
        with (
            serving(_serve_argv(topic, "60"), env, ROOT) as url,
            urllib.request.urlopen(url, timeout=120) as resp,
        ):
            texts.append(resp.read().decode())
        assert "kxtx_collections_total" in texts[1]
        for text in texts:
            lint = subprocess.run(
                [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
            )
            assert (lint.returncode, lint.stdout + lint.stderr) == (0, ""), text
    finally:
        kxtx_on(broker, "abort-hanging", "--topic", topic, "--yes", expect=0)
