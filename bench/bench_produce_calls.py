"""How records are handed to librdkafka, alone: a `Producer.produce()` call per record,
confluent-kafka's own `Producer.produce_batch` (a dict per record), and kxtx's
`kxtx.client.fast.batch.Batcher` (`rd_kafka_produce_batch` on the producer's client, its message
array filled by the C loop or, with KXTX_SPEEDUPS=0, by Python) — issue 60: does the batch path
still earn its place against confluent-kafka 2.16's `produce_batch`?

Each case runs in a process of its own, cases interleaved round by round; the lines are in memory
before the clock starts, and each run is one transaction (begin, hand over every record, commit),
timed in wall and process CPU seconds (librdkafka's threads included). Not a timed test: run it by
hand against a broker, e.g.

    eval "$(kxtx sandbox start --port 0 --export)"
    python bench/bench_produce_calls.py --bootstrap "$KXTX_BOOTSTRAP" --records 1000000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid

from bench_produce import cpu_seconds, drop_topic

CASES = ("produce", "confluent-batch", "kxtx-batch", "kxtx-batch-py")
SHAPES = ("plain", "keyed")
RUN = 5000  # records per batch call, as kxtx's fast paths hand them over


def one(case: str, shape: str, bootstrap: str, records: int, partitions: int) -> dict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"calls-{shape}-{uuid.uuid4().hex[:8]}"
    parts = 1 if shape == "plain" else partitions
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a freed client ends its futures
    admin.create_topics([NewTopic(topic, parts, 1)])[topic].result()
    values = [b'{"id": %d, "name": "customer-%d", "score": %d}' % (i, i, i % 97) for i in range(records)]
    keys = [b"%d" % i for i in range(records)] if shape == "keyed" else None
    targets = [i % parts for i in range(records)]
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": topic,
            "queue.buffering.max.messages": 2 * records,  # no case ever waits on a full queue
            "queue.buffering.max.kbytes": 2097151,
        }
    )
    p.init_transactions(30)
    batcher = None
    if case.startswith("kxtx-batch"):
        from kxtx.client.fast.batch import Batcher

        batcher = Batcher.of(p, topic, 30)
        if batcher is None:
            raise SystemExit("kxtx's batch path is not usable here")
    p.begin_transaction()
    wall, cpu = time.perf_counter(), cpu_seconds(resource.RUSAGE_SELF)
    if case == "produce":
        produce = p.produce
        if keys is None:
            for v in values:
                produce(topic, v, partition=0)
        else:
            for k, v, t in zip(keys, values, targets):
                produce(topic, v, k, partition=t)
    elif case == "confluent-batch":
        for k in range(0, records, RUN):
            end = min(k + RUN, records)
            if keys is None:
                msgs = [{"value": v} for v in values[k:end]]
                taken = p.produce_batch(topic, msgs, partition=0)
            else:
                msgs = [
                    {"value": v, "key": key, "partition": t}
                    for v, key, t in zip(values[k:end], keys[k:end], targets[k:end])
                ]
                taken = p.produce_batch(topic, msgs)
            if taken != end - k:
                raise SystemExit(f"produce_batch took {taken} of {end - k}")
    else:
        assert batcher is not None
        for k in range(0, records, RUN):
            end = min(k + RUN, records)
            nxt, failed = batcher.produce(topic, 0 if keys is None else targets, values, k, end, keys)
            if nxt != end or failed:
                raise SystemExit(f"batch stopped at {nxt} of {end}, {len(failed)} failed")
    handed = time.perf_counter() - wall, cpu_seconds(resource.RUSAGE_SELF) - cpu
    p.commit_transaction(60)
    done = time.perf_counter() - wall, cpu_seconds(resource.RUSAGE_SELF) - cpu
    drop_topic(bootstrap, topic)  # a run's 1M records left on the broker would slow the later runs
    return {
        "case": case,
        "shape": shape,
        "hand_wall": handed[0],
        "hand_cpu": handed[1],
        "wall": done[0],
        "cpu": done[1],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--one", nargs=2, metavar=("CASE", "SHAPE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], a.one[1], a.bootstrap, a.records, a.partitions)))
        return
    results: dict[tuple[str, str], list[dict]] = {}
    cases, shapes = a.cases.split(","), a.shapes.split(",")
    for r in range(a.rounds):
        order = cases if r % 2 == 0 else cases[::-1]
        for shape in shapes:
            for case in order:
                env = dict(os.environ)
                if case == "kxtx-batch-py":
                    env["KXTX_SPEEDUPS"] = "0"
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--bootstrap",
                        a.bootstrap,
                        "--records",
                        str(a.records),
                        "--partitions",
                        str(a.partitions),
                        "--one",
                        case,
                        shape,
                    ],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                res = json.loads(out.strip().splitlines()[-1])
                results.setdefault((shape, case), []).append(res)
                print(
                    f"round {r + 1} {shape:6} {case:16} hand {res['hand_wall']:.2f} s / {res['hand_cpu']:.2f} "
                    f"CPU s; with commit {res['wall']:.2f} / {res['cpu']:.2f}",
                    file=sys.stderr,
                )
    print(f"\n{a.records} records, {a.rounds} rounds, medians (wall / CPU s)\n")
    print("| shape | case | handing over | with the commit | CPU ÷ produce() |")
    print("|---|---|---|---|---|")
    for shape in shapes:
        base = (
            statistics.median(x["cpu"] for x in results[(shape, "produce")]) if "produce" in cases else None
        )
        for case in cases:
            rs = results[(shape, case)]
            hw, hc = (statistics.median(x[k] for x in rs) for k in ("hand_wall", "hand_cpu"))
            w, c = (statistics.median(x[k] for x in rs) for k in ("wall", "cpu"))
            ratio = f"{c / base:.2f}" if base else "-"
            print(f"| {shape} | {case} | {hw:.2f} / {hc:.2f} | {w:.2f} / {c:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
