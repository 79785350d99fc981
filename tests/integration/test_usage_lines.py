"""The lines kxtx is used by, run verbatim in a fresh sandbox of their own (issue 42's "done when"):
`kxtx pipe --in topicA --out topicB --udf mod:fn`, `kxtx inspect txn <id>`, `kxtx abort-hanging`, and
a cron-style script acting on exit codes. `kxtx` is a script on PATH running the kxtx under test, so
the lines are as a user types them; stdin is not a terminal (as in cron).

The pipe line has no --group: it needs the derived default group (issue 42 item 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests import cli
from tests.conftest import ROOT

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

RECORDS = 100

#: what a cron job does with find-hanging's exit code (README, "Exit codes")
CRON = """#!/bin/bash
kxtx find-hanging -o jsonl > hanging.jsonl
rc=$?
case $rc in
  0) echo "cron: nothing hangs" ;;
  3) echo "cron: hanging transactions, aborting"
     kxtx abort-hanging --yes > aborted.jsonl || { echo "cron: abort-hanging failed (exit $?)"; exit 1; } ;;
  69|75) echo "cron: cluster unavailable (exit $rc), the next run tries again" ;;
  *) echo "cron: error (exit $rc)"; exit 1 ;;
esac
"""

SCRIPT = r"""
set -e
eval "$(kxtx sandbox start --port 0 --export --state-dir "$SB" --broker-config transaction.partition.verification.enable=false)"
kxtx topic create topicA -p 2
kxtx topic create topicB -p 2
kxtx produce orders.jsonl -t topicA -o json > produced.json
id=$(python3 -c 'import json; print(json.load(open("produced.json"))["transactional_id"])')
kxtx inspect txn "$id" -o json > inspect.json
kxtx pipe --in topicA --out topicB --udf mod:fn > pipe.out 2> pipe.err &
pipe=$!
count() { kxtx topic count topicB -o json | python3 -c 'import json, sys; print(json.load(sys.stdin)["partitions"][-1]["read_committed"])'; }
for _ in $(seq 240); do
  kill -0 "$pipe" 2>/dev/null || break
  [ "$(count)" = "$RECORDS" ] && break
  sleep 1
done
kill -TERM "$pipe" 2>/dev/null || true
set +e
wait "$pipe"
echo "pipe exit: $?"
echo "topicB read_committed: $(count)"
kxtx abort-hanging > abort.out 2> abort.err
echo "abort-hanging exit: $?"
bash cron.sh
echo "cron exit: $?"
PYTHONPATH="$ROOT" python3 -c "$HANG"
bash cron.sh
echo "cron exit: $?"
bash cron.sh
echo "cron exit: $?"
KXTX_BOOTSTRAP_SERVERS=127.0.0.1:1 KXTX_TIMEOUT=3 bash cron.sh
echo "cron exit: $?"
"""


#: a transaction its coordinator never heard of on topicA:0 (the sandbox runs without partition
#: verification, as tests/integration/txn_helpers.py explains), an hour old: hanging
HANG = """
import os
from tests.integration.txn_helpers import make_hanging
make_hanging(os.environ["KXTX_BOOTSTRAP_SERVERS"], "usage-hanging", [("topicA", 0)])
"""


def test_the_lines_kxtx_is_used_by(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, target in (("kxtx", f'"{sys.executable}" -m kxtx'), ("python3", f'"{sys.executable}"')):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        (bin_dir / name).chmod(0o755)
    (tmp_path / "orders.jsonl").write_text(
        "".join(json.dumps({"order": {"id": i}, "amount": i}) + "\n" for i in range(RECORDS))
    )
    (tmp_path / "mod.py").write_text("def fn(value):\n    return value\n")
    (tmp_path / "cron.sh").write_text(CRON)
    sandbox = tmp_path / "sandbox"
    env = {k: v for k, v in os.environ.items() if k not in ("KXTX_BOOTSTRAP_SERVERS", "KXTX_SANDBOX_DIR")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        SB=str(sandbox),
        RECORDS=str(RECORDS),
        ROOT=str(ROOT),
        HANG=HANG,
    )
    try:
        r = subprocess.run(
            ["bash", "-c", SCRIPT],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
    finally:
        subprocess.run(
            cli.argv("sandbox", "stop", "--state-dir", str(sandbox)),
            env=env,
            capture_output=True,
            timeout=300,
        )
    out = r.stdout.splitlines()
    why = r.stdout[-3000:] + r.stderr[-3000:]
    pipe_err = (tmp_path / "pipe.err").read_text() if (tmp_path / "pipe.err").exists() else ""
    assert r.returncode == 0, why
    produced = json.loads((tmp_path / "produced.json").read_text())
    assert produced["records"] == RECORDS, produced
    inspected = json.loads((tmp_path / "inspect.json").read_text())
    assert produced["transactional_id"] in json.dumps(inspected), inspected
    assert "pipe exit: 143" in out, why + pipe_err[-3000:]  # stopped by SIGTERM once it was done
    assert f"topicB read_committed: {RECORDS}" in out, why + pipe_err[-3000:]
    assert "abort-hanging exit: 0" in out, why
    assert "nothing hangs" in (tmp_path / "abort.err").read_text()
    cron = [line for line in out if line.startswith("cron")]
    assert cron == [
        "cron: nothing hangs",
        "cron exit: 0",
        "cron: hanging transactions, aborting",  # exit 3, then abort-hanging --yes
        "cron exit: 0",
        "cron: nothing hangs",  # the next run: it was aborted
        "cron exit: 0",
        "cron: cluster unavailable (exit 69), the next run tries again",
        "cron exit: 0",
    ], why
