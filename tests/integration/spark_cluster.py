"""A real standalone Spark cluster for tests: a master and N one-core workers on loopback, started
with pyspark's own `bin/spark-class` (the same launcher `sbin/start-master.sh` uses), stopped after.

The workers run without this worktree on PYTHONPATH, from another directory, and with `import kxtx`
made to fail in their Python workers (a sitecustomize on their PYTHONPATH; the venv has kxtx
installed), so the executors only have what `kxtx pipe` ships with the job and the venv's other
packages: a test on this cluster fails if any executor-side code is not shipped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from kxtx.sandbox.nodes import free_port

SPARK_HOME = Path(pyspark.__file__).parent


NO_KXTX = """
import importlib.abc, sys

class _NoKxtx(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "kxtx" or name.startswith("kxtx."):
            raise ImportError(f"No module named {name!r} (the test cluster's executors lack kxtx)")

sys.meta_path.insert(0, _NoKxtx())
"""


@dataclass
class SparkCluster:
    work: Path
    master_url: str = ""
    ui_port: int = 0
    procs: list = field(default_factory=list)  # (name, Popen), each its own process group

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            SPARK_LOG_DIR=str(self.work),
            SPARK_WORKER_DIR=str(self.work / "worker"),
            PYTHONPATH=str(self._no_kxtx()),
            # the master and workers of a test's short life: C1 only, like the test brokers
            SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1",
        )
        return env

    def _no_kxtx(self) -> Path:
        """A directory whose sitecustomize makes `import kxtx` fail (Spark passes the worker's
        PYTHONPATH on to the executors' Python workers)."""
        path = self.work / "no-kxtx"
        path.mkdir(exist_ok=True)
        (path / "sitecustomize.py").write_text(NO_KXTX)
        return path

    def _spawn(self, name: str, *args: str, env: dict | None = None) -> subprocess.Popen:
        log = open(self.work / f"{name}.log", "w")
        proc = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**self.env(), **(env or {})},
            cwd=self.work,
            start_new_session=True,
        )
        self.procs.append((name, proc))
        return proc

    def start(self, workers: int = 2, timeout: float = 120) -> SparkCluster:
        port, self.ui_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{port}"
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(self.ui_port),
        )
        for i in range(workers):
            self.add_worker(i)
        self.wait_workers(workers, timeout)
        return self

    def add_worker(self, i: int) -> None:
        # Each worker on a loopback address of its own (127.0.0.2, .3, ...): to Spark they are
        # separate hosts, as on a real cluster. Speculation needs that: Spark never runs a copy
        # of a task on a host where an attempt of it already runs.
        host = f"127.0.0.{2 + i}"
        work = self.work / f"worker{i}"
        work.mkdir(exist_ok=True)
        self._spawn(
            f"worker{i}",
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            host,
            "--cores",
            "1",
            "--memory",
            "1g",
            "--webui-port",
            str(free_port()),
            "--work-dir",
            str(work),
            self.master_url,
            env={"SPARK_LOCAL_IP": host},
        )

    def registered(self) -> int:
        """Workers that registered with the master (from its log)."""
        return (self.work / "master.log").read_text(errors="replace").count("Registering worker")

    def wait_workers(self, n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.registered() >= n:
                return
            time.sleep(0.5)
        logs = {p.name: p.read_text()[-2000:] for p in self.work.glob("*.log")}
        raise RuntimeError(f"Spark cluster: {n} workers not alive in {timeout}s: {logs}")

    def pids(self, needle: str) -> list[int]:
        """Processes of this cluster (descendants of its master and workers; pyspark's daemon
        moves to a process group of its own) whose command line contains `needle`."""
        parent, cmd = {}, {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmd[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        roots = {p.pid for _, p in self.procs}

        def ours(pid: int) -> bool:
            while pid > 1:
                if pid in roots:
                    return True
                pid = parent.get(pid, 0)
            return False

        return [pid for pid, text in cmd.items() if needle in text and ours(pid)]

    def python_workers(self) -> list[int]:
        """Python workers forked by the executors' pyspark daemons; the daemons if none is
        forked at the moment (killing one fails its running task too)."""
        daemons = set(self.pids("pyspark.daemon"))
        forks = []
        for pid in daemons:
            try:
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            if ppid in daemons:
                forks.append(pid)
        return forks or sorted(daemons)

    def executors(self) -> list[int]:
        return self.pids("CoarseGrainedExecutorBackend")

    def logs_text(self) -> str:
        parts = []
        for path in self.work.rglob("*"):
            if path.is_file() and path.suffix not in (".jar", ".py", ".zip"):
                try:
                    parts.append(path.read_text(errors="replace"))
                except OSError:
                    pass
        return "\n".join(parts)

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)
        self.procs.clear()
