"""`kxtx pipe` on a 3-node cluster while the leader of an input partition, the leader of an output
partition, the group coordinator and the transaction coordinator die one after the other (SIGKILL,
back after 8 s), or stall (SIGSTOP 30 s), each while the pipe has input to commit: every input's
output exactly once, in order per key. A run that stops with exit 75 is run again, as an
operator's retry loop would."""

import itertools
import json
import os
import threading
import time
import uuid
from collections import Counter

import pytest

from kxtx.client.txwriter import STUCK_ISSUES
from kxtx.exitcodes import ExitCode
from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import by_partition, read_committed, wait_until
from tests.integration.pipe_helpers import FAST_GROUP, committed_offsets, pipe_args, produce, start_pipe

pytestmark = [pytest.mark.multibroker, pytest.mark.spark, pytest.mark.timeout(1500)]

#: All input records, fed in slices: one before the run, one before each later fault, the last
#: after the last fault. The run cannot end before the last slice (it stops at --max-records N),
#: so every fault lands mid-run; a slice is ~10 s of slow_identity work, so the pipe is still
#: committing it when its fault lands (asserted). KXTX_TEST_FAILOVER_PIPE_RECORDS scales it.
N = int(os.environ.get("KXTX_TEST_FAILOVER_PIPE_RECORDS", "60000"))
KEYS = 97
PARTITIONS = 6
#: extra pipe arguments when investigating, e.g. "-X debug=eos"
EXTRA = os.environ.get("KXTX_TEST_PIPE_ARGS", "").split()
#: A safety net only: a run stops at --max-records; it must not stop idle while the test heals
#: the cluster between slices.
IDLE_S = "300"


def _stderr(tmp_path) -> str:
    return "\n".join(f.read_text()[-1500:] for f in sorted(tmp_path.glob("run*.err")))


def _written(kafka, topic) -> int:
    return sum(ch.high_watermarks(kafka, topic).values())


def _committed_in(kafka, group: str, src: str) -> int:
    return sum(max(o, 0) for o in committed_offsets(kafka.bootstrap, group, src, PARTITIONS))


@pytest.mark.parametrize(
    "how,down_s,roles",
    [
        ("kill", 8, ("input leader", "output leader", "group coordinator", "txn coordinator")),
        ("pause", 30, ("input leader", "txn coordinator")),
    ],
)
def test_pipe_survives_leader_and_coordinator_outages(cluster3, tmp_path, how, down_s, roles):
    src = cluster3.create_topic(partitions=PARTITIONS, replication=3)
    out = cluster3.create_topic(partitions=PARTITIONS, replication=3)
    vals = [b"%d" % i for i in range(N)]
    keys = [b"k%d" % (i % KEYS) for i in range(N)]
    cuts = [N * i // (len(roles) + 1) for i in range(len(roles) + 2)]
    slices = itertools.pairwise(cuts)
    fed = 0

    def feed() -> None:
        nonlocal fed
        a, b = next(slices)
        produce(cluster3.bootstrap, src, vals[a:b], keys[a:b])
        fed = b

    feed()
    group, txid = f"fo-{uuid.uuid4().hex[:8]}", f"fo-{uuid.uuid4().hex[:8]}"
    args = [
        "--mode",
        "driver",
        *pipe_args(src, out, "slow_identity", group, transactional_id=txid, batch_max_records=2000),
        *("--batch-max-ms", "1000", "--until-idle", IDLE_S, *FAST_GROUP, *EXTRA),
    ]
    who = {
        "input leader": lambda: ch.leaders(cluster3, src)[0],
        "output leader": lambda: ch.leaders(cluster3, out)[1],
        "group coordinator": lambda: ch.coordinator(cluster3, group, "__consumer_offsets"),
        "txn coordinator": lambda: ch.coordinator(cluster3, txid),
    }

    def start(i):
        # A rerun after a 75 goes on from the group's committed offsets: it stops after the rest.
        rest = N - (_committed_in(cluster3, group, src) if i else 0)
        return start_pipe(cluster3.bootstrap, tmp_path, f"run{i}", *args, "--max-records", str(rest))

    runs = ch.Reruns(start, lambda proc: _stderr(tmp_path))
    try:
        for i, role in enumerate(roles):
            if i:
                feed()
            # A batch of this slice written: the pipe is mid-slice, transactions in flight.
            base = _written(cluster3, out)
            wait_until(
                lambda base=base: runs.running() or _written(cluster3, out) > base + 2000,
                240,
                f"{out} to grow before the outage of the {role}",
                every=0.5,
                tolerate=ch.MOVING,
            )
            runs.running()  # mid-run (asserted), or restarted after a 75
            done = _committed_in(cluster3, group, src)
            assert done < fed, f"the pipe had committed all its input before the outage of the {role}"
            ch.outage(cluster3, who[role](), how, down_s, who[role])
            ch.wait_healthy(cluster3, [src, out])
        feed()
        codes = runs.finish(900)
    finally:
        runs.kill()
        ch.wait_healthy(cluster3, [src, out])
    print(f"exit codes of the runs: {codes}")
    by_part = by_partition(read_committed(cluster3.bootstrap, out, 180))
    counts = Counter(v for recs in by_part.values() for _k, v in recs)
    assert counts == Counter(vals), (
        f"{sum(c - 1 for c in counts.values() if c > 1)} duplicates, {len(set(vals) - set(counts))} missing"
    )
    ch.check_exactly_once_in_order(by_part, range(N), int)


#: How long the pipes run idle after the killed leader came back (the issue's exit 1 came then).
#: 30 s was too short in a loaded CI run: the executors-mode pipe saw no record of the new leader
#: within 30 s of its last commit (the driver-mode one did) and stopped idle during the outage.
COMEBACK_IDLE_S = 60


def _a_coordinator(kafka) -> tuple[int, str]:
    """A node leading some __transaction_state partition, and a transactional id, initialised,
    whose coordinator it is. (Not every node is one: KRaft never makes a fenced broker a
    partition's preferred leader, so a __transaction_state created during an earlier test's
    outage has no partition preferring the node that was down: CI's StopIteration. Nor does a
    preferred-leader election help; and one at the end of each test moved leaders under the next
    test's first offset reads: NOT_LEADER_FOR_PARTITION in CI.)"""
    from confluent_kafka import Producer

    Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": "warm"}).init_transactions(30)
    tid = f"on-{uuid.uuid4().hex[:8]}"
    node = ch.coordinator(kafka, tid)
    Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid}).init_transactions(30)
    return node, tid


def _feed(kafka, topic: str, done: threading.Event, fed: list) -> None:
    """A record every 3 s until `done` is set."""
    while not done.is_set():
        fed.append(b"during-%d" % len(fed))
        produce(kafka.bootstrap, topic, fed[-1:])
        done.wait(3)


def _inspect_waits_for_the_coordinator(kafka, tid: str) -> None:
    done = ch.run(
        kafka, "inspect", "txn", tid, "--no-history", "--no-scan", "-o", "json", "--timeout", "60", expect=0
    )
    assert json.loads(done.stdout)["transactional_id"] == tid


def test_idle_pipes_ride_out_their_input_leader_coming_back(cluster3, tmp_path):
    """Issue 29's reproduction, both modes at once (one outage, one wait): idle pipes while the
    input partition's leader is SIGKILLed and started again 15 s later. Both ride out its comeback
    and end at --until-idle with exit 0 (exit 1 was "reading ...'s end: Broker: Leader epoch is
    older than broker epoch", FENCED_LEADER_EPOCH)."""
    # The input's leader is also the transaction coordinator of the id `inspect` waits for.
    node, tid = _a_coordinator(cluster3)
    src = cluster3.create_topic(replicas=[[node, *sorted({1, 2, 3} - {node})]])
    modes = ("driver", "executors")
    outs = {m: cluster3.create_topic(partitions=1, replication=3) for m in modes}
    vals = [b"v%d" % i for i in range(50)]
    fed: list[bytes] = []
    produce(cluster3.bootstrap, src, vals)
    args = {
        m: [
            *("--mode", m, "--master", "local[1]"),
            *pipe_args(src, outs[m], "identity", f"back-{m}-{uuid.uuid4().hex[:8]}"),
            *("--until-idle", str(COMEBACK_IDLE_S), *FAST_GROUP, *EXTRA),
        ]
        for m in modes
    }
    procs = {m: start_pipe(cluster3.bootstrap, tmp_path, m, *args[m]) for m in modes}
    runs = {m: m for m in modes}  # the name of each mode's last run (its .out and .err)
    logs = lambda: {m: (tmp_path / f"{runs[m]}.err").read_text()[-1500:] for m in modes}  # noqa: E731
    try:
        # A record every 3 s until both run: one pipe's Spark can take a minute longer to start than
        # the other's on a loaded machine, and the first must not stop idle meanwhile. Then both are
        # fed again: their idle clocks start together, just before the outage.
        warming = threading.Event()
        warmup = ch.Background(_feed, cluster3, src, warming, fed)
        for m in modes:
            wait_until(
                lambda m=m: len(read_committed(cluster3.bootstrap, outs[m])) >= len(vals),
                300,
                f"the {m}-mode pipe to commit {len(vals)} records",
                every=0.5,
                procs=list(procs.values()),
                stderr=logs,
            )
        warming.set()
        warmup.join(60)
        produce(cluster3.bootstrap, src, vals)
        for m in modes:
            wait_until(
                lambda m=m: len(read_committed(cluster3.bootstrap, outs[m])) == 2 * len(vals) + len(fed),
                60,
                f"the {m}-mode pipe to commit {2 * len(vals) + len(fed)} records",
                every=0.5,
                procs=list(procs.values()),
                stderr=logs,
            )
        leader = lambda: ch.leaders(cluster3, src)[0]  # noqa: E731
        assert leader() == node == ch.coordinator(cluster3, tid)
        moved = ch.Moved(leader, node)
        killed = time.monotonic()
        cluster3.sandbox.kill_node(node)
        # Meanwhile `inspect` waits for the id's coordinator (on the killed node) to move.
        looked = ch.Background(_inspect_waits_for_the_coordinator, cluster3, tid)
        # Records on the new leader until the node is back: the pipes stay busy through the
        # outage however long the restart takes (40 s under load), and are idle when it is back.
        wait_until(lambda: moved.seen is not None, ch.FENCE_WAIT_S, "the leader to move", every=0.3)
        feeding = threading.Event()
        feeder = ch.Background(_feed, cluster3, src, feeding, fed)
        time.sleep(max(0.0, killed + 15 - time.monotonic()))
        cluster3.sandbox.start_node(node)
        feeding.set()
        feeder.join(60)
        # Both run as the node comes back (fed until now). Checked here, not after the waits below:
        # on a loaded machine those can outlast COMEBACK_IDLE_S, and a pipe that then stops idle
        # with exit 0 after the comeback is what the test expects.
        assert all(p.poll() is None for p in procs.values()), f"stopped before the restart: {logs()}"
        moved.wait(ch.FENCE_WAIT_S)
        looked.join(120)
        codes = {m: p.wait(COMEBACK_IDLE_S + 120) for m, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        ch.wait_healthy(cluster3, [src, *outs.values()])
    for m in modes:
        if codes[m] == ExitCode.RETRY and STUCK_ISSUES in (tmp_path / f"{m}.err").read_text():
            # Not this test's failure: librdkafka's hang after a coordinator moved, which kxtx
            # ends with exit 75 by design (kxtx.client.txwriter). An operator's retry loop runs the
            # same command again; it goes on from the committed offsets, still exactly once.
            print(f"{m}: exit 75 ({STUCK_ISSUES}); run again")
            runs[m] = f"{m}-again"
            again = start_pipe(cluster3.bootstrap, tmp_path, runs[m], *args[m])
            try:
                codes[m] = again.wait(COMEBACK_IDLE_S + 240)
            finally:
                if again.poll() is None:
                    again.kill()
                    again.wait()
    assert codes == {m: 0 for m in modes}, logs()
    for m in modes:
        assert json.loads((tmp_path / f"{runs[m]}.out").read_text())["stopped"] == "idle"
        assert Counter(r.value for r in read_committed(cluster3.bootstrap, outs[m])) == Counter(
            [*vals, *vals, *fed]
        )
