"""A first run downloads for minutes (pip: ~500 MB, Maven: ~100 MB of Kafka jars): the quickstart and
`kxtx sandbox start` show what arrives instead of staying silent. pip and mvn are stand-ins that
print what the real tools print (their batch-mode transfer lines) and record their arguments."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest

from tests import cli

ROOT = Path(__file__).resolve().parents[2]

FAKE_PY = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
if [ "$2" = pip ]; then
  case " $* " in *" -q "*) exit 0 ;; esac  # quiet: prints nothing, as pip -q does
  echo "Collecting pyspark<5,>=4.0 (from kxtx==0.1.0)"
  echo "  Downloading pyspark-4.3.0.tar.gz (434.5 MB)"
  exit 0
fi
exit 1  # kxtx sandbox start: stop the tour here
"""

FAKE_MVN = """#!/usr/bin/env bash
echo "[INFO] Scanning for projects..."
echo "[INFO] Downloading from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/9.9.9/kafka_2.13-9.9.9.jar"
echo "[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/9.9.9/kafka_2.13-9.9.9.pom (3.1 kB at 40 kB/s)"
echo "[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/9.9.9/kafka_2.13-9.9.9.jar (6.6 MB at 3.2 MB/s)"
echo "[ERROR] Failed to execute goal: stopped here by the test"
exit 1
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_quickstart_shows_what_pip_downloads(tmp_path):
    fake = _script(tmp_path / "python", FAKE_PY)
    calls = tmp_path / "calls"
    env = {**os.environ, "PYTHON": str(fake), "CALLS": str(calls), "KXTX_SANDBOX_DIR": str(tmp_path / "sb")}
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "quickstart.sh")], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode != 0  # stopped at the sandbox by the stand-in
    pip = next(c for c in calls.read_text().splitlines() if c.startswith("-m pip install"))
    assert " -q" not in f" {pip} "
    assert "Downloading pyspark-4.3.0.tar.gz (434.5 MB)" in r.stderr
    assert "~500 MB" in r.stderr.split("Collecting")[0]  # said before pip starts
    assert r.stdout == ""  # stdout stays the tour's data


def test_sandbox_start_shows_each_jar_maven_downloads(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "mvn", FAKE_MVN)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = cli.run(
        *("sandbox", "start", "--kafka-version", "9.9.9", "--state-dir", str(tmp_path / "sb")),
        expect=1,
        env=env,
        clean=True,
        timeout=120,
    )
    lines = r.stderr.splitlines()
    assert lines[0].startswith(
        f"kxtx: fetching the Kafka 9.9.9 jars from Maven Central with mvn into {tmp_path / 'cache'}"
    )
    assert "kxtx: mvn: downloaded kafka_2.13-9.9.9.jar (6.6 MB at 3.2 MB/s)" in lines
    assert lines[-1] == (
        "kxtx: error: resolving Kafka 9.9.9 jars with mvn: Failed to execute goal: stopped here by the test"
    )


def test_readme_says_to_install_in_a_virtualenv():
    readme = (ROOT / "README.md").read_text()
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "virtualenv" in install and "python3 -m venv" in install


def _screen(written: str) -> str:
    """What a terminal shows of one line after `written`: a carriage return moves back to column 0
    and the characters that follow overwrite, nothing more."""
    cells: list[str] = []
    col = 0
    for ch in written:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            raise AssertionError("the status line wrote a line break")
        else:
            cells[col : col + 1] = [ch]
            col += 1
    return "".join(cells).rstrip()


def test_pipe_progress_line_shrinking_leaves_nothing_behind(monkeypatch):
    from kxtx.cli.pipe import _progress
    from kxtx.pipe.stats import Progress

    err = StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    progress = _progress(tty=True)
    for lag in (1_048_576, 1_024, 0):
        progress(
            Progress(
                records_in=1024, records_out=1024, dlq=0, transactions=3, aborted=0, rate=12_345.0, lag=lag
            )
        )
    assert _screen(err.getvalue()) == ("1,024 in  1,024 out  0 dlq  3 txns  0 aborted  12,345 rec/s  lag 0")
    progress.done()
    assert err.getvalue().endswith("\n")


@pytest.mark.parametrize(
    "texts",
    [
        ["a long status line", "short"],
        ["short", "a long status line", "mid length"],
        ["same", "same"],
        ["x" * 50, "", "y"],
    ],
)
def test_status_line_shows_only_the_last_text(texts):
    from kxtx.cli.output import StatusLine

    out = StringIO()
    line = StatusLine(out)
    for text in texts:
        line.show(text)
    assert _screen(out.getvalue()) == texts[-1]


@pytest.mark.parametrize("texts", [["a long status line", "short"], []])
def test_a_cleared_status_line_leaves_nothing_on_the_screen(texts):
    from kxtx.cli.output import StatusLine

    out = StringIO()
    line = StatusLine(out)
    for text in texts:
        line.show(text)
    line.clear()
    assert _screen(out.getvalue()).strip() == "" and out.getvalue().endswith("\r" if texts else "")
    line.clear()  # again: nothing more
    assert "\n" not in out.getvalue()


def test_the_sweep_line_counts_partitions_on_a_terminal_and_is_none_elsewhere(monkeypatch):
    from kxtx.cli import progress

    monkeypatch.setattr(progress, "is_tty", lambda stream: True)
    err = StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    line = progress.sweep("find-hanging: DescribeProducers")
    assert line is not None
    line.calls(500, 20000)
    assert _screen(err.getvalue()) == "find-hanging: DescribeProducers: 500/20,000 partitions"
    line.done()
    assert _screen(err.getvalue()).strip() == ""
    monkeypatch.setattr(progress, "is_tty", lambda stream: False)
    assert progress.sweep("find-hanging: DescribeProducers") is None
