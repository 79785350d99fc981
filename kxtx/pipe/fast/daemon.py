"""Spark's Python daemon (`pyspark.daemon`), importing the installed, compiled pyspark.

Spark starts the Python daemon that forks its Python workers with SPARK_HOME/python/lib/pyspark.zip
(and py4j's zip) first on PYTHONPATH. Python never caches the bytecode of a module imported from a
zip, so each daemon compiled every pyspark module it imports, at every start of every pipe run
(bench/README.md, "Spark's Python daemon"). With a local master, where the workers run this
interpreter, `kxtx.pipe.spark.start` has Spark start this module instead
(`spark.python.daemon.module`): a zip whose package is installed beside kxtx in the same version
(the same `version.py`) leaves sys.path, then pyspark's own daemon runs as Spark would have run it.
A zip of another version stays: the workers must speak the JVM's protocol.

It also keeps a normal end quiet: the JVM closes the socket of a Python worker idle for a minute
(PythonWorkerFactory's idle monitor, not configurable), and pyspark's `worker()`, reading the next
task from a closed socket, printed a BrokenPipeError traceback on stderr for each such worker
("PySpark daemon failed to flush the output"). `quiet_idle_close` wraps it: a worker whose socket
the JVM closed before sending a task ends without a word.

It runs before anything imported pyspark, so it imports only the standard library.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import zipfile
from collections.abc import Callable
from importlib.machinery import PathFinder

#: the packages Spark puts on the workers' path as zips, by the zip's file name
ZIPPED = {"pyspark.zip": "pyspark", "py4j-": "py4j"}


def _package(zip_path: str) -> str | None:
    name = os.path.basename(zip_path)
    for prefix, package in ZIPPED.items():
        if name.startswith(prefix) and name.endswith(".zip"):
            return package
    return None


def installed_twin(zip_path: str, path: list[str]) -> bool:
    """Is the package in this zip also installed, outside any zip on `path`, in the same version?"""
    package = _package(zip_path)
    if package is None:
        return False
    spec = PathFinder.find_spec(package, [p for p in path if not p.endswith(".zip")])
    if spec is None or not spec.submodule_search_locations:
        return False
    try:
        with zipfile.ZipFile(zip_path) as archive:
            zipped = archive.read(f"{package}/version.py")
        with open(os.path.join(next(iter(spec.submodule_search_locations)), "version.py"), "rb") as f:
            installed = f.read()
    except (OSError, KeyError, zipfile.BadZipFile):
        return False
    return zipped == installed


def without_twin_zips(path: list[str]) -> list[str]:
    """`path` without the zips whose package is installed in the same version."""
    return [p for p in path if not (p.endswith(".zip") and installed_twin(p, path))]


def closed_by_peer(sock: socket.socket) -> bool:
    """Has the other end (the JVM) closed this socket before sending anything more? Waits, as the
    worker would, for the next task's first byte, and leaves it unread."""
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except ConnectionResetError:
        return True
    except OSError:  # a timeout, or anything else: pyspark's own worker decides
        return False


def quiet_idle_close(worker: Callable[[socket.socket, bool], int]) -> Callable[[socket.socket, bool], int]:
    """pyspark.daemon's `worker(sock, authenticated) -> exit code`, but a socket the JVM closed
    between tasks (an idle worker it let go) ends the worker quietly instead of reading a task
    from it: a non-zero code ends the forked worker's loop, as pyspark's own non-zero codes do."""

    def quiet_worker(sock: socket.socket, authenticated: bool) -> int:
        # the signals as pyspark's worker() sets them first: the forked worker waits here with them,
        # not with the daemon's (which ignore SIGHUP, the daemon's "shut down" to its workers)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if closed_by_peer(sock):
            return 1
        return worker(sock, authenticated)

    return quiet_worker


def main() -> None:
    sys.path[:] = without_twin_zips(sys.path)
    from pyspark import daemon

    daemon.worker = quiet_idle_close(daemon.worker)  # type: ignore[assignment]  # the same signature
    daemon.manager()


if __name__ == "__main__":
    main()
