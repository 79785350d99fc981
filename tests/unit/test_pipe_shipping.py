"""What `kxtx pipe` ships to executors on a cluster needs no kxtx there (docs/pipe.md: "What executors
need"): the tasks of both modes are pickled as on a cluster, then unpickled and run by a Python in
which `import kxtx` fails. No Spark job and no broker: the pickles are what Spark would send."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

pytest.importorskip("pyspark")
from tests.integration.spark_cluster import NO_KXTX

PICKLE = textwrap.dedent("""
    import sys
    from pyspark import cloudpickle
    from kxtx.pipe import spark
    from kxtx.pipe.worker import task, transform

    for mod in spark.worker_modules() + [task]:
        cloudpickle.register_pickle_by_value(mod)

    def udf(doc):  # in __main__: pickled by value, as a UDF from a file is
        if doc["n"] == 3:
            return {1, 2}  # not JSON-serialisable: the contract's error message (kxtx.wording)
        return {**doc, "seen": True}

    mapper = transform.make_mapper(udf, "python", "json", False)
    job = task.Job(conf={"bootstrap.servers": "127.0.0.1:9"}, group="g", pipe_id="p", out="o",
                   dlq=None, start="earliest", record_mode=False, mapper=mapper, chunk=2,
                   udf_name="udf", timeout=5)
    with open(sys.argv[1], "wb") as f:
        cloudpickle.dump((transform.make_ipc_task(mapper), task.make_plan_task(job), job), f)
""")

# The test cluster's executors get the same block (their sitecustomize).
RUN = NO_KXTX + textwrap.dedent("""
    import json, pickle, sys

    import pyarrow as pa

    with open(sys.argv[1], "rb") as f:
        driver_task, executor_task, job = pickle.load(f)
    schema = pa.schema([("idx", pa.int64()), ("value", pa.binary())])
    values = [json.dumps({"n": i}).encode() for i in range(5)]
    batch = pa.record_batch([pa.array(range(5), pa.int64()), pa.array(values)], schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_batch(batch)
    (answer,) = driver_task(iter([sink.getvalue().to_pybytes()]))
    rows = pa.ipc.open_stream(answer).read_all().to_pydict()
    out = list(job.mapper(iter([batch])))
    print(json.dumps({"values": [v and v.decode() for v in rows["value"]],
                      "errors": rows["error"], "mapper_rows": sum(b.num_rows for b in out),
                      "executor_task": callable(executor_task),
                      "kxtx_loaded": sorted(m for m in sys.modules if m.startswith("kxtx"))}))
""")


def test_the_shipped_tasks_unpickle_and_run_where_kxtx_is_not_installed(tmp_path):
    pickled = tmp_path / "tasks.pkl"
    subprocess.run([sys.executable, "-c", PICKLE, str(pickled)], cwd=ROOT, check=True)
    # Run from elsewhere, so the worktree is not on sys.path either.
    got = subprocess.run(
        [sys.executable, "-c", RUN, str(pickled)], cwd=tmp_path, capture_output=True, text=True
    )
    assert got.returncode == 0, got.stderr[-3000:]
    import json

    result = json.loads(got.stdout)
    assert result["kxtx_loaded"] == []
    assert result["executor_task"] is True
    assert result["mapper_rows"] == 5
    assert result["values"] == [
        json.dumps({"n": i, "seen": True}, separators=(",", ":")) for i in range(3)
    ] + [None] + [json.dumps({"n": 4, "seen": True}, separators=(",", ":"))]
    assert result["errors"][3].startswith("the UDF result: cannot encode a set as a value")
    assert result["errors"][:3] == [None] * 3


REGISTRY_PICKLE = textwrap.dedent("""
    import sys
    from pyspark import cloudpickle
    from kxtx.client.registry import RegistryConfig
    from kxtx.pipe import spark
    from kxtx.pipe.worker import transform
    from kxtx.schemas import framing
    from kxtx.schemas.serde import Encoder, Reader, _Known

    for mod in spark.worker_modules():
        cloudpickle.register_pickle_by_value(mod)

    def udf(order):
        return {"id": order["id"], "twice": order["id"] * 2}

    schema = '{"type":"record","name":"O","fields":[{"name":"id","type":"long"}]}'
    out = '{"type":"record","name":"T","fields":[{"name":"id","type":"long"},{"name":"twice","type":"long"}]}'
    # what the driver knows of the input's schema ids, and no registry reachable (port 9)
    reader = Reader(RegistryConfig("http://127.0.0.1:9", (), 1.0), "AVRO", {7: _Known("AVRO", schema, {})})
    encoder = Encoder(8, "AVRO", out, {}, framing.header(8))
    mapper = transform.make_mapper(udf, "python", "avro", False, reader, encoder)
    with open(sys.argv[1], "wb") as f:
        cloudpickle.dump(mapper, f)
""")

REGISTRY_RUN = NO_KXTX + textwrap.dedent("""
    import json, pickle, sys

    import fastavro, io

    with open(sys.argv[1], "rb") as f:
        mapper = pickle.load(f)
    def avro(obj, schema):
        b = io.BytesIO()
        fastavro.schemaless_writer(b, fastavro.parse_schema(json.loads(schema)), obj)
        return b.getvalue()
    schema = '{"type":"record","name":"O","fields":[{"name":"id","type":"long"}]}'
    values = [b"\\x00\\x00\\x00\\x00\\x07" + avro({"id": i}, schema) for i in range(3)]
    out = mapper.map_values(values, 10)
    print(json.dumps({"out": [v.hex() for v in out],
                      "kxtx_loaded": sorted(m for m in sys.modules if m.split(".")[0] == "kxtx")}))
""")


def test_a_schema_registry_reader_and_encoder_ship_where_kxtx_is_not_installed(tmp_path):
    pytest.importorskip("fastavro")
    pickled = tmp_path / "mapper.pkl"
    subprocess.run([sys.executable, "-c", REGISTRY_PICKLE, str(pickled)], cwd=ROOT, check=True)
    got = subprocess.run(
        [sys.executable, "-c", REGISTRY_RUN, str(pickled)], cwd=tmp_path, capture_output=True, text=True
    )
    assert got.returncode == 0, got.stderr[-3000:]
    import json

    result = json.loads(got.stdout)
    assert result["kxtx_loaded"] == []
    # framed with schema id 8, then id and twice as Avro longs (zig-zag varints)
    assert result["out"] == [bytes([0, 0, 0, 0, 8, 2 * i, 4 * i]).hex() for i in range(3)]
