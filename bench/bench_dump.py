"""Benchmark for `kxtx dump` (issue 4). Not a timed test: run it by hand.

    python bench/bench_dump.py [--offsets-records 1000000] [--txn-records 200000] [--bootstrap HOST:PORT]

Fills `__consumer_offsets` with many small offset commits (standalone groups, 100 partitions per
commit request, spread over many groups so most coordinator partitions get records) and
`__transaction_state` with many small transactions (send_offsets_to_transaction + commit, 3 records
each, several producers in threads). Then, per topic, side by side over the same partitions:
  (a) a raw confluent-kafka consume (assign every partition, read_committed, count until the end
      offsets, no decoding) with the same consumer settings, batch size and wait as the dump, run as
      a Python process of its own (wall time incl. start-up, like b and c);
  (b) `kxtx dump offsets|txn-state --format jsonl > /dev/null` (a subprocess, wall time incl. start-up)
      with its default --workers (one process per core, at most 4), and again with `--workers 1`;
  (c) Kafka's console consumer with OffsetsMessageFormatter / TransactionLogMessageFormatter from the
      broker's jars, output to /dev/null, `--max-messages` = the record count (wall time incl. JVM).
Reports records/s and the ratios b/a and b/c, and the peak RSS of one kxtx process streaming a tenth of
the records (`--limit`) vs all of them (`--workers 1`; flat: about equal) vs `--latest`, and the
largest process of a default (several-process) run (GNU time reports the largest, not the sum);
`--repeat N` runs N such rounds and adds the medians (rates and ratios of each round).

`--fold-memory` alone measures the --latest fold's memory against record and key counts (no broker).

Without --bootstrap a sandbox broker is started (and stopped) with kxtx's own sandbox code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OFFSETS, TXN = "__consumer_offsets", "__transaction_state"
#: what kxtx dump picks by default here
WORKERS = min(len(os.sched_getaffinity(0)), 4)


def fill_offsets(bootstrap: str, records: int, groups: int = 20, partitions: int = 100) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-dump-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    time.sleep(1)
    rounds = max(1, records // groups // partitions)
    consumers = [
        Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"bench-g{g}-{topic}", "enable.auto.commit": False}
        )
        for g in range(groups)
    ]
    for i in range(rounds):
        last = (i + 1) % 20 == 0 or i == rounds - 1  # a synchronous commit now and then bounds in-flight
        for c in consumers:  # one record per partition per commit
            c.commit(
                offsets=[TopicPartition(topic, p, i + 1) for p in range(partitions)], asynchronous=not last
            )
    for c in consumers:
        c.close()


def fill_txn(bootstrap: str, records: int, threads: int = 8) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    per_thread = max(1, records // 3 // threads)
    topic = f"bench-dump-src-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    time.sleep(1)
    meta = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-txn-{topic}"}
    ).consumer_group_metadata()

    def work(n: int) -> None:
        # Many transactional ids so the records spread over the coordinator partitions.
        for j in range(0, per_thread, 50):
            p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{topic}-{n}-{j}"})
            p.init_transactions(30)
            for k in range(min(50, per_thread - j)):
                p.begin_transaction()
                p.send_offsets_to_transaction([TopicPartition(topic, 0, k + 1)], meta, 30)
                p.commit_transaction(30)

    ts = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def raw_consume_process(bootstrap: str, topic: str) -> tuple[int, float, float]:
    """(a) as a process of its own, timed like (b) and (c): interpreter start-up and client set-up
    included, as they are in the other two."""
    wall, _, tail = timed(
        [sys.executable, str(Path(__file__).resolve()), "--raw-consume", topic, "--bootstrap", bootstrap]
    )
    words = tail.strip().splitlines()[-1].split()  # "<count> records read in <s>s in-process"
    return int(words[0]), wall, float(words[4].rstrip("s"))


def raw_consume(bootstrap: str, topic: str) -> tuple[int, float]:
    """Assign all partitions from the beginning, count records until the end offsets: the same
    consumer settings, batch size and wait as `kxtx dump` (kxtx.dump.source), no decoding, no output."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from kxtx.dump.source import BATCH, CONSUMER_CONFIG, WAIT_S

    t0 = time.perf_counter()
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-raw-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            **CONSUMER_CONFIG,
        }
    )
    n_parts = len(c.list_topics(topic, timeout=30).topics[topic].partitions)
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in range(n_parts)}
    live = {p for p, e in ends.items() if e > 0}
    c.assign([TopicPartition(topic, p, -2) for p in live])
    count = 0
    while live:
        for m in c.consume(BATCH, WAIT_S):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    live.discard(m.partition())
                continue
            count += 1
            if m.offset() >= ends[m.partition()] - 1:
                live.discard(m.partition())
    c.close()
    return count, time.perf_counter() - t0


def timed(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[float, int, str]:
    """Wall time, peak RSS (KiB) and stderr tail of a subprocess writing stdout to /dev/null.

    The RSS comes from GNU time when present: a child forked straight from this (big) process would
    report this process's peak as its own (Linux keeps the pre-exec high-water mark)."""
    gnu_time = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    with (
        open(os.devnull, "w") as null,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as rss_file,
    ):
        if gnu_time:
            argv = [gnu_time, "-f", "%M", "-o", rss_file.name, *argv]
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=null, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read().decode(errors="replace")[-400:]
        rss = int(rss_file.read().strip().splitlines()[-1]) if gnu_time else usage.ru_maxrss
    if p.returncode != 0:
        raise RuntimeError(f"{argv[:4]}... exited {p.returncode}: {tail}")
    return wall, rss, tail


def kxtx_dump(bootstrap: str, command: str, *extra: str, root: Path = ROOT) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    # cwd too: `python -m` puts the working directory first on sys.path, before PYTHONPATH.
    wall, rss, _ = timed(
        [
            sys.executable,
            "-m",
            "kxtx",
            "dump",
            command,
            "-b",
            bootstrap,
            "--format",
            "jsonl",
            "--timeout",
            "60",
            *extra,
        ],
        env,
        cwd=root,
    )
    return wall, rss


def console(dist, bootstrap: str, topic: str, formatter: str, count: int) -> float:
    argv = dist.java(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        "20000",
        "--isolation-level",
        "read_committed",
        "--formatter",
        f"org.apache.kafka.tools.consumer.{formatter}",
        "--consumer-property",
        "exclude.internal.topics=false",
    )
    wall, _, tail = timed(argv)
    assert f"Processed a total of {count} messages" in tail, tail
    return wall


def measure(
    bootstrap: str, dist, topic: str, command: str, formatter: str, repeat: int, baseline: Path | None
) -> None:
    """Rounds of (a), (b), (c) one after the other, then the medians of rates and ratios."""
    from statistics import median

    rounds = []
    for i in range(repeat):
        count, a, a_read = raw_consume_process(bootstrap, topic)
        if baseline is not None:
            b0, _ = kxtx_dump(bootstrap, command, root=baseline)
            print(
                f"{topic} round {i + 1}: (b0) kxtx dump from {baseline}: {count / b0:,.0f} rec/s "
                f"({b0:.1f}s) | b0/a {a / b0:.2f}",
                flush=True,
            )
        b, rss_workers = kxtx_dump(bootstrap, command)
        b1, rss_stream = kxtx_dump(bootstrap, command, "--workers", "1")
        _, rss_tenth = kxtx_dump(bootstrap, command, "--limit", str(count // 10))
        _, rss_latest = kxtx_dump(bootstrap, command, "--latest")
        c = console(dist, bootstrap, topic, formatter, count) if dist else float("nan")
        ra, rb, rb1, rc = count / a, count / b, count / b1, count / c
        rounds.append(
            (ra, rb, rb1, rc, rb / ra, rb / rc, rb1 / ra, rss_tenth, rss_stream, rss_latest, rss_workers)
        )
        print(
            f"{topic} round {i + 1}: {count} records | (a) raw confluent {ra:,.0f} rec/s ({a:.1f}s, "
            f"{a_read:.1f}s of it reading) | (b) kxtx dump {rb:,.0f} rec/s ({b:.1f}s; one process: "
            f"{rb1:,.0f} rec/s) | (c) console+formatter {rc:,.0f} rec/s ({c:.1f}s) | b/a {rb / ra:.2f} "
            f"(one process {rb1 / ra:.2f}) | b/c {rb / rc:.2f} | kxtx peak RSS of one process "
            f"streaming a tenth {rss_tenth / 1024:.0f} MiB, all {rss_stream / 1024:.0f} MiB, --latest "
            f"{rss_latest / 1024:.0f} MiB; largest of the {WORKERS} processes {rss_workers / 1024:.0f} MiB",
            flush=True,
        )
    ra, rb, rb1, rc, ba, bc, b1a, rt, rs, rl, rw = (median(col) for col in zip(*rounds))
    print(
        f"{topic} median of {repeat}: (a) {ra:,.0f} rec/s | (b) {rb:,.0f} rec/s (one process "
        f"{rb1:,.0f}) | (c) {rc:,.0f} rec/s | b/a {ba:.2f} (one process {b1a:.2f}) | b/c {bc:.2f} | "
        f"peak RSS streaming a tenth {rt / 1024:.0f} MiB, all {rs / 1024:.0f} MiB, --latest "
        f"{rl / 1024:.0f} MiB, per process with {WORKERS} workers {rw / 1024:.0f} MiB",
        flush=True,
    )


def fold_memory() -> None:
    """`--latest` memory grows with keys, not records: the dump's own fold over offset-commit rows
    built by the dump's own row builder, for record and key counts varied independently (peak
    bytes allocated by Python while folding, tracemalloc)."""
    import struct
    import tracemalloc

    from kxtx.dump.rows import builder
    from kxtx.dump.runner import _fold

    build = builder(OFFSETS, None, with_keys=True)

    def batches(records: int, keys: int):
        for start in range(0, records, 10000):
            raw = []
            for i in range(start, min(records, start + 10000)):
                k = i % keys
                key = (
                    struct.pack(">hh", 1, 5)
                    + b"group"
                    + struct.pack(">h", 5)
                    + b"topic"
                    + struct.pack(">i", k)
                )
                value = struct.pack(">hqih", 3, i, -1, 0) + struct.pack(">q", 1700000000000)
                raw.append((k % 50, i, 1700000000000, key, value, None))
            yield build(raw)

    for records, keys in (
        (200_000, 1_000),
        (800_000, 1_000),
        (200_000, 50_000),
        (800_000, 50_000),
        (800_000, 200_000),
    ):
        tracemalloc.start()
        rows = _fold(batches(records, keys))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(rows) == keys
        print(
            f"--latest fold: {records:>7,} records, {keys:>7,} keys -> {len(rows):>7,} rows, "
            f"peak {peak / 2**20:6.1f} MiB",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--offsets-records", type=int, default=1_000_000)
    ap.add_argument("--txn-records", type=int, default=200_000)
    ap.add_argument("--bootstrap")
    ap.add_argument("--kafka-libs", help="Kafka jars for the console consumer (with --bootstrap)")
    ap.add_argument("--kafka-version", default="4")
    ap.add_argument("--no-fill", action="store_true", help="measure what the topics already hold")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds of a, b, c side by side (the machine's load varies); medians reported",
    )
    ap.add_argument(
        "--baseline-root",
        type=Path,
        help="also time `kxtx dump` from this checkout (e.g. a git archive of an older commit)",
    )
    ap.add_argument("--raw-consume", metavar="TOPIC", help=argparse.SUPPRESS)  # (a)'s own process
    ap.add_argument("--only", choices=("offsets", "txn-state"), help="measure one topic only")
    ap.add_argument(
        "--fold-memory",
        action="store_true",
        help="only the --latest fold's memory against records and keys (no broker)",
    )
    args = ap.parse_args()
    if args.fold_memory:
        fold_memory()
        return
    if args.raw_consume:
        count, seconds = raw_consume(args.bootstrap, args.raw_consume)
        print(f"{count} records read in {seconds:.2f}s in-process", file=sys.stderr)
        return
    from kxtx.sandbox import KafkaDistribution, Sandbox

    sandbox = None
    if args.bootstrap:
        bootstrap = args.bootstrap
        dist = KafkaDistribution(args.kafka_version, Path(args.kafka_libs)) if args.kafka_libs else None
    else:
        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-dump-"))
        info = sandbox.start(kafka_version=args.kafka_version, port=0, heap="1g")
        bootstrap, dist = info.bootstrap, info.distribution
    try:
        if not args.no_fill:
            t0 = time.perf_counter()
            fill_offsets(bootstrap, args.offsets_records)
            fill_txn(bootstrap, args.txn_records)
            print(f"fill: {time.perf_counter() - t0:.0f}s", flush=True)
        for topic, command, formatter in (
            (OFFSETS, "offsets", "OffsetsMessageFormatter"),
            (TXN, "txn-state", "TransactionLogMessageFormatter"),
        ):
            if args.only and args.only != command:
                continue
            measure(bootstrap, dist, topic, command, formatter, args.repeat, args.baseline_root)
    finally:
        if sandbox is not None:
            sandbox.stop()


if __name__ == "__main__":
    main()
