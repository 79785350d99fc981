"""scripts/test.sh (the README's test command): both stages run whatever the first gave, both are
reported, and the exit code says whether all passed. Run with a stand-in interpreter that records
each call instead of installing or testing anything."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PY = """#!/usr/bin/env bash
echo "$KXTX_TEST_KAFKA_VERSION|$(nice)|$*" >> "$CALLS"
case "$2" in
  pytest)
    if [ "${*: -1}" = "tests/unit" ]; then exit "${FAIL_UNIT:-0}"; fi
    stage=1; rc=$RC1
    if [ -n "$KXTX_TEST_KAFKA_VERSION" ]; then stage=2; rc=$RC2; fi
    if [ "${KXTX_FAST:-}" = "0" ]; then stage=3; rc=${RC3:-0}; fi
    if [ -n "${HOLD:-}" ] && [ "${*: -1}" != "tests/unit" ]; then
      trap 'echo "stage $stage interrupted" >> "$CALLS"; kill $!; exit 2' INT
      sleep "$HOLD" >/dev/null 2>&1 & wait
    fi
    echo "output of stage $stage"
    exit "$rc" ;;
  *) exit 0 ;;
esac
"""


def run_script(tmp_path, rc1: int, rc2: int, *args: str, env: dict | None = None, rc3: int = 0):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls"
    base = {k: v for k, v in os.environ.items() if k not in ("KXTX_TEST_KAFKA_VERSION", "KXTX_TEST_WORKERS")}
    base.pop("KXTX_FAST", None)
    full = {
        **base,
        "PYTHON": str(fake),
        "CALLS": str(calls),
        "RC1": str(rc1),
        "RC2": str(rc2),
        "RC3": str(rc3),
    }
    full.update({"KXTX_TEST_STAGE2_DELAY": "0", **(env or {})})
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )
    return r, calls.read_text().splitlines()


@pytest.mark.parametrize(
    "rc1, rc2, rc3, ok, report1, report2, report3",
    [
        (0, 0, 0, True, "passed", "passed", "passed"),
        (1, 0, 0, False, "FAILED (pytest exit 1)", "passed", "passed"),  # the 3.9 stage still runs
        (0, 1, 0, False, "passed", "FAILED (pytest exit 1)", "passed"),  # and the fastpath one
        (1, 1, 0, False, "FAILED (pytest exit 1)", "FAILED (pytest exit 1)", "passed"),
        (0, 5, 5, True, "passed", "passed", "passed"),  # no versioned or fastpath test selected
        (0, 0, 1, False, "passed", "passed", "FAILED (pytest exit 1)"),
    ],
)
def test_both_stages_run_and_are_reported(tmp_path, rc1, rc2, rc3, ok, report1, report2, report3):
    r, calls = run_script(tmp_path, rc1, rc2, "-k", "x", rc3=rc3)
    pytest_calls = sorted(c for c in calls if "-m pytest" in c)
    # stages 1 and 2 at once (their order of starting is not fixed); stage 2 at nice 10, then
    # stage 3 (every fast path off) after it, also at nice 10
    assert pytest_calls == [
        "3.9|10|-m pytest -q -n 4 -m versioned -k x",
        "|0|-m pytest -q -n 4 -k x",
        "|10|-m pytest -q -n 4 -m fastpath -k x",
    ]
    assert (r.returncode == 0) is ok
    # stage 2's output after stage 1's, whichever ended first
    assert r.stdout.index("output of stage 1") < r.stdout.index("output of stage 2")
    # each stage's line: its verdict and its seconds; then both stages' seconds and (when the clock
    # ticked) how busy the CPUs were
    assert re.search(rf"stage 1, whole suite on Kafka 4.x: {re.escape(report1)} \(\d+ s\)", r.stderr)
    assert re.search(
        rf"stage 2, versioned tests on Kafka 3.9: {re.escape(report2)} \(\d+ s, at nice 10\)", r.stderr
    )
    assert re.search(
        rf"stage 3, fastpath tests with every fast path off \(KXTX_FAST=0\): {re.escape(report3)} "
        r"\(\d+ s, at nice 10\)",
        r.stderr,
    )
    assert re.search(r"both stages: \d+ s(, CPUs \d+% busy \(\d+ cores\))?", r.stderr)


def test_both_kafka_versions_are_fetched_before_any_test(tmp_path):
    _, calls = run_script(tmp_path, 0, 0)
    fetch = next(i for i, c in enumerate(calls) if c.endswith("|-"))  # the script on stdin
    assert fetch < min(i for i, c in enumerate(calls) if "-m pytest" in c)


def test_an_interrupt_stops_both_stages(tmp_path):
    """Ctrl-C reaches stage 2 too, although it runs in the background (where bash ignores SIGINT)."""
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls"
    env = {**os.environ, "PYTHON": str(fake), "CALLS": str(calls), "RC1": "0", "RC2": "0", "HOLD": "60"}
    env["KXTX_TEST_STAGE2_DELAY"] = "0"
    env.pop("KXTX_TEST_KAFKA_VERSION", None)
    env.pop("KXTX_FAST", None)
    # as from a terminal: a process group of its own, SIGINT at its default
    proc = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "test.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 30
        while sum("-m pytest" in c and "--ignore=tests/unit" in c for c in _lines(calls)) < 2:
            assert time.monotonic() < deadline, "the two stages did not start"
            time.sleep(0.05)
        time.sleep(0.3)  # both fakes are in their `wait`
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert {"stage 1 interrupted", "stage 2 interrupted"} <= set(_lines(calls))
    assert proc.returncode != 0
    assert "stage 2, versioned tests on Kafka 3.9: FAILED (pytest exit 2)" in err


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_installs_what_pip_resolves_today(tmp_path):
    _, calls = run_script(tmp_path, 0, 0)
    install = next(c for c in calls if "pip install" in c)
    assert "--upgrade --upgrade-strategy eager" in install and ".[spark,registry,test]" in install


def test_compiles_kxtx_before_the_tests(tmp_path):
    # every `kxtx` a test starts would compile kxtx's modules again under PYTHONDONTWRITEBYTECODE
    _, calls = run_script(tmp_path, 0, 0)
    args = [c.split("|", 2)[2] for c in calls]
    compile_at = next(i for i, a in enumerate(args) if a == "-m compileall -q kxtx")
    assert compile_at < next(i for i, a in enumerate(args) if a.startswith("-m pytest"))


@pytest.mark.parametrize(
    "workers, args, unit, stage1, stage2, stage3",
    [
        # a whole run: the unit tests on their own first, then both stages without them; the
        # fastpath tests with every fast path off, unit tests among them
        (
            "0",
            (),
            "-n 0 tests/unit",
            "-n 0 --ignore=tests/unit",
            "-n 0 -m versioned --ignore=tests/unit",
            "-n 0 -m fastpath",
        ),
        (
            "3",
            (),
            "-n 3 tests/unit",
            "-n 3 --ignore=tests/unit",
            "-n 3 -m versioned --ignore=tests/unit",
            "-n 3 -m fastpath",
        ),
        # arguments given: run as asked (pytest takes the last -n)
        (None, ("-n", "1"), None, "-n 4 -n 1", "-n 4 -m versioned -n 1", "-n 4 -m fastpath -n 1"),
    ],
)
def test_both_stages_take_the_worker_count(tmp_path, workers, args, unit, stage1, stage2, stage3):
    env = {"KXTX_TEST_WORKERS": workers} if workers is not None else {}
    _, calls = run_script(tmp_path, 0, 0, *args, env=env)
    pytest_calls = [c.split("|", 2)[2] for c in calls if "-m pytest" in c]
    if unit:
        assert pytest_calls[0] == f"-m pytest -q {unit}"  # before both stages
        pytest_calls = pytest_calls[1:]
    assert sorted(pytest_calls) == sorted([f"-m pytest -q {x}" for x in (stage1, stage2, stage3)])


def test_failing_unit_tests_fail_the_run_after_both_stages_ran(tmp_path):
    fake_calls = tmp_path / "calls"
    r, calls = run_script(tmp_path, 0, 0, env={"FAIL_UNIT": "1"})
    assert fake_calls.exists()
    assert r.returncode != 0
    assert "unit tests, without PYTHONUNBUFFERED/PYTHONDONTWRITEBYTECODE: FAILED (pytest exit 1)" in r.stderr
    assert sum("--ignore=tests/unit" in c for c in calls) == 2
