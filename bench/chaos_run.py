"""Long chaos runs (issue 29): `tests/integration/test_chaos.py` again and again, each run with a new
seed and a long schedule, until one fails or all are done. Not a timed test: run it by hand.

    python bench/chaos_run.py [--runs 5] [--faults 20] [--lines 1000000] [--seed S]

Each run starts its own 3-node sandbox (the test's `cluster3` fixture), runs `kxtx produce` and
`kxtx pipe` in both modes through the schedule and checks exactly-once, the exit codes (0 or 75) and
that nothing hangs, as the CI test does with 3 faults. Printed per run: the seed, the schedule as it
fired (node, outage, time to heal), the exit codes of every command, pass/fail and wall time; a
failure prints the command that replays it (`KXTX_CHAOS_SEED`). `--json FILE` keeps the results.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/integration/test_chaos.py"


def one_run(seed: int, faults: int, lines: int) -> dict:
    env = {
        **os.environ,
        "KXTX_CHAOS_SEED": str(seed),
        "KXTX_CHAOS_FAULTS": str(faults),
        "KXTX_CHAOS_LINES": str(lines),
        # a long schedule: a minute a fault plus the work, never the CI test's bound
        "KXTX_CHAOS_TIMEOUT_S": str(1800 + 120 * faults + lines // 500),
    }
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-n", "0", "-p", "no:cacheprovider", TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    said = [line for line in proc.stdout.splitlines() if line.startswith("chaos: ")]
    return {
        "seed": seed,
        "faults": faults,
        "lines": lines,
        "passed": proc.returncode == 0,
        "wall_s": round(time.monotonic() - started, 1),
        "chaos": said,
        "tail": "" if proc.returncode == 0 else proc.stdout[-4000:],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--faults", type=int, default=20)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, help="the first run's seed (the next ones: seed+1, ...)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    first = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    results = []
    for i in range(a.runs):
        r = one_run(first + i, a.faults, a.lines)
        results.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "tail"}), flush=True)
        if not r["passed"]:
            print(r["tail"], file=sys.stderr)
            print(
                f"replay: KXTX_CHAOS_SEED={r['seed']} KXTX_CHAOS_FAULTS={a.faults} KXTX_CHAOS_LINES={a.lines}"
                f" python -m pytest -s -n 0 {TEST}",
                file=sys.stderr,
            )
            break
    if a.json:
        a.json.write_text(json.dumps(results, indent=2))
    passed = sum(r["passed"] for r in results)
    print(
        f"chaos_run: {passed}/{len(results)} runs passed, {sum(r['faults'] for r in results)} faults",
        file=sys.stderr,
    )
    return 0 if passed == len(results) == a.runs else 1


if __name__ == "__main__":
    sys.exit(main())
