"""CPU seconds by kind of process while a command runs: which processes a test run spends the
machine on (brokers, Spark JVMs, kxtx CLI processes, Python workers, ...).

    python scripts/cpu_by_kind.py OUT.json -- python -m pytest -q -n 3 ...

Every 0.2 s it reads each process's user+system time from /proc and keeps the last value per pid;
at the end it sums them by kind (from the command line) and writes OUT.json with the machine's busy
CPU seconds over the same span (from /proc/stat). A process that lives less than a sampling interval
is missed: the gap between the two totals says how much. Processes that ran before the command
count only what they used during it. Linux only; no dependencies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SAMPLE_S = 0.2

#: shells: kind() calls them "bash SCRIPT"; one may exec another program under its pid
SHELLS = ("bash", "sh")
#: (substring of the command line, kind) for java processes, first match wins
JAVA_KINDS = (
    ("kafka.Kafka ", "kafka broker"),
    ("kafka.tools.StorageTool", "kafka storage format"),
    ("org.apache.spark.deploy.SparkSubmit", "spark driver jvm"),
    ("CoarseGrainedExecutorBackend", "spark executor jvm"),
    ("org.apache.spark.deploy.master.Master", "spark standalone daemon"),
    ("org.apache.spark.deploy.worker.Worker", "spark standalone daemon"),
    ("org.apache.kafka.tools.", "kafka tool"),
    ("kafka.tools.", "kafka tool"),
)
#: (substring, kind) for python processes, first match wins
PYTHON_KINDS = (
    ("-m kxtx.pipe.fast.daemon", "spark python worker"),  # kxtx's daemon on a local master
    ("-m kxtx", "kxtx cli"),
    ("pyspark.daemon", "spark python worker"),
    ("pyspark.worker", "spark python worker"),
    ("import sys;exec(eval(sys.stdin.readline()))", "pytest-xdist worker"),
    ("pytest", "pytest"),
)


def kind(cmdline: str) -> str:
    """The kind of a process from its command line (arguments joined by spaces)."""
    words = cmdline.split()
    if not words:
        return "kernel thread"
    exe = os.path.basename(words[0])
    if exe == "java":
        return next((k for needle, k in JAVA_KINDS if needle in cmdline + " "), "java other")
    if exe.startswith("python"):
        return next((k for needle, k in PYTHON_KINDS if needle in cmdline), "python other")
    if exe in SHELLS and len(words) > 1:
        return f"{exe} {os.path.basename(words[1])}"
    return exe


def _is_shell(what: str) -> bool:
    return what.split(" ", 1)[0] in SHELLS


def _cpu_ticks(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime + stime


def _cmdline(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def _busy_ticks() -> int:
    with open("/proc/stat") as f:
        values = [int(x) for x in f.readline().split()[1:]]
    return sum(values) - values[3] - values[4]  # all but idle and iowait


def _pids() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit()]


def measure(command: list[str]) -> dict:
    me = str(os.getpid())
    before = {pid: _cpu_ticks(pid) or 0 for pid in _pids()}
    last: dict[str, tuple[str, int]] = {}
    busy0, t0 = _busy_ticks(), time.monotonic()
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        for pid in _pids():
            ticks = _cpu_ticks(pid) if pid != me else None
            if ticks is None:
                continue
            known = last.get(pid)
            # A shell may exec another program under its pid (Spark's `bash spark-class` becomes
            # the driver JVM): its kind is read again until it is no longer a shell. A process
            # that has exited but is not reaped has an empty command line: it keeps its kind.
            if known is None or _is_shell(known[0]):
                cmd = _cmdline(pid)
                if known is None and cmd is None:
                    continue
                if cmd:
                    known = (kind(cmd), 0)
            last[pid] = (known[0] if known else "kernel thread", ticks - before.get(pid, 0))
        time.sleep(SAMPLE_S)
    by_kind: dict[str, dict[str, float]] = {}
    for what, ticks in last.values():
        if ticks > 0:
            entry = by_kind.setdefault(what, {"cpu_s": 0.0, "processes": 0})
            entry["cpu_s"] += ticks / TICK
            entry["processes"] += 1
    ordered = dict(sorted(by_kind.items(), key=lambda kv: -kv[1]["cpu_s"]))
    for entry in ordered.values():
        entry["cpu_s"] = round(entry["cpu_s"], 1)
    return {
        "command": command,
        "exit_code": proc.returncode,
        "wall_s": round(time.monotonic() - t0, 1),
        "machine_busy_cpu_s": round((_busy_ticks() - busy0) / TICK, 1),
        "sampled_cpu_s": round(sum(e["cpu_s"] for e in ordered.values()), 1),
        "by_kind": ordered,
    }


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    result = measure(argv[2:])
    with open(argv[0], "w") as f:
        json.dump(result, f, indent=1)
    return result["exit_code"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
