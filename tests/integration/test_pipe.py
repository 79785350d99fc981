"""`kxtx pipe` against a real broker and Spark local mode: the output contract, end to end.

The contract cases run the engine in-process on the suite's one SparkSession (the `spark_session`
fixture: a JVM start is most of a run's cost); the CLI cases run it in a subprocess. Outputs are
read read_committed and compared as exact multisets.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter

import pytest

from tests.conftest import json_doc
from tests.integration.kafka_io import multiset, read_committed
from tests.integration.pipe_helpers import UDFS, committed_offsets, pipe_args, produce, run_in_process

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

N = 2000


def test_the_driver_jvm_runs_with_kxtxs_jit_and_collector_options(spark_session):
    """The options reach the JVM itself (its command line), not only Spark's conf."""
    from kxtx.pipe import spark

    jvm = spark_session.sparkContext._jvm
    args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(spark.DRIVER_JVM_OPTIONS) <= set(args), args


def test_local_python_workers_import_the_installed_pyspark(spark_session):
    """kxtx.pipe.fast.daemon on a real local Spark: the Python workers import the pyspark installed
    beside kxtx (compiled once), not SPARK_HOME's pyspark.zip (compiled by every daemon)."""
    import py4j
    import pyspark

    rdd = spark_session.sparkContext.parallelize([0], 1)
    where = rdd.map(lambda _: (__import__("pyspark").__file__, __import__("py4j").__file__)).collect()
    assert where == [(pyspark.__file__, py4j.__file__)]
    assert ".zip" not in where[0][0]


JVM_ARCHIVES = """
import os, sys
from kxtx.pipe import spark
session = spark.start("local[1]")
jvm = session.sparkContext._jvm
pid = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid()
with open(f"/proc/{pid}/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if line.rstrip().endswith(".jsa")})
session.sparkContext.parallelize(range(4), 2).map(lambda x: x + 1).collect()
spark.stop(session)
print(json.dumps(mapped))
"""


def test_the_driver_jvm_writes_its_class_archive_once_then_maps_it(tmp_path):
    """kxtx.pipe.fast.jvmcds with real JVMs: the first start's JVM writes the archive as it exits, the
    next one maps that very file; the JVM writes nothing to kxtx's stdout either time."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("KXTX_SPARK_CDS", None)
    cache = tmp_path / "kxtx" / "spark-cds"
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", "import json\n" + JVM_ARCHIVES], env=env, capture_output=True, timeout=180
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        runs.append(json.loads(done.stdout))  # nothing but the script's one line
    (archive,) = cache.glob("*.jsa")
    assert list(cache.glob("*.tmp")) == []
    assert str(archive) not in runs[0]  # the first JVM wrote it
    assert str(archive) in runs[1], runs  # the second mapped it


@pytest.fixture(params=["driver", "executors"])
def mode(request):
    return request.param


@pytest.fixture
def pipe(kafka, spark_session, mode):
    """Run the engine in-process until idle, in both modes; returns the summary."""
    return lambda inputs, out, udf, **kw: run_in_process(
        kafka, spark_session, inputs, out, udf, mode=mode, **kw
    )


def inputs(kafka, n=N, partitions=2):
    topic = kafka.create_topic(partitions=partitions)
    vals = [b"rec-%d" % i for i in range(n)]
    produce(kafka.bootstrap, topic, vals, [b"k%d" % (i % 50) for i in range(n)])
    return topic, vals


def test_identity_keeps_keys(kafka, pipe):
    src, vals = inputs(kafka)
    out = kafka.create_topic(partitions=2)
    summary = pipe([src], out, "identity", batch_max_records=700)
    got = read_committed(kafka.bootstrap, out)
    assert multiset(got) == Counter(vals)
    assert Counter((m.key, m.value) for m in got) == Counter(
        (b"k%d" % (i % 50), v) for i, v in enumerate(vals)
    )
    assert summary.records_in == summary.records_out == N
    assert summary.transactions >= 3 and summary.stopped == "idle"


def test_keyed_outputs_land_where_a_java_producer_puts_them(kafka, pipe):
    """murmur2, the Java client's partitioner (as `kxtx produce` uses), not librdkafka's CRC32
    default: a Java consumer or Kafka Streams app that co-partitions by key finds them together."""
    from kxtx.produce.fast.murmur import partition

    src, vals = inputs(kafka)
    out = kafka.create_topic(partitions=4)
    pipe([src], out, "identity")
    got = read_committed(kafka.bootstrap, out)
    assert multiset(got) == Counter(vals)
    want = {(b"k%d" % i, partition(b"k%d" % i, 4)) for i in range(50)}
    assert {(m.key, m.partition) for m in got} == want


def test_filter_drops_none(kafka, pipe):
    src, vals = inputs(kafka)
    out = kafka.create_topic()
    summary = pipe([src], out, "keep_even")
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals[::2])
    assert summary.dropped == N // 2


def test_fan_out_list(kafka, pipe):
    src, vals = inputs(kafka, n=500)
    out = kafka.create_topic()
    pipe([src], out, "fan_out")
    got = read_committed(kafka.bootstrap, out)
    expected = Counter()
    for v in vals:
        expected.update([v, v + b"/copy", v + b"/keyed"])
    assert multiset(got) == expected
    keyed = [m for m in got if m.value.endswith(b"/keyed")]
    assert all(m.key == b"k2" and m.headers == [("from", b"fan")] for m in keyed)


def test_json_enrichment(kafka, pipe):
    src = kafka.create_topic(partitions=2)
    docs = [{"id": i, "price": i * 0.5, "qty": i % 7} for i in range(N)]
    produce(kafka.bootstrap, src, [json.dumps(d).encode() for d in docs])
    out = kafka.create_topic()
    pipe([src], out, "enrich", value_format="json")
    got = Counter(
        json.dumps(json.loads(m.value), sort_keys=True) for m in read_committed(kafka.bootstrap, out)
    )
    want = Counter(
        json.dumps({**d, "total": round(d["price"] * d["qty"], 2), "enriched": True}, sort_keys=True)
        for d in docs
    )
    assert got == want


def test_routing_to_two_topics(kafka, pipe):
    src = kafka.create_topic()
    even, odd = kafka.create_topic(), kafka.create_topic()
    docs = [{"n": i, "to": even if i % 2 == 0 else odd} for i in range(N)]
    produce(kafka.bootstrap, src, [json.dumps(d).encode() for d in docs])
    pipe([src], even, "route", value_format="json")
    for topic, rem in ((even, 0), (odd, 1)):
        got = read_committed(kafka.bootstrap, topic)
        assert Counter(json.loads(m.value)["n"] for m in got) == Counter(range(rem, N, 2))
        assert all(m.key == str(json.loads(m.value)["n"]).encode() for m in got)


def test_pandas_udf_object(kafka, pipe):
    src, vals = inputs(kafka)
    out = kafka.create_topic()
    pipe([src], out, "upper_series", value_format="string")
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(v.upper() for v in vals)


def test_dlq_holds_exactly_the_poison_record(kafka, pipe):
    src = kafka.create_topic()
    vals = [b"ok-%d" % i for i in range(300)]
    vals[123] = b"poison"
    produce(kafka.bootstrap, src, vals)
    out, dlq = kafka.create_topic(), kafka.create_topic()
    summary = pipe([src], out, "poison", dlq=dlq)
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(
        v.upper() for v in vals if v != b"poison"
    )
    (dead,) = read_committed(kafka.bootstrap, dlq)
    headers = dict(dead.headers)
    assert dead.value == b"poison"
    assert b"ValueError: cannot handle the poison record" in headers["kxtx.error"]
    assert (headers["kxtx.source.topic"], headers["kxtx.source.offset"]) == (src.encode(), b"123")
    assert summary.dlq == 1


def test_a_udf_failure_summary_agrees_with_its_message(kafka, pipe, mode):
    """Issue 42: the message says the transaction was aborted, so the summary counts it; what the
    run committed before it stopped (earlier batches; in executors mode the other partition's
    task of the same round) is in the summary and in the output topic alike."""
    from kxtx.errors import partial_of
    from kxtx.pipe.core import UdfFailed

    src = kafka.create_topic(partitions=2)
    produce(kafka.bootstrap, src, [b"a-%d" % i for i in range(2000)], partition=0)
    bad = [b"b-%d" % i for i in range(2000)]
    bad[1500] = b"poison"
    produce(kafka.bootstrap, src, bad, partition=1)
    out = kafka.create_topic()
    with pytest.raises(UdfFailed) as caught:
        pipe([src], out, "poison", batch_max_records=1000)
    message, summary = str(caught.value), partial_of(caught.value)
    assert f"failed on {src}[1]@1500" in message and "the transaction was aborted" in message
    assert summary.aborted == 1
    written = read_committed(kafka.bootstrap, out)
    assert summary.records_out == len(written) > 0
    assert summary.transactions >= 1


def test_poison_record_fails_the_batch_cli(kafka, run_kxtx, mode):
    """Default --on-udf-error fail: exit 1 naming the record, nothing visible, offsets unchanged."""
    src = kafka.create_topic()
    vals = [b"ok-%d" % i for i in range(300)]
    vals[200] = b"poison"
    produce(kafka.bootstrap, src, vals)
    out = kafka.create_topic()
    group = f"g-{uuid.uuid4().hex[:8]}"
    r = run_kxtx(
        "pipe",
        *pipe_args(src, out, "poison", group, until_idle=3, batch_max_ms=3000, mode=mode),
        "-o",
        "json",
        expect=1,
    )
    assert f"failed on {src}[0]@200: ValueError: cannot handle the poison record" in r.stderr
    assert "nothing of this batch was written" in r.stderr
    assert read_committed(kafka.bootstrap, out) == []
    assert committed_offsets(kafka.bootstrap, group, src, 1) == [-1001]


def test_cli_identity_summary(kafka, run_kxtx, mode):
    src, vals = inputs(kafka, n=1000)
    out = kafka.create_topic(partitions=2)
    # A consumer property in -X: librdkafka's producers warn that they ignore it (CONFWARN), as a
    # fresh cluster's loading coordinator makes them warn (GETPID): kxtx routes every client's log,
    # the executors' task clients' too, and shows it only with --debug
    args = pipe_args(src, out, until_idle=3, batch_max_ms=500, mode=mode)
    r = run_kxtx("pipe", *args, "-X", "session.timeout.ms=10000", "-o", "json")
    summary = json_doc(r)
    assert (summary["records_in"], summary["records_out"], summary["stopped"]) == (1000, 1000, "idle")
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals)
    assert "Setting default log level" not in r.stderr and "INFO" not in r.stderr
    assert not re.search(r"^%[0-7]\|", r.stderr, re.M), r.stderr  # librdkafka's own log lines


def test_the_line_without_group_runs_and_its_rerun_resumes(kafka, run_kxtx):
    """`kxtx pipe --in A --out B --udf mod:fn` as written: the default group, shown in the summary,
    is the same for the same line, so the second run reads only what arrived since the first."""
    src, vals = inputs(kafka, n=500)
    out = kafka.create_topic()
    line = ["pipe", "--in", src, "--out", out, "--udf", f"{UDFS}:identity", "--until-idle", "3", "-o", "json"]
    first = json_doc(run_kxtx(*line))
    assert first["group"].startswith(f"kxtx-pipe-{out}-")
    assert first["records_in"] == 500
    more = [b"later-%d" % i for i in range(200)]
    produce(kafka.bootstrap, src, more)
    second = json_doc(run_kxtx(*line))
    assert second["group"] == first["group"]
    assert second["records_in"] == 200  # nothing read twice
    assert multiset(read_committed(kafka.bootstrap, out)) == Counter(vals + more)
    assert sum(committed_offsets(kafka.bootstrap, first["group"], src, 2)) == 700


@pytest.mark.parametrize(
    "udf, message",
    [
        ("no/such/file.py:f", "file 'no/such/file.py' not found"),
        ("kxtx_no_such_module:f", "no module named 'kxtx_no_such_module'"),
        (f"{UDFS}:missing", "has no attribute 'missing'"),
        (f"{UDFS}:two_args", "two_args(a, b) cannot be called with one argument"),
    ],
)
def test_bad_udf_fails_before_consuming(kafka, run_kxtx, udf, message, mode):
    src, _ = inputs(kafka, n=10, partitions=1)
    out = kafka.create_topic()
    group = f"g-{uuid.uuid4().hex[:8]}"
    r = run_kxtx("pipe", *pipe_args(src, out, udf, group, until_idle=2, mode=mode), timeout=120, expect=2)
    assert message in r.stderr
    assert committed_offsets(kafka.bootstrap, group, src, 1) == [-1001]
    assert read_committed(kafka.bootstrap, out) == []
