"""`kxtx pipe` on a 3-node cluster while the leader of an input partition, the leader of an output
partition, the group coordinator and the transaction coordinator die one after the other (SIGKILL,
back after 8 s), or stall (SIGSTOP 30 s): every input's output exactly once, in order per key. A
run that stops with exit 75 is run again, as an operator's retry loop would."""

import os
import subprocess
import sys
import time
import uuid
from collections import Counter

import pytest

from tests.conftest import ROOT
from tests.integration import cluster_helpers as ch
from tests.integration.pipe_helpers import FAST_GROUP, UDFS, produce

pytestmark = [pytest.mark.multibroker, pytest.mark.spark, pytest.mark.timeout(1500)]

N = int(os.environ.get("KXTX_TEST_FAILOVER_PIPE_RECORDS", "200000"))
KEYS = 97
#: extra pipe arguments when investigating, e.g. "-X debug=eos"
EXTRA = os.environ.get("KXTX_TEST_PIPE_ARGS", "").split()


def _start(kafka, tmp_path, name, args) -> subprocess.Popen:
    env = {**os.environ, "KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap}
    return subprocess.Popen(
        [sys.executable, "-m", "kxtx", "pipe", "--mode", "driver", *args, *FAST_GROUP, *EXTRA, "-o", "json"],
        stdout=open(tmp_path / f"{name}.out", "w"),
        stderr=open(tmp_path / f"{name}.err", "w"),
        env=env,
        cwd=ROOT,
    )


def _stderr(tmp_path) -> str:
    return "\n".join(f.read_text()[-1500:] for f in sorted(tmp_path.glob("run*.err")))


def _grows(kafka, topic, runs, timeout=240) -> None:
    """Wait until the output grew by a batch (the pipe is mid-stream), rerunning after a 75."""
    base = sum(ch.high_watermarks(kafka, topic).values())
    deadline = time.monotonic() + timeout
    while sum(ch.high_watermarks(kafka, topic).values()) <= base + 2000:
        runs.running()
        assert time.monotonic() < deadline, f"{topic} did not grow in {timeout}s"
        time.sleep(0.5)
    runs.running()


@pytest.mark.parametrize(
    "how,down_s,roles",
    [
        ("kill", 8, ("input leader", "output leader", "group coordinator", "txn coordinator")),
        ("pause", 30, ("input leader", "txn coordinator")),
    ],
)
def test_pipe_survives_leader_and_coordinator_outages(cluster3, tmp_path, how, down_s, roles):
    src = cluster3.create_topic(partitions=6, replication=3)
    out = cluster3.create_topic(partitions=6, replication=3)
    vals = [b"%d" % i for i in range(N)]
    keys = [b"k%d" % (i % KEYS) for i in range(N)]
    produce(cluster3.bootstrap, src, vals, keys)
    group, txid = f"fo-{uuid.uuid4().hex[:8]}", f"fo-{uuid.uuid4().hex[:8]}"
    args = [
        "--in",
        src,
        "--out",
        out,
        "--group",
        group,
        "--transactional-id",
        txid,
        "--udf",
        f"{UDFS}:slow_identity",
        "--batch-max-records",
        "2000",
        "--batch-max-ms",
        "1000",
        # idle longer than an outage: the first run ends only once it has caught up
        "--until-idle",
        str(down_s + 30),
    ]
    who = {
        "input leader": lambda: ch.leaders(cluster3, src)[0],
        "output leader": lambda: ch.leaders(cluster3, out)[1],
        "group coordinator": lambda: ch.coordinator(cluster3, group, "__consumer_offsets"),
        "txn coordinator": lambda: ch.coordinator(cluster3, txid),
    }

    def start(i):
        # The first run idles longer than an outage; reruns stop sooner once caught up.
        return _start(cluster3, tmp_path, f"run{i}", args if i == 0 else args[:-1] + ["10"])

    runs = ch.Reruns(start, lambda proc: _stderr(tmp_path))
    try:
        for role in roles:
            _grows(cluster3, out, runs)
            ch.outage(cluster3, who[role](), how, down_s)
        codes = runs.finish(900)
    finally:
        runs.kill()
        ch.wait_healthy(cluster3, [src, out])
    print(f"exit codes of the runs: {codes}")
    by_part = ch.read_committed(cluster3, out)
    counts = Counter(v for recs in by_part.values() for _k, v in recs)
    assert counts == Counter(vals), (
        f"{sum(c - 1 for c in counts.values() if c > 1)} duplicates, {len(set(vals) - set(counts))} missing"
    )
    ch.check_exactly_once_in_order(by_part, range(N), int)
