"""Recovery time after a leader SIGKILL (issue 13). Not a timed test: run it by hand.

    python bench/bench_failover.py [--rounds 5] [--only produce,pipe] [--json out.json]

On a 3-node sandbox (started and stopped here with kxtx's own sandbox code; RF 3,
min.insync.replicas 2), each round runs a workload writing to a fresh 6-partition RF-3 topic, waits
for steady state (two commits seen), SIGKILLs the broker leading partition 0 of the output topic,
and measures the time from the kill to the first committed transaction after it: the first time
partition 0's last stable offset (read_committed end offset, polled every 20 ms) moves. Every
transaction writes to partition 0 (keyed records over 6 partitions), and no transaction that
touches it can complete before a new leader serves it, so that moment is the first commit after
the failover. The killed broker is started again and the cluster made whole before the next run.

Workloads, interleaved in each round so the shared machine's load hits all alike:
  produce: `kxtx produce` (defaults) vs the hand-written transactional loop of bench_produce.py
           (same producer settings, 50k records per transaction like kxtx's default, keyed);
  pipe:    `kxtx pipe` (identity UDF) vs the EOS hand loop of bench_pipe.py (consume, produce,
           send_offsets_to_transaction, commit), both from a pre-filled 6-partition RF-3 input.
The hand loops are the bench/ loops with a topic argument and keys (bench_produce's creates its own
RF-1 topic, whose partitions would just go offline with their broker). Each median comes with its
5 values; the floor for every client is the controller's fencing of the dead broker
(broker.session.timeout.ms, 9 s by default) plus the election.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEYS = 1000
PER_TXN = 50_000


# --- the hand-written loops (run as `python bench_failover.py --hand-produce/--hand-pipe ...`) -------
def hand_produce(bootstrap: str, topic: str) -> None:
    """bench_produce.hand_loop's loop, keyed, on a given topic, until killed."""
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{uuid.uuid4().hex}",
            "linger.ms": 20,
            "retry.backoff.ms": 10,
            "partitioner": "murmur2_random",
        }
    )
    p.init_transactions(30)
    i = 0
    while True:
        p.begin_transaction()
        for _ in range(PER_TXN):
            line = b'{"k":"k%d","i":%d}' % (i % KEYS, i)
            while True:
                try:
                    p.produce(topic, line, b"k%d" % (i % KEYS))
                    break
                except BufferError:
                    p.poll(0.05)
            i += 1
        p.commit_transaction(30)


def hand_pipe(bootstrap: str, src: str, out: str, batch_size: int = 10_000) -> None:
    """bench_pipe.loop(eos=True)'s loop, with keys kept, until killed."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "retry.backoff.ms": 10,
            "transactional.id": f"bench-{uuid.uuid4().hex}",
        }
    )
    p.init_transactions(30)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
        }
    )
    c.subscribe([src])
    while True:
        batch = []
        while len(batch) < batch_size:
            got = c.consume(min(10000, batch_size - len(batch)), 1.0)
            batch.extend(m for m in got if not m.error())
        p.begin_transaction()
        for m in batch:
            while True:
                try:
                    p.produce(out, m.value(), m.key())
                    break
                except BufferError:
                    p.poll(0.05)
        nxt = {}
        for m in batch:
            nxt[(m.topic(), m.partition())] = m.offset() + 1
        p.send_offsets_to_transaction(
            [TopicPartition(t, q, o) for (t, q), o in nxt.items()], c.consumer_group_metadata(), 30
        )
        p.commit_transaction(30)


# --- measuring ---------------------------------------------------------------------------------------
class Lso:
    """Partition 0's LSO, asked of whichever broker leads it (errors while it has none = None)."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic
        self.admin, self.failures = self._client(), 0

    def _client(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def __call__(self) -> int | None:
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        tp = TopicPartition(self.topic, 0)
        try:
            fut = self.admin.list_offsets(
                {tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=5
            )[tp]
            offset = fut.result(timeout=6).offset
            self.failures = 0
            return offset
        except Exception:  # noqa: BLE001 - leader gone or moving
            # An admin client can keep asking the leader it knew: after a few failures in a row a
            # new one reads fresh metadata (replacing it at every failure starved it, measured).
            self.failures += 1
            if self.failures % 3 == 0:
                self.admin = self._client()
            return None


class FirstCommitted:
    """A read_committed consumer on partition 0 from `offset` on."""

    def __init__(self, bootstrap: str, topic: str, offset: int):
        from confluent_kafka import Consumer, TopicPartition

        self.c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-fc-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 20,
                "log_level": 0,
            }
        )
        self.c.assign([TopicPartition(topic, 0, offset)])

    def poll(self) -> bool:
        m = self.c.poll(0.02)
        return m is not None and m.error() is None


def new_topic(bootstrap: str, partitions: int = 6) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"fo-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    time.sleep(1)
    return name


def leader_of_p0(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[0].leader


def fill(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(n):
        while True:
            try:
                p.produce(topic, b'{"k":"k%d","i":%d}' % (i % KEYS, i), b"k%d" % (i % KEYS))
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)


def wait_healthy(sandbox, timeout: float = 180) -> None:
    from confluent_kafka.admin import AdminClient

    info = sandbox.info()
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10)
        if len(md.brokers) == 3 and all(
            len(p.isrs) == 3 for t in md.topics.values() for p in t.partitions.values()
        ):
            return
        time.sleep(1)
    raise SystemExit("the cluster did not become fully in sync again")


def one_run(sandbox, bootstrap: str, workload: str, tmp: Path) -> dict:
    out = new_topic(bootstrap)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    py = [sys.executable]
    if workload == "kxtx produce":
        cmd = py + [
            "-m",
            "kxtx",
            "produce",
            str(tmp / "input.jsonl"),
            "-t",
            out,
            "-k",
            "k",
            "-b",
            bootstrap,
            "-o",
            "jsonl",
        ]
    elif workload == "hand produce":
        cmd = py + [__file__, "--hand-produce", bootstrap, out]
    else:
        src = tmp / "pipe_src.txt"
        topic_in = src.read_text().strip()
        if workload == "kxtx pipe":
            cmd = py + [
                "-m",
                "kxtx",
                "pipe",
                "--in",
                topic_in,
                "--out",
                out,
                "--udf",
                f"{ROOT / 'bench' / 'bench_failover.py'}:identity",
                "--group",
                f"bench-fo-{uuid.uuid4().hex[:8]}",
                "-b",
                bootstrap,
                "-o",
                "jsonl",
            ]
        else:
            cmd = py + [__file__, "--hand-pipe", bootstrap, topic_in, out]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "run.err", "w"),
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    lso = Lso(bootstrap, out)
    try:
        # steady state: partition 0's LSO moved twice (two commits)
        seen, deadline = [], time.monotonic() + 240
        while len(set(seen)) < 3:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(
                    f"{workload} did not reach steady state: {(tmp / 'run.err').read_text()[-800:]}"
                )
            v = lso()
            if v is not None and (not seen or v != seen[-1]):
                seen.append(v)
            time.sleep(0.05)
        victim = leader_of_p0(bootstrap, out)
        before = lso() or seen[-1]
        # The first record at or past the LSO of the kill moment that a read_committed consumer
        # gets is the first commit after it (the fetch path follows the new leader by itself).
        first = FirstCommitted(bootstrap, out, before)
        t0 = time.monotonic()
        sandbox.kill_node(victim)
        recovered = None
        while time.monotonic() - t0 < 300:
            if first.poll():
                recovered = time.monotonic() - t0
                break
            if proc.poll() is not None and time.monotonic() - t0 > 60:
                break
        alive = proc.poll() is None
        sandbox.start_node(victim)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wait_healthy(sandbox)
    err = (tmp / "run.err").read_text()
    return {
        "workload": workload,
        "recovery_s": recovered,
        "victim": victim,
        "survived": alive,
        "exit": None if alive else proc.returncode,
        "stderr_tail": "" if alive else err[-300:],
    }


def identity(v):
    return v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="produce,pipe")
    ap.add_argument("--json")
    ap.add_argument("--hand-produce", nargs=2)
    ap.add_argument("--hand-pipe", nargs=3)
    a = ap.parse_args()
    if a.hand_produce:
        return hand_produce(*a.hand_produce)
    if a.hand_pipe:
        return hand_pipe(*a.hand_pipe)

    from kxtx.sandbox import Sandbox

    tmp = Path(tempfile.mkdtemp(prefix="kxtx-bench-failover-"))
    sandbox = Sandbox(tmp / "sandbox")
    info = sandbox.start(port=0, brokers=3, heap="512m", wait_s=240)
    bootstrap = info.bootstrap
    workloads = []
    try:
        if "produce" in a.only:
            with open(tmp / "input.jsonl", "w") as f:  # more than any run reaches before its kill
                f.writelines(f'{{"k":"k{i % KEYS}","i":{i}}}\n' for i in range(3_000_000))
            workloads += ["kxtx produce", "hand produce"]
        if "pipe" in a.only:
            topic_in = new_topic(bootstrap)
            fill(bootstrap, topic_in, 2_000_000)
            (tmp / "pipe_src.txt").write_text(topic_in)
            workloads += ["kxtx pipe", "hand pipe"]
        runs = []
        for r in range(a.rounds):
            for w in workloads:
                res = one_run(sandbox, bootstrap, w, tmp)
                res["round"] = r
                print(json.dumps(res), flush=True)
                runs.append(res)
    finally:
        sandbox.stop()
    summary = {}
    for w in workloads:
        vals = [x["recovery_s"] for x in runs if x["workload"] == w]
        ok = [v for v in vals if v is not None]
        summary[w] = {
            "median_s": round(statistics.median(ok), 2) if ok else None,
            "runs_s": [None if v is None else round(v, 2) for v in vals],
            "did_not_recover": len(vals) - len(ok),
        }
    for kind in ("produce", "pipe"):
        k, h = summary.get(f"kxtx {kind}"), summary.get(f"hand {kind}")
        if k and h and k["median_s"] and h["median_s"]:
            summary[f"{kind} ratio kxtx/hand"] = round(k["median_s"] / h["median_s"], 2)
    print(json.dumps(summary, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps({"runs": runs, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
