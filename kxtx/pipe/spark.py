"""One SparkSession per `kxtx pipe` run, and the per-batch Spark job.

Local mode (`local[*]`) by default; `--master` for a cluster, where the UDF's source file is shipped
to the executors. Python workers run the interpreter kxtx runs in. Spark's own logging is limited to
errors and the web UI is off unless asked for.
"""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

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
        # Python workers talk to the JVM over a Unix socket (Spark >= 4.1; ignored before): over
        # TCP every task waited ~40 ms (Nagle vs delayed ACK), a third of an empty job's time.
        "spark.python.unix.domain.socket.enabled": "true",
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


@dataclass(frozen=True)
class BatchJob:
    """How every batch runs: the task function, rows per UDF call, and the directory where local
    tasks exchange files with the driver (None: the data goes through Spark)."""

    task: Callable
    chunk: int
    spool: str | None


def batch_job(session, task) -> BatchJob:
    sc = session.sparkContext
    # Rows per UDF call: Spark's own Arrow batch size for Python UDFs (10000 unless set).
    value = session.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
    try:
        chunk = max(1, int(value))
    except ValueError:
        raise UsageError(f"spark.sql.execution.arrow.maxRecordsPerBatch={value!r} is not a number")
    # Local workers share the driver's disk: files in PySpark's own temp dir (removed when the
    # JVM exits), unless local disk I/O must be encrypted (PySpark then avoids files too).
    encrypted = sc.getConf().get("spark.io.encryption.enabled", "false").lower() == "true"
    spool = getattr(sc, "_temp_dir", None) if is_local(sc.master) and not encrypted else None
    return BatchJob(task, chunk, spool if spool and os.path.isdir(spool) else None)


def transform(session, table, job: BatchJob):
    """Run one batch through the UDF: Arrow table in, Arrow table out (one Spark job)."""
    with _deferred_signals() as received:
        try:
            result, error = _run_job(session.sparkContext, table, job), None
        except Exception as exc:  # noqa: BLE001 - worker crashes, OOM, lost executors
            result, error = None, exc
    if received:
        from kxtx.signals import Terminated

        raise Terminated() if received[-1] == signal.SIGTERM else KeyboardInterrupt()
    if error is not None:
        raise SparkError(f"Spark job failed: {_first_line(error)}") from error
    return result


def _run_job(sc, table, job: BatchJob):
    """One task per core (never less than a chunk each), each given an Arrow IPC stream.

    Measured (bench/bench_pipe.py, 200k x 100 B, 2 cores): `createDataFrame(table).mapInArrow(...)
    .toArrow()` converts every row Arrow -> JVM row -> Arrow twice and runs a task per 10k-row
    batch: ~2.7 s a batch, 1.2 s of it JVM CPU. Streams as bytes through an RDD (the JVM copies
    opaque bytes): ~0.35-0.65 s. Local tasks reading and writing files, the JVM moving only
    their names: ~0.14 s, about the cost of an empty job."""
    from kxtx.pipe.transform import output_schema, read_ipc, write_ipc

    n = max(1, min(sc.defaultParallelism, -(-table.num_rows // job.chunk)))
    size = -(-table.num_rows // n)
    parts = [table.slice(i * size, size) for i in range(n)]
    if job.spool is None:
        streams = [write_ipc(None, part, table.schema, job.chunk) for part in parts]
        return read_ipc(sc.parallelize(streams, n).mapPartitions(job.task).collect(),
                        output_schema())
    prefix = os.path.join(job.spool, f"kxtx-batch-{uuid.uuid4().hex}")
    paths = [f"{prefix}-{i}" for i in range(n)]
    try:
        for path, part in zip(paths, parts):
            write_ipc(path, part, table.schema, job.chunk)
        return read_ipc(sc.parallelize(paths, n).mapPartitions(job.task).collect(),
                        output_schema())
    finally:
        for path in glob.glob(f"{glob.escape(prefix)}-*"):  # inputs; outputs even of a failed job
            os.unlink(path)


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
