"""Benchmark for `kxtx audit-markers` (issue 46) against `kxtx dump txn-state` over the same window.
Not a timed test: run it by hand.

    python bench/bench_audit_markers.py [--transactions 10000] [--partitions 100] [--per-txn 3] [--repeat 3]

Fills a topic of --partitions partitions with --transactions committed transactions (each writes one
record to each of --per-txn partitions, several transactional producers in threads), then, side by
side and interleaved, --repeat rounds of (wall time incl. start-up, output to /dev/null):
  (a) `kxtx dump txn-state --since T -o jsonl` (its default --workers), the coordinators' records of
      the window decoded and printed;
  (b) `kxtx audit-markers --since T -o jsonl`, the same records read and held against every
      partition's batch headers and markers (and checked: exit 0, nothing lost).
T is the time the fill started. Reports each round's seconds and b/a, and the medians.
Target (issue 46): b/a <= 2. Without --bootstrap a sandbox broker is started (and stopped).
"""

from __future__ import annotations

import argparse
import os
import random
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


def fill(
    bootstrap: str, topic: str, transactions: int, partitions: int, per_txn: int, producers: int = 4
) -> None:
    from confluent_kafka import Producer

    def work(n: int, seed: int) -> None:
        rnd = random.Random(seed)
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"bench-audit-{uuid.uuid4().hex[:8]}",
                "linger.ms": 0,
            }
        )
        p.init_transactions(60)
        for i in range(n):
            p.begin_transaction()
            for part in rnd.sample(range(partitions), per_txn):
                p.produce(topic, value=f"{seed}-{i}".encode(), partition=part)
            p.commit_transaction(60)

    share = [transactions // producers + (1 if i < transactions % producers else 0) for i in range(producers)]
    threads = [threading.Thread(target=work, args=(n, i)) for i, n in enumerate(share)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def timed(argv: list[str], env: dict) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    return time.perf_counter() - t0, r.returncode, r.stderr[-500:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--per-txn", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bootstrap")
    ap.add_argument("--kafka-version", default="4")
    args = ap.parse_args()
    sandbox = None
    if args.bootstrap:
        bootstrap = args.bootstrap
    else:
        from kxtx.sandbox import Sandbox

        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-audit-"))
        bootstrap = sandbox.start(kafka_version=args.kafka_version, port=0, heap="1g").bootstrap
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = f"bench-audit-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
        time.sleep(1)
        since = str(int(time.time() * 1000))
        t0 = time.perf_counter()
        fill(bootstrap, topic, args.transactions, args.partitions, args.per_txn)
        print(
            f"fill: {args.transactions} transactions x {args.per_txn} partitions of {args.partitions} "
            f"in {time.perf_counter() - t0:.0f}s",
            flush=True,
        )
        env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": bootstrap}
        kxtx = [sys.executable, "-m", "kxtx"]
        dump = [*kxtx, "dump", "txn-state", "--since", since, "-o", "jsonl"]
        audit = [*kxtx, "audit-markers", "--since", since, "-o", "jsonl"]
        ratios, dumps, audits = [], [], []
        for i in range(args.repeat):
            a, code_a, err_a = timed(dump, env)
            b, code_b, err_b = timed(audit, env)
            assert code_a == 0, err_a
            assert code_b == 0, f"audit-markers exit {code_b}: {err_b}"
            dumps.append(a)
            audits.append(b)
            ratios.append(b / a)
            print(
                f"round {i + 1}: dump txn-state {a:.2f}s, audit-markers {b:.2f}s, ratio {b / a:.2f}",
                flush=True,
            )
        print(
            f"median: dump txn-state {statistics.median(dumps):.2f}s, audit-markers "
            f"{statistics.median(audits):.2f}s, ratio {statistics.median(ratios):.2f} (target <= 2)"
        )
    finally:
        if sandbox is not None:
            sandbox.stop()


if __name__ == "__main__":
    main()
