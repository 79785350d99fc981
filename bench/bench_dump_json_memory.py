"""Peak memory of `kxtx dump partition --records` by output format (issue 43: `-o json` held the
whole document, 796 MB for a 47 MB partition against 146 MB for `-o jsonl`).

Makes one partition of --records records (~--value-bytes each, a key and a header, transactions
of 500 with every fifth aborted) on the broker at --bootstrap, then runs the dump with `-o json`
and `-o jsonl`, each --repeat times, and prints one JSON document: each run's peak RSS (the
child's ru_maxrss, from wait4) and wall time, and whether the json runs' bytes were all equal.

    python bench/bench_dump_json_memory.py --bootstrap HOST:PORT [--records 300000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_partition(bootstrap: str, topic: str, records: int, value_bytes: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    time.sleep(1)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{topic}", "linger.ms": 50})
    p.init_transactions(60)
    i = txn = 0
    while i < records:
        p.begin_transaction()
        for _ in range(min(500, records - i)):
            value = f'{{"i":{i},"s":"' + "x" * value_bytes + '"}'
            p.produce(topic, key=f"k{i}".encode(), value=value.encode(), headers=[("h", b"v")], partition=0)
            i += 1
        p.flush(60)
        txn += 1
        if txn % 5 == 0:
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)


def run(bootstrap: str, topic: str, fmt: str) -> dict:
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": bootstrap}
    argv = [sys.executable, "-m", "kxtx", "dump", "partition", f"{topic}:0", "--records", "-o", fmt]
    with tempfile.TemporaryFile() as out:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        _pid, status, usage = os.wait4(proc.pid, 0)
        took = time.monotonic() - started
        assert os.waitstatus_to_exitcode(status) == 0, f"{fmt}: exit {status}"
        out.seek(0)
        digest, size = hashlib.sha256(), 0
        while chunk := out.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {
        "format": fmt,
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "seconds": round(took, 2),
        "bytes": size,
        "sha256": digest.hexdigest(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--value-bytes", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--topic", help="an existing topic made by this script (skips making one)")
    args = ap.parse_args()
    topic = args.topic or f"bench-dump-mem-{uuid.uuid4().hex[:6]}"
    if not args.topic:
        make_partition(args.bootstrap, topic, args.records, args.value_bytes)
    runs = [run(args.bootstrap, topic, fmt) for _ in range(args.repeat) for fmt in ("json", "jsonl")]
    shas = {r["sha256"] for r in runs if r["format"] == "json"}
    print(
        json.dumps(
            {"topic": topic, "records": args.records, "runs": runs, "json_bytes_equal": len(shas) == 1},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
