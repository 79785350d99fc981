"""`kxtx pipe --mode executors` on a real standalone Spark cluster (master + 2 one-core workers on
loopback, see spark_cluster.py): results, worker and driver crashes, exactly once.

Every run is the CLI in a subprocess with --master spark://...; outputs are read read_committed and
compared with the inputs as exact multisets.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.kafka_io import HighWatermarks, multiset, read_committed, wait_until
from tests.integration.pipe_helpers import FAST_GROUP, pipe_args, produce, start_pipe
from tests.integration.spark_cluster import SparkCluster

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

# Executors lost while their JVM is gone: noticed in seconds, not Spark's default 2 minutes.
FAST_SPARK = [
    "--spark-conf",
    "spark.network.timeout=20s",
    "--spark-conf",
    "spark.executor.heartbeatInterval=2s",
    "--spark-conf",
    "spark.network.timeoutInterval=5s",
    # An executor here lives for one test: C1 only, as kxtx runs the driver JVM (C2's compiler
    # threads cost more CPU than they save in a short life; the daemons likewise, spark_cluster).
    "--spark-conf",
    "spark.executor.extraJavaOptions=-XX:TieredStopAtLevel=1",
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield c.start(workers=2)
    finally:
        c.stop()


#: The executors reach the driver on the loopback address.
SPARK_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}


def on(cluster) -> tuple[str, ...]:
    """The arguments of every run here: the standalone cluster, fast Spark and group settings."""
    return ("--master", cluster.master_url, *FAST_SPARK, *FAST_GROUP)


def finish(proc: subprocess.Popen, tmp_path, name: str, timeout: float = 300) -> dict:
    try:
        rc = proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = (tmp_path / f"{name}.err").read_text()
    assert rc == 0, err
    return json.loads((tmp_path / f"{name}.out").read_text())


def exactly_once(kafka, out: str, expected: Counter) -> None:
    counts = multiset(read_committed(kafka.bootstrap, out, timeout=120))
    dupes = {v: c for v, c in counts.items() if c > 1}
    assert not dupes, f"{len(dupes)} duplicated outputs, e.g. {list(dupes.items())[:3]}"
    assert counts == expected, f"{len(set(expected) - set(counts))} inputs without output"


def test_identity_and_json_enrichment_on_the_cluster(kafka, cluster, tmp_path):
    src, src_json = kafka.create_topic(partitions=4), kafka.create_topic(partitions=4)
    out, out_json = kafka.create_topic(partitions=2), kafka.create_topic(partitions=2)
    vals = [b"c-%d" % i for i in range(8000)]
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 13) for i in range(len(vals))])
    docs = [{"id": i, "price": i * 0.25, "qty": i % 5} for i in range(4000)]
    produce(kafka.bootstrap, src_json, [json.dumps(d).encode() for d in docs])
    # A secret in the connection settings reaches the executors (the tasks connect with it) but
    # not Spark's logs, event log or UI data.
    secret = f"kxtx-secret-{uuid.uuid4().hex}"
    events = tmp_path / "events"
    events.mkdir()
    p = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "identity",
        *on(cluster),
        *pipe_args(src, out, batch_max_records=1500, until_idle=3),
        "-X",
        f"sasl.password={secret}",
        "--spark-ui",
        "--spark-conf",
        "spark.eventLog.enabled=true",
        "--spark-conf",
        "spark.eventLog.compress=false",
        "--spark-conf",
        f"spark.eventLog.dir=file://{events}",
        env=SPARK_ENV,
    )
    summary = finish(p, tmp_path, "identity")
    logs = cluster.logs_text() + "".join(
        f.read_text(errors="replace") for f in events.rglob("*") if f.is_file()
    )
    assert "spark.eventLog.dir" in logs  # the event log was written and read
    assert secret not in logs + (tmp_path / "identity.err").read_text()
    assert (summary["records_in"], summary["records_out"]) == (8000, 8000)
    assert summary["transactions"] >= 6  # 8000 records, at most 1500 per partition and round
    got = read_committed(kafka.bootstrap, out)
    assert Counter((m.key, m.value) for m in got) == Counter(
        (b"k%d" % (i % 13), v) for i, v in enumerate(vals)
    )
    p = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "enrich",
        *on(cluster),
        *pipe_args(src_json, out_json, "enrich_without_kxtx", value_format="json", until_idle=3),
        env=SPARK_ENV,
    )
    finish(p, tmp_path, "enrich")
    got = Counter(
        json.dumps(json.loads(m.value), sort_keys=True) for m in read_committed(kafka.bootstrap, out_json)
    )
    assert got == Counter(
        json.dumps({**d, "total": round(d["price"] * d["qty"], 2), "enriched": True}, sort_keys=True)
        for d in docs
    )


def slow_input(kafka, n: int, prefix: bytes):
    src, out = kafka.create_topic(partitions=4), kafka.create_topic(partitions=2)
    vals = [prefix + b"-%d" % i for i in range(n)]
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 97) for i in range(n)])
    # ~0.5 ms per record: a round of 4 x 2000 records takes seconds, so kills land mid-round.
    return src, out, vals, pipe_args(src, out, "slow_identity", batch_max_records=2000)


def test_sigkill_python_workers_and_an_executor_mid_round_exactly_once(kafka, cluster, tmp_path):
    src, out, vals, args = slow_input(kafka, 40_000, b"w")
    growth = HighWatermarks(kafka.bootstrap, out, 2)
    rng = random.Random(int(os.environ.get("KXTX_TEST_SEED", "12")))
    proc = start_pipe(
        kafka.bootstrap, tmp_path, "kills", *on(cluster), *args, "--until-idle", "5", env=SPARK_ENV
    )
    killed = []
    try:
        for i in range(4):
            assert growth.wait_growth(proc, 240), (tmp_path / "kills.err").read_text()
            time.sleep(rng.uniform(0.2, 2.5))
            # Three times a Python worker (the task dies, Spark retries it), once an executor
            # JVM with its workers (the standalone worker starts a new executor).
            victims = cluster.executors() if i == 2 else cluster.python_workers()
            if victims:
                victim = rng.choice(victims)
                os.kill(victim, signal.SIGKILL)
                killed.append(("executor" if i == 2 else "python", victim))
        summary = finish(proc, tmp_path, "kills", timeout=400)
    finally:
        growth.close()
    assert len(killed) >= 3, killed
    assert summary["records_in"] >= len(vals)
    exactly_once(kafka, out, Counter(vals))


def test_sigkill_the_driver_then_restart_exactly_once(kafka, cluster, tmp_path):
    src, out, vals, args = slow_input(kafka, 30_000, b"d")
    growth = HighWatermarks(kafka.bootstrap, out, 2)
    rng = random.Random(int(os.environ.get("KXTX_TEST_SEED", "7")))
    try:
        for i in range(2):
            proc = start_pipe(
                kafka.bootstrap, tmp_path, f"driver{i}", *on(cluster), *args, new_session=True, env=SPARK_ENV
            )
            try:
                assert growth.wait_growth(proc, 240), (tmp_path / f"driver{i}.err").read_text()
                time.sleep(rng.uniform(0.0, 2.0))
            finally:
                # The driver machine dies: kxtx and its Spark JVM at once; running tasks go on
                # until their executors notice, and are fenced by the next driver's tasks.
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
    finally:
        growth.close()
    proc = start_pipe(
        kafka.bootstrap, tmp_path, "final", *on(cluster), *args, "--until-idle", "5", env=SPARK_ENV
    )
    finish(proc, tmp_path, "final", timeout=400)
    exactly_once(kafka, out, Counter(vals))


def test_poison_record_with_and_without_dlq_on_the_cluster(kafka, cluster, tmp_path):
    src = kafka.create_topic(partitions=4)
    vals = [b"ok-%d" % i for i in range(2000)]
    vals[777] = b"poison"
    produce(kafka.bootstrap, src, vals)
    out, dlq = kafka.create_topic(), kafka.create_topic()
    common = pipe_args(src, out, "poison", until_idle=3)  # the same group in both runs
    p = start_pipe(kafka.bootstrap, tmp_path, "fail", *on(cluster), *common, env=SPARK_ENV)
    assert p.wait(300) == 1
    err = (tmp_path / "fail.err").read_text()
    assert "ValueError: cannot handle the poison record" in err and "nothing of this batch" in err
    p = start_pipe(
        kafka.bootstrap,
        tmp_path,
        "dlq",
        *on(cluster),
        *common,
        "--on-udf-error",
        f"dlq:{dlq}",
        env=SPARK_ENV,
    )
    summary = finish(p, tmp_path, "dlq")
    assert summary["dlq"] == 1
    exactly_once(kafka, out, Counter(v.upper() for v in vals if v != b"poison"))
    (dead,) = read_committed(kafka.bootstrap, dlq)
    assert dead.value == b"poison"


# Spark speculation (docs/pipe.md: safe in executors mode). The losing attempt's Python worker would be
# killed by its daemon 2 s after the copy won (spark.python.task.killTimeout); the test keeps it
# alive, as for an executor that never gets or acts on that kill, so the zombie really comes back.
SPECULATION = [
    "--spark-conf",
    "spark.speculation=true",
    "--spark-conf",
    "spark.speculation.interval=100ms",
    "--spark-conf",
    "spark.speculation.efficiency.enabled=false",
    "--spark-conf",
    "spark.python.task.killTimeout=3600s",
]


def process_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_frozen_python_worker_is_overtaken_and_its_zombie_fenced(kafka, cluster, tmp_path):
    """A Python worker freezes (SIGSTOP) mid-UDF, after its task read the partition's start
    offset. Spark's speculative copy of the task runs on the other worker: its producer (same
    transactional id) fences the frozen one, and the round ends without it. Thawed after the
    whole input is committed, the zombie runs on into the fence: every output exactly once."""
    src, out = kafka.create_topic(partitions=4), kafka.create_topic(partitions=2)
    pidfile = tmp_path / "zombie.pid"
    vals = [b"s-%d" % i for i in range(8000)]
    vals[2500] = b"freeze|" + str(pidfile).encode()
    produce(kafka.bootstrap, src, vals, [b"k%d" % (i % 97) for i in range(len(vals))])
    name = "zombie"
    proc = start_pipe(
        kafka.bootstrap,
        tmp_path,
        name,
        *on(cluster),
        "--mode",
        "executors",
        *pipe_args(src, out, "freezing_identity", batch_max_records=1000),
        *SPECULATION,
        env=SPARK_ENV,
    )
    zombie = None
    err = (tmp_path / f"{name}.err").read_text
    try:
        wait_until(pidfile.exists, 240, "frozen worker", procs=[proc], stderr=err)
        zombie = int(pidfile.read_text())
        wait_until(lambda: process_state(zombie) == "T", 30, "stopped state", procs=[proc], stderr=err)
        # Past the round: all input, the frozen task's partition included, is committed by others.
        wait_until(
            lambda: len(read_committed(kafka.bootstrap, out, 30)) >= len(vals),
            240,
            "complete output",
            procs=[proc],
            stderr=err,
        )
        assert process_state(zombie) == "T"
        os.kill(zombie, signal.SIGCONT)
        wait_until(Path(f"{pidfile}.thawed").exists, 60, "thawed zombie", procs=[proc], stderr=err)
        # The zombie runs on: its writes are refused, and the task says so in its executor's log.
        fenced = re.compile(r"kxtx pipe: \S+ \(transactional id \S+\): fenced, \S*FENCED")
        wait_until(
            lambda: fenced.search(cluster.logs_text()), 120, "the zombie's fence", procs=[proc], stderr=err
        )
    finally:
        if zombie is not None and process_state(zombie) == "T":
            os.kill(zombie, signal.SIGCONT)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(120)
    assert rc == 128 + signal.SIGTERM, (tmp_path / f"{name}.err").read_text()
    exactly_once(kafka, out, Counter(vals))
