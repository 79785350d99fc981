"""Benchmark for `kxtx pipe --mode executors` (issue 12). Not a timed test: run it by hand.

    python bench/bench_pipe_modes.py [--records 1000000] [--repeat 1] [--bootstrap HOST:PORT]

Input: --records JSON documents in a 4-partition topic; the UDF is JSON enrichment (json.loads, add
a field, json.dumps; `--value-format json`). Side by side in one run, each case a fresh group and
output topic, interleaved per repeat:
  (b) the hand-written confluent-kafka EOS loop, one process, 200k records per transaction;
  (c) kxtx pipe --mode driver (the CLI; 200k records per transaction, the default);
  (d) kxtx pipe --mode executors (the CLI; 50k records per partition and round = 200k a round);
  default: kxtx pipe with neither --mode nor --batch-max-records (executors mode, 100k per
  partition and round), on local[2] and on the cluster (there also with spark.cores.max=1);
c and d on local[2] and on a standalone cluster of two 1-core workers started with pyspark's
bin/spark-class (d also with spark.cores.max=1: one executor). Rates count from the first record
(Spark start-up and executor launch left out; reported apart as wall time). CPU seconds per
process kind (broker, driver Python, driver JVM, executor JVMs, Python workers) are sampled from
/proc during each case; `busy_cores` is each kind's share of the machine while the Python workers
did the middle 80% of their work (the steady state: no JVM start-up, no shutdown). Last, the per-round fixed cost of executors mode: rounds of one record per
partition (4 one-record transactions per round).

Without --bootstrap a sandbox broker is started (and stopped) with kxtx's own sandbox code.

Measured 2026-11-24 on a quiet 2-core machine (the broker, Spark and kxtx on the same two cores),
`python bench/bench_pipe_modes.py --records 1000000`, records/s (two runs: before / after the task
consumers got fetch.wait.max.ms=10 and fetch.queue.backoff.ms=10):
  b EOS loop 79.9k / 82.1k
  local[2]: c driver 56.9k / 64.2k, d executors 70.6k / 69.2k
  cluster 2 x 1 core: c 54.2k / 58.0k, d 55.9k / 58.0k; d with one executor 46.5k / 43.4k
  d/c cluster 1.03 / 1.00; d/b cluster 0.70 / 0.71; d 2 vs 1 worker 1.20 / 1.34.
  Fixed cost of a round of 4 one-record tasks: 1.33 s / 0.67 s local[2], 1.33 s / 1.0 s cluster.
`--skip-cluster --repeat 3` after the change: c 78.0k, 77.7k, 77.8k; d 74.3k, 66.9k, 77.9k;
b 91.2k, 90.9k, 90.9k; d/c median 0.95, so `--mode auto` keeps driver mode on local[...].
CPU seconds of the cluster case d, 2 workers (after): broker 2.5, driver JVM 14.1, driver Python
0.8, executor JVMs 13.8, Python workers 16.1 (wall 30.4 s, ~13 s of it Spark start-up, whose
JVM CPU is included). Per task of 50k records (local[1], timed inside the worker): consume 0.05 s,
UDF incl. Arrow 0.49 s, produce 0.04 s, commit 0.02 s, and ~0.07 s of Spark per task.

After the JSON mapper got faster (msgspec decoding, dicts encoded column-wise), `--repeat 2`,
records/s per round: b 81.6k, 76.8k | local[2]: c 74.2k, 79.1k; d 83.7k, 98.9k | cluster:
c 72.3k, 66.1k; d 66.2k, 67.1k; d one executor 63.1k, 53.4k. Medians of the ratios: d/c local[2]
1.19, d/b local[2] 1.16, d/c cluster 0.97, d/b cluster 0.84, d 2 vs 1 worker 1.15. Round cost
(4 one-record tasks): 1.0 s local[2], 1.33 s cluster. CPU s of cluster d (2 workers): broker
2.2-2.6, driver JVM 14.4-15.7, driver Python 0.8-1.0, executor JVMs 14.2-15.2, Python workers
13.1-14.0; of cluster c: driver Python 4.8-4.9, Python workers 7.4-7.9 (the UDF only).

`--skip-cluster --repeat 5` right after (same code), records/s: b 63.5k, 66.0k, 63.9k, 80.4k,
80.4k | c 78.3k, 72.1k, 71.8k, 78.6k, 73.1k | d 79.5k, 70.5k, 71.4k, 76.6k, 73.7k: d/c median
1.00 (0.98-1.02), d/b 1.07, c/b 1.09; round cost 0.8 s. local[2] is a tie, auto keeps driver.

After task producers got enable.sparse.connections=false (kxtx --debug showed that a producer
started for a partition that had moved to another worker -- 2-4 of 4 tasks a round on the
cluster -- waited 510 ms about half the time for librdkafka's coordinator timer), `--repeat 2`,
records/s: b 90.6k, 91.6k | local[2]: c 88.8k, 98.0k; d 113.2k, 137.2k | cluster: c 72.7k,
73.3k; d 106.4k, 118.2k; d one executor 81.3k, 79.5k. Medians of the ratios: d/c local[2] 1.34,
d/b local[2] 1.37, d/c cluster 1.54, d/b cluster 1.23, d 2 vs 1 worker 1.40. Round cost: the
median steady round (planning + Spark job, from --debug) 185 ms local[2] and 296 ms cluster; the
first round (Python workers start) 1.9 s and 3.7 s; spread over 24 rounds 267 ms and 444 ms
(before: 0.8-1.0 s and 1.33 s). CPU s of cluster d (2 workers): broker 1.4-1.6, driver JVM
10.2-11.1, driver Python 0.7, executor JVMs 10.7-12.2, Python workers 10.2-10.4.
`--skip-cluster --repeat 3` right after: b 83.2k, 88.7k, 90.9k | c 98.1k, 89.1k, 91.0k |
d 104.5k, 107.6k, 136.8k: d/c 1.21 (1.07-1.50), d/b 1.26. Over the 5 local[2] rounds d/c is
1.07-1.50, median 1.27: executors mode is now the faster one on local[2] too (`auto` still
picks driver mode there; see the README).

After `--mode auto` became executors mode everywhere (default --batch-max-records 100000 per
partition; `--sweep` gives its memory/throughput trade), `--skip-cluster --repeat 3`, records/s:
b 90.9k, 90.7k, 90.7k | c 97.5k, 96.0k, 90.0k | d (50k) 125.3k, 127.1k, 144.3k |
default (no --mode, no --batch-max-records) 125.4k, 141.6k, 163.2k: default / max(c, d) 1.00,
1.11, 1.13 (median 1.11), d/c 1.32, d/b 1.40; steady round 191 ms, first round 3.1 s.

After the executors-mode driver joined the --group (2026-11-24, `--repeat 2`; new cases
default_cluster2/1: --mode auto, no --batch-max-records = 100k per partition), records/s:
b 90.7k, 89.8k | local[2]: c 97.1k, 88.2k; d (50k) 112.4k, 113.7k; default 111.3k, 149.4k |
cluster: c 72.0k, 72.8k; d (50k) 78.7k, 98.4k; d one executor 70.5k, 79.7k; default 114.3k,
110.4k; default one executor 87.2k, 93.6k. Medians: default/c cluster 1.55, default/b cluster
1.25, default 2 vs 1 worker 1.25; d (50k) d/c cluster 1.22, d 2 vs 1 worker 1.18 (106-118k in
the run before: this machine's spread, or the per-round group poll; not separated);
default / max(c, d) local[2] 1.15. Steady round 194 ms local[2], 298 ms cluster (unchanged).

After the tasks stopped waiting (2026-11-24: no 0.2 s wait for a full batch at each task's end,
a topic's metadata loaded before a worker's first assign, a logical start offset for a new
group), `--repeat 2`, records/s: b 93.9k, 94.5k | local[2]: c 110.3k, 100.4k; d (50k) 170.3k,
153.2k; default 182.3k, 178.9k | cluster: c 72.9k, 74.7k; d (50k) 127.2k, 132.5k; d one executor
112.6k, 115.6k; default 135.4k, 147.3k; default one executor 130.6k, 132.2k. Medians:
default/c cluster 1.91, default/b cluster 1.50, default 2 vs 1 worker 1.08; d/c cluster 1.76,
d 2 vs 1 worker 1.14; default / max(c, d) local[2] 1.12. Steady round 134 ms local[2], 250 ms
cluster; first round 1.5 s and 2.2 s (before: 3.0 s and 5.7 s). One executor now keeps its core
busy by itself, so a second worker on the same two cores adds little.
`--records 3000000` (one repeat; start-up weighs less), records/s: b 94.0k | local[2]: c 119.0k,
d 160.6k, default 197.3k | cluster: c 90.9k, d 181.7k, d one executor 133.1k, default 197.7k,
default one executor 152.4k: default/c cluster 2.18, default/b 2.10, default 2 vs 1 worker
1.30, d 2 vs 1 worker 1.36. busy_cores (share of the 2 cores in the steady state): default
cluster, 2 workers: all 1.88 (Python workers 1.44, broker 0.19, driver JVM 0.15, executor JVMs
0.10); 1 worker: all 1.26 (Python worker 0.97: its one core is full); driver mode on the
cluster: all 1.13 (driver Python 0.28, Python workers 0.43): bound by its one driver, not by
the cores. Round cost as above (140 ms, 257 ms).

Paper model for N machines: a round takes the longest task (records per task x per-record cost)
plus the fixed cost. With P >= N partitions spread evenly the executors' part divides by N while
the driver only plans, so d ~ N x (one executor core's rate: 131-152k/s here, with the other
core left to the broker and the JVMs) until the brokers or P bind. Driver mode stays bound by one
driver process (73-91k/s on the cluster here, using 1.13 of the 2 cores). Targets then need
separate machines: d/c >= 3 at N = 2-3 (2 x 131-152k = 262-304k against 73-91k), d/b >= 1.2
at N = 1, 1 -> 2 workers ~2x. On this machine the two cores are the ceiling: two Python workers
at 1.44 cores plus the broker and JVMs fill 1.88 of 2, which is why 1 -> 2 workers gives 1.08x
(1M) to 1.30x (3M) and default/c 1.91x (1M) to 2.18x (3M). Meeting d/c >= 3 here would take
~220-270k/s, i.e. Python workers at ~7 CPU s per 1M records needing 1.5-1.9 cores by themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_pipe import fill, json_doc, loop, new_topic  # noqa: E402

UDF_FILE = Path(tempfile.gettempdir()) / "kxtx_bench_pipe_modes_udfs.py"
UDF_SOURCE = """
def enrich(doc):
    doc["total"] = round(doc["price"] * doc["qty"], 2)
    return doc
"""
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
#: kxtx --debug's line per round (executors mode): planning and Spark job milliseconds
ROUND = re.compile(r"round: .*?; plan (\d+) ms, Spark job (\d+) ms")


def enrich_bytes(value: bytes) -> bytes:
    doc = json.loads(value)
    doc["total"] = round(doc["price"] * doc["qty"], 2)
    return json.dumps(doc, separators=(",", ":")).encode()


class CpuSampler:
    """CPU seconds per process kind of the given process trees, sampled every `interval` seconds
    (a process that exits keeps its last sample)."""

    def __init__(self, roots: list[int], interval: float = 0.5):
        self.roots, self.last, self.kind, self.interval = set(roots), {}, {}, interval
        #: the largest resident memory seen per process kind (all its processes together), MB
        self.peak_mb: dict[str, int] = {}
        self.stop_flag = threading.Event()
        #: (time.monotonic(), CPU seconds per kind so far), one per sample
        self.series: list[tuple[float, dict]] = []
        #: time.time() - time.monotonic(): maps the series' times to the wall clock
        self.epoch = time.time() - time.monotonic()
        self.base = self._sample()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self) -> dict:
        parent, cpu, rss = {}, {}, {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                pid = int(entry.name)
                parent[pid] = int(fields[1])
                cpu[pid] = (int(fields[11]) + int(fields[12])) / TICK
                rss[pid] = int(fields[21]) * PAGE
                # read every time: spark-submit is a shell script that execs the driver JVM
                # (an exited, unreaped process has no command line: keep what it was)
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                if cmd:
                    self.kind[pid] = _kind(cmd)
            except (OSError, ValueError, IndexError):
                continue
        out = {}
        for pid, secs in cpu.items():
            p = pid
            while p > 1 and p not in self.roots:
                p = parent.get(p, 0)
            if p in self.roots:
                out[pid] = secs
        now: dict[str, int] = {}
        for pid in out:
            k = self.kind.get(pid, "other")
            now[k] = now.get(k, 0) + rss.get(pid, 0)
        for k, v in now.items():
            self.peak_mb[k] = max(self.peak_mb.get(k, 0), v >> 20)
        return out

    def _run(self):
        while not self.stop_flag.wait(self.interval):
            self.last.update(self._sample())
            self.series.append((time.monotonic(), self._per_kind()))

    def _per_kind(self) -> dict:
        per_kind: dict[str, float] = {}
        for pid, secs in self.last.items():
            k = self.kind.get(pid, "other")
            per_kind[k] = per_kind.get(k, 0.0) + secs - self.base.get(pid, 0.0)
        return per_kind

    def busy_cores(self, lead: str = "python_workers") -> dict | None:
        """Cores in use per process kind while `lead` did the middle 80% of its CPU work (from
        10% to 90% of its total): the steady state, without JVM start-up and shutdown."""
        total = self.series[-1][1].get(lead, 0.0) if self.series else 0.0
        marks = (
            [next((t, k) for t, k in self.series if k.get(lead, 0.0) >= f * total) for f in (0.1, 0.9)]
            if total >= 1.0
            else []
        )
        if not marks or marks[1][0] - marks[0][0] < 1.0:
            return None
        (t0, k0), (t1, k1) = marks
        cores = {k: round((v - k0.get(k, 0.0)) / (t1 - t0), 2) for k, v in sorted(k1.items())}
        cores = {k: v for k, v in cores.items() if v >= 0.01}
        return {**cores, "all": round(sum(cores.values()), 2), "window_s": round(t1 - t0, 1)}

    def add_root(self, pid: int) -> None:
        self.roots.add(pid)

    def stop(self) -> dict:
        self.stop_flag.set()
        self.thread.join()
        self.last.update(self._sample())
        self.series.append((time.monotonic(), self._per_kind()))
        return {k: round(v, 1) for k, v in sorted(self._per_kind().items()) if v >= 0.05}


def _kind(cmd: str) -> str:
    if "kxtx.bench.StreamsRef" in cmd:  # bench_vs_streams.py's Kafka Streams reference
        return "streams_jvm"
    if "kafka.Kafka" in cmd or "kafka.server" in cmd or "KafkaRaftServer" in cmd:
        return "broker"
    if "CoarseGrainedExecutorBackend" in cmd:
        return "executor_jvm"
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd or "kxtx.pipe.fast.daemon" in cmd:
        return "python_workers"
    if "deploy.master" in cmd or "deploy.worker" in cmd:
        return "spark_master_worker"
    if "SparkSubmit" in cmd or ("java" in cmd and "pyspark" in cmd) or "spark-submit" in cmd:
        return "driver_jvm"
    if "kxtx" in cmd:
        return "driver_python"
    return "other"


def pipe_command(
    bootstrap: str,
    src: str,
    out: str,
    n: int,
    mode: str | None,
    master: str,
    extra: list[str],
    debug: bool = False,
    udf: str = f"{UDF_FILE}:enrich",
) -> tuple[list[str], dict]:
    """The `kxtx pipe` command line (JSON enrichment, --max-records n, -o json) and its environment."""
    env = {
        **os.environ,
        "KXTX_BOOTSTRAP_SERVERS": bootstrap,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": str(ROOT),
    }
    args = [
        sys.executable,
        "-m",
        "kxtx",
        *(["--debug"] if debug else []),
        "pipe",
        "--in",
        src,
        "--out",
        out,
        "--group",
        f"bench-{uuid.uuid4().hex[:8]}",
        "--udf",
        udf,
        "--value-format",
        "json",
        *(["--mode", mode] if mode else []),  # None: the default mode
        "--master",
        master,
        "--max-records",
        str(n),
        "-o",
        "json",
        *extra,
    ]
    return args, env


def run_pipe(
    args: list[str], env: dict, roots: list[int], what: str, interval: float = 0.5
) -> tuple[dict, str, float, CpuSampler]:
    """Run a pipe_command, its process tree and `roots` sampled by a CpuSampler (still running:
    the caller stops it): its -o json summary, stderr, wall seconds and the sampler."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    cpu = CpuSampler(roots + [proc.pid], interval)
    stdout, stderr = proc.communicate(timeout=3600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        cpu.stop()
        raise RuntimeError(f"{what}: exit {proc.returncode}: {stderr.decode()[-2000:]}")
    return json.loads(stdout), stderr.decode(errors="replace"), wall, cpu


def cli_case(
    bootstrap: str,
    src: str,
    n: int,
    mode: str,
    master: str,
    extra: list[str],
    roots: list[int],
    debug: bool = False,
) -> dict:
    out = new_topic(bootstrap, 2)
    args, env = pipe_command(bootstrap, src, out, n, mode, master, extra, debug)
    s, stderr, wall, cpu = run_pipe(args, env, roots, f"{mode} on {master}")
    return {
        "records_per_s": round(s["processing_records_per_s"]),
        "wall_s": round(wall, 1),
        "transactions": s["transactions"],
        "spark_ms_per_batch": s["spark_ms_per_batch"],
        "cpu_s": cpu.stop(),
        "busy_cores": cpu.busy_cores(),
        "peak_rss_mb": cpu.peak_mb,
        **({"rounds": ROUND.findall(stderr)} if debug else {}),
    }


def eos_case(bootstrap: str, src: str, n: int, roots: list[int]) -> dict:
    cpu = CpuSampler(roots + [os.getpid()])
    r = loop(bootstrap, src, n, 200_000, eos=True, fn=enrich_bytes)
    used = cpu.stop()
    used["bench_process(b)"] = used.pop("other", 0.0) + used.pop("driver_python", 0.0)
    return {"records_per_s": r["records_per_s"], "transactions": r["batches"], "cpu_s": used}


def round_cost(bootstrap: str, master: str, roots: list[int], extra: list[str]) -> dict:
    """Executors mode, 1 record per partition and round over 4 partitions: the fixed cost.
    ms_per_round spreads the first round (which starts the Python workers) over all rounds;
    steady_ms_per_round is the median of the others' planning + Spark job (kxtx --debug)."""
    src = new_topic(bootstrap, 4)
    fill(bootstrap, src, 96, json_doc)
    r = cli_case(
        bootstrap, src, 96, "executors", master, ["--batch-max-records", "1", *extra], roots, debug=True
    )
    rounds = 96 // 4
    steady = [float(plan) + float(job) for plan, job in r["rounds"][1:]]
    return {
        "rounds": rounds,
        "ms_per_round": round(1000 * 96 / r["records_per_s"] / rounds, 1),
        "steady_ms_per_round": round(statistics.median(steady)) if steady else None,
        "first_round_ms": round(sum(map(float, r["rounds"][0]))) if r["rounds"] else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--bootstrap")
    ap.add_argument("--skip-cluster", action="store_true")
    ap.add_argument(
        "--sweep",
        metavar="N,N,...",
        help="instead: executors mode on local[2] at these --batch-max-records (per "
        "partition and round), --repeat times, with the Python workers' peak RSS",
    )
    args = ap.parse_args()
    UDF_FILE.write_text(UDF_SOURCE)
    sandbox = cluster = None
    bootstrap = args.bootstrap
    roots: list[int] = []
    try:
        if not bootstrap:
            from kxtx.sandbox import Sandbox

            sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-modes-"))
            bootstrap = sandbox.start(kafka_version="4", port=0, broker_config={}, heap="1g").bootstrap
            roots += _broker_pids(bootstrap)
        if not (args.skip_cluster or args.sweep):
            from tests.integration.spark_cluster import SparkCluster

            cluster = SparkCluster(Path(tempfile.mkdtemp(prefix="kxtx-bench-spark-"))).start(2)
            roots += [p.pid for _, p in cluster.procs]
        src = new_topic(bootstrap, 4)
        fill(bootstrap, src, args.records, json_doc)
        if args.sweep:
            return sweep(bootstrap, src, args, roots)
        d_args = ["--batch-max-records", "50000"]
        cases = {
            "b_eos_loop": lambda: eos_case(bootstrap, src, args.records, roots),
            "c_driver_local2": lambda: cli_case(
                bootstrap, src, args.records, "driver", "local[2]", [], roots
            ),
            "d_executors_local2": lambda: cli_case(
                bootstrap, src, args.records, "executors", "local[2]", d_args, roots
            ),
            # what a user gets: --mode auto and the default --batch-max-records
            "default_local2": lambda: cli_case(bootstrap, src, args.records, "auto", "local[2]", [], roots),
        }
        if cluster is not None:
            url = cluster.master_url
            cases |= {
                "c_driver_cluster2": lambda: cli_case(bootstrap, src, args.records, "driver", url, [], roots),
                "d_executors_cluster2": lambda: cli_case(
                    bootstrap, src, args.records, "executors", url, d_args, roots
                ),
                "d_executors_cluster1": lambda: cli_case(
                    bootstrap,
                    src,
                    args.records,
                    "executors",
                    url,
                    d_args + ["--spark-conf", "spark.cores.max=1"],
                    roots,
                ),
                # what a user gets on a cluster: --mode auto, the default --batch-max-records
                "default_cluster2": lambda: cli_case(bootstrap, src, args.records, "auto", url, [], roots),
                "default_cluster1": lambda: cli_case(
                    bootstrap, src, args.records, "auto", url, ["--spark-conf", "spark.cores.max=1"], roots
                ),
            }
        runs = []
        for i in range(args.repeat):
            run = {}
            for name, case in cases.items():
                run[name] = case()
                print(json.dumps({"repeat": i, name: run[name]}), flush=True)
            runs.append(run)
        results = {
            "records": args.records,
            "partitions": 4,
            "cores": os.cpu_count(),
            "runs": runs,
            "ratios": _ratios(runs),
        }
        results["round_cost_local2"] = round_cost(bootstrap, "local[2]", roots, [])
        if cluster is not None:
            results["round_cost_cluster2"] = round_cost(bootstrap, cluster.master_url, roots, [])
        print(json.dumps(results, indent=2))
    finally:
        if cluster is not None:
            cluster.stop()
        if sandbox is not None:
            sandbox.stop()


def sweep(bootstrap: str, src: str, args, roots: list[int]) -> None:
    """Executors mode's records per partition and round: records/s against memory."""
    for i in range(args.repeat):
        for n in [int(x) for x in args.sweep.split(",")]:
            r = cli_case(
                bootstrap, src, args.records, "executors", "local[2]", ["--batch-max-records", str(n)], roots
            )
            print(
                json.dumps(
                    {
                        "repeat": i,
                        "batch_max_records": n,
                        "records_per_s": r["records_per_s"],
                        "python_workers_peak_rss_mb": r["peak_rss_mb"].get("python_workers"),
                    }
                ),
                flush=True,
            )


def _ratios(runs: list) -> dict:
    def rate(run, name):
        return run[name]["records_per_s"] if name in run else None

    pairs = {
        "d/c local[2]": ("d_executors_local2", "c_driver_local2"),
        "d/b local[2]": ("d_executors_local2", "b_eos_loop"),
        "c/b local[2]": ("c_driver_local2", "b_eos_loop"),
        "d/c cluster": ("d_executors_cluster2", "c_driver_cluster2"),
        "d/b cluster": ("d_executors_cluster2", "b_eos_loop"),
        "d 2 workers / 1 worker": ("d_executors_cluster2", "d_executors_cluster1"),
        "default/c cluster": ("default_cluster2", "c_driver_cluster2"),
        "default/b cluster": ("default_cluster2", "b_eos_loop"),
        "default 2 workers / 1 worker": ("default_cluster2", "default_cluster1"),
    }
    out = {}
    for label, (num, den) in pairs.items():
        vals = [rate(r, num) / rate(r, den) for r in runs if rate(r, num) and rate(r, den)]
        if vals:
            out[label] = round(statistics.median(vals), 2)
    best = [
        rate(r, "default_local2") / max(rate(r, "c_driver_local2"), rate(r, "d_executors_local2"))
        for r in runs
        if rate(r, "default_local2")
    ]
    if best:  # the target: the default mode >= the better of c and d
        out["default / max(c, d) local[2]"] = round(statistics.median(best), 2)
    return out


def _broker_pids(bootstrap: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "kafka" in cmd and "java" in cmd and "kxtx-bench-modes-" in cmd:
                pids.append(int(entry.name))
    return pids or []


if __name__ == "__main__":
    main()
