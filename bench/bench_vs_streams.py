"""`kxtx pipe` against a Kafka Streams EOS-v2 application (issue 28). Not a timed test: run it by hand.

    python bench/bench_vs_streams.py [--records 1000000] [--rounds 3] [--warmup-rounds 1]
                                     [--bootstrap HOST:PORT --kafka-version 4.4.0] [--skip-variants]
                                     [--latency-rate 20000]

Input: --records JSON documents with a "pad" field (bench_pipe.json_doc) in a 4-partition topic.
The same enrichment on both sides, `doc["seen"] = len(doc["pad"])`:
  kxtx:    `kxtx pipe` in its default mode (no --mode, no --batch-max-records), `--master local[2]`,
           `--value-format json`, a plain Python UDF;
  streams: bench/streams-ref (Java 17, kafka-streams of the broker's version, Jackson's tree model,
           processing.guarantee=exactly_once_v2), built here with Maven (offline when ~/.m2 has
           everything, else online) into bench/streams-ref/target.
Each run writes to a fresh 4-partition output topic with message.timestamp.type=LogAppendTime, so
every output record carries the time the broker appended it. Records/s = records / (last output
record's timestamp - first one's): start-up (Spark, the JVMs, group joins) is left out on both
sides, and so are kxtx's and the app's own clocks. After each run the output is read
read_committed to the end: it must hold exactly --records records, enriched.

First --warmup-rounds (default 1) untimed rounds of kxtx and the Streams app (main setting), in
the results but not in the summary: the broker is shared, and its JIT compiles the fetch and
transaction paths while the first cases run. Measured per broker thread (1M records, no warm-up):
the C2 compiler threads took 2.3 CPU s during the first `kxtx pipe` after loading the input and
0.3-1.0 s in each later case, and the broker's CPU per 1M in the steady window was 2.3 in that
first run against 0.7-1.3 later, which penalized whichever side ran first in round 1.

Per round (interleaved; the first side alternates from round to round): kxtx, the Streams app as
configured for throughput (2 stream threads, --streams-commit-ms), and unless --skip-variants the
app with 1 stream thread and with the other commit interval (--variant-commit-ms), to show that the
reference is not handicapped. CPU seconds per million records per process kind (kxtx driver =
driver_python, Spark JVM = driver_jvm, Python workers, Streams JVM, broker) from /proc/PID/stat of
the process trees (bench_pipe_modes.CpuSampler): `cpu_s_per_M` over the whole process lifetime
(JVM and Spark start-up included; the broker over the same span) and `window_cpu_s_per_M` between
the first and the last output record (the steady state; sampled every 0.2 s, interpolated).

--latency-rate R (0 skips it): both sides again, each on a fresh input fed at R records/s for
--latency-seconds while it runs (after 100 priming records have come out: start-up is no
backlog), each document carrying its send time as "t" (kxtx stamps its output records itself, so
the record timestamp cannot be carried over); a read_committed consumer on the output takes
now - "t" as each record becomes readable: p50/p99/max in ms, over the records sent after the
first --latency-warmup-s seconds of the feed.

Prints one JSON document on stdout; progress goes to stderr. Without --bootstrap a sandbox broker
is started (and stopped) with kxtx's own sandbox code.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
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

from bench_pipe import fill, json_doc, new_topic  # noqa: E402
from bench_pipe_modes import CpuSampler, pipe_command, run_pipe  # noqa: E402

REF = ROOT / "bench" / "streams-ref"
PARTITIONS = 4
UDF_FILE = Path(tempfile.gettempdir()) / "kxtx_bench_vs_streams_udfs.py"
UDF_SOURCE = """
def enrich(doc):
    doc["seen"] = len(doc["pad"])
    return doc
"""
#: what the issue calls the process kinds, by CpuSampler's kind names
KINDS = {
    "driver_python": "kxtx_driver",
    "driver_jvm": "spark_jvm",
    "python_workers": "python_workers",
    "streams_jvm": "streams_jvm",
    "broker": "broker",
}
APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build_ref(kafka_version: str) -> str:
    """Build the Streams app against kafka-streams `kafka_version`; its java classpath."""
    base = ["mvn", "-q", "-B", "-f", str(REF / "pom.xml"), f"-Dkafka.version={kafka_version}", "package"]
    for cmd in ([*base[:2], "-o", *base[2:]], base):  # offline first: every later run is
        log(f"building the Streams reference: {' '.join(cmd)}")
        if subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            break
    else:
        subprocess.run(base, check=True)  # once more, with Maven's output, to show why
    lib = REF / "target" / "lib"
    if not (lib / f"kafka-streams-{kafka_version}.jar").exists():
        raise RuntimeError(f"{lib}: no kafka-streams-{kafka_version}.jar (a stale build?)")
    return f"{REF / 'target' / 'streams-ref.jar'}:{lib}/*"


def read_output(bootstrap: str, topic: str, n: int | None = None) -> dict:
    """Every committed record of `topic` (read_committed, up to each partition's end): count, first
    and last timestamp, and a check of the enrichment on the first records."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    eof: set[int] = set()
    count, first, last, checked = 0, math.inf, 0, 0
    try:
        while len(eof) < PARTITIONS:
            for m in c.consume(10_000, 1.0):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise RuntimeError(f"reading {topic}: {m.error()}")
                count += 1
                ts = m.timestamp()[1]
                first, last = min(first, ts), max(last, ts)
                if checked < 100:
                    doc = json.loads(m.value())
                    if doc.get("seen") != len(doc["pad"]):
                        raise RuntimeError(f"{topic}: not enriched: {m.value()!r}")
                    checked += 1
    finally:
        c.close()
    if n is not None and count != n:
        raise RuntimeError(f"{topic}: {count} committed records, expected {n}")
    return {"records": count, "first_ms": first, "last_ms": last}


def cpu_between(cpu: CpuSampler, t0: float, t1: float) -> dict:
    """CPU seconds per kind between two wall-clock times, interpolated between samples (the
    sampler's clock is monotonic; `cpu.epoch` maps it to the wall clock)."""

    def at(t: float) -> dict:
        t -= cpu.epoch
        series = cpu.series
        if not series:
            return {}
        if t <= series[0][0]:
            return series[0][1]
        for (ta, ka), (tb, kb) in itertools.pairwise(series):
            if ta <= t <= tb:
                f = (t - ta) / (tb - ta) if tb > ta else 0.0
                return {k: ka.get(k, 0.0) + f * (kb.get(k, 0.0) - ka.get(k, 0.0)) for k in kb}
        return series[-1][1]

    a, b = at(t0), at(t1)
    return {k: v - a.get(k, 0.0) for k, v in b.items()}


def sampler(roots: list[int]) -> CpuSampler:
    return CpuSampler(roots, interval=0.2)


def per_million(cpu_s: dict, n: int) -> dict:
    out = {KINDS.get(k, k): round(v * 1e6 / n, 2) for k, v in sorted(cpu_s.items()) if v >= 0.01}
    out["all"] = round(sum(v for k, v in cpu_s.items()) * 1e6 / n, 2)
    return out


def finish(name: str, bootstrap: str, out: str, n: int, cpu: CpuSampler, wall: float, extra: dict) -> dict:
    total = cpu.stop()
    o = read_output(bootstrap, out, n)
    span = (o["last_ms"] - o["first_ms"]) / 1000
    r = {
        "records_per_s": round(n / span) if span > 0 else None,
        "first_to_last_output_s": round(span, 2),
        "wall_s": round(wall, 1),
        "cpu_s_per_M": per_million(total, n),
        "window_cpu_s_per_M": per_million(cpu_between(cpu, o["first_ms"] / 1000, o["last_ms"] / 1000), n),
        **extra,
    }
    log(f"{name}: {r['records_per_s']} records/s, CPU s/M {r['cpu_s_per_M']}")
    return r


def kxtx_run(bootstrap: str, src: str, n: int, broker: list[int], out: str | None = None) -> dict:
    out = out or new_topic(bootstrap, PARTITIONS, APPEND_TIME)
    args, env = pipe_command(bootstrap, src, out, n, None, "local[2]", [], udf=f"{UDF_FILE}:enrich")
    s, _, wall, cpu = run_pipe(args, env, broker, "kxtx pipe", interval=0.2)
    own = {"kxtx_own_records_per_s": round(s["processing_records_per_s"]), "transactions": s["transactions"]}
    return finish("kxtx", bootstrap, out, n, cpu, wall, own)


def streams_command(cp: str, bootstrap: str, src: str, out: str, opts: dict) -> list[str]:
    state = tempfile.mkdtemp(prefix="kxtx-bench-streams-")
    args = [
        "java",
        "-Xms512m",
        "-Xmx512m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        cp,
        "kxtx.bench.StreamsRef",
        "--bootstrap",
        bootstrap,
        "--in",
        src,
        "--out",
        out,
        "--app-id",
        f"bench-streams-{uuid.uuid4().hex[:8]}",
        "--state-dir",
        state,
    ]
    for k, v in opts.items():
        args += [f"--{k}", str(v)]
    return args


def streams_run(cp: str, bootstrap: str, src: str, n: int, broker: list[int], opts: dict) -> dict:
    out = new_topic(bootstrap, PARTITIONS, APPEND_TIME)
    args = streams_command(cp, bootstrap, src, out, {**opts, "max-records": n})
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
        cpu = sampler(broker + [proc.pid])
        stdout, _ = proc.communicate(timeout=3600)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            cpu.stop()
            err.seek(0)
            raise RuntimeError(f"Streams app: exit {proc.returncode}: {err.read().decode()[-2000:]}")
    summary = json.loads(stdout.decode().strip().splitlines()[-1])
    return finish(f"streams {opts}", bootstrap, out, n, cpu, wall, {"app": summary, "config": opts})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3, help="0: only the latency part")
    ap.add_argument("--bootstrap", help="an existing broker (then give --kafka-version)")
    ap.add_argument("--kafka-version", help="the broker's version (default: the sandbox's)")
    ap.add_argument("--streams-threads", type=int, default=2)
    ap.add_argument("--streams-commit-ms", type=int, default=1000)
    ap.add_argument("--variant-commit-ms", type=int, default=100, help="Kafka Streams' EOS default")
    ap.add_argument("--skip-variants", action="store_true")
    ap.add_argument(
        "--warmup-rounds",
        type=int,
        default=1,
        help="untimed rounds of both sides first (the broker's JIT; see the docstring)",
    )
    ap.add_argument("--latency-rate", type=int, default=0, help="records/s; 0 skips the latency part")
    ap.add_argument("--latency-seconds", type=int, default=60)
    ap.add_argument("--latency-warmup-s", type=float, default=15)
    args = ap.parse_args()
    UDF_FILE.write_text(UDF_SOURCE)
    sandbox = None
    bootstrap, version, broker = args.bootstrap, args.kafka_version, []
    load = [os.getloadavg()]
    try:
        if not bootstrap:
            from kxtx.sandbox import Sandbox

            sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-streams-"))
            info = sandbox.start(kafka_version=version or "4", port=0, broker_config={}, heap="1g")
            bootstrap, version, broker = info.bootstrap, info.kafka_version, [info.pid]
        elif not version:
            ap.error("--bootstrap needs --kafka-version (kafka-streams must match the broker)")
        cp = build_ref(version)
        src = new_topic(bootstrap, PARTITIONS)
        log(f"loading {args.records} records into {src}")
        fill(bootstrap, src, args.records, json_doc)
        main_cfg = {"threads": args.streams_threads, "commit-ms": args.streams_commit_ms}
        variants = {
            "streams_1_thread": {**main_cfg, "threads": 1},
            f"streams_commit_{args.variant_commit_ms}ms": {**main_cfg, "commit-ms": args.variant_commit_ms},
        }
        cases = {
            "kxtx": lambda: kxtx_run(bootstrap, src, args.records, broker),
            "streams": lambda: streams_run(cp, bootstrap, src, args.records, broker, main_cfg),
        }
        warmup = []
        for i in range(args.warmup_rounds if args.rounds else 0):
            for name in cases:
                log(f"warm-up {i + 1}/{args.warmup_rounds} (not counted): {name}")
                warmup.append({name: cases[name]()})
        rounds = []
        for i in range(args.rounds):
            order = list(cases) if i % 2 == 0 else list(reversed(cases))
            if not args.skip_variants:
                order += list(variants)
            run = {}
            for name in order:
                log(f"round {i + 1}/{args.rounds}: {name}")
                run[name] = (
                    cases[name]()
                    if name in cases
                    else streams_run(cp, bootstrap, src, args.records, broker, variants[name])
                )
                load.append(os.getloadavg())
            run["kxtx/streams"] = round(run["kxtx"]["records_per_s"] / run["streams"]["records_per_s"], 3)
            rounds.append(run)
        result = {
            "records": args.records,
            "partitions": PARTITIONS,
            "kafka_version": version,
            "cores": os.cpu_count(),
            "streams_config": main_cfg,
            "warmup_not_counted": warmup,
            "rounds": rounds,
            "summary": summarize(rounds) if rounds else None,
            "loadavg_1_5_15_before_and_after_each_case": [[round(x, 1) for x in la] for la in load],
        }
        if args.latency_rate:
            result["latency"] = latency(cp, bootstrap, broker, args, main_cfg)
        print(json.dumps(result, indent=2))
    finally:
        if sandbox is not None:
            sandbox.stop()


def summarize(rounds: list) -> dict:
    """Medians over the rounds: records/s per case, the ratio, CPU s per million per kind."""

    def med(values):
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 2) if values else None

    out: dict = {"kxtx/streams_median": med(r["kxtx/streams"] for r in rounds)}
    out["kxtx/streams_per_round"] = [r["kxtx/streams"] for r in rounds]
    # against the round's fastest Streams configuration (the variants included): the reference
    # at its best, whichever setting that was on the machine at the time
    best = [
        r["kxtx"]["records_per_s"] / max(v["records_per_s"] for k, v in r.items() if k.startswith("streams"))
        for r in rounds
    ]
    out["kxtx/best_streams_median"] = med(best)
    out["kxtx/best_streams_per_round"] = [round(b, 3) for b in best]
    for name in rounds[0]:
        if name == "kxtx/streams":
            continue
        out[name] = {"records_per_s_median": med(r[name]["records_per_s"] for r in rounds)}
        for part in ("cpu_s_per_M", "window_cpu_s_per_M"):
            kinds = {k for r in rounds for k in r[name][part]}
            out[name][part] = {k: med(r[name][part].get(k) for r in rounds) for k in sorted(kinds)}
    return out


def feed(bootstrap: str, topic: str, rate: int, n: int, first_id: int = 0) -> None:
    """Produce n json_doc records with their send time as "t" (epoch ms), at `rate` records/s."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    t0, sent = time.perf_counter(), 0
    while sent < n:
        due = min(n, int((time.perf_counter() - t0) * rate) + 1)
        while sent < due:
            i = first_id + sent
            # the send time inside the document: kxtx gives its output records a timestamp of
            # their own (not the input's), and both sides carry the document's fields over
            value = json_doc(i)[:-1] + b', "t": %d}' % (time.time() * 1000)
            try:
                p.produce(topic, value, b"k%d" % (i % 1000))
            except BufferError:
                p.poll(0.01)
                continue
            sent += 1
        p.poll(0)
        time.sleep(0.01)
    p.flush(30)


def watch(bootstrap: str, topic: str, lat: list, stop: threading.Event) -> None:
    """(send time, now - send time) of each output record as it becomes readable read_committed."""
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-lat-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 10,
        }
    )
    c.subscribe([topic])
    try:
        while not stop.is_set():
            for m in c.consume(10_000, 0.1):
                if not m.error():
                    sent = json.loads(m.value())["t"]
                    lat.append((sent, time.time() * 1000 - sent))
    finally:
        c.close()


def latency(cp: str, bootstrap: str, broker: list[int], args, main_cfg: dict) -> dict:
    """Both sides at a fixed input rate: send time -> readable read_committed. Each side first
    gets PRIME records and must have made them readable before the fixed-rate feed starts, so
    that its start-up (Spark, the JVM, the group join) is no backlog; records sent in the first
    --latency-warmup-s seconds of the feed are left out."""
    prime, n = 100, args.latency_rate * args.latency_seconds
    res = {"rate": args.latency_rate, "seconds": args.latency_seconds, "warmup_s": args.latency_warmup_s}
    for side in ("kxtx", "streams"):
        src = new_topic(bootstrap, PARTITIONS)
        out = new_topic(bootstrap, PARTITIONS)
        lat: list = []
        stop = threading.Event()
        watcher = threading.Thread(target=watch, args=(bootstrap, out, lat, stop), daemon=True)
        watcher.start()
        total = prime + n
        if side == "kxtx":
            cmd, env = pipe_command(
                bootstrap, src, out, total, None, "local[2]", [], udf=f"{UDF_FILE}:enrich"
            )
        else:
            cmd, env = streams_command(cp, bootstrap, src, out, {**main_cfg, "max-records": total}), None
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        try:
            feed(bootstrap, src, 1000, prime)
            deadline = time.monotonic() + 300
            while len(lat) < prime and time.monotonic() < deadline:
                time.sleep(0.1)
            log(f"latency: {side} at {args.latency_rate} records/s for {args.latency_seconds} s")
            t0 = time.time() * 1000
            feed(bootstrap, src, args.latency_rate, n, first_id=prime)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(60)
        time.sleep(1)
        stop.set()
        watcher.join()
        ms = sorted(d for t, d in lat if t - t0 >= args.latency_warmup_s * 1000)
        res[side] = {"records_read": len(lat), "records_sent": total}
        if ms:
            res[side] |= {
                "p50_ms": round(ms[len(ms) // 2]),
                "p99_ms": round(ms[int(len(ms) * 0.99)]),
                "max_ms": round(ms[-1]),
            }
        log(f"latency {side}: {res[side]}")
    return res


if __name__ == "__main__":
    main()
