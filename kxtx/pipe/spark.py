"""One SparkSession per `kxtx pipe` run, and the per-batch Spark job.

Local mode (`local[*]`) by default; `--master` for a cluster, where the UDF's source file is shipped
to the executors. Python workers run the interpreter kxtx runs in. Spark's own logging is limited to
errors and the web UI is off unless asked for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import tempfile
from pathlib import Path

from kxtx.errors import KxtxError, UsageError
from kxtx.log import logger

_QUIET_LOG4J2 = """\
name = kxtx-quiet
rootLogger.level = error
# Shell loggers at the root level, so Spark does not announce "Setting default log level".
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
"""


class SparkError(KxtxError):
    """Spark could not start, or a batch job failed for a reason outside the UDF."""


def require_pyspark() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"kxtx pipe needs PySpark and pyarrow ({exc.name or exc} is missing): "
            "pip install 'kxtx[spark]'"
        ) from None


def needs_session(exc: BaseException) -> bool:
    """Did importing the UDF fail only because no SparkContext was running yet?"""
    text = str(exc)
    return "SESSION_OR_CONTEXT_NOT_EXISTS" in text or "should be created first" in text


def is_local(master: str) -> bool:
    return master.startswith("local")


def start(master: str = "local[*]", conf: dict[str, str] | None = None, debug: bool = False,
          ui: bool = False, app_name: str = "kxtx-pipe"):
    """Start (or join) the SparkSession for this run."""
    require_pyspark()
    from pyspark.sql import SparkSession

    if is_local(master) or not os.environ.get("PYSPARK_PYTHON"):
        # Workers must unpickle the UDF with the same interpreter and packages as the driver. On a
        # cluster a PYSPARK_PYTHON the user set is kept (the path can differ on the executors).
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Small local batches: the default 200 shuffle partitions would only add scheduling cost.
        "spark.sql.shuffle.partitions": "2",
    }
    if not debug:
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={_quiet_log4j()}"
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    previous_sigint = signal.getsignal(signal.SIGINT)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - JVM launch problems surface as many types
        raise SparkError(
            f"could not start Spark (master {master}; is Java 17+ installed and JAVA_HOME set?): "
            f"{_first_line(exc)}"
        ) from exc
    if threading.current_thread() is threading.main_thread():
        # SparkContext's SIGINT handler cancels jobs through py4j, re-entering a py4j call the
        # main thread may be in (tracebacks on Ctrl-C). kxtx's own handling aborts the
        # transaction and stops the session, which cancels the jobs.
        signal.signal(signal.SIGINT, previous_sigint)
    session.sparkContext.setLogLevel("WARN" if debug else "ERROR")
    logger.info("Spark %s started, master %s", session.version, master)
    return session


def ship(session, source: Path | None, module) -> None:
    """Make the UDF and kxtx's worker-side code available on the workers.

    Functions from the user's own file are pickled by value (workers need not find the file); on a
    cluster the file is also added to the job so imports inside it resolve, and kxtx's worker code
    (transform + contract) goes by value too, so executors need pyarrow (and pandas for pandas
    UDFs) but not kxtx."""
    from pyspark import cloudpickle

    remote = not is_local(session.sparkContext.master)
    modules = [module] if source is not None else []
    if remote:
        from kxtx.pipe import contract, transform as worker_code, udf

        modules += [worker_code, contract, udf]
    for mod in modules:
        try:
            cloudpickle.register_pickle_by_value(mod)
        except ValueError:
            pass  # already registered
    if remote and source is not None:
        session.sparkContext.addPyFile(str(source))


def transform(session, table, mapper, ddl: str):
    """Run one batch through the UDF: Arrow table in, Arrow table out (one Spark job)."""
    with _deferred_signals() as received:
        try:
            df = session.createDataFrame(table)
            result, error = df.mapInArrow(mapper, ddl).toArrow(), None
        except Exception as exc:  # noqa: BLE001 - worker crashes, OOM, lost executors
            result, error = None, exc
    if received:
        from kxtx.signals import Terminated

        raise Terminated() if received[-1] == signal.SIGTERM else KeyboardInterrupt()
    if error is not None:
        raise SparkError(f"Spark job failed: {_first_line(error)}") from error
    return result


@contextlib.contextmanager
def _deferred_signals():
    """Hold SIGINT/SIGTERM until the Spark call returns.

    Raised inside a py4j call, the exception would be turned into a Py4JError (and the gateway
    connection left mid-answer); held, it is raised right after the job, and the engine aborts."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stop(session) -> None:
    server = getattr(session.sparkContext, "_accumulatorServer", None)
    if server is not None:
        # The JVM closing the accumulator connection on stop can race the reader thread, which
        # then prints an EOFError traceback that means nothing to the user.
        server.handle_error = lambda *args: None
    try:
        session.stop()
    except Exception:  # noqa: BLE001 - shutting down anyway
        pass


def _quiet_log4j() -> str:
    path = Path(tempfile.gettempdir()) / f"kxtx-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _QUIET_LOG4J2:
        path.write_text(_QUIET_LOG4J2)
    return str(path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0][:500] if lines else text
