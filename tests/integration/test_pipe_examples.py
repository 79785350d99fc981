"""The example in `kxtx pipe --help` runs as written (with fresh topic and group names), against
examples/enrich.py; a UDF written for JSON (docs/pipe.md's) that is given raw bytes fails naming the fix."""

from __future__ import annotations

import ast
import json
import re
import shlex
import uuid

import pytest

from tests.examples import python_blocks
from tests.integration.kafka_io import read_committed
from tests.integration.pipe_helpers import produce

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def help_example(run_kxtx) -> list[str]:
    r = run_kxtx("pipe", "--help", env={"COLUMNS": "250", "TERM": "dumb"}, expect=0)
    text = re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", r.stdout))
    found = re.search(r"Example: (kxtx pipe .*?)(?: Options|$)", text)
    assert found, r.stdout
    argv = shlex.split(found.group(1))
    assert argv[:2] == ["kxtx", "pipe"], argv
    return argv[1:]  # run_kxtx adds the program


def orders(n: int = 500) -> list[dict]:
    return [
        {"order": {"id": i}, "amount": i / 100, "status": "cancelled" if i % 10 == 0 else "paid"}
        for i in range(n)
    ]


def renamed(argv: list[str], names: dict[str, str]) -> list[str]:
    return [names.get(a, a) for a in argv]


def test_the_help_example_runs(kafka, run_kxtx):
    argv = help_example(run_kxtx)
    src, out = kafka.create_topic(partitions=2), kafka.create_topic(partitions=2)
    docs = orders()
    produce(kafka.bootstrap, src, [json.dumps(d).encode() for d in docs])
    names = {"orders": src, "orders-enriched": out, "enricher": f"g-{uuid.uuid4().hex[:8]}"}
    r = run_kxtx(
        *renamed(argv, names),
        "--until-idle",
        "3",
        "--batch-max-ms",
        "500",
        "-o",
        "json",
        timeout=300,
        expect=0,
    )
    got = sorted(
        (json.loads(m.value) for m in read_committed(kafka.bootstrap, out)), key=lambda d: d["order"]["id"]
    )
    want = [{**d, "total_cents": round(d["amount"] * 100)} for d in docs if d["status"] != "cancelled"]
    assert got == want
    assert json.loads(r.stdout)["records_in"] == len(docs)
    # The JVM's start-up notice (Spark adds jdk.incubator.vector) is not passed on.
    assert "WARNING: Using incubator modules" not in r.stderr


def docs_udf(name: str, tmp_path) -> str:
    """`--udf` for one function of the UDF examples (docs/pipe.md's python block), in a file of its own
    (the block's pandas_udf would need Spark to import)."""
    (block,) = python_blocks()
    fn = next(n for n in ast.parse(block).body if isinstance(n, ast.FunctionDef) and n.name == name)
    path = tmp_path / "docs_udf.py"
    path.write_text(f"{ast.get_source_segment(block, fn)}\n")
    return f"{path}:{name}"


def test_json_udf_on_raw_bytes_fails_naming_value_format(kafka, run_kxtx, tmp_path):
    """The example without its --value-format, with docs/pipe.md's filter (`order["amount"]`): the UDF
    gets bytes, and Python's "byte indices must be integers" comes with the fix."""
    argv = help_example(run_kxtx)
    i = argv.index("--value-format")
    del argv[i : i + 2]
    udf = docs_udf("keep_big", tmp_path)
    argv[argv.index("--udf") + 1] = udf
    src, out = kafka.create_topic(), kafka.create_topic()
    produce(kafka.bootstrap, src, [json.dumps(d).encode() for d in orders(20)])
    names = {"orders": src, "orders-enriched": out, "enricher": f"g-{uuid.uuid4().hex[:8]}"}
    r = run_kxtx(*renamed(argv, names), "--until-idle", "3", "--batch-max-ms", "500", timeout=300, expect=1)
    assert (
        f"UDF {udf} failed on {src}[0]@0: TypeError: byte indices must be integers or slices, not str "
        "(the UDF got the value as bytes: --value-format json or string decodes it)"
    ) in r.stderr
    assert read_committed(kafka.bootstrap, out) == []
