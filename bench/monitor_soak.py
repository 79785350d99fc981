"""Soak: `kxtx monitor serve` scraped by a real Prometheus while the broker is frozen, killed and
restarted, and every sample held against the truth (issue 43's "done when").

On a one-node sandbox (`kxtx sandbox start`, its state directory given with --sandbox-dir) it makes a
fixed scene: a topic of 3 partitions with committed and aborted transactions, a transaction left
open on partition 0 (its producer process stays alive, idle) and a consumer group that committed
below the LSO on every partition. Nothing is written during the soak, so the truth is one set of
figures, taken with ListOffsets (LSO, high watermark) and a read_committed consumer (records it still
receives from the committed offsets) before the faults and again after each one (each must be the
same: the scene does not move). Meanwhile Prometheus (Debian's `prometheus`, started here on
loopback with its own data directory) scrapes `kxtx monitor serve` every --interval seconds and the
script freezes (SIGSTOP), kills (SIGKILL) and stops (SIGTERM) the broker and starts it again, in
turn, for --minutes.

Then every scrape Prometheus stored is classified from its raw samples (one timestamp per scrape):
`down` (kxtx_up 0), `correct` (every value of the scene present and equal to the truth), `unseen`
(every value present equal to the truth, the absent ones accounted for by kxtx_collect_unseen > 0),
or `wrong` (a value present and not the truth, or absent while nothing was unseen). Prints one JSON
document with the counts, the fault schedule and every wrong sample; exit 1 when any is wrong.

    kxtx sandbox start --state-dir /tmp/soak --port 0 --brokers 1
    python bench/monitor_soak.py --sandbox-dir /tmp/soak --minutes 11
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: what a read_committed consumer of the group still receives, per partition, is read, not assumed
PARTITIONS = 3
#: the scene per partition: (transactions as (records, commit?)), the group's committed offset
SCENE = {
    0: ([(15, True)], 2),
    1: ([(20, True), (5, False), (12, True)], 4),
    2: ([(16, True)], 0),
}
#: the open transaction's producer: alive and idle for the whole soak (a 15-minute timeout)
_HOLD_OPEN = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2],
              "transaction.timeout.ms": 900000, "log_level": 0})
p.init_transactions(60)
p.begin_transaction()
p.produce(sys.argv[3], b"open-0", partition=0)
p.produce(sys.argv[3], b"open-1", partition=0)
assert p.flush(60) == 0
print("open", flush=True)
time.sleep(3600)
"""


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def make_scene(bootstrap: str, topic: str, group: str) -> subprocess.Popen:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    time.sleep(2)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-done"})
    p.init_transactions(60)
    for part, (txns, _c) in SCENE.items():
        for n, commit in txns:
            p.begin_transaction()
            for i in range(n):
                p.produce(topic, f"{part}-{i}".encode(), partition=part)
            p.flush(60)
            p.commit_transaction(60) if commit else p.abort_transaction(60)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    for _ in range(60):
        try:
            c.commit(
                offsets=[TopicPartition(topic, part, off) for part, (_t, off) in SCENE.items()],
                asynchronous=False,
            )
            break
        except Exception:  # noqa: BLE001 - the coordinator may be loading
            time.sleep(1)
    c.close()
    hold = subprocess.Popen(
        [sys.executable, "-c", _HOLD_OPEN, bootstrap, f"{topic}-open", topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert hold.stdout is not None and hold.stdout.readline().strip() == "open"
    return hold


def truth(bootstrap: str, topic: str, group: str) -> dict | None:
    """The figures the exporter must show, read now with fresh clients; None if the broker does not
    answer (measured again later)."""
    from confluent_kafka import Consumer, IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        offs: dict[str, dict[int, int]] = {}
        for level, name in ((IsolationLevel.READ_COMMITTED, "lso"), (IsolationLevel.READ_UNCOMMITTED, "hw")):
            futs = admin.list_offsets(
                {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)},
                isolation_level=level,
                request_timeout=10,
            )
            offs[name] = {tp.partition: f.result(timeout=10).offset for tp, f in futs.items()}
        if any(v < 0 for d in offs.values() for v in d.values()):
            return None
        committed = {p: c for p, (_t, c) in SCENE.items()}
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"soak-truth-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        lag = {}
        try:
            for p in range(PARTITIONS):
                c.assign([TopicPartition(topic, p, committed[p])])
                n, deadline = 0, time.monotonic() + 20
                while time.monotonic() < deadline:
                    pos = c.position([TopicPartition(topic, p)])[0].offset
                    if pos >= offs["lso"][p]:
                        break
                    for m in c.consume(100, timeout=0.5):
                        if m.error() is None:
                            n += 1
                else:
                    return None
                lag[p] = n
        finally:
            c.close()
    except Exception as exc:  # noqa: BLE001 - the broker is down or moving: try later
        log(f"truth not read: {exc}")
        return None
    return {
        "hw": offs["hw"],
        "lso": offs["lso"],
        "lag": sum(lag.values()),
        "hw_lag": sum(offs["hw"][p] - committed[p] for p in range(PARTITIONS)),
        "invisible": sum(offs["lso"][p] - committed[p] - lag[p] for p in range(PARTITIONS)),
    }


def prometheus(target: str, workdir: Path, interval: float) -> tuple[subprocess.Popen, str]:
    from kxtx.sandbox.nodes import free_port

    config = {
        "global": {"scrape_interval": f"{interval:g}s", "scrape_timeout": f"{interval:g}s"},
        "scrape_configs": [{"job_name": "kxtx", "static_configs": [{"targets": [target]}]}],
    }
    (workdir / "prometheus.yml").write_text(json.dumps(config))
    address = f"127.0.0.1:{free_port()}"
    argv = [
        shutil.which("prometheus") or "prometheus",
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address={address}",
    ]
    proc = subprocess.Popen(argv, stdout=open(workdir / "prometheus.log", "w"), stderr=subprocess.STDOUT)
    base = f"http://{address}"
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{base}/-/ready", timeout=2).read()
            return proc, base
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"Prometheus did not start; see {workdir / 'prometheus.log'}")


def raw_samples(base: str, metric: str, minutes: float, at: float) -> list[dict]:
    """Every raw sample Prometheus stored for `metric` in the last `minutes` before `at`."""
    q = urllib.parse.urlencode({"query": f"{metric}[{int(minutes * 60) + 120}s]", "time": at})
    doc = json.loads(urllib.request.urlopen(f"{base}/api/v1/query?{q}", timeout=60).read())
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def faults(sandbox, stop_at: float, schedule: list[dict]) -> None:
    """Freeze, kill, stop and start the broker in turn until `stop_at`, each after a healthy while."""
    kinds = [("freeze", 20), ("kill", 15), ("freeze", 76), ("stop", 10), ("freeze", 5), ("kill", 30)]
    i = 0
    while time.monotonic() < stop_at - 60:
        time.sleep(35)
        kind, down = kinds[i % len(kinds)]
        i += 1
        began = time.time()
        log(f"fault: {kind} for {down} s")
        if kind == "freeze":
            sandbox.pause_node(1)
            time.sleep(down)
            sandbox.resume_node(1)
        else:
            sandbox.kill_node(1) if kind == "kill" else sandbox.stop_node(1)
            time.sleep(down)
            sandbox.start_node(1)
        schedule.append({"fault": kind, "down_s": down, "began": began, "ended": time.time()})
        log(f"fault over: {kind}")


def classify(base: str, topic: str, group: str, t: dict, minutes: float, at: float) -> dict:
    def by_time(metric: str, labels: dict | None = None) -> dict[float, float]:
        out: dict[float, float] = {}
        for series in raw_samples(base, metric, minutes, at):
            m = series["metric"]
            if labels and any(m.get(k) != v for k, v in labels.items()):
                continue
            for ts, v in series["values"]:
                out[float(ts)] = float(v)
        return out

    up = by_time("kxtx_up")
    unseen: dict[float, float] = {}
    for series in raw_samples(base, "kxtx_collect_unseen", minutes, at):
        for ts, v in series["values"]:
            unseen[float(ts)] = unseen.get(float(ts), 0) + float(v)
    g = {"group": group, "topic": topic}
    p0 = {"topic": topic, "partition": "0"}
    expected = {
        ("kxtx_consumergroup_lag_records", "lag"): (by_time("kxtx_consumergroup_lag_records", g), t["lag"]),
        ("kxtx_consumergroup_hw_lag_records", "hw_lag"): (
            by_time("kxtx_consumergroup_hw_lag_records", g),
            t["hw_lag"],
        ),
        ("kxtx_consumergroup_invisible_records", "invisible"): (
            by_time("kxtx_consumergroup_invisible_records", g),
            t["invisible"],
        ),
        ("kxtx_partition_high_watermark", "p0 hw"): (
            by_time("kxtx_partition_high_watermark", p0),
            t["hw"][0],
        ),
        ("kxtx_partition_last_stable_offset", "p0 lso"): (
            by_time("kxtx_partition_last_stable_offset", p0),
            t["lso"][0],
        ),
        ("kxtx_partition_lso_gap_records", "p0 gap"): (
            by_time("kxtx_partition_lso_gap_records", p0),
            t["hw"][0] - t["lso"][0],
        ),
        ("kxtx_partition_open_transactions", "p0 open"): (by_time("kxtx_partition_open_transactions", p0), 1),
        ("kxtx_hanging_transactions", "hanging"): (by_time("kxtx_hanging_transactions"), 0),
    }
    scraped = [float(v) for s in raw_samples(base, "up", minutes, at) for _ts, v in s["values"]]
    durations = sorted(
        float(v) for s in raw_samples(base, "scrape_duration_seconds", minutes, at) for _, v in s["values"]
    )
    prom = {
        "scrapes": len(scraped),
        "failed": scraped.count(0.0),
        "max_duration_s": durations[-1] if durations else None,
    }
    counts = {"scrapes": len(up), "down": 0, "correct": 0, "unseen": 0, "wrong": 0}
    values = {"present_correct": 0, "absent_unseen": 0, "wrong": 0}
    wrong = []
    for ts in sorted(up):
        if up[ts] == 0:
            counts["down"] += 1
            continue
        bad, absent = [], 0
        for (metric, _name), (series, want) in expected.items():
            got = series.get(ts)
            if got is None:
                if unseen.get(ts, 0) > 0:
                    absent += 1
                    values["absent_unseen"] += 1
                else:
                    bad.append(f"{metric} absent with nothing unseen")
            elif got != want:
                bad.append(f"{metric} {got:g} (truth {want})")
            else:
                values["present_correct"] += 1
        values["wrong"] += len(bad)
        if bad:
            counts["wrong"] += 1
            wrong.append({"time": ts, "unseen": unseen.get(ts), "wrong": bad})
        elif absent:
            counts["unseen"] += 1
        else:
            counts["correct"] += 1
    return {"prometheus": prom, "counts": counts, "values": values, "wrong": wrong}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sandbox-dir", required=True, help="the state directory of a running one-node sandbox")
    ap.add_argument("--minutes", type=float, default=11)
    ap.add_argument("--interval", type=float, default=3.0, help="Prometheus's scrape interval and timeout")
    args = ap.parse_args()
    from kxtx.sandbox import Sandbox

    sandbox = Sandbox(args.sandbox_dir)
    info = sandbox.info()
    assert info is not None, f"no sandbox in {args.sandbox_dir}"
    bootstrap = info.bootstrap
    topic = f"soak-{uuid.uuid4().hex[:6]}"
    group = f"soak-g-{topic}"
    hold = make_scene(bootstrap, topic, group)
    workdir = Path(tempfile.mkdtemp(prefix="kxtx-soak-"))
    serve_log = open(workdir / "serve.log", "w")
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": bootstrap}
    serve = subprocess.Popen(
        [sys.executable, "-m", "kxtx", "monitor", "serve", "--port", "0", "--min-interval", "0"]
        + ["--scrape-timeout", f"{max(0.5, args.interval - 0.5):g}", "--topic", topic, "--group", group],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert serve.stderr is not None
    first = serve.stderr.readline()
    assert "serving http" in first, first
    threading.Thread(target=lambda: shutil.copyfileobj(serve.stderr, serve_log), daemon=True).start()
    target = first.split()[-1].split("//")[1].split("/")[0]
    prom, base = prometheus(target, workdir, args.interval)
    truths, schedule = [], []
    try:
        t0 = truth(bootstrap, topic, group)
        assert t0 is not None, "the scene could not be read"
        truths.append(t0)
        log(f"scene {topic}: truth {t0}; soak for {args.minutes} min, Prometheus {base}, files in {workdir}")
        stop_at = time.monotonic() + args.minutes * 60
        fault_thread = threading.Thread(target=faults, args=(sandbox, stop_at, schedule), daemon=True)
        fault_thread.start()
        while time.monotonic() < stop_at or fault_thread.is_alive():
            time.sleep(20)
            if not any(s["began"] <= time.time() <= s["ended"] + 5 for s in schedule[-1:]):
                t = truth(bootstrap, topic, group)
                if t is not None:
                    truths.append(t)
        time.sleep(args.interval * 3)
        end = time.time()
        result = classify(base, topic, group, t0, args.minutes + 2, end)
    finally:
        prom.terminate()
        serve.send_signal(signal.SIGTERM)
        hold.kill()
        for proc in (prom, serve, hold):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        sandbox.start_node(1)
    failed_lines = [x for x in (workdir / "serve.log").read_text().splitlines() if "collection failed" in x]
    doc = {
        "topic": topic,
        "minutes": args.minutes,
        "scrape_interval_s": args.interval,
        "truth": t0,
        "truth_reads": len(truths),
        "truth_always_the_same": all(t == t0 for t in truths),
        "faults": schedule,
        **result,
        "serve_collection_failed_lines": len(failed_lines),
        "serve_failure_reasons": sorted({x.split("collection failed: ", 1)[1][:100] for x in failed_lines}),
        "files": str(workdir),
    }
    print(json.dumps(doc, indent=2))
    return 1 if result["counts"]["wrong"] or not doc["truth_always_the_same"] else 0


if __name__ == "__main__":
    sys.exit(main())
