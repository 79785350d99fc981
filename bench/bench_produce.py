"""Benchmark for `kxtx produce` (issues 3 and 14). Not a timed test: run it by hand.

    python bench/bench_produce.py [--records 1000000] [--rss 1000000,5000000] [--bootstrap HOST:PORT]
                                  [--cases plain,keyed,csv,fields] [--repeat 3]

Side by side, interleaved round by round, on the same input (JSON lines of ~100 bytes, or the same
data as CSV) and a fresh topic each, for each case:
  plain   unkeyed, 1 partition: `kxtx produce FILE`
  keyed   key = a JSON field, 6 partitions: `kxtx produce FILE -k user`
  csv     key = a CSV column, 6 partitions: `kxtx produce FILE.csv -k user`
  fields  keyed JSON, 6 partitions, a header and the timestamp from fields:
          `kxtx produce FILE -k user --header-field event --timestamp-field ts`
  (a) a minimal hand-written confluent-kafka transactional loop over pre-read lines (no file
      reading, no checkpoint), same records per transaction and the same producer settings as
      kxtx's defaults (linger.ms 20, retry.backoff.ms 10, partitioner murmur2_random). Keys etc.
      as a user would write it: orjson.loads(line)["user"] for JSON, the csv module for CSV,
      headers=[("event", ...)] and timestamp=d["ts"] for `fields`; the value is the line;
  (b) `kxtx produce` with its defaults (a subprocess; throughput from its own summary, which counts
      connecting, init_transactions and reading the checkpoint, and from the process wall time);
  (c) plain case only: `kafka-console-producer` from the broker's jars (non-transactional JVM
      reference, wall time including JVM start-up, its defaults).
Then the commit cost against records per transaction (1, 100, 10k, 100k; retry.backoff.ms 100 vs
10), and the peak RSS of kxtx for the --rss input sizes, for each case.

Without --bootstrap a sandbox broker is started (and stopped) with kxtx's own sandbox code.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
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


def make_input(path: Path, n: int) -> None:
    if path.exists() and path.stat().st_size > 0:
        return
    with open(path, "w") as f:
        for i in range(n):
            # ~100 bytes per line
            f.write(
                f'{{"id":{i},"user":"u{i % 100000:05d}","ts":{1700000000000 + i},'
                f'"event":"click","page":"/p/{i % 997:03d}","pad":"xxxxxxxxxxxxxxxx"}}\n'
            )


def make_csv(path: Path, n: int) -> None:
    """The same data as make_input, as CSV with a header row (~75 bytes per line)."""
    if path.exists() and path.stat().st_size > 0:
        return
    with open(path, "w") as f:
        f.write("id,user,ts,event,page,pad\n")
        for i in range(n):
            f.write(f"{i},u{i % 100000:05d},{1700000000000 + i},click,/p/{i % 997:03d},xxxxxxxxxxxxxxxx\n")


#: case -> (partitions, input kind, kxtx options)
CASES = {
    "plain": (1, "jsonl", ()),
    "keyed": (6, "jsonl", ("-k", "user")),
    "csv": (6, "csv", ("-k", "user")),
    "fields": (6, "jsonl", ("-k", "user", "--header-field", "event", "--timestamp-field", "ts")),
}


def new_topic(bootstrap: str, partitions: int = 1) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    time.sleep(0.5)  # leader election
    return name


def drop_topic(bootstrap: str, name: str) -> None:
    """Delete a measured topic: 100 MB a run left on the broker made later runs slower (page
    cache, writeback), which drifted the ratios over a long benchmark."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([name], operation_timeout=30)[name].result(60)


def hand_loop(
    bootstrap: str, lines: list[bytes], per_txn: int, extra: dict | None = None, case: str = "plain"
) -> dict:
    """(a) The in-process limit: produce pre-read lines in transactions of `per_txn`, for `case`
    keyed etc. as a user would write it (one loop per case, nothing factored out of the loop)."""
    from confluent_kafka import Producer
    from orjson import loads

    topic = new_topic(bootstrap, CASES[case][0])
    t0, cpu0 = time.perf_counter(), cpu_seconds(resource.RUSAGE_SELF)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{uuid.uuid4().hex}",
            "linger.ms": 20,
            "retry.backoff.ms": 10,
            "partitioner": "murmur2_random",
            **(extra or {}),
        }
    )
    p.init_transactions(30)
    t1 = time.perf_counter()  # steady state starts here
    produce = p.produce
    commits = []
    for start in range(0, len(lines), per_txn):
        p.begin_transaction()
        batch = lines[start : start + per_txn]
        if case == "plain":
            for line in batch:
                while True:
                    try:
                        produce(topic, line)
                        break
                    except BufferError:
                        p.poll(0.05)
        elif case == "keyed":
            for line in batch:
                key = loads(line)["user"]
                while True:
                    try:
                        produce(topic, line, key)
                        break
                    except BufferError:
                        p.poll(0.05)
        elif case == "csv":
            for line, row in zip(batch, csv.reader(map(bytes.decode, batch))):
                while True:
                    try:
                        produce(topic, line, row[1])
                        break
                    except BufferError:
                        p.poll(0.05)
        elif case == "fields":
            for line in batch:
                d = loads(line)
                while True:
                    try:
                        produce(
                            topic,
                            line,
                            d["user"],
                            headers=[("event", d["event"].encode())],
                            timestamp=d["ts"],
                        )
                        break
                    except BufferError:
                        p.poll(0.05)
        c0 = time.perf_counter()
        p.commit_transaction(30)
        commits.append(time.perf_counter() - c0)
    end = time.perf_counter()
    cpu = cpu_seconds(resource.RUSAGE_SELF) - cpu0
    elapsed = end - t0
    drop_topic(bootstrap, topic)
    return {
        "records": len(lines),
        "elapsed_s": elapsed,
        "records_per_s": len(lines) / elapsed,
        "cpu_s": cpu,
        "records_per_cpu_s": len(lines) / cpu,
        "steady_records_per_s": len(lines) / (end - t1),
        "transactions": len(commits),
        "commit_ms_median": 1000 * statistics.median(commits),
        "commit_ms_p90": 1000 * sorted(commits)[int(0.9 * (len(commits) - 1))],
    }


def cpu_seconds(who) -> float:
    """CPU seconds (user + system, all threads: librdkafka's too) of this process or of its
    waited-for children. On a machine shared with other work, records per CPU second vary far
    less than records per second, so they are reported beside them."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def run_kxtx(bootstrap: str, path: Path, *args: str, partitions: int = 1) -> dict:
    """(b) kxtx produce as a user runs it; returns its summary plus wall time and peak RSS."""
    topic = new_topic(bootstrap, partitions)
    t0, cpu0 = time.perf_counter(), cpu_seconds(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kxtx",
            "produce",
            str(path),
            "-t",
            topic,
            "-b",
            bootstrap,
            "-o",
            "jsonl",
            *args,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # Peak RSS from /proc/PID/status VmHWM, polled: the kernel resets it at exec, whereas
    # wait4()'s ru_maxrss also counts the pre-exec copy of this (large) bench process.
    peak = [0]

    def watch():
        while proc.poll() is None:
            try:
                for row in open(f"/proc/{proc.pid}/status"):
                    if row.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(row.split()[1]))
            except OSError:
                pass
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    watcher.join()
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN) - cpu0  # the whole process: start-up and imports too
    if proc.returncode != 0:
        raise SystemExit(f"kxtx produce failed ({proc.returncode}): {err.decode()}")
    drop_topic(bootstrap, topic)
    summary = json.loads(out.decode().strip().splitlines()[-1])
    summary.update(
        wall_s=wall,
        wall_records_per_s=summary["records"] / wall,
        peak_rss_mb=peak[0] / 1024,
        cpu_s=cpu,
        records_per_cpu_s=summary["records"] / cpu,
    )
    return summary


def console_producer(bootstrap: str, path: Path, libs: str, version: str) -> dict:
    """(c) Kafka's own console producer, non-transactional, its defaults; wall time."""
    from kxtx.sandbox.distribution import KafkaDistribution

    topic = new_topic(bootstrap)
    argv = KafkaDistribution(version, Path(libs)).java(
        "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", bootstrap, "--topic", topic
    )
    n = sum(1 for _ in open(path, "rb"))
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        subprocess.run(argv, stdin=f, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    drop_topic(bootstrap, topic)
    return {"records": n, "wall_s": wall, "records_per_s": n / wall}


def commit_cost(bootstrap: str, line: bytes) -> list[dict]:
    rows = []
    for per_txn, txns in ((1, 200), (100, 100), (10_000, 20), (50_000, 8), (100_000, 4)):
        for backoff in (100, 10):
            r = hand_loop(bootstrap, [line] * (per_txn * txns), per_txn, {"retry.backoff.ms": backoff})
            rows.append(
                {
                    "records_per_txn": per_txn,
                    "retry.backoff.ms": backoff,
                    "transactions": txns,
                    "commit_ms_median": round(r["commit_ms_median"], 2),
                    "commit_ms_p90": round(r["commit_ms_p90"], 2),
                    "records_per_s": round(r["steady_records_per_s"]),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _side_summary(r: dict, case: tuple) -> dict:
    a, a_steady, b, c = r["a"], r["a_steady"], r["b"], r["c"]
    ma, mb = statistics.median(a), statistics.median(b)
    return {
        "partitions": case[0],
        "input": case[1],
        "kxtx_options": " ".join(case[2]),
        "a_hand_loop_rps": round(ma),
        "a_hand_loop_steady_rps": round(statistics.median(a_steady)),
        "b_kxtx_rps": round(mb),
        "b_kxtx_wall_rps": round(statistics.median(r["b_wall"])),
        "c_console_producer_rps": round(statistics.median(c)) if c else None,
        "b/a": round(mb / ma, 3),
        "b/c": round(mb / statistics.median(c), 3) if c else None,
        # each b over the a run just before it: less exposed to load drifting on a shared
        # machine than the ratio of the medians
        "b/a_paired_median": round(statistics.median(y / x for x, y in zip(a, b)), 3),
        # the strict reading: kxtx from start to summary (connecting, init_transactions,
        # checkpoint) against the loop alone, after its producer is set up. librdkafka's
        # first init_transactions in a process sometimes waits ~0.5 s for a coordinator,
        # which (a) pays and kxtx avoids by connecting while it checks the topics.
        "b/a_steady_paired_median": round(statistics.median(y / x for x, y in zip(a_steady, b)), 3),
        # records per CPU second of each process (kxtx: start-up included), paired
        "a_records_per_cpu_s": round(statistics.median(r["a_cpu"])),
        "b_records_per_cpu_s": round(statistics.median(r["b_cpu"])),
        "b/a_cpu_paired_median": round(statistics.median(y / x for x, y in zip(r["a_cpu"], r["b_cpu"])), 3),
        "runs": {k: [round(x) for x in v] for k, v in r.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rss", default="1000000,5000000", help="input sizes for the peak-RSS runs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help="comma list of: " + ", ".join(CASES))
    ap.add_argument("--bootstrap", help="use this broker (then --libs/--version for (c))")
    ap.add_argument("--libs", help="Kafka jars folder for the console producer")
    ap.add_argument("--version", default="4.3.1")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: side,commit,rss")
    ap.add_argument("--workdir", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))

    sandbox = None
    bootstrap, libs, version = args.bootstrap, args.libs, args.version
    if not bootstrap:
        from kxtx.sandbox import Sandbox

        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-"))
        info = sandbox.start(kafka_version=version, port=0, heap="1g")
        bootstrap, libs, version = info.bootstrap, info.libs, info.kafka_version
    work = Path(args.workdir)
    try:
        path = work / f"kxtx-bench-{args.records}.jsonl"
        make_input(path, args.records)
        result: dict = {
            "records": args.records,
            "bootstrap": bootstrap,
            "kafka": version,
            "cpus": os.cpu_count(),
        }
        cases = [c for c in args.cases.split(",") if c]
        inputs = {"jsonl": path, "csv": work / f"kxtx-bench-{args.records}.csv"}
        make_csv(inputs["csv"], args.records)
        if "side" not in skip:
            from kxtx.produce import DEFAULT_RECORDS_PER_TXN

            lines = {
                "jsonl": path.read_bytes().splitlines(),
                "csv": inputs["csv"].read_bytes().splitlines()[1:],
            }
            runs = {
                c: {"a": [], "a_steady": [], "b": [], "b_wall": [], "c": [], "a_cpu": [], "b_cpu": []}
                for c in cases
            }
            for _ in range(args.repeat):  # interleaved, so drift on a shared machine hits all
                for case in cases:
                    parts, kind, opts = CASES[case]
                    r = runs[case]
                    hand = hand_loop(bootstrap, lines[kind], DEFAULT_RECORDS_PER_TXN, case=case)
                    r["a"].append(hand["records_per_s"])
                    r["a_steady"].append(hand["steady_records_per_s"])
                    kx = run_kxtx(bootstrap, inputs[kind], *opts, partitions=parts)
                    r["b"].append(kx["records_per_s"])
                    r["b_wall"].append(kx["wall_records_per_s"])
                    r["a_cpu"].append(hand["records_per_cpu_s"])
                    r["b_cpu"].append(kx["records_per_cpu_s"])
                    if libs and case == "plain":
                        r["c"].append(console_producer(bootstrap, path, libs, version)["records_per_s"])
                    print(
                        json.dumps(
                            {
                                "case": case,
                                "a": round(r["a"][-1]),
                                "a_steady": round(r["a_steady"][-1]),
                                "b": r["b"][-1],
                                "b_wall": round(kx["wall_records_per_s"]),
                                "a_cpu": round(r["a_cpu"][-1]),
                                "b_cpu": round(r["b_cpu"][-1]),
                                "c": round(r["c"][-1]) if r["c"] else None,
                            }
                        ),
                        flush=True,
                    )
            del lines
            result["side_by_side"] = {c: _side_summary(runs[c], CASES[c]) for c in cases}
            print(json.dumps(result["side_by_side"], indent=2), flush=True)
        if "commit" not in skip:
            result["commit_cost"] = commit_cost(bootstrap, path.open("rb").readline().rstrip(b"\n"))
        if "rss" not in skip:
            result["peak_rss"] = []
            for n in [int(x) for x in args.rss.split(",") if x]:
                files = {"jsonl": work / f"kxtx-bench-{n}.jsonl", "csv": work / f"kxtx-bench-{n}.csv"}
                make_input(files["jsonl"], n)
                make_csv(files["csv"], n)
                for case in cases:
                    parts, kind, opts = CASES[case]
                    kx = run_kxtx(bootstrap, files[kind], *opts, partitions=parts)
                    result["peak_rss"].append(
                        {
                            "case": case,
                            "lines": n,
                            "peak_rss_mb": round(kx["peak_rss_mb"], 1),
                            "records_per_s": kx["records_per_s"],
                        }
                    )
                    print(json.dumps(result["peak_rss"][-1]), flush=True)
                for kind, f in files.items():
                    if f != inputs[kind]:
                        f.unlink()
        print(json.dumps(result, indent=2))
    finally:
        if sandbox is not None:
            sandbox.stop()


if __name__ == "__main__":
    main()
