"""Spark's Python daemon importing pyspark.zip against kxtx's daemon importing the installed pyspark
(kxtx.pipe.fast.daemon). Not a timed test: run it by hand.

    python bench/bench_pipe_daemon.py [--records 20000] [--rounds 4] [--mode driver,executors]
                                      [--bootstrap HOST:PORT]

The same `kxtx pipe --master local[1]` run (identity UDF, --records values in 2 partitions, a new
group and output topic each run), interleaved: with `--spark-conf
spark.python.daemon.module=pyspark.daemon` (Spark's default, what kxtx did before) and without
(kxtx's default, kxtx.pipe.fast.daemon). Reported per mode: wall seconds and CPU seconds of the whole
process tree (kxtx, the JVM it launches, the Python daemon and its workers: this process's
RUSAGE_CHILDREN, every one of them reaped by its parent), medians and their ratios. Every run's
committed output count is checked. Without --bootstrap a sandbox broker is started here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench_kcat import committed, create_topic, kxtx
from bench_produce import drop_topic

ROOT = Path(__file__).resolve().parent.parent

UDF = "def identity(v):\n    return v\n"
VARIANTS = {"pyspark.daemon (zip)": "pyspark.daemon", "kxtx.pipe.fast.daemon": None}


def tree_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one_run(bootstrap: str, src: str, n: int, mode: str, udf: Path, daemon: str | None) -> dict:
    out = create_topic(bootstrap, 2)
    argv = kxtx(
        "pipe",
        *("--in", src, "--out", out, "--group", f"bench-{uuid.uuid4().hex[:8]}", "--from", "earliest"),
        *("--udf", f"{udf}:identity", "--master", "local[1]", "--mode", mode),
        *("--max-records", str(n), "--until-idle", "60", "-b", bootstrap, "-o", "json"),
        *(("--spark-conf", f"spark.python.daemon.module={daemon}") if daemon else ()),
    )
    cpu0, t0 = tree_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall, cpu = time.perf_counter() - t0, tree_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"bench_pipe_daemon: kxtx pipe failed ({done.returncode}): {done.stderr[-800:]}")
    got = committed(bootstrap, out)
    drop_topic(bootstrap, out)
    if got != n:
        raise SystemExit(f"bench_pipe_daemon: {got} records committed, {n} expected")
    return {"wall_s": wall, "cpu_s": cpu}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--mode", default="driver,executors")
    ap.add_argument("--bootstrap")
    args = ap.parse_args()
    sandbox = None
    bootstrap = args.bootstrap
    if not bootstrap:
        from kxtx.sandbox import Sandbox

        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-daemon-"))
        bootstrap = sandbox.start(port=0).bootstrap
    work = Path(tempfile.mkdtemp(prefix="kxtx-bench-daemon-"))
    udf = work / "udfs.py"
    udf.write_text(UDF)
    lines = work / "in.txt"
    lines.write_text("".join(f"value-{i:09d}-" + "x" * 80 + "\n" for i in range(args.records)))
    try:
        src = create_topic(bootstrap, 2)
        subprocess.run(
            kxtx("produce", str(lines), "-t", src, "-b", bootstrap), check=True, capture_output=True
        )
        results: dict = {}
        for mode in args.mode.split(","):
            one_run(bootstrap, src, args.records, mode, udf, None)  # warm-up (Spark's CDS archive too)
            for r in range(args.rounds):
                order = list(VARIANTS.items())
                if r % 2:
                    order.reverse()
                for name, daemon in order:
                    results.setdefault(mode, {}).setdefault(name, []).append(
                        one_run(bootstrap, src, args.records, mode, udf, daemon)
                    )
        report = {}
        for mode, by_variant in results.items():
            med = {
                name: {k: round(statistics.median(run[k] for run in runs), 2) for k in ("wall_s", "cpu_s")}
                for name, runs in by_variant.items()
            }
            before, after = (med[name] for name in VARIANTS)
            report[mode] = {
                **med,
                "after/before": {k: round(after[k] / before[k], 3) for k in ("wall_s", "cpu_s")},
                "runs (wall s/CPU s)": {
                    n: " ".join(f"{x['wall_s']:.2f}/{x['cpu_s']:.2f}" for x in v)
                    for n, v in by_variant.items()
                },
            }
        print(json.dumps({"records": args.records, "rounds": args.rounds, "cores": os.cpu_count()}))
        for mode, line in report.items():
            print(json.dumps({"mode": mode, **line}))
    finally:
        if sandbox is not None:
            sandbox.stop()


if __name__ == "__main__":
    main()
