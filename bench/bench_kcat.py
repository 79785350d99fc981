"""`kxtx produce` against kcat (issue 47). Not a timed test: run it by hand.

    python bench/bench_kcat.py [--records 1000000] [--rounds 3] [--cases plain,...] [--bootstrap HOST:PORT]

kcat is the tool people already load files with; with `-X transactional.id=...` it writes a whole
file in one transaction. Both tools get the same records (~90-byte JSON documents; for kcat's keyed
cases the same documents behind a `key|` prefix, its `-K '|'`), one fresh topic per run, runs of the
two interleaved round by round after a warm-up run of each. For every run: wall time, the process's
CPU seconds and peak RSS (wait4: the process and what it waited for, so `zcat | kcat` counts both),
and the committed count read back (`kxtx topic count`: read_committed records), which must equal
the input. Prints a JSON line per run and per case the medians and kxtx ÷ kcat.

Cases (`--cases`):
  plain        unkeyed lines, 1 partition; kxtx at its default records per transaction
  plain-1txn   the same, kxtx with -n RECORDS (one transaction, as kcat)
  lines        the same file as plain, kxtx with -I lines: each line's bytes as they are, without
               the JSON check a .jsonl file gets (what kcat does with any line)
  plain-6p     unkeyed lines, 6 partitions
  keyed-json   6 partitions; kxtx's key from a JSON field (-k id), kcat -K '|' on key|json lines
  keyed-csv    6 partitions; kxtx's key from a CSV column, kcat -K ',' on the same CSV lines
  gzip         unkeyed, 1 partition, gzip input: kxtx reads FILE.gz, kcat gets `zcat FILE.gz |`

kcat comes from Debian's `kcat` package (1.7.1 here; `apt-get install kcat`): the script installs it
when it is missing and it runs as root. Without --bootstrap a sandbox broker is started here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench_produce import drop_topic

ROOT = Path(__file__).resolve().parent.parent
CASES = ("plain", "plain-1txn", "lines", "plain-6p", "keyed-json", "keyed-csv", "gzip")


def make_inputs(work: Path, n: int) -> dict[str, Path]:
    """The same n documents as JSON lines, as key|json lines, as CSV, and gzipped JSON lines."""
    paths = {k: work / f"in.{k}" for k in ("jsonl", "keyed", "csv")}
    with open(paths["jsonl"], "w") as j, open(paths["keyed"], "w") as k, open(paths["csv"], "w") as c:
        c.write("id,user,event,amount\n")
        for i in range(n):
            doc = json.dumps({"id": f"o{i % 10007}", "user": f"u{i % 997}", "event": "click", "amount": i})
            j.write(doc + "\n")
            k.write(f"o{i % 10007}|{doc}\n")
            c.write(f"o{i % 10007},u{i % 997},click,{i}\n")
    paths["gz"] = work / "in.jsonl.gz"
    with open(paths["jsonl"], "rb") as src, gzip.open(paths["gz"], "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    return paths


def kcat_binary() -> str:
    found = shutil.which("kcat") or shutil.which("kafkacat")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "kcat"], check=True, env=env, capture_output=True)
        found = shutil.which("kcat")
    if not found:
        raise SystemExit("bench_kcat: kcat is not installed (Debian: apt-get install kcat)")
    return found


def kxtx(*args: str) -> list[str]:
    return [sys.executable, "-m", "kxtx", *args]


def create_topic(bootstrap: str, partitions: int) -> str:
    name = f"kcat-bench-{uuid.uuid4().hex[:10]}"
    subprocess.run(
        kxtx("topic", "create", name, "-p", str(partitions), "-b", bootstrap), check=True, capture_output=True
    )
    return name


def committed(bootstrap: str, topic: str) -> int:
    out = subprocess.run(
        kxtx("topic", "count", topic, "-b", bootstrap, "-o", "json"),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(json.loads(out)["partitions"][-1]["read_committed"])


def timed(argv: list[str], env: dict | None = None) -> dict:
    """Run argv; its wall time, CPU seconds and peak RSS (MiB), from wait4."""
    # stderr to a file: a pipe nobody reads while the process runs could fill and block it
    with tempfile.TemporaryFile() as errfile:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errfile, env=env, cwd=ROOT)
        _pid, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if code != 0:
            errfile.seek(0)
            err = errfile.read().decode(errors="replace")
            raise SystemExit(f"bench_kcat: {' '.join(argv[:6])} ... failed ({code}): {err[-500:]}")
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "rss_mb": round(ru.ru_maxrss / 1024),
    }


def commands(case: str, tool: str, kc: str, paths: dict[str, Path], topic: str, n: int, bs: str) -> list[str]:
    txid = f"bench-{uuid.uuid4().hex[:10]}"
    kcat = [kc, "-P", "-b", bs, "-t", topic, "-X", f"transactional.id={txid}"]
    if case in ("plain", "plain-1txn", "lines", "plain-6p"):
        if tool == "kcat":
            return [*kcat, "-l", str(paths["jsonl"])]
        more = ["-n", str(n)] if case == "plain-1txn" else ["-I", "lines"] if case == "lines" else []
        return kxtx("produce", str(paths["jsonl"]), "-t", topic, "-b", bs, *more)
    if case == "keyed-json":
        if tool == "kcat":
            return [*kcat, "-K", "|", "-l", str(paths["keyed"])]
        return kxtx("produce", str(paths["jsonl"]), "-t", topic, "-b", bs, "-k", "id")
    if case == "keyed-csv":
        if tool == "kcat":  # kcat sends the header line too: one record more, counted below
            return [*kcat, "-K", ",", "-l", str(paths["csv"])]
        return kxtx("produce", str(paths["csv"]), "-t", topic, "-b", bs, "-k", "id")
    if case == "gzip":
        if tool == "kcat":
            return ["bash", "-c", f"zcat {shlex.quote(str(paths['gz']))} | {shlex.join(kcat)}"]
        return kxtx("produce", str(paths["gz"]), "-t", topic, "-b", bs)
    raise SystemExit(f"bench_kcat: unknown case {case}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--bootstrap")
    args = ap.parse_args()
    kc = kcat_binary()
    sys.path.insert(0, str(ROOT / "bench"))
    from as_installed import compile_kxtx

    compile_kxtx()
    sandbox = None
    bootstrap = args.bootstrap
    if not bootstrap:
        sys.path.insert(0, str(ROOT))
        from kxtx.sandbox import Sandbox

        sandbox = Sandbox(tempfile.mkdtemp(prefix="kxtx-bench-kcat-"))
        bootstrap = sandbox.start(port=0).bootstrap
    work = Path(tempfile.mkdtemp(prefix="kxtx-bench-kcat-in-"))
    try:
        paths = make_inputs(work, args.records)
        version = subprocess.run([kc, "-V"], capture_output=True, text=True).stdout.splitlines()
        print(
            json.dumps(
                {
                    "kcat": " ".join(version[:1] + [v for v in version if "librdkafka" in v][:1]),
                    "records": args.records,
                    "cpus": os.cpu_count(),
                }
            ),
            flush=True,
        )
        for case in args.cases.split(","):
            runs: dict[str, list[dict]] = {"kxtx": [], "kcat": []}
            parts = 6 if case in ("plain-6p", "keyed-json", "keyed-csv") else 1
            expect = {"kxtx": args.records, "kcat": args.records + (1 if case == "keyed-csv" else 0)}
            for rnd in range(args.rounds + 1):  # round 0: the warm-up, not counted
                for tool in ("kxtx", "kcat") if rnd % 2 == 0 else ("kcat", "kxtx"):
                    topic = create_topic(bootstrap, parts)
                    r = timed(commands(case, tool, kc, paths, topic, args.records, bootstrap))
                    got = committed(bootstrap, topic)
                    # 74 MB a run: with --bootstrap a long session filled the broker's disk
                    drop_topic(bootstrap, topic)
                    if got != expect[tool]:
                        raise SystemExit(
                            f"bench_kcat: {tool} {case}: {got} committed, {expect[tool]} expected"
                        )
                    r.update(case=case, tool=tool, round=rnd, committed=got)
                    print(json.dumps(r), flush=True)
                    if rnd:
                        runs[tool].append(r)
            med = {
                t: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "rss_mb")}
                for t, rs in runs.items()
            }
            ratio = {k: round(med["kxtx"][k] / med["kcat"][k], 2) for k in ("wall_s", "cpu_s", "rss_mb")}
            print(json.dumps({"case": case, "median": med, "kxtx/kcat": ratio}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if sandbox is not None:
            sandbox.stop()


if __name__ == "__main__":
    main()
