"""kxtx/pipe/worker/arrays.py: the same arrays `pa.array` builds, without pyarrow's import of pandas."""

import random
import subprocess
import sys

import pytest

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")

from kxtx.pipe.worker import arrays  # noqa: E402

RNG = random.Random(28)


@pytest.mark.parametrize(
    "values",
    [
        [],
        [b""],
        [b"a"],
        [b"", b"", b""],
        [b"\x00\xff", b"x" * 1000, b"", b'{"id": 1}'],
        [bytes(RNG.randrange(256) for _ in range(RNG.randrange(40))) for _ in range(5000)],
        [None],
        [b"a", None, b"c"],
    ],
    ids=["empty", "one-empty", "one", "all-empty", "mixed", "5000-random", "null", "with-null"],
)
def test_binary_is_what_pa_array_builds(values):
    got = arrays.binary(values)
    want = pa.array(values, pa.binary())
    assert got.type == pa.binary() and got.equals(want)
    assert got.to_pylist() == values and got.null_count == values.count(None)


def test_binary_past_32_bit_offsets_goes_to_pa_array(monkeypatch):
    calls = []
    real = pa.array
    monkeypatch.setattr(pa, "array", lambda *a, **k: calls.append(a) or real(*a, **k))
    monkeypatch.setattr(arrays, "MAX_BINARY_BYTES", 10)
    assert arrays.binary([b"12345", b"12345"]).to_pylist() == [b"12345", b"12345"] and calls == []
    assert arrays.binary([b"12345", b"123456"]).to_pylist() == [b"12345", b"123456"] and len(calls) == 1


@pytest.mark.parametrize("n", [0, 1, 5, 10_000])
def test_indices(n):
    got = arrays.indices(n)
    assert got.type == pa.int64() and got.equals(pa.array(np.arange(n, dtype=np.int64)))


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000])
def test_all_false(n):
    got = arrays.all_false(n)
    assert got.type == pa.bool_() and got.equals(pa.array([False] * n, pa.bool_()))
    assert got.null_count == 0


# A task's common path in a fresh interpreter: input table, a plain Python UDF over JSON values,
# the records to produce. pandas must not be imported (pyarrow's pa.array would import it).
PLAIN_PATH = """
import json, sys
from kxtx.pipe.worker import transform as tf
from kxtx.pipe.worker.outputs import to_records
import pyarrow as pa

class Msg:
    def __init__(self, i): self.i = i
    def value(self): return json.dumps({"id": self.i, "pad": "p" * 3}).encode()
    def key(self): return None
    def headers(self): return None

def enrich(doc):
    doc["seen"] = len(doc["pad"])
    return doc

msgs = [Msg(i) for i in range(100)]
table = tf.input_table(msgs, False)
mapper = tf.make_mapper(enrich, "python", "json", False)
out = pa.Table.from_batches(list(mapper(iter(table.to_batches(10)))), schema=tf.output_schema())
records = to_records(msgs, out, "out", None, "enrich").records
assert records[7] == ("out", None, b'{"id":7,"pad":"ppp","seen":3}', None), records[7]
assert mapper.map_values([m.value() for m in msgs], 10) == [r[2] for r in records]  # executors mode
print("pandas" in sys.modules)
"""


def test_the_plain_path_does_not_import_pandas():
    run = subprocess.run([sys.executable, "-c", PLAIN_PATH], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
