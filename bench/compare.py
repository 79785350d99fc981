"""Run one benchmark script against two commits side by side, interleaved round by round, and
report each figure as a ratio (this tree / the reference). Not a timed test: run it by hand.

    python bench/compare.py REF [--rounds 3] [--bootstrap HOST:PORT] -- bench_produce.py --records 1000000

REF is any git revision (e.g. the commit before a refactor). It is checked out into a temporary
worktree; each round runs `bench/SCRIPT ARGS --bootstrap B` first in REF's tree, then in this one
(each tree's own script and its own kxtx: PYTHONPATH and the working directory point at the tree),
against one broker (a sandbox started here unless --bootstrap). Both runs of a round see the same
broker and about the same machine load, which is why ratios are compared, never absolute rates.

Figures are taken from the scripts' JSON lines (every number in a line, by name: bench_produce's
per-case lines, bench_pipe_modes' per-case lines with their CPU seconds summed per case). For each
figure: the reference's and this tree's values per round, and the median, min and max of the
per-round ratios. Higher is better for rates (records/s); for CPU seconds lower is better.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def figures(line: str) -> dict[str, float]:
    """The numbers of one JSON output line, by dotted name ('' when the line is not JSON)."""
    try:
        doc = json.loads(line)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    prefix = str(doc.pop("case", ""))
    doc.pop("repeat", None)
    out: dict[str, float] = {}
    _flatten(doc, prefix, out)
    return out


def _flatten(value: object, name: str, out: dict[str, float]) -> None:
    if isinstance(value, dict):
        cpu = value.get("cpu_s")
        if isinstance(cpu, dict):
            out[f"{name}.cpu_s_total"] = round(sum(v for v in cpu.values() if isinstance(v, (int, float))), 2)
        for key, sub in value.items():
            if key not in ("cpu_s", "busy_cores", "peak_rss_mb", "runs"):
                _flatten(sub, f"{name}.{key}" if name else str(key), out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[name] = float(value)


def run_round(tree: Path, script: str, args: list[str], bootstrap: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(
        [sys.executable, f"bench/{script}", *args, "--bootstrap", bootstrap],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise SystemExit(f"compare: {script} failed in {tree}:\n{proc.stderr[-2000:]}")
    got: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{") and line.endswith("}"):
            got.update(figures(line))
    return got


def report(ref: list[dict[str, float]], new: list[dict[str, float]]) -> list[str]:
    names = sorted(set().union(*ref) & set().union(*new))
    lines = [f"{'figure':48} {'ratio median':>12} {'min':>6} {'max':>6}  reference | this tree"]
    for name in names:
        pairs = [(r[name], n[name]) for r, n in zip(ref, new) if name in r and name in n and r[name]]
        if not pairs:
            continue
        ratios = [n / r for r, n in pairs]
        lines.append(
            f"{name:48} {statistics.median(ratios):12.3f} {min(ratios):6.2f} {max(ratios):6.2f}  "
            f"{' '.join(f'{r:g}' for r, _ in pairs)} | {' '.join(f'{n:g}' for _, n in pairs)}"
        )
    return lines


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv:
        raise SystemExit("usage: compare.py REF [--rounds N] [--bootstrap B] -- SCRIPT [ARGS...]")
    cut = argv.index("--")
    ap = argparse.ArgumentParser(usage="compare.py REF [--rounds N] [--bootstrap B] -- SCRIPT [ARGS...]")
    ap.add_argument("ref")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bootstrap")
    opts = ap.parse_args(argv[:cut])
    script, *args = argv[cut + 1 :]
    work = Path(tempfile.mkdtemp(prefix="kxtx-compare-"))
    ref_tree = work / "ref"
    subprocess.run(["git", "worktree", "add", "--detach", str(ref_tree), opts.ref], cwd=ROOT, check=True)
    sandbox = None
    try:
        bootstrap = opts.bootstrap
        if not bootstrap:
            from kxtx.sandbox import Sandbox

            sandbox = Sandbox(str(work / "broker"))
            bootstrap = sandbox.start(kafka_version="4", port=0, heap="1g").bootstrap
        ref, new = [], []
        for i in range(opts.rounds):
            print(f"compare: round {i + 1} of {opts.rounds}", file=sys.stderr)
            ref.append(run_round(ref_tree, script, args, bootstrap))
            new.append(run_round(ROOT, script, args, bootstrap))
        print(f"{script} {' '.join(args)}: {opts.ref} (reference) against this tree, {opts.rounds} rounds")
        print("\n".join(report(ref, new)))
    finally:
        if sandbox is not None:
            sandbox.stop()
        subprocess.run(["git", "worktree", "remove", "--force", str(ref_tree)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
