""".ci/run builds a new virtualenv for every run and runs the README's test command with it, so a
dependency release that breaks a fresh install cannot hide behind an old environment (orjson 3.13
did). python3 is a stand-in that records every call; its `-m venv DIR` makes DIR/bin/python another
recording stand-in."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.binaries import need

ROOT = Path(__file__).resolve().parents[2]

FAKE_PY = """#!/usr/bin/env bash
echo "$0|$KXTX_TEST_KAFKA_VERSION|$CI|${PYTHONUNBUFFERED-}${PYTHONDONTWRITEBYTECODE-}|$*" >> "$CALLS"
if [ -n "${FAIL_ON:-}" ] && [ "$1 $2" = "$FAIL_ON" ]; then exit 1; fi
if [ -n "${FAIL_ON_ARGS:-}" ] && [ "$*" = "$FAIL_ON_ARGS" ]; then exit 1; fi
if [ "$1 $2" = "-m venv" ] && [ "$3" != "--help" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
fi
exit 0
"""


UNIT_RUN = "-m pytest -q -n 4 tests/unit"


def _run_ci(tmp_path, **extra_env):
    # .ci/run installs what is missing with apt-get, which a test must not do: skip outside CI
    for tool in ("java", "mvn", "openssl", "gcc", "prometheus", "promtool", "prometheus-node-exporter", "ss"):
        need(tool)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(FAKE_PY)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls"
    env = {
        # the suite's own worker count must not reach the script under test
        **{k: v for k, v in os.environ.items() if k != "KXTX_TEST_WORKERS"},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "CALLS": str(calls),
        "TMPDIR": str(tmp_path),
        "KXTX_TEST_STAGE2_DELAY": "0",  # the fake stages take no time to wait for
        # as on CI's machine: the unit tests must run without them all the same
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("PYTHON", None)
    env.pop("KXTX_TEST_KAFKA_VERSION", None)
    env.pop("CI", None)
    env.update(extra_env)
    r = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=120
    )
    rows = [line.split("|", 4) for line in calls.read_text().splitlines()]
    # every call ran with CI set: tests of the programs .ci/run installs fail rather than skip
    assert {ci for _, _, ci, _, _ in rows} == {"1"}
    # the unit tests, and they alone, run without PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE
    flagless = {args for _, _, _, flags, args in rows if not flags}
    assert flagless <= {UNIT_RUN}
    assert UNIT_RUN in flagless or not any(args.startswith("-m pytest") for *_, args in rows)
    return r, fake, [[prog, version, args] for prog, version, _, _, args in rows]


def test_ci_installs_and_tests_in_a_new_virtualenv(tmp_path):
    r, fake, rows = _run_ci(tmp_path)
    assert r.returncode == 0, r.stderr
    venvs = [args.split()[2] for prog, _, args in rows if prog == str(fake) and args.startswith("-m venv /")]
    assert len(venvs) == 1 and venvs[0].startswith(str(tmp_path / "kxtx-ci-venv."))
    venv_py = f"{venvs[0]}/bin/python"
    after_venv = rows[next(i for i, (p, _, a) in enumerate(rows) if a.startswith("-m venv /")) + 1 :]
    # everything after the venv exists runs with its interpreter: installs, both test stages
    assert {prog for prog, _, _ in after_venv} == {venv_py}
    assert any("pip install" in a and "-e .[spark,registry,test,lint]" in a for _, _, a in after_venv)
    args = [a for _, _, a in after_venv]
    # the lint gate (scripts/lint.sh) runs before the first test
    gate = [args.index(a) for a in ("-m ruff format --check .", "-m ruff check .", "-m mypy")]
    assert max(gate) < next(i for i, a in enumerate(args) if a.startswith("-m pytest"))
    # the unit tests first, then both stages without them (which run at the same time: in either
    # order), and the fastpath tests once more with every fast path off
    pytest_runs = [(v, a) for _, v, a in after_venv if a.startswith("-m pytest")]
    assert pytest_runs[0] == ("", UNIT_RUN)
    assert sorted(pytest_runs[1:]) == [
        ("", "-m pytest -q -n 4 --ignore=tests/unit"),
        ("", "-m pytest -q -n 4 -m fastpath"),
        ("3.9", "-m pytest -q -n 4 -m versioned --ignore=tests/unit"),
    ]
    assert not Path(venvs[0]).exists()  # removed on exit


@pytest.mark.parametrize("failing", ["-m mypy", "-m ruff"])
def test_a_failing_lint_gate_fails_ci_before_any_test(tmp_path, failing):
    r, _, rows = _run_ci(tmp_path, FAIL_ON=failing)
    assert r.returncode != 0
    assert not [a for _, _, a in rows if a.startswith("-m pytest")]


def test_failing_unit_tests_fail_ci_after_the_suite_ran(tmp_path):
    """A unit failure is reported, and the suite still runs: CI shows everything that is red."""
    r, _, rows = _run_ci(tmp_path, FAIL_ON_ARGS=UNIT_RUN)
    assert r.returncode != 0
    assert (
        "test.sh: unit tests, without PYTHONUNBUFFERED/PYTHONDONTWRITEBYTECODE: FAILED (pytest exit 1)"
        in r.stderr
    )
    assert "-m pytest -q -n 4 --ignore=tests/unit" in [a for _, _, a in rows]
