"""kxtx.pipe.fast.daemon: which of Spark's zips leave the Python daemon's path (no Spark needed), and
the daemon, spoken to as Spark's JVM speaks to it, ending an idle worker the JVM let go quietly."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

import pytest

from kxtx.pipe.fast.daemon import installed_twin, without_twin_zips


def _zip(path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return str(path)


def _installed(root, package: str, version: str | None) -> str:
    pkg = root / package
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    if version is not None:
        (pkg / "version.py").write_text(version)
    return str(root)


SAME = '__version__ = "4.3.0"\n'


@pytest.mark.parametrize(
    "zip_name,zipped,installed_package,installed_version,dropped",
    [
        ("pyspark.zip", {"pyspark/version.py": SAME}, "pyspark", SAME, True),
        ("py4j-0.10.9.9-src.zip", {"py4j/version.py": SAME}, "py4j", SAME, True),
        # another version installed: the zip matches the JVM, it stays
        ("pyspark.zip", {"pyspark/version.py": SAME}, "pyspark", '__version__ = "4.2.1"\n', False),
        # nothing installed outside the zip
        ("pyspark.zip", {"pyspark/version.py": SAME}, "other", SAME, False),
        # an installed package without a version file, a zip without one
        ("pyspark.zip", {"pyspark/version.py": SAME}, "pyspark", None, False),
        ("pyspark.zip", {"pyspark/__init__.py": ""}, "pyspark", SAME, False),
        # a zip that is not one of Spark's
        ("deps.zip", {"pyspark/version.py": SAME}, "pyspark", SAME, False),
    ],
)
def test_a_zip_leaves_only_for_its_installed_twin(
    tmp_path, zip_name, zipped, installed_package, installed_version, dropped
):
    archive = _zip(tmp_path / zip_name, zipped)
    site = _installed(tmp_path / "site", installed_package, installed_version)
    path = [archive, "/nowhere", site]
    assert installed_twin(archive, path) is dropped
    assert without_twin_zips(path) == ([p for p in path if p != archive] if dropped else path)


def test_a_broken_zip_stays(tmp_path):
    archive = tmp_path / "pyspark.zip"
    archive.write_bytes(b"not a zip")
    path = [str(archive), _installed(tmp_path / "site", "pyspark", SAME)]
    assert without_twin_zips(path) == path


def _daemon(tmp_path, sock_dir: str, module: str, kill_on_flush_failure: str):
    """The Python daemon as PythonWorkerFactory starts it for kxtx (Unix socket, workers reused):
    the process, the socket path it listens on, the file its (and its workers') stderr goes to."""
    err = tmp_path / "daemon.err"
    env = dict(
        os.environ,
        PYTHON_UNIX_DOMAIN_ENABLED="true",
        PYTHON_WORKER_FACTORY_SOCK_DIR=sock_dir,
        SPARK_REUSE_WORKER="1",
        # spark.python.daemon.killWorkerOnFlushFailure: the worker raises (printed by the daemon's
        # child) or prints the failure itself
        PYTHON_DAEMON_KILL_WORKER_ON_FLUSH_FAILURE=kill_on_flush_failure,
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(err, "wb"),
        env=env,
    )
    told = proc.stdout.read(4)
    assert len(told) == 4, err.read_text()  # it started
    (length,) = struct.unpack("!i", told)
    return proc, proc.stdout.read(length).decode(), err


@pytest.mark.parametrize("kill_on_flush_failure", ["true", ""])
def test_a_worker_whose_socket_the_jvm_closes_ends_without_a_traceback(tmp_path, kill_on_flush_failure):
    """The JVM closes the socket of a worker idle for a minute (PythonWorkerFactory's monitor):
    pyspark's daemon then printed "failed to flush ... BrokenPipeError" for each, on a pipe run's
    stderr, though nothing was wrong (issue 63)."""
    pytest.importorskip("pyspark")
    # (a Unix socket's path has at most 107 bytes: pytest's tmp_path under xdist can be longer)
    sock_dir = tempfile.mkdtemp(prefix="kxd")
    proc, path, err = _daemon(tmp_path, sock_dir, "kxtx.pipe.fast.daemon", kill_on_flush_failure)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        (pid,) = struct.unpack("!i", sock.recv(4))  # the forked worker's pid: it waits for a task
        sock.close()  # what the JVM's idle monitor does
        for _ in range(100):  # the worker has ended
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
    finally:
        proc.stdin.close()  # Spark stops its daemon so
        proc.wait(10)
        shutil.rmtree(sock_dir, ignore_errors=True)
    assert err.read_text() == ""


def _ignores(pid: int, sig: int) -> bool:
    """Does process `pid` ignore `sig` (the SigIgn mask of /proc/PID/status)?"""
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = next(int(ln.split()[1], 16) for ln in f if ln.startswith("SigIgn:"))
    except (FileNotFoundError, StopIteration, ProcessLookupError):
        return False
    return bool(mask >> (sig - 1) & 1)


def _gone(pid: int, within: float = 5) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_waiting_worker_ends_with_its_daemon(tmp_path):
    """The daemon's shutdown (SIGTERM from the JVM) sends its workers SIGHUP, which the daemon
    itself ignores: a worker waiting for its next task in kxtx's wrapper must die of it, as one
    waiting in pyspark's worker() does, and not outlive the daemon."""
    pytest.importorskip("pyspark")
    sock_dir = tempfile.mkdtemp(prefix="kxd")
    proc, path, err = _daemon(tmp_path, sock_dir, "kxtx.pipe.fast.daemon", "true")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        (pid,) = struct.unpack("!i", sock.recv(4))
        # the worker waits for a task once it no longer ignores SIGHUP (its handlers are set);
        # without kxtx's resetting them it never does: then on after a while
        deadline = time.monotonic() + 3
        while _ignores(pid, signal.SIGHUP) and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.terminate()
        proc.wait(10)
        alive = not _gone(pid)
        if alive:
            os.kill(pid, 9)
        assert not alive
    finally:
        sock.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
    assert err.read_text() == ""
