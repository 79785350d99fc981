"""Benchmark: `kxtx monitor collect` against `kxtx find-hanging` and Kafka's `kafka-transactions.sh
find-hanging` on the same cluster; RSS of `kxtx monitor serve` over many scrapes.

Starts a sandbox broker (transaction.partition.verification.enable=false, for truly hanging
transactions), creates TOPICS x PARTITIONS partitions, and builds the scene a collection reads:
PRODUCERS transactional producers that commit transactions over many partitions, OPEN transactions
left open by live producers (Ongoing at the coordinator), HANGING truly hanging ones
(txn_helpers.make_hanging), and GROUPS consumer groups with committed offsets on many partitions,
some at the LSO and some behind it (their read_committed lag is counted from the log). Then, in one
session, interleaved run by run, RUNS times each: `kxtx monitor collect -o json`, `kxtx find-hanging
-o json` (every partition, as collect) and Kafka's find-hanging for broker 1 (`java -cp` from the
broker's own jars, as bench_hanging.py). Reports the medians and the ratios collect/find-hanging
and collect/Kafka's. Then starts `kxtx monitor serve --min-interval 0` (every scrape collects),
scrapes /metrics SCRAPES times and samples its VmRSS every 50 scrapes (first, last, max).
`--serve-topic` scopes serve's collections to one topic so that 500 real collections fit in minutes.

`--baseline REF` also times REF's `monitor collect` (a temporary worktree) in the same runs and
compares its JSON document with this tree's.

    python bench/bench_monitor.py [--topics 20] [--partitions 100] [--runs 5] [--scrapes 500] [--baseline main]

Prints one JSON document on stdout; progress on stderr. Stops the broker and the processes it started.
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
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_hanging import create_topics, java_rows, kafka_find_hanging, log, start_broker, timed  # noqa: E402 - after the path is set

from tests.integration.kafka_io import commit_retrying  # noqa: E402
from tests.integration.txn_helpers import make_hanging  # noqa: E402


def committed_transactions(
    bootstrap: str, names: list[str], partitions: int, producers: int, txns: int
) -> None:
    """Each producer commits `txns` transactions, each over a tenth of every topic's partitions."""
    from confluent_kafka import Producer

    for i in range(producers):
        p = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": f"bench-mon-commit-{i}", "linger.ms": 5}
        )
        p.init_transactions(60)
        for j in range(txns):
            p.begin_transaction()
            for n, topic in enumerate(names):
                for part in range((i + j + n) % 10, partitions, 10):
                    p.produce(topic, b"v" * 100, partition=part)
            p.commit_transaction(120)
        p.flush(60)


def open_transactions(bootstrap: str, names: list[str], n: int) -> list:
    """`n` producers each with a transaction open on a few partitions (Ongoing at the coordinator,
    not hanging); the caller keeps them alive so nothing ends them."""
    from confluent_kafka import Producer

    out = []
    for i in range(n):
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"bench-mon-open-{i}",
                "transaction.timeout.ms": 900_000,
            }
        )
        p.init_transactions(60)
        p.begin_transaction()
        for k in range(5):
            p.produce(names[(i + k) % len(names)], b"open", partition=(i * 13 + k) % 100)
        if p.flush(60):
            raise SystemExit("open transactions: records not delivered")
        out.append(p)
    return out


def consumer_groups(bootstrap: str, names: list[str], partitions: int, groups: int) -> None:
    """Groups committing offsets on every partition of a few topics: even ones at the LSO (lag 0,
    markers only above), odd ones 3 offsets below it (a short range read from the log)."""
    from confluent_kafka import Consumer, IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    a = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition(t, p) for t in names[:4] for p in range(partitions)]
    lso = {
        (tp.topic, tp.partition): f.result(timeout=60).offset
        for tp, f in a.list_offsets(
            {tp: OffsetSpec.latest() for tp in tps}, isolation_level=IsolationLevel.READ_COMMITTED
        ).items()
    }
    for g in range(groups):
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-mon-group-{g}",
                "isolation.level": "read_committed",
            }
        )
        mine = [tp for k, tp in enumerate(tps) if k % groups == g or g == 0]
        back = 0 if g % 2 == 0 else 3
        offsets = [
            TopicPartition(t.topic, t.partition, max(0, lso[(t.topic, t.partition)] - back)) for t in mine
        ]
        commit_retrying(c, offsets)  # the group coordinator may still be loading
        c.close()


def _stable(doc: dict) -> dict:
    """A collect document without what changes from run to run (times and ages)."""
    doc = {
        k: v
        for k, v in doc.items()
        if k not in ("collected_at", "duration_seconds", "oldest_open_age_seconds")
    }
    doc["partitions"] = [
        {k: v for k, v in p.items() if not k.startswith("oldest_age")} for p in doc["partitions"]
    ]
    doc["transactional_id_states"] = [
        {k: v for k, v in s.items() if k != "oldest_age_seconds"} for s in doc["transactional_id_states"]
    ]
    return doc


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit(f"no VmRSS for {pid}")


def serve_rss(env: dict, scrapes: int, topic: str | None, min_interval: float) -> dict:
    argv = [
        sys.executable,
        "-m",
        "kxtx",
        "monitor",
        "serve",
        "--port",
        "0",
        "--min-interval",
        str(min_interval),
    ]
    argv += ["--scrape-timeout", "120"] + (["--topic", topic] if topic else [])
    proc = subprocess.Popen(
        argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=ROOT, env=env
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        if not line.startswith("kxtx: serving http://"):
            raise SystemExit(f"serve: {line}{proc.stderr.read()}")
        url = line.split()[-1]
        rss, t0 = [], time.perf_counter()
        for i in range(1, scrapes + 1):
            with urllib.request.urlopen(url, timeout=180) as r:
                body = r.read().decode()
            if "kxtx_up 1" not in body:
                raise SystemExit(f"scrape {i}: not kxtx_up 1")
            if i == 1 or i % 50 == 0:
                rss.append(vm_rss_kib(proc.pid))
        took = time.perf_counter() - t0
        collections = next(
            float(x.split()[-1]) for x in body.splitlines() if x.startswith("kxtx_collections_total ")
        )
        return {
            "argv": " ".join(argv[1:]),
            "scrapes": scrapes,
            "collections": int(collections),
            "seconds_per_scrape": round(took / scrapes, 3),
            "vm_rss_kib_every_50": rss,
            "vm_rss_kib": {"first": rss[0], "last": rss[-1], "max": max(rss)},
        }
    finally:
        proc.terminate()
        proc.wait(60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--txns", type=int, default=3, help="committed transactions per producer")
    ap.add_argument("--open", type=int, default=6, help="producers with a transaction left open")
    ap.add_argument("--hanging", type=int, default=3)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--scrapes", type=int, default=500)
    ap.add_argument("--serve-topic", default=None, help="serve collects this topic only (default: all)")
    ap.add_argument("--serve-min-interval", type=float, default=0.0)
    ap.add_argument("--kafka-version", default="4")
    ap.add_argument(
        "--baseline",
        metavar="REF",
        help="also time REF's `monitor collect` (a git revision, checked out in a temporary worktree) in the same runs",
    )
    args = ap.parse_args()

    sandbox, info = start_broker(args.kafka_version)
    keep: list = []
    base: Path | None = None
    try:
        b = info.bootstrap
        log(f"broker {info.kafka_version} at {b}; creating {args.topics} x {args.partitions} partitions")
        names = create_topics(b, args.topics, args.partitions)
        log(f"{args.producers} producers x {args.txns} committed transactions")
        committed_transactions(b, names, args.partitions, args.producers, args.txns)
        log(f"{args.open} open transactions, {args.hanging} hanging, {args.groups} groups")
        keep = open_transactions(b, names, args.open)
        hang_on = [(names[i % len(names)], (i * 37) % args.partitions) for i in range(args.hanging)]
        _p, starts = make_hanging(b, f"bench-mon-hanging-{uuid.uuid4().hex[:6]}", hang_on)
        consumer_groups(b, names, args.partitions, args.groups)
        env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": b}
        # an installed kxtx has its .pyc files: without them every run compiles kxtx's modules again
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        kx = [sys.executable, "-m", "kxtx"]
        argvs = {
            "collect": [*kx, "monitor", "collect", "-o", "json"],
            "find_hanging": [*kx, "find-hanging", "-o", "json"],
            "kafka": kafka_find_hanging(sandbox, b),
        }
        cwds = dict.fromkeys(argvs, ROOT)
        if args.baseline:
            # its own kxtx: the working directory comes first on `python -m`'s path
            base = Path(tempfile.mkdtemp(prefix="kxtx-bench-base-")) / "tree"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.baseline],
                check=True,
                capture_output=True,
            )
            argvs["collect_baseline"], cwds["collect_baseline"] = argvs["collect"], base
        times: dict[str, list[float]] = {k: [] for k in argvs}
        found: dict[str, set] = {}
        doc: dict = {}
        same_output = None
        for i in range(args.runs):
            for name, argv in argvs.items():
                t, r = timed(argv, env, cwds[name])
                times[name].append(t)
                if name == "kafka":
                    if r.returncode != 0:
                        raise SystemExit(f"kafka-transactions exit {r.returncode}: {r.stderr[-2000:]}")
                    found[name] = java_rows(r.stdout)
                    continue
                if r.returncode not in (0, 3):
                    raise SystemExit(f"{name} exit {r.returncode}: {r.stderr[-2000:]}")
                d = json.loads(r.stdout)
                found[name] = {(x["topic"], x["partition"]) for x in d["hanging"]}
                if name == "collect":
                    doc = d
                elif name == "collect_baseline":
                    same_output = _stable(d) == _stable(doc)
            log("run {}: {}".format(i + 1, ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items())))
        med = {k: statistics.median(v) for k, v in times.items()}
        load_bench = os.getloadavg()
        log(f"serve: {args.scrapes} scrapes")
        rss = serve_rss(env, args.scrapes, args.serve_topic, args.serve_min_interval)
        print(
            json.dumps(
                {
                    "kafka_version": info.kafka_version,
                    "partitions": args.topics * args.partitions,
                    "partitions_checked": doc.get("partitions_checked"),
                    "open_partitions": len(doc.get("partitions", [])),
                    "group_rows": len(doc.get("groups", [])),
                    "transactional_id_states": {
                        s["state"]: s["transactional_ids"] for s in doc.get("transactional_id_states", [])
                    },
                    "runs": args.runs,
                    "median_s": {k: round(v, 3) for k, v in med.items()},
                    "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
                    "ratio_collect_over_find_hanging": round(med["collect"] / med["find_hanging"], 3),
                    "ratio_collect_over_kafka": round(med["collect"] / med["kafka"], 3),
                    # each run's ratio, then their median: steadier than medians' ratio on a busy machine
                    "per_run_ratio_collect_over_find_hanging_median": round(
                        statistics.median(c / f for c, f in zip(times["collect"], times["find_hanging"])), 3
                    ),
                    **(
                        {
                            "baseline": args.baseline,
                            "ratio_baseline_over_find_hanging": round(
                                med["collect_baseline"] / med["find_hanging"], 3
                            ),
                            "ratio_collect_over_baseline": round(med["collect"] / med["collect_baseline"], 3),
                            "baseline_same_output": same_output,
                        }
                        if args.baseline
                        else {}
                    ),
                    "hanging_expected": sorted(f"{t}:{p}" for t, p in starts),
                    "same_partitions_found": found.get("collect")
                    == found.get("find_hanging")
                    == found.get("collect_baseline", found.get("collect"))
                    == found.get("kafka")
                    == set(starts),
                    "load_average_during_runs": [round(x, 2) for x in load_bench],
                    "serve": rss,
                    "load_average_end": [round(x, 2) for x in os.getloadavg()],
                },
                indent=2,
            )
        )
    finally:
        if base is not None and base.exists():
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True
            )
        for p in keep:
            p.abort_transaction(30)
        keep.clear()  # no client left to reconnect to the stopped broker
        log("stopping the broker")
        sandbox.stop()


if __name__ == "__main__":
    main()
