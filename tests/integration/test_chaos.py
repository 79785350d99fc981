"""Issue 29: broker faults at random moments while `kxtx produce` (keyed, 6 partitions) and `kxtx pipe`
in both modes run at once on the 3-node sandbox (RF 3, min.insync.replicas 2): a seeded schedule
(`tests/integration/chaos.py`; the seed is printed, `KXTX_CHAOS_SEED=N` replays it) of SIGKILLs,
SIGSTOPs of 5-40 s and controlled shutdowns of the node holding an input leader, the transaction
coordinator, the group coordinator or the active controller. Afterwards: every kxtx exit code was 0
or 75 (a 75 is followed by the same command again, as an operator's retry loop does), every input
line is in the input topic exactly once and in order per key, each pipe's read_committed output is
exactly its input, no transaction is left open and find-hanging finds nothing.

CI runs a short schedule (`KXTX_CHAOS_FAULTS`, default 3) from a fixed seed (`chaos.CI_SEED`); a
local run draws a new seed; `bench/chaos_run.py` runs long schedules with new seeds."""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter

import pytest

from kxtx.exitcodes import ExitCode
from tests.integration import chaos
from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import by_partition, end_offsets, read_committed
from tests.integration.pipe_helpers import FAST_GROUP, pipe_args, start_pipe

#: bench/chaos_run.py raises the bound for long schedules
TIMEOUT_S = int(os.environ.get("KXTX_CHAOS_TIMEOUT_S", "1800"))
pytestmark = [pytest.mark.multibroker, pytest.mark.spark, pytest.mark.timeout(TIMEOUT_S)]

#: 50,000 lines: 500 transactions of 100. CI's three faults land at 14, 31 and 59 % of the input
#: written, while produce writes and the pipes (which trail it) read and commit.
LINES = int(os.environ.get("KXTX_CHAOS_LINES", "50000"))
FAULTS = int(os.environ.get("KXTX_CHAOS_FAULTS", "3"))
KEYS = 500
PARTITIONS = 6
MODES = ("driver", "executors")


def _seq(value: bytes) -> int:
    return json.loads(value)["i"]


def _count(kafka, topic: str) -> int:
    return len(read_committed(kafka.bootstrap, topic, 60))


def test_produce_and_pipes_through_random_broker_faults(cluster3, tmp_path):
    seed = chaos.seed_from_env()
    src = cluster3.create_topic(partitions=PARTITIONS, replication=3)
    outs = {m: cluster3.create_topic(partitions=PARTITIONS, replication=3) for m in MODES}
    lines = tmp_path / "keyed.jsonl"
    with open(lines, "w") as f:
        f.writelines(f'{{"k":"k{i % KEYS}","i":{i}}}\n' for i in range(LINES))
    tag = uuid.uuid4().hex[:8]
    txid, groups = f"chaos-produce-{tag}", {m: f"chaos-{m}-{tag}" for m in MODES}
    roles = {
        "input leader": lambda: ch.leaders(cluster3, src)[0],
        "txn coordinator": lambda: ch.coordinator(cluster3, txid),
        "group coordinator": lambda: ch.coordinator(cluster3, groups["driver"], "__consumer_offsets"),
        "controller": lambda: chaos.controller(cluster3),
    }
    faults = chaos.schedule(seed, FAULTS, tuple(roles), span=(0.05, 0.6))
    print(
        f"chaos: seed {seed} (KXTX_CHAOS_SEED={seed} replays it): " + "; ".join(map(str, faults)), flush=True
    )

    producing = ch.Reruns(
        lambda _i: ch.popen(
            cluster3, "produce", str(lines), "-t", src, "-k", "k", "-n", "100", "--transactional-id", txid
        ),
        ch.stderr_text,
        may_finish=True,
    )

    def pipe(mode: str):
        def start(i: int):
            # A rerun after a 75 goes on from the group's committed offsets: it stops after the rest
            # (what is not in its read_committed output yet: one output record per input record).
            rest = LINES - (_count(cluster3, outs[mode]) if i else 0)
            return start_pipe(
                cluster3.bootstrap,
                tmp_path,
                f"{mode}{i}",
                *("--mode", mode, "--master", "local[1]"),
                *pipe_args(src, outs[mode], "identity", groups[mode], transactional_id=f"chaos-{mode}-{tag}"),
                *("--max-records", str(rest), "--until-idle", "600", *FAST_GROUP),
            )

        return ch.Reruns(
            start,
            lambda _p: "\n".join(f.read_text()[-1500:] for f in sorted(tmp_path.glob(f"{mode}*.err"))),
            may_finish=True,
        )

    runs = {"produce": producing, **{m: pipe(m) for m in MODES}}
    fired = chaos.Chaos(cluster3, faults, {r: _held(h) for r, h in roles.items()}, [src, *outs.values()])
    try:
        fired.run(
            progress=lambda: sum(ch.high_watermarks(cluster3, src).values()) / LINES,
            alive=lambda: [r.running() for r in runs.values()],
            timeout=TIMEOUT_S / 2,
        )
        codes = {name: r.finish(TIMEOUT_S / 2) for name, r in runs.items()}
    finally:
        for r in runs.values():
            r.kill()
        ch.wait_healthy(cluster3, [src, *outs.values()])
    replay = f"seed {seed}; faults: {fired.fired}"
    print(f"chaos: exit codes {codes}; {replay}")
    assert all(set(c) <= {ExitCode.OK, ExitCode.RETRY} for c in codes.values()), (codes, replay)

    inputs = by_partition(read_committed(cluster3.bootstrap, src, 180))
    ch.check_exactly_once_in_order(inputs, range(LINES), _seq)
    want = Counter(v for recs in inputs.values() for _k, v in recs)
    for mode in MODES:
        got = by_partition(read_committed(cluster3.bootstrap, outs[mode], 180))
        assert Counter(v for recs in got.values() for _k, v in recs) == want, (mode, replay)
        ch.check_exactly_once_in_order(got, range(LINES), _seq)
    for topic in (src, *outs.values()):
        assert end_offsets(cluster3.bootstrap, topic) == end_offsets(
            cluster3.bootstrap, topic, committed=False
        ), f"a transaction is still open on {topic}: {replay}"
        hanging = ch.run(
            cluster3, "find-hanging", "-t", topic, "--max-transaction-timeout", "1s", "-o", "json", expect=0
        )
        assert json.loads(hanging.stdout)["hanging"] == [], (
            hanging.stdout,
            replay,
        )


def _held(holder):
    """A role's node, or None (asked again) while it has none (-1: no leader yet)."""
    return lambda: (lambda node: node if node >= 0 else None)(holder())
