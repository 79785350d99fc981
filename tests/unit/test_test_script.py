"""scripts/test.sh (the README's test command): both stages run whatever the first gave, both are
reported, and the exit code says whether all passed. Run with a stand-in interpreter that records
each call instead of installing or testing anything."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PY = """#!/usr/bin/env bash
echo "$KXTX_TEST_KAFKA_VERSION|$*" >> "$CALLS"
case "$2" in
  pytest) if [ -n "$KXTX_TEST_KAFKA_VERSION" ]; then exit "$RC2"; else exit "$RC1"; fi ;;
  *) exit 0 ;;
esac
"""


def run_script(tmp_path, rc1: int, rc2: int, *args: str, env: dict | None = None):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls"
    base = {k: v for k, v in os.environ.items() if k not in ("KXTX_TEST_KAFKA_VERSION", "KXTX_TEST_WORKERS")}
    env = {**base, "PYTHON": str(fake), "CALLS": str(calls), "RC1": str(rc1), "RC2": str(rc2), **(env or {})}
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return r, calls.read_text().splitlines()


@pytest.mark.parametrize(
    "rc1, rc2, ok, report1, report2",
    [
        (0, 0, True, "passed", "passed"),
        (1, 0, False, "FAILED (pytest exit 1)", "passed"),  # the 3.9 stage still runs
        (0, 1, False, "passed", "FAILED (pytest exit 1)"),
        (1, 1, False, "FAILED (pytest exit 1)", "FAILED (pytest exit 1)"),
        (0, 5, True, "passed", "passed"),  # no versioned test selected by the arguments
    ],
)
def test_both_stages_run_and_are_reported(tmp_path, rc1, rc2, ok, report1, report2):
    r, calls = run_script(tmp_path, rc1, rc2, "-k", "x")
    pytest_calls = [c for c in calls if "-m pytest" in c]
    assert pytest_calls == ["|-m pytest -q -n 3 -k x", "3.9|-m pytest -q -n 3 -m versioned -k x"]
    assert (r.returncode == 0) is ok
    # each stage's line: its verdict, its seconds and (when the clock ticked) how busy the CPUs were
    assert re.search(
        rf"stage 1, whole suite on Kafka 4.x: {re.escape(report1)} \(\d+ s(, CPUs \d+% busy \(\d+ cores\))?\)",
        r.stderr,
    )
    assert re.search(
        rf"stage 2, versioned tests on Kafka 3.9: {re.escape(report2)} \(\d+ s(, CPUs \d+% busy \(\d+ cores\))?\)",
        r.stderr,
    )


def test_installs_what_pip_resolves_today(tmp_path):
    _, calls = run_script(tmp_path, 0, 0)
    install = next(c for c in calls if "pip install" in c)
    assert "--upgrade --upgrade-strategy eager" in install and ".[spark,test]" in install


@pytest.mark.parametrize(
    "workers, args, stage1, stage2",
    [
        ("0", (), "-n 0", "-n 0 -m versioned"),  # serial, in the pytest process
        ("4", (), "-n 4", "-n 4 -m versioned"),
        (None, ("-n", "1"), "-n 3 -n 1", "-n 3 -m versioned -n 1"),  # pytest takes the last -n
    ],
)
def test_both_stages_take_the_worker_count(tmp_path, workers, args, stage1, stage2):
    env = {"KXTX_TEST_WORKERS": workers} if workers is not None else {}
    _, calls = run_script(tmp_path, 0, 0, *args, env=env)
    pytest_calls = [c.split("|", 1)[1] for c in calls if "-m pytest" in c]
    assert pytest_calls == [f"-m pytest -q {stage1}", f"-m pytest -q {stage2}"]
