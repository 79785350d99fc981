"""Schema Registry serdes (issue 45): kxtx against hand-written confluent-kafka loops, and kxtx's
Avro pipe against its JSON pipe. Not a timed test: run it by hand.

    python bench/bench_registry.py [--records 1000000] [--rounds 2] [--cases produce,pipe,quix]
                                   [--quix-python PATH]

Cases:
  produce  1M JSON lines (~80-byte documents) to Avro, one partition: `kxtx produce FILE
           --value-schema in.avsc` against bench/registry_hand.py's loop (json.loads ->
           AvroSerializer -> produce, 50,000 records per transaction, as kxtx's default)
  pipe     1M records, 2 partitions, the same UDF (bench/registry_udfs.py: one field added):
           `kxtx pipe --value-format avro --out-schema out.avsc` (Avro in and out), the same pipe on
           the same documents as JSON (`--value-format json`), and registry_hand.py's loop (consume
           read_committed -> AvroDeserializer -> UDF -> AvroSerializer -> produce, offsets in the
           transaction)
  quix     the pipe case's Avro input and UDF, `kxtx pipe --value-format avro --out-schema out.avsc`
           against a Quix Streams application (bench/registry_quix.py: processing_guarantee
           "exactly-once", Quix's AvroDeserializer and AvroSerializer through the registry), each
           timed from launch until it exits with all RECORDS committed; the ratio is Quix's time
           over kxtx's. Quix Streams pins an older confluent-kafka than kxtx's, so it runs with
           the interpreter of a venv of its own: `--quix-python` (default $KXTX_BENCH_QUIX_PYTHON,
           else this one); `python -m venv /tmp/quix && /tmp/quix/bin/pip install quixstreams`

Every run gets a fresh output topic; runs are interleaved round by round after a warm-up round;
wall time, the process tree's CPU seconds and peak RSS come from wait4 (for a pipe that undercounts:
Spark's Python workers are not children it waits for), `machine_cpu_s` is the whole machine's busy
CPU over the run from /proc/stat (the broker's and the registry's work included, for every tool
alike: the figure to compare pipes by), and each run's committed
output count is read back (`kxtx topic count`) and must equal the input. A sandbox broker and an
AxonOps Schema Registry (tests/registry.py) are started here. Prints a JSON line per run and the
medians and ratios per case.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_kcat import committed, kxtx, timed  # noqa: E402

IN_SCHEMA = {
    "type": "record",
    "name": "Click",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "user", "type": "string"},
        {"name": "event", "type": "string"},
        {"name": "amount", "type": "long"},
    ],
}
OUT_SCHEMA = {
    **IN_SCHEMA,
    "name": "Cents",
    "fields": [*IN_SCHEMA["fields"], {"name": "cents", "type": "long"}],
}


def create_topic(bootstrap: str, partitions: int, prefix: str = "reg-bench") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    subprocess.run(
        kxtx("topic", "create", name, "-p", str(partitions), "-b", bootstrap), check=True, capture_output=True
    )
    return name


def register(url: str, subject: str, schema: dict) -> None:
    import urllib.request

    body = json.dumps({"schema": json.dumps(schema)}).encode()
    req = urllib.request.Request(
        f"{url}/subjects/{subject}/versions",
        data=body,
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        method="POST",
    )
    urllib.request.urlopen(req, timeout=10).read()


KEYS = ("wall_s", "cpu_s", "machine_cpu_s", "rss_mb")


def busy_s() -> float:
    """The machine's busy CPU seconds so far (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:3]) + sum(fields[5:8])) / os.sysconf("SC_CLK_TCK")


def medians(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in KEYS}


def interleaved(label: str, makers: dict, rounds: int, bootstrap: str, expect: int) -> dict[str, dict]:
    """makers: name -> function(out_topic) -> argv. Round 0 is a warm-up."""
    runs: dict[str, list[dict]] = {name: [] for name in makers}
    names = list(makers)
    for rnd in range(rounds + 1):
        for name in names if rnd % 2 == 0 else names[::-1]:
            out = create_topic(bootstrap, 1, "reg-bench-out")
            argv = makers[name](out)
            before = busy_s()
            r = timed(argv)
            r["machine_cpu_s"] = round(busy_s() - before, 2)
            got = committed(bootstrap, out)
            if got != expect:
                raise SystemExit(f"bench_registry: {label} {name}: {got} committed, {expect} expected")
            r.update(case=label, tool=name, round=rnd, committed=got)
            print(json.dumps(r), flush=True)
            if rnd:
                runs[name].append(r)
    return {name: medians(rs) for name, rs in runs.items()}


def ratio(a: dict, b: dict) -> dict:
    return {k: round(a[k] / b[k], 2) for k in KEYS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cases", default="produce,pipe", help="produce, pipe, quix (comma-separated)")
    ap.add_argument(
        "--quix-python",
        default=os.environ.get("KXTX_BENCH_QUIX_PYTHON", sys.executable),
        help="a python with quixstreams installed (the quix case)",
    )
    args = ap.parse_args()
    if "quix" in args.cases:
        found = subprocess.run([args.quix_python, "-c", "import quixstreams"], capture_output=True)
        if found.returncode != 0:
            raise SystemExit(
                f"bench_registry: {args.quix_python} cannot import quixstreams (the quix case): "
                "python -m venv /tmp/quix && /tmp/quix/bin/pip install quixstreams, then --quix-python /tmp/quix/bin/python"
            )
    from kxtx.sandbox import Sandbox
    from tests.registry import Registry

    n = args.records
    sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-registry-"))
    bootstrap = sandbox.start(port=0).bootstrap
    registry = Registry()
    url = registry.url
    work = Path(tempfile.mkdtemp(prefix="kxtx-bench-registry-in-"))
    env = {**os.environ, "KXTX_SCHEMA_REGISTRY_URL": url}
    try:
        jsonl = work / "in.jsonl"
        with open(jsonl, "w") as f:
            for i in range(n):
                f.write(
                    json.dumps({"id": f"o{i % 10007}", "user": f"u{i % 997}", "event": "click", "amount": i})
                    + "\n"
                )
        in_avsc, out_avsc = work / "in.avsc", work / "out.avsc"
        in_avsc.write_text(json.dumps(IN_SCHEMA))
        out_avsc.write_text(json.dumps(OUT_SCHEMA))
        print(json.dumps({"records": n, "cpus": os.cpu_count(), "registry": "axonops"}), flush=True)
        hand = [sys.executable, str(ROOT / "bench" / "registry_hand.py")]

        if "produce" in args.cases:

            def kxtx_produce(out: str) -> list[str]:
                register(url, f"{out}-value", IN_SCHEMA)
                return kxtx(
                    "produce",
                    str(jsonl),
                    "-t",
                    out,
                    "-b",
                    bootstrap,
                    "--value-schema",
                    str(in_avsc),
                    "--schema-registry",
                    url,
                )

            def hand_produce(out: str) -> list[str]:
                register(url, f"{out}-value", IN_SCHEMA)
                return [*hand, "produce", str(jsonl), out, url, str(in_avsc), bootstrap]

            med = interleaved(
                "produce", {"kxtx": kxtx_produce, "hand": hand_produce}, args.rounds, bootstrap, n
            )
            print(
                json.dumps({"case": "produce", "median": med, "kxtx/hand": ratio(med["kxtx"], med["hand"])}),
                flush=True,
            )

        if "pipe" in args.cases or "quix" in args.cases:
            avro_in, json_in = (
                create_topic(bootstrap, 2, "reg-bench-avro"),
                create_topic(bootstrap, 2, "reg-bench-json"),
            )
            subprocess.run(
                kxtx(
                    "produce",
                    str(jsonl),
                    "-t",
                    avro_in,
                    "-b",
                    bootstrap,
                    "-k",
                    "id",
                    "--value-schema",
                    str(in_avsc),
                    "--register",
                ),
                check=True,
                capture_output=True,
                env=env,
            )
            if "pipe" in args.cases:
                subprocess.run(
                    kxtx("produce", str(jsonl), "-t", json_in, "-b", bootstrap, "-k", "id"),
                    check=True,
                    capture_output=True,
                )
            udf = str(ROOT / "bench" / "registry_udfs.py") + ":enrich"
            common = ["-b", bootstrap, "--udf", udf, "--max-records", str(n), "--from", "earliest"]

            def kxtx_avro(out: str) -> list[str]:
                register(url, f"{out}-value", OUT_SCHEMA)
                return kxtx(
                    "pipe",
                    "--in",
                    avro_in,
                    "--out",
                    out,
                    *common,
                    "--value-format",
                    "avro",
                    "--out-schema",
                    str(out_avsc),
                    "--schema-registry",
                    url,
                    "--group",
                    f"g-{uuid.uuid4().hex[:8]}",
                )

            def kxtx_json(out: str) -> list[str]:
                return kxtx(
                    "pipe",
                    "--in",
                    json_in,
                    "--out",
                    out,
                    *common,
                    "--value-format",
                    "json",
                    "--group",
                    f"g-{uuid.uuid4().hex[:8]}",
                )

            def hand_pipe(out: str) -> list[str]:
                register(url, f"{out}-value", OUT_SCHEMA)
                return [*hand, "pipe", avro_in, out, url, str(out_avsc), bootstrap, str(n)]

            def quix_pipe(out: str) -> list[str]:
                register(url, f"{out}-value", OUT_SCHEMA)
                quix = str(ROOT / "bench" / "registry_quix.py")
                group = f"g-{uuid.uuid4().hex[:8]}"
                return [args.quix_python, quix, avro_in, out, url, str(out_avsc), bootstrap, str(n), group]

            if "quix" in args.cases:
                med = interleaved(
                    "quix", {"kxtx-avro": kxtx_avro, "quix": quix_pipe}, args.rounds, bootstrap, n
                )
                print(
                    json.dumps(
                        {
                            "case": "quix",
                            "median": med,
                            "quix/kxtx-avro": ratio(med["quix"], med["kxtx-avro"]),
                        }
                    ),
                    flush=True,
                )
            if "pipe" not in args.cases:
                return

            med = interleaved(
                "pipe",
                {"kxtx-avro": kxtx_avro, "kxtx-json": kxtx_json, "hand": hand_pipe},
                args.rounds,
                bootstrap,
                n,
            )
            print(
                json.dumps(
                    {
                        "case": "pipe",
                        "median": med,
                        "kxtx-avro/hand": ratio(med["kxtx-avro"], med["hand"]),
                        "kxtx-avro/kxtx-json": ratio(med["kxtx-avro"], med["kxtx-json"]),
                    }
                ),
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        registry.stop()
        sandbox.stop()


if __name__ == "__main__":
    main()
