"""Benchmark: how much an executors-mode task's consumer prefetches past its round, by `queued.min.messages`.

A task (kxtx.pipe.worker.task) assigns its partition, reads its round with `_consume` and unassigns; what
librdkafka prefetched past the round is dropped. This runs that read path in this process against a
sandbox broker: one partition of RECORDS JSON records (~110 B, bench_pipe's), tasks of ROUND records
from offset 0, ROUND, 2*ROUND..., each setting of `queued.min.messages` in turn, the settings
interleaved REPEAT times. Per setting, the medians of: the process's CPU per task (the consumer's
librdkafka threads included), the task's wall time, and the records fetched per task (librdkafka's
statistics, `rxmsgs`).

    python bench/bench_task_prefetch.py [--records 600000] [--round 100000] [--repeat 3]
        [--settings default,50000,20000,10000]

Prints one JSON document on stdout; progress on stderr. Stops the broker it started.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_pipe import fill, json_doc, new_topic  # noqa: E402

from kxtx.pipe.worker import task as taskmod  # noqa: E402
from kxtx.sandbox import Sandbox  # noqa: E402
from tests.integration.pipe_task_runner import job  # noqa: E402


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def tasks(bootstrap: str, topic: str, setting: str, records: int, size: int) -> list[dict]:
    """One consumer with the task's settings (and `setting`), reading consecutive rounds."""
    from confluent_kafka import Consumer

    fetched: list[int] = []

    def keep(text: str) -> None:
        fetched.append(json.loads(text)["rxmsgs"])

    j = job(bootstrap, f"bench-{uuid.uuid4().hex[:8]}", "bench", "unused", "identity")
    conf = {**taskmod.consumer_conf(j), "statistics.interval.ms": 100, "stats_cb": keep}
    if setting == "default":
        del conf["queued.min.messages"]
    else:
        conf["queued.min.messages"] = int(setting)
    consumer = Consumer(conf)
    consumer.list_topics(topic, timeout=30)
    out, before = [], 0
    try:
        for start in range(0, records - size + 1, size):
            plan = taskmod.Plan(topic, 0, limit=size, end=start + size, token=None)
            wall, cpu = time.perf_counter(), time.process_time()
            msgs, _ = taskmod._consume(j, plan, consumer, start)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert len(msgs) == size, (setting, start, len(msgs))
            time.sleep(0.3)  # statistics after the unassign: the fetcher has stopped
            consumer.poll(0.3)
            out.append({"wall_ms": 1000 * wall, "cpu_ms": 1000 * cpu, "fetched": fetched[-1] - before})
            before = fetched[-1]
    finally:
        consumer.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=600_000)
    ap.add_argument("--round", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--settings", default="default,50000,20000,10000")
    args = ap.parse_args()
    settings = args.settings.split(",")
    sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-prefetch-"))
    info = sandbox.start(kafka_version="4", port=0, broker_config={}, heap="1g")
    try:
        topic = new_topic(info.bootstrap, 1)
        log(f"filling {topic} with {args.records} records")
        fill(info.bootstrap, topic, args.records, json_doc)
        runs: dict[str, list[dict]] = {s: [] for s in settings}
        for i in range(args.repeat):
            for s in settings:
                runs[s] += tasks(info.bootstrap, topic, s, args.records, args.round)
                log(f"repeat {i + 1}, queued.min.messages={s}: {runs[s][-1]}")
    finally:
        sandbox.stop()
    result = {
        "records": args.records,
        "round": args.round,
        "settings": {
            s: {key: round(statistics.median(r[key] for r in rs)) for key in ("cpu_ms", "wall_ms", "fetched")}
            | {"tasks": len(rs)}
            for s, rs in runs.items()
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
