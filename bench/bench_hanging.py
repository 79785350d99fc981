"""Benchmark: `kxtx find-hanging --broker-id 1` vs Kafka's `kafka-transactions.sh find-hanging`.

Starts a sandbox broker (transaction.partition.verification.enable=false), creates TOPICS x PARTITIONS
partitions, makes a few truly hanging transactions, then runs both tools RUNS times in one session
(Kafka's via `java -cp` from the broker's own jars) and reports the median wall times, their ratio,
and whether both found the same hanging partitions. Also times `kxtx inspect txn` with and without
the `__transaction_state` history.

    python bench/bench_hanging.py [--topics 20] [--partitions 100] [--runs 5] [--kafka-version 4]

Prints one JSON document on stdout; progress on stderr. Stops the broker it started.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.txn_helpers import make_hanging  # noqa: E402


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def timed(
    argv: list[str], env: dict | None = None, cwd: Path = ROOT
) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    return time.perf_counter() - t0, r


def start_broker(kafka_version: str):
    """A sandbox broker that lets truly hanging transactions be made (partition verification
    off): (sandbox, its info). The caller stops it."""
    from kxtx.sandbox import Sandbox

    sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-"))
    log("starting the broker")
    info = sandbox.start(
        kafka_version=kafka_version,
        port=0,
        heap="1g",
        broker_config={"transaction.partition.verification.enable": "false"},
    )
    return sandbox, info


def kafka_find_hanging(sandbox, bootstrap: str) -> list[str]:
    """The argv of Kafka's `kafka-transactions.sh find-hanging --broker-id 1`, run with `java -cp`
    from the broker's own jars (no shell script, no log noise)."""
    return sandbox.info().distribution.java(
        "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server",
        bootstrap,
        "find-hanging",
        "--broker-id",
        "1",
        jvm=("-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dlog4j2.level=WARN"),
    )


def create_topics(bootstrap: str, topics: int, partitions: int) -> list[str]:
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"bench-{i:02d}" for i in range(topics)]
    for name, fut in a.create_topics(
        [NewTopic(n, partitions, 1) for n in names], operation_timeout=120
    ).items():
        fut.result(timeout=180)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        md = a.list_topics(timeout=30)
        if all(
            len(md.topics[n].partitions) == partitions
            and all(p.leader >= 0 for p in md.topics[n].partitions.values())
            for n in names
            if n in md.topics
        ):
            return names
        time.sleep(0.5)
    raise SystemExit("topics have no leaders")


def java_rows(stdout: str) -> set[tuple[str, int]]:
    """Kafka's find-hanging table: Topic Partition ProducerId ... (header first)."""
    out = set()
    for line in stdout.splitlines()[1:]:
        cells = line.split()
        if len(cells) >= 2 and cells[1].isdigit():
            out.add((cells[0], int(cells[1])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kafka-version", default="4")
    ap.add_argument("--hanging", type=int, default=3)
    args = ap.parse_args()

    sandbox, info = start_broker(args.kafka_version)
    try:
        b = info.bootstrap
        log(f"broker {info.kafka_version} at {b}; creating {args.topics} x {args.partitions} partitions")
        names = create_topics(b, args.topics, args.partitions)
        tid = "bench-hanging"
        hang_on = [(names[i % len(names)], (i * 37) % args.partitions) for i in range(args.hanging)]
        _p, starts = make_hanging(b, tid, hang_on, commit_on=(names[-1], args.partitions - 1))
        expected = set(starts)
        env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": b}
        kx = [sys.executable, "-m", "kxtx", "find-hanging", "--broker-id", "1", "-o", "jsonl"]
        jv = kafka_find_hanging(sandbox, b)
        times = {"kxtx": [], "kafka": []}
        found = {}
        partitions_checked = None
        for i in range(args.runs):
            for name, argv in (("kafka", jv), ("kxtx", kx)):
                t, r = timed(argv, env)
                times[name].append(t)
                if name == "kxtx":
                    if r.returncode != 3:
                        raise SystemExit(f"kxtx exit {r.returncode}: {r.stderr}")
                    found[name] = {
                        (x["topic"], x["partition"]) for x in map(json.loads, r.stdout.splitlines())
                    }
                else:
                    if r.returncode != 0:
                        raise SystemExit(f"kafka-transactions exit {r.returncode}: {r.stderr[-2000:]}")
                    found[name] = java_rows(r.stdout)
            log(f"run {i + 1}: kafka {times['kafka'][-1]:.2f}s, kxtx {times['kxtx'][-1]:.2f}s")
        md = subprocess.run(
            [sys.executable, "-m", "kxtx", "find-hanging", "--broker-id", "1", "-o", "table"],
            capture_output=True,
            text=True,
            env={**env, "COLUMNS": "200"},
            cwd=ROOT,
        )
        partitions_checked = next(
            (line.strip() for line in md.stdout.splitlines() if "checked" in line), None
        )
        inspect = {}
        for label, extra in (
            ("with_history", []),
            ("no_history", ["--no-history"]),
            ("no_history_no_scan", ["--no-history", "--no-scan"]),
        ):
            ts = []
            for _ in range(args.runs):
                t, r = timed([sys.executable, "-m", "kxtx", "inspect", "txn", tid, "-o", "json", *extra], env)
                if r.returncode != 0:
                    raise SystemExit(f"inspect txn exit {r.returncode}: {r.stderr}")
                ts.append(t)
            inspect[label] = round(statistics.median(ts), 3)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            json.dumps(
                {
                    "kafka_version": info.kafka_version,
                    "partitions": args.topics * args.partitions,
                    "kxtx_table_title": partitions_checked,
                    "runs": args.runs,
                    "find_hanging_median_s": {k: round(v, 3) for k, v in med.items()},
                    "find_hanging_all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
                    "ratio_kxtx_over_kafka": round(med["kxtx"] / med["kafka"], 3),
                    "hanging_expected": sorted(f"{t}:{p}" for t, p in expected),
                    "same_partitions_found": found.get("kxtx") == found.get("kafka") == expected,
                    "kafka_found": sorted(f"{t}:{p}" for t, p in found.get("kafka", set())),
                    "inspect_txn_median_s": inspect,
                },
                indent=2,
            )
        )
    finally:
        log("stopping the broker")
        sandbox.stop()


if __name__ == "__main__":
    main()
