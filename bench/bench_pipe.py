"""Benchmark for `kxtx pipe` (issue 6). Not a timed test: run it by hand.

    python bench/bench_pipe.py [--records 1000000] [--batches 10000,50000,200000]
                               [--json-records 200000] [--rss-records 5000000] [--bootstrap HOST:PORT]

Input: --records values of ~100 bytes in a 2-partition topic, identity function. For each batch size,
in one run and on the same input:
  (a) an at-least-once confluent-kafka loop: consume → fn → produce, offsets committed after each batch;
  (b) a hand-written confluent-kafka EOS loop, same batch size: begin → fn → produce →
      send_offsets_to_transaction → commit (retry.backoff.ms=10, as kxtx);
  (c) kxtx pipe (the engine in-process, one warm SparkSession for all sizes; the rate counts from
      the first record, so Spark start-up and the group join are left out; they are reported apart).
Reported: records/s, c/b and b/a, Spark ms and commit ms per batch and their share of the batch time,
and Spark's fixed cost per job (a one-row job). Then: commit cost with retry.backoff.ms 100 vs 10;
JSON enrichment as a plain Python function vs a pandas_udf (through kxtx pipe); and kxtx's own
process RSS (the Python process; the Spark JVM is a separate process) sampled during a CLI run over
--rss-records.

Without --bootstrap a sandbox broker is started (and stopped) with kxtx's own sandbox code.
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
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

UDF_FILE = Path(tempfile.gettempdir()) / "kxtx_bench_pipe_udfs.py"
UDF_SOURCE = """
import io, json
import pandas as pd
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import StringType

def identity(v):
    return v

def enrich(doc):
    doc["total"] = round(doc["price"] * doc["qty"], 2)
    return doc

@pandas_udf(StringType())
def enrich_pandas(s: pd.Series) -> pd.Series:
    df = pd.read_json(io.StringIO("\\n".join(s)), lines=True)
    df["total"] = (df["price"] * df["qty"]).round(2)
    return pd.Series(df.to_json(orient="records", lines=True).splitlines())
"""


def identity(v):
    return v


def new_topic(bootstrap: str, partitions: int, config: dict | None = None) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"bench-pipe-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(30)
    time.sleep(0.5)
    return name


def fill(bootstrap: str, topic: str, n: int, make) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000})
    for i in range(n):
        while True:
            try:
                p.produce(topic, make(i), b"k%d" % (i % 1000))
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)


def value_100b(i: int) -> bytes:
    return (b"%010d" % i) + b"x" * 90


def json_doc(i: int) -> bytes:
    return json.dumps(
        {"id": i, "user": f"u{i % 10000:05d}", "price": (i % 1000) / 10, "qty": i % 7, "pad": "p" * 20}
    ).encode()


def _consumer(bootstrap: str):
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
        }
    )


def _offsets(batch):
    from confluent_kafka import TopicPartition

    nxt = {}
    for m in batch:
        nxt[(m.topic(), m.partition())] = m.offset() + 1
    return [TopicPartition(t, p, o) for (t, p), o in nxt.items()]


def _produce_all(p, out, batch, fn):
    produce = p.produce
    for m in batch:
        while True:
            try:
                produce(out, fn(m.value()), m.key())
                break
            except BufferError:
                p.poll(0.05)


def loop(
    bootstrap: str, src: str, n: int, batch_size: int, eos: bool, fn=identity, backoff_ms: int = 10
) -> dict:
    """(a) at-least-once or (b) EOS hand loop; the clock starts at the first record."""
    from confluent_kafka import Producer

    out = new_topic(bootstrap, 2)
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "retry.backoff.ms": backoff_ms}
    if eos:
        conf["transactional.id"] = f"bench-{uuid.uuid4().hex}"
    p = Producer(conf)
    if eos:
        p.init_transactions(30)
    c = _consumer(bootstrap)
    c.subscribe([src])
    done, start, commits = 0, None, []
    while done < n:
        batch = []
        while len(batch) < min(batch_size, n - done):
            got = c.consume(min(10000, batch_size - len(batch), n - done - len(batch)), 1.0)
            batch.extend(m for m in got if not m.error())
            if start is None and batch:
                start = time.perf_counter()
        if eos:
            p.begin_transaction()
        _produce_all(p, out, batch, fn)
        t0 = time.perf_counter()
        if eos:
            p.send_offsets_to_transaction(_offsets(batch), c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
        else:
            p.flush(30)
            c.commit(offsets=_offsets(batch), asynchronous=True)
        commits.append(time.perf_counter() - t0)
        done += len(batch)
    elapsed = time.perf_counter() - start
    c.close()
    return {
        "records_per_s": round(n / elapsed),
        "batches": len(commits),
        "commit_ms_per_batch": round(1000 * statistics.mean(commits), 1),
        "commit_ms_p50": round(1000 * statistics.median(commits), 1),
        "batch_ms": round(1000 * elapsed / len(commits), 1),
    }


def kxtx_pipe(
    bootstrap: str, src: str, n: int, batch_size: int, session, udf: str, value_format: str = "raw"
) -> dict:
    from kxtx.client.settings import Settings
    from kxtx.pipe.modes import run
    from kxtx.pipe.runconfig import PipeConfig

    out = new_topic(bootstrap, 2)
    cfg = PipeConfig(
        inputs=[src],
        out=out,
        group=f"bench-{uuid.uuid4().hex[:8]}",
        udf=udf,
        batch_max_records=batch_size,
        batch_max_ms=600_000,
        max_records=n,
        value_format=value_format,
    )
    s = run(Settings(props={"bootstrap.servers": bootstrap}, timeout=60), cfg, session=session).to_dict()
    batch_ms = 1000 * s["processing_s"] / max(1, s["transactions"])
    return {
        "records_per_s": round(s["processing_records_per_s"]),
        "batches": s["transactions"],
        "spark_ms_per_batch": s["spark_ms_per_batch"],
        "commit_ms_per_batch": s["commit_ms_per_batch"],
        "produce_ms_per_batch": s["produce_ms_per_batch"],
        "batch_ms": round(batch_ms, 1),
        "spark_share": round(s["spark_ms_per_batch"] / batch_ms, 3),
        "commit_share": round(s["commit_ms_per_batch"] / batch_ms, 3),
    }


def spark_fixed_cost(session) -> float:
    """Median ms of a one-row job through kxtx's transform: Spark's fixed cost per batch."""
    import pyarrow as pa

    from kxtx.pipe import spark, udf
    from kxtx.pipe.worker import transform

    job = spark.batch_job(
        session, transform.make_ipc_task(transform.make_mapper(identity, udf.ROW, "raw", False))
    )
    table = pa.table({"idx": pa.array([0], pa.int64()), "value": pa.array([b"x"], pa.binary())})
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        spark.transform(session, table, job)
        times.append(1000 * (time.perf_counter() - t0))
    return round(statistics.median(times[2:]), 1)


def rss_run(bootstrap: str, n: int) -> dict:
    """kxtx pipe as a CLI process over n records; VmRSS of the Python process sampled every 0.5 s."""
    src = new_topic(bootstrap, 2)
    fill(bootstrap, src, n, value_100b)
    out = new_topic(bootstrap, 2)
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": bootstrap}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kxtx",
            "pipe",
            "--in",
            src,
            "--out",
            out,
            "--group",
            f"bench-rss-{uuid.uuid4().hex[:6]}",
            "--udf",
            f"{UDF_FILE}:identity",
            "--max-records",
            str(n),
            "-o",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    samples = []
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            samples.append(kb / 1024)
        except (OSError, StopIteration):
            pass
        time.sleep(0.5)
    summary = json.loads(proc.stdout.read())
    # peak per tenth of the run: flat from the second tenth on = bounded by the batch, not the input
    tenths = (
        [
            max(samples[len(samples) * k // 10 : max(len(samples) * (k + 1) // 10, 1)] or [0])
            for k in range(10)
        ]
        if samples
        else []
    )
    return {
        "records": n,
        "rss_mb_peak": round(max(samples), 1) if samples else None,
        "rss_mb_peak_per_tenth_of_run": [round(x, 1) for x in tenths],
        "records_per_s": summary.get("processing_records_per_s"),
    }


def identity_runs(bootstrap: str, src: str, args, session) -> list:
    """(a), (b), (c) side by side per batch size, --repeat times; medians of rates and ratios."""
    rows = []
    for b in [int(x) for x in args.batches.split(",")]:
        runs = []
        for _ in range(args.repeat):
            a = loop(bootstrap, src, args.records, b, eos=False)
            e = loop(bootstrap, src, args.records, b, eos=True)
            c = kxtx_pipe(bootstrap, src, args.records, b, session, f"{UDF_FILE}:identity")
            run = {
                "batch": b,
                "a_alo": a,
                "b_eos": e,
                "c_kxtx": c,
                "b/a": round(e["records_per_s"] / a["records_per_s"], 3),
                "c/b": round(c["records_per_s"] / e["records_per_s"], 3),
            }
            runs.append(run)
            print(json.dumps(run), flush=True)
        row = runs[0] if len(runs) == 1 else _medians(b, runs)
        rows.append(row)
        if len(runs) > 1:
            print(json.dumps(row), flush=True)
    return rows


def _medians(batch: int, runs: list) -> dict:
    def med(path):
        return round(statistics.median(_get(r, path) for r in runs), 3)

    keys = {
        "a_alo": ["records_per_s", "commit_ms_per_batch", "batch_ms"],
        "b_eos": ["records_per_s", "commit_ms_per_batch", "batch_ms"],
        "c_kxtx": [
            "records_per_s",
            "spark_ms_per_batch",
            "commit_ms_per_batch",
            "produce_ms_per_batch",
            "batch_ms",
            "spark_share",
            "commit_share",
        ],
    }
    row = {"batch": batch, "median_of": len(runs)}
    for part, fields in keys.items():
        row[part] = {f: med((part, f)) for f in fields}
    row["b/a"], row["c/b"] = med(("b/a",)), med(("c/b",))
    row["c/b_runs"] = [r["c/b"] for r in runs]
    return row


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--batches", default="10000,50000,200000")
    ap.add_argument("--json-records", type=int, default=200_000)
    ap.add_argument("--rss-records", type=int, default=5_000_000, help="0 skips the RSS run")
    ap.add_argument("--rss-only", action="store_true", help="only the RSS run")
    ap.add_argument("--bootstrap")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run (a)/(b)/(c) this many times per batch size; medians are reported",
    )
    ap.add_argument(
        "--identity-only",
        action="store_true",
        help="only the identity comparison (no backoff, JSON or RSS runs)",
    )
    args = ap.parse_args()
    UDF_FILE.write_text(UDF_SOURCE)
    sandbox = None
    bootstrap = args.bootstrap
    if not bootstrap:
        from kxtx.sandbox import Sandbox

        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-pipe-"))
        bootstrap = sandbox.start(kafka_version="4", port=0, broker_config={}, heap="1g").bootstrap
    from kxtx.pipe import spark

    if args.rss_only:
        try:
            print(json.dumps(rss_run(bootstrap, args.rss_records), indent=2))
        finally:
            if sandbox is not None:
                sandbox.stop()
        return
    results: dict = {"records": args.records}
    t0 = time.perf_counter()
    session = spark.start("local[*]")
    results["spark_start_s"] = round(time.perf_counter() - t0, 1)
    try:
        results["spark_fixed_ms_per_job"] = spark_fixed_cost(session)
        src = new_topic(bootstrap, 2)
        fill(bootstrap, src, args.records, value_100b)
        # warm the Python workers and the broker's transaction coordinator
        kxtx_pipe(bootstrap, src, 20_000, 10_000, session, f"{UDF_FILE}:identity")
        results["identity"] = identity_runs(bootstrap, src, args, session)
        if not args.identity_only:
            extras(bootstrap, src, args, session, results)
    finally:
        spark.stop(session)
    try:
        if args.rss_records and not args.identity_only:
            results["rss"] = rss_run(bootstrap, args.rss_records)
    finally:
        if sandbox is not None:
            sandbox.stop()
    print(json.dumps(results, indent=2))


def extras(bootstrap: str, src: str, args, session, results: dict) -> None:
    """Commit cost vs retry.backoff.ms, and JSON enrichment: plain Python vs pandas_udf."""
    backoff = {}
    for ms in (100, 10):
        backoff[f"retry.backoff.ms={ms}"] = loop(
            bootstrap, src, min(args.records, 200_000), 1000, eos=True, backoff_ms=ms
        )
    results["commit_vs_backoff_batch_1000"] = backoff
    print(json.dumps(backoff), flush=True)
    jsrc = new_topic(bootstrap, 2)
    fill(bootstrap, jsrc, args.json_records, json_doc)
    results["json_enrichment"] = {
        "plain_python": kxtx_pipe(
            bootstrap, jsrc, args.json_records, 50_000, session, f"{UDF_FILE}:enrich", "json"
        ),
        "pandas_udf": kxtx_pipe(
            bootstrap, jsrc, args.json_records, 50_000, session, f"{UDF_FILE}:enrich_pandas", "string"
        ),
    }
    print(json.dumps(results["json_enrichment"]), flush=True)


if __name__ == "__main__":
    main()
