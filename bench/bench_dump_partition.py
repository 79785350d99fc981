"""Benchmark for `kxtx dump partition` (issue 26). Not a timed test: run it by hand.

    python bench/bench_dump_partition.py [--records 1000000] [--per-txn 50000] [--compression none]
                                         [--repeat 1] [--bootstrap HOST:PORT --data-dir DIR]

Fills one partition of a new topic with `--records` records (100-byte values, keys, one header) in
transactions of `--per-txn` records from one transactional producer. Then, side by side over the
whole partition (offset 0 to the high watermark), each a process of its own timed by its wall time
(start-up included) with stdout to /dev/null:
  (a) a raw confluent-kafka consume (bench_dump.py's: the consumer settings, batch size and wait of
      `kxtx dump`, read_committed, counting until the end, no decoding, no output);
  (b) `kxtx dump partition TOPIC -o jsonl` (batch headers only) and (b+r) with `--records`;
  (c) Kafka's DumpLogSegments (what `kafka-dump-log.sh` runs) from the broker's jars on the
      partition's segment files: batch headers only, and (c+r) `--deep-iteration --print-data-log`.
Reports records/s of each (records in the partition / wall seconds) and the ratios b/a (target
>= 1.0), (b+r)/a (target >= 0.5), b/c and (b+r)/(c+r). `--repeat N`: N rounds, then medians.

Without --bootstrap a sandbox broker is started (and stopped) with kxtx's own sandbox code; with
--bootstrap, (c) needs `--data-dir` (the broker's log directory) and `--kafka-libs`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from as_installed import compile_kxtx  # noqa: E402 - after the path is set
from bench_dump import raw_consume_process, timed  # noqa: E402


def fill(bootstrap: str, records: int, per_txn: int, compression: str) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-dump-part-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    time.sleep(1)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{topic}",
            "compression.type": compression,
            "linger.ms": 20,
        }
    )
    p.init_transactions(30)
    value = b"v" * 100
    for start in range(0, records, per_txn):
        p.begin_transaction()
        for i in range(start, min(records, start + per_txn)):
            while True:
                try:
                    p.produce(topic, key=b"key-%d" % i, value=value, headers=[("h", b"1")], partition=0)
                    break
                except BufferError:
                    p.poll(0.05)
        p.commit_transaction(60)
    return topic


def kxtx_dump_partition(bootstrap: str, topic: str, *extra: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "kxtx", "dump", "partition", topic, "-b", bootstrap, "-o", "jsonl"]
    wall, _rss, _ = timed([*argv, "--timeout", "60", *extra], env, cwd=ROOT)
    return wall


def dump_log_segments(dist, segments: list[Path], *extra: str) -> float:
    main = "org.apache.kafka.tools.DumpLogSegments" if dist.major >= 4 else "kafka.tools.DumpLogSegments"
    wall, _rss, _ = timed(dist.java(main, *extra, "--files", ",".join(map(str, segments))))
    return wall


def measure(bootstrap: str, dist, data_dir: Path | None, topic: str, records: int, repeat: int) -> None:
    from statistics import median

    segments = sorted(data_dir.glob(f"**/{topic}-0/*.log")) if data_dir else []
    rounds = []
    for i in range(repeat):
        count, a, _a_read = raw_consume_process(bootstrap, topic)
        assert count == records, f"the consumer read {count} of {records} records"
        b = kxtx_dump_partition(bootstrap, topic)
        br = kxtx_dump_partition(bootstrap, topic, "--records")
        if dist and segments:
            c = dump_log_segments(dist, segments)
            cr = dump_log_segments(dist, segments, "--deep-iteration", "--print-data-log")
        else:
            c = cr = float("nan")
        rates = [records / x for x in (a, b, br, c, cr)]
        rounds.append(
            [*rates, rates[1] / rates[0], rates[2] / rates[0], rates[1] / rates[3], rates[2] / rates[4]]
        )
        print(
            f"round {i + 1}: {records:,} records | (a) confluent consume {rates[0]:,.0f} rec/s ({a:.1f}s) | "
            f"(b) dump partition {rates[1]:,.0f} rec/s ({b:.1f}s) | (b+r) --records {rates[2]:,.0f} rec/s "
            f"({br:.1f}s) | (c) DumpLogSegments {rates[3]:,.0f} rec/s ({c:.1f}s) | (c+r) deep "
            f"{rates[4]:,.0f} rec/s ({cr:.1f}s) | b/a {rates[1] / rates[0]:.2f} | (b+r)/a "
            f"{rates[2] / rates[0]:.2f} | b/c {rates[1] / rates[3]:.2f} | (b+r)/(c+r) {rates[2] / rates[4]:.2f}",
            flush=True,
        )
    m = [median(col) for col in zip(*rounds)]
    print(
        f"median of {repeat}: (a) {m[0]:,.0f} | (b) {m[1]:,.0f} | (b+r) {m[2]:,.0f} | (c) {m[3]:,.0f} | "
        f"(c+r) {m[4]:,.0f} rec/s | b/a {m[5]:.2f} | (b+r)/a {m[6]:.2f} | b/c {m[7]:.2f} | "
        f"(b+r)/(c+r) {m[8]:.2f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--per-txn", type=int, default=50_000, help="records per transaction")
    ap.add_argument("--compression", default="none", help="the producer's compression.type")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--bootstrap")
    ap.add_argument("--data-dir", type=Path, help="with --bootstrap: the broker's log directory, for (c)")
    ap.add_argument("--kafka-libs", help="with --bootstrap: Kafka jars, for (c)")
    ap.add_argument("--kafka-version", default="4")
    args = ap.parse_args()
    from kxtx.sandbox import KafkaDistribution, Sandbox

    sandbox = None
    if args.bootstrap:
        bootstrap, data_dir = args.bootstrap, args.data_dir
        dist = KafkaDistribution(args.kafka_version, Path(args.kafka_libs)) if args.kafka_libs else None
    else:
        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-dump-part-"))
        info = sandbox.start(kafka_version=args.kafka_version, port=0, heap="1g")
        bootstrap, dist, data_dir = info.bootstrap, info.distribution, Path(sandbox.dir)
    compile_kxtx()
    try:
        t0 = time.perf_counter()
        topic = fill(bootstrap, args.records, args.per_txn, args.compression)
        print(f"fill: {time.perf_counter() - t0:.0f}s ({args.compression})", flush=True)
        measure(bootstrap, dist, data_dir, topic, args.records, args.repeat)
    finally:
        if sandbox is not None:
            sandbox.stop()


if __name__ == "__main__":
    main()
