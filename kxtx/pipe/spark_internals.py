"""The one place kxtx reaches past pyspark's public API (tests/unit/test_import_graph.py holds it).

kxtx launches Spark's JVM itself (its own stderr, its own session, so a terminal's SIGINT reaches
kxtx only) and ends it itself (a pipe's exit must not wait for Spark's shutdown hooks). pyspark has
no public call for either, so kxtx reads and resets `SparkContext`'s class-level JVM handles:
`_lock`, `_gateway`, `_jvm` and `_active_spark_context`, the ones `SparkContext.__init__` and
`stop()` use. It also takes a context's accumulator server (`_accumulatorServer`) to shut it down
itself, while the JVM exits (`take_accumulator_server`).

Written against pyspark 4.0 to 4.3, the range pyproject.toml allows; checked once per process, so
a pyspark that renamed them fails with one line naming its version.
"""

from __future__ import annotations

from typing import Any

from kxtx.errors import KxtxError

#: The class attributes of SparkContext kxtx reads or resets.
USED = ("_lock", "_gateway", "_jvm", "_active_spark_context")

_checked = False


def _context() -> Any:  # pyspark's SparkContext class
    global _checked

    from pyspark import SparkContext

    if not _checked:
        missing = [name for name in USED if not hasattr(SparkContext, name)]
        if missing:
            import pyspark

            raise KxtxError(
                f"pyspark {pyspark.__version__} has no SparkContext.{missing[0]}, which kxtx starts "
                "and stops Spark's JVM with: install the range kxtx is tested with "
                "(pip install 'pyspark>=4.0,<5')"
            )
        _checked = True
    return SparkContext


def jvm_running() -> bool:
    """Whether this process has a JVM gateway (launched by kxtx or by pyspark)."""
    sc = _context()
    with sc._lock:
        return sc._gateway is not None


def active_context() -> Any:
    """This process's SparkContext, or None."""
    return _context()._active_spark_context


def forget_gateway() -> Any:
    """Take the JVM gateway away from pyspark, so a later start launches a new JVM; the gateway
    (None when there was none), for the caller to shut down."""
    sc = _context()
    with sc._lock:
        gateway, sc._gateway, sc._jvm = sc._gateway, None, None
    return gateway


def temp_dir(sc: Any) -> str | None:
    """PySpark's own temporary directory of a SparkContext (removed when the JVM exits), or None."""
    return getattr(sc, "_temp_dir", None)


def take_accumulator_server(sc: Any) -> Any:
    """Take the accumulator server away from its SparkContext, so the context's stop does not wait
    for it; the server (None when it had none), for the caller to shut down. Its error handler is
    silenced: the JVM closing its connection on stop can race the reader thread, which then prints
    an EOFError traceback that means nothing to a user."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda *args: None
        sc._accumulatorServer = None
    return server
