"""Running `kxtx monitor serve`, Prometheus and node_exporter in tests (test_monitor.py,
test_monitor_prometheus.py, test_examples.py).

Prometheus and node_exporter are Debian's packages' binaries, started here as plain processes on free
loopback ports with their own configuration and data directories under the test's tmp_path, never as
system services, and stopped (SIGTERM, then SIGKILL) when the block ends.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from kxtx.sandbox.nodes import free_port
from tests.binaries import need
from tests.integration.kafka_io import wait_until


def samples(text: str) -> dict:
    """{(sample name, sorted labels): value} of an exposition text."""
    fams = list(text_string_to_metric_families(text))
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in fams for s in f.samples}


@contextlib.contextmanager
def serving(argv: list[str], env: dict, cwd) -> Iterator[str]:
    """`kxtx monitor serve` (argv with `--port 0`) running; yields its /metrics URL. Leaving the block
    stops it with SIGTERM, which must end it with 143 (test_examples.py runs the README's this way)."""
    proc = subprocess.Popen(
        argv,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("kxtx: serving http://"), line
        yield line.split()[-1]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


@contextlib.contextmanager
def _running(argv: list[str], log: Path, ready_url: str, what: str) -> Iterator[subprocess.Popen]:
    """A program started with its output to `log`, yielded once `ready_url` answers (60 s at most)."""
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_until(
            lambda: _get(ready_url),
            60,
            f"{what} answering on {ready_url}",
            every=0.1,
            procs=[proc],
            stderr=log.read_text,
            tolerate=(OSError,),
        )
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def node_exporter(textfile_dir: Path, log: Path) -> Iterator[str]:
    """node_exporter with only its textfile collector, reading `textfile_dir`; yields host:port."""
    address = f"127.0.0.1:{free_port()}"
    argv = [
        need("prometheus-node-exporter"),
        f"--web.listen-address={address}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={textfile_dir}",
    ]
    with _running(argv, log, f"http://{address}/metrics", "node_exporter"):
        yield address


@contextlib.contextmanager
def prometheus(jobs: dict[str, str], workdir: Path) -> Iterator[str]:
    """Prometheus scraping each job's target (`{job: host:port}`, /metrics) every second, with its
    configuration and data under `workdir`; yields its base URL."""
    workdir.mkdir(parents=True, exist_ok=True)
    scrape = [
        {"job_name": job, "static_configs": [{"targets": [target]}]} for job, target in sorted(jobs.items())
    ]
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"}, "scrape_configs": scrape}
    (workdir / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    address = f"127.0.0.1:{free_port()}"
    argv = [
        need("prometheus"),
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address={address}",
    ]
    with _running(argv, workdir / "prometheus.log", f"http://{address}/-/ready", "Prometheus"):
        yield f"http://{address}"


def query(base_url: str, promql: str) -> list[dict]:
    """The instant vector `promql` evaluates to now, through the HTTP query API."""
    url = f"{base_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    doc = json.loads(_get(url))
    assert doc["status"] == "success", doc
    assert doc["data"]["resultType"] == "vector", doc
    return doc["data"]["result"]
