"""One SparkSession per `kxtx pipe` run, and the per-batch Spark job.

Local mode (`local[*]`) by default; `--master` for a cluster, where the UDF's source file is shipped
to the executors. Python workers run the interpreter kxtx runs in. Spark's own logging is limited to
errors and the web UI is off unless asked for.
"""

from __future__ import annotations

import glob
import os
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kxtx import fast
from kxtx.errors import KxtxError, UsageError
from kxtx.log import logger
from kxtx.pipe import spark_internals
from kxtx.pipe.fast import jvmcds
from kxtx.wording import install_hint

if TYPE_CHECKING:
    import pyarrow as pa

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


#: What the `spark` extra installs (pyproject.toml) and `kxtx pipe` needs.
SPARK_MODULES = ("pyspark", "pandas", "pyarrow")


def require_pyspark() -> None:
    """Every module of the spark extra that is missing, named at once (one pip install for all)."""
    import importlib.util

    missing = [m for m in SPARK_MODULES if importlib.util.find_spec(m) is None]
    if not missing:
        try:  # present, but one of their own dependencies may be missing (py4j for pyspark)
            import pyarrow  # noqa: F401
            import pyspark  # noqa: F401
        except ImportError as exc:
            missing = [exc.name or str(exc)]
    if missing:
        raise UsageError(
            f"kxtx pipe needs PySpark, pandas and pyarrow ({', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing): {install_hint('spark')}"
        )


def needs_session(exc: BaseException) -> bool:
    """Did importing the UDF fail only because no SparkContext was running yet?"""
    text = str(exc)
    return "SESSION_OR_CONTEXT_NOT_EXISTS" in text or "should be created first" in text


def is_local(master: str) -> bool:
    return master.startswith("local")


#: The driver JVM's JIT and collector. It schedules tasks and moves Arrow streams but never converts
#: a row, so code compiled by C1 alone is fast enough, and C2's compiler threads cost more than they
#: gave (on few cores they also slow the Python workers). The serial collector suits its small,
#: quiet heap. See bench/README.md, "The Spark driver JVM". The JVM's own warnings go to stderr:
#: its stdout is kxtx's, which is data. `--spark-conf spark.driver.extraJavaOptions=...` replaces
#: these.
DRIVER_JVM_OPTIONS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xlog:disable",
    "-Xlog:all=warning:stderr",
)
#: the class-data-sharing archive the JVM this process launched writes at exit (kxtx.pipe.fast.jvmcds)
_CDS_PENDING: Path | None = None


def start(
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    debug: bool = False,
    ui: bool = False,
    app_name: str = "kxtx-pipe",
) -> Any:  # the SparkSession (pyspark's objects are typed Any here, as py4j's)
    """Start (or join) the SparkSession for this run."""
    return begin(master, conf, debug, ui, app_name).session()


def begin(
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    debug: bool = False,
    ui: bool = False,
    app_name: str = "kxtx-pipe",
) -> Starting:
    """Begin starting the SparkSession for this run (`start`'s arguments): the JVM is launched on
    a thread of its own while the caller goes on; `Starting.session()` waits for it and makes the
    session, `Starting.abandon()` ends it unused."""
    require_pyspark()
    from pyspark import SparkConf

    # The environment is set here, on the caller's thread, before the launch thread exists: a
    # variable added while another thread iterates os.environ (urllib's proxy lookup, in a
    # registry request) raises there.
    if is_local(master) or not os.environ.get("PYSPARK_PYTHON"):
        # Workers must unpickle the UDF with the same interpreter and packages as the driver. On a
        # cluster a PYSPARK_PYTHON the user set is kept (the path can differ on the executors).
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    settings = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        # Python workers talk to the JVM over a Unix socket (Spark >= 4.1; ignored before): over
        # TCP every task waited on Nagle vs delayed ACK, a large share of an empty job's time
        # (bench/README.md, "The task consumer's settings, and Spark's start and stop").
        "spark.python.unix.domain.socket.enabled": "true",
    }
    if is_local(master) and fast.enabled("pipe-daemon"):
        # The local workers run this interpreter, so kxtx's daemon can start them: it imports the
        # installed, compiled pyspark instead of compiling pyspark.zip's (kxtx.pipe.fast.daemon).
        settings["spark.python.daemon.module"] = "kxtx.pipe.fast.daemon"
    java_options = list(DRIVER_JVM_OPTIONS)
    if not debug:
        java_options.append(f"-Dlog4j2.configurationFile={_quiet_log4j()}")
    conf = conf or {}
    if "spark.driver.extraJavaOptions" not in conf and not spark_internals.jvm_running():
        # (the user's options replace all of kxtx's; a JVM already running keeps its own)
        global _CDS_PENDING
        cds_options, _CDS_PENDING = jvmcds.plan(DRIVER_JVM_OPTIONS, conf)
        java_options += cds_options
    settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
    settings.update(conf)
    spark_conf = SparkConf()
    for key, value in settings.items():
        spark_conf.set(key, value)
    return Starting(spark_conf, master, debug)


class Starting:
    """A SparkSession being started (`begin`). The JVM's launch (seconds) runs on a thread of its
    own, so `kxtx pipe` looks its schemas up in the registry meanwhile (bench/README.md, "kxtx's
    Avro pipe against Quix Streams exactly-once"); the context and the session, which set
    environment variables of their own, are made in `session()`, on the caller's turn. Either
    `session()` or `abandon()` must follow."""

    def __init__(self, spark_conf: Any, master: str, debug: bool) -> None:  # a SparkConf
        self.conf, self.master, self.debug = spark_conf, master, debug
        self._gateway: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if not spark_internals.jvm_running():  # else the context joins the JVM this process has
            self._thread = threading.Thread(target=self._launch, name="kxtx-jvm-launch", daemon=True)
            self._thread.start()

    def _launch(self) -> None:
        try:
            self._gateway = _launch_jvm(self.conf, self.debug)
        except BaseException as exc:  # noqa: BLE001 - re-raised by session() on the caller's thread
            self._error = exc

    def _launched(self) -> Any:
        """Wait for the launch; its gateway (None: the JVM was running already)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error
        return self._gateway

    def session(self) -> Any:  # a SparkSession
        try:
            session = _session(self.conf, self._launched())
        except Exception as exc:
            raise SparkError(
                f"could not start Spark (master {self.master}; is Java 17+ installed and JAVA_HOME "
                f"set?): {first_line(exc)}"
            ) from exc
        finally:
            self._gateway = None  # the session's, or ended with its failure
        session.sparkContext.setLogLevel("WARN" if self.debug else "ERROR")
        logger.info("Spark %s started, master %s", session.version, self.master)
        return session

    def abandon(self) -> None:
        """The run stopped before it needed Spark (a check failed, a stop signal): wait for the
        launch (a launching JVM cannot be interrupted, see `_launch_jvm`) and end the JVM."""
        try:
            gateway = self._launched()
        except BaseException:  # noqa: BLE001 - the launch failed: nothing runs; the run's own error stands
            return
        self._gateway = None
        if gateway is not None:
            # Killed, not let to exit: a class archive written now would hold only the launch's
            # classes, and later starts would map it instead of the whole of Spark's.
            _end_jvm(gateway, keep_archive=False)


def _launch_jvm(spark_conf: Any, debug: bool = False) -> Any:  # a SparkConf; a py4j gateway
    """The JVM, in a session of its own, so a terminal's SIGINT/SIGHUP reaches kxtx only (which
    stops it: it also exits when its stdin, a pipe from kxtx, closes), its stderr going through
    `_JvmStderr`. PySpark's launcher is not interrupted by a signal (see kxtx.signals.Guard), so
    the JVM always finishes starting and can be stopped."""
    from pyspark.java_gateway import launch_gateway

    stderr = _JvmStderr(debug)
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": stderr.fd, "start_new_session": True})
    except Exception as exc:
        stderr.close()
        raise SparkError(stderr.last_line() or first_line(exc)) from exc
    stderr.close()
    return gateway


def _session(spark_conf: Any, gateway: Any) -> Any:  # a SparkConf, a py4j gateway; a SparkSession
    """The context (on the JVM of `gateway`, launched by `_launch_jvm`; None: the JVM this process
    has), then the session. The context is created off the main thread: PySpark installs a SIGINT
    handler that raises KeyboardInterrupt anywhere (e.g. inside a py4j call) when created on the
    main thread."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    made: dict = {}

    def create() -> None:
        try:
            if spark_internals.active_context() is None:
                SparkContext(conf=spark_conf, gateway=gateway)
            made["session"] = SparkSession.builder.getOrCreate()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            made["error"] = exc

    thread = threading.Thread(target=create, name="kxtx-spark-start", daemon=True)
    thread.start()
    thread.join()
    if "error" in made:
        if gateway is not None:
            _end_jvm(gateway)
        raise made["error"]
    return made["session"]


class _JvmStderr:
    """A pipe for the JVM's stderr, copied to ours line by line by a daemon thread, leaving out
    the JVM's "WARNING: Using incubator modules" notice (Spark adds jdk.incubator.vector; the line
    appeared on every run). The last lines are kept for a launch failure's message."""

    DROP = (b"WARNING: Using incubator modules",)
    #: the copier of the JVM this process launched (`stop` silences it)
    current: _JvmStderr | None = None

    def __init__(self, debug: bool = False) -> None:
        self.debug, self.stopping = debug, False
        _JvmStderr.current = self
        self._read, self.fd = os.pipe()
        self._lines: list[bytes] = []
        self._finished = threading.Event()
        threading.Thread(target=self._copy, name="kxtx-jvm-stderr", daemon=True).start()

    def close(self) -> None:
        """Close kxtx's copy of the write end (the JVM keeps its own)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def last_line(self) -> str:
        """The JVM's last words, once it has exited (its stderr then ends)."""
        self._finished.wait(5)
        text = [ln.decode("utf-8", "replace").strip() for ln in self._lines if ln.strip()]
        return text[-1][:500] if text else ""

    def _copy(self) -> None:
        try:
            with os.fdopen(self._read, "rb") as source:
                for line in source:
                    if line.startswith(self.DROP) or (self.stopping and not self.debug):
                        # While kxtx stops Spark, workers killed mid-task may print (parts of)
                        # tracebacks that say nothing about the run; kxtx reports the stop.
                        continue
                    self._lines = (self._lines + [line])[-5:]
                    try:
                        os.write(2, line)
                    except OSError:
                        pass
        finally:
            self._finished.set()


def ship(session: Any, source: Path | None, module: ModuleType) -> None:
    """Make the UDF and kxtx's worker-side code available on the workers.

    Functions from the user's own file are pickled by value (workers need not find the file); on a
    cluster the file is also added to the job so imports inside it resolve, and kxtx's worker code
    (`worker_modules()`) goes by value too, so executors need pyarrow (and pandas for pandas
    UDFs) but not kxtx."""
    from pyspark import cloudpickle

    remote = not is_local(session.sparkContext.master)
    modules = [module] if source is not None else []
    if remote:
        modules += worker_modules()
    for mod in modules:
        try:
            cloudpickle.register_pickle_by_value(mod)
        except ValueError:
            pass  # already registered
    if remote and source is not None:
        session.sparkContext.addPyFile(str(source))


def worker_modules() -> list:
    """Every kxtx module the worker code reaches (`kxtx.pipe.worker.modules()`), pickled by value
    on a cluster."""
    from kxtx.pipe import worker

    return worker.modules()


@dataclass(frozen=True)
class BatchJob:
    """How every batch runs: the task function, rows per UDF call, and the directory where local
    tasks exchange files with the driver (None: the data goes through Spark)."""

    task: Callable | None  # None: only `chunk` is wanted (executors mode plans with it)
    chunk: int
    spool: str | None


def batch_job(session: Any, task: Callable[[Iterable[Any]], Iterator[Any]] | None) -> BatchJob:
    sc = session.sparkContext
    # Rows per UDF call: Spark's own Arrow batch size for Python UDFs (10000 unless set).
    value = session.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
    try:
        chunk = max(1, int(value))
    except ValueError:
        raise UsageError(f"spark.sql.execution.arrow.maxRecordsPerBatch={value!r} is not a number") from None
    # Local workers share the driver's disk: files in PySpark's own temp dir (removed when the
    # JVM exits), unless local disk I/O must be encrypted (PySpark then avoids files too).
    encrypted = sc.getConf().get("spark.io.encryption.enabled", "false").lower() == "true"
    spool = spark_internals.temp_dir(sc) if is_local(sc.master) and not encrypted else None
    return BatchJob(task, chunk, spool if spool and os.path.isdir(spool) else None)


def transform(session: Any, table: pa.Table, job: BatchJob) -> pa.Table:
    """Run one batch through the UDF: Arrow table in, Arrow table out (one Spark job).

    A stop signal during the job is held until the job returns (within the caller's guard, if it
    holds one): raised inside a py4j call, it would become a Py4JError and leave the gateway
    connection mid-answer."""
    from kxtx.signals import Guard

    with Guard() as held:
        try:
            result, error = _run_job(session.sparkContext, table, job), None
        except Exception as exc:  # noqa: BLE001 - worker crashes, OOM, lost executors
            result, error = None, exc
    held.check()
    if error is not None:
        raise SparkError(f"Spark job failed: {first_line(error)}") from error
    return result


def _run_job(sc: Any, table: pa.Table, job: BatchJob) -> pa.Table:  # sc: a SparkContext
    """One task per core (never less than a chunk each), each given an Arrow IPC stream.

    Measured (bench/bench_pipe.py, 200k x 100 B, 2 cores): `createDataFrame(table).mapInArrow(...)
    .toArrow()` converts every row Arrow -> JVM row -> Arrow twice and runs a task per 10k-row
    batch: ~2.7 s a batch, 1.2 s of it JVM CPU. Streams as bytes through an RDD (the JVM copies
    opaque bytes): ~0.35-0.65 s. Local tasks reading and writing files, the JVM moving only
    their names: ~0.14 s, about the cost of an empty job."""
    from kxtx.pipe.worker.transform import output_schema, read_ipc, write_ipc

    n = max(1, min(sc.defaultParallelism, -(-table.num_rows // job.chunk)))
    size = -(-table.num_rows // n)
    parts = [table.slice(i * size, size) for i in range(n)]
    if job.spool is None:
        streams = [write_ipc(None, part, table.schema, job.chunk) for part in parts]
        return read_ipc(sc.parallelize(streams, n).mapPartitions(job.task).collect(), output_schema())
    prefix = os.path.join(job.spool, f"kxtx-batch-{uuid.uuid4().hex}")
    paths = [f"{prefix}-{i}" for i in range(n)]
    try:
        for path, part in zip(paths, parts):
            write_ipc(path, part, table.schema, job.chunk)
        return read_ipc(sc.parallelize(paths, n).mapPartitions(job.task).collect(), output_schema())
    finally:
        for path in glob.glob(f"{glob.escape(prefix)}-*"):  # inputs; outputs even of a failed job
            os.unlink(path)


def stop(session: Any) -> None:
    """Stop the session and, if this process launched it, the JVM (and with it Spark's Python
    workers): when kxtx exits, nothing it started is left running."""
    # The accumulator server's reader polls the JVM's connection once a second until it closes,
    # and SparkContext.stop waited for that poll, most of a stop's time (bench/README.md, "kxtx's
    # Avro pipe against Quix Streams exactly-once"). Its shutdown is asked for before the JVM is
    # ended, whose exit closes the connection: the server's thread then ends at once. (A JVM this
    # process did not launch keeps running: the shutdown waits for the poll, as it did.)
    accumulators = spark_internals.take_accumulator_server(session.sparkContext)
    if _JvmStderr.current is not None:
        _JvmStderr.current.stopping = True
    try:
        session.stop()
    except Exception:  # noqa: BLE001 - shutting down anyway
        pass
    closing = None
    if accumulators is not None:
        closing = threading.Thread(target=accumulators.shutdown, name="kxtx-accumulators-stop", daemon=True)
        closing.start()
    _end_jvm()
    if closing is not None:
        closing.join()


def _end_jvm(gateway: Any = None, keep_archive: bool = True, grace: float = 15.0) -> None:
    """Close the JVM's stdin (PySpark's gateway server exits on EOF), wait, kill if it lingers;
    forget the gateway so a later start launches a new JVM. `gateway`: a JVM's that no context has
    taken up (pyspark knows only a context's). Without `keep_archive`, a JVM that would write the
    class archive at exit (kxtx.pipe.fast.jvmcds) is killed instead: the archive is dropped."""
    import subprocess

    global _CDS_PENDING

    gateway = spark_internals.forget_gateway() or gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the sockets go with the JVM anyway
        pass
    try:
        proc.stdin.close()
    except OSError:
        pass
    if _CDS_PENDING is not None and not keep_archive:
        proc.kill()
        proc.wait()
    else:
        if _CDS_PENDING is not None and not _stopping():
            # Writing the class archive at exit is slow, and many times slower on a loaded
            # machine: killed at the usual grace it is lost, and the next start writes it again.
            # Not when a stop signal ends the run: the user wants out, and would wait the whole
            # grace (bench/README.md, "The task consumer's settings, and Spark's start and stop").
            grace = max(grace, jvmcds.WRITE_GRACE_S)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            logger.info("the Spark JVM did not exit within %.0f s of its stdin closing: killing it", grace)
            proc.kill()
            proc.wait()
    jvmcds.settle(_CDS_PENDING, proc.returncode)
    _CDS_PENDING = None


def _stopping() -> bool:
    """Whether this runs in the clean-up of a stop signal (Ctrl-C, SIGTERM, SIGHUP): the signal's
    own exception, or the Interrupted a command turns it into (the pipe's, with its summary)."""
    import sys

    from kxtx.errors import Interrupted
    from kxtx.signals import stop_of

    exc = sys.exc_info()[1]
    return isinstance(exc, Interrupted) or stop_of(exc) is not None


def _quiet_log4j() -> str:
    path = Path(tempfile.gettempdir()) / f"kxtx-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _QUIET_LOG4J2:
        path.write_text(_QUIET_LOG4J2)
    return str(path)


def first_line(exc: BaseException) -> str:
    """The line that says what went wrong. For an error from a Python worker that is the last
    line of its traceback (e.g. "ModuleNotFoundError: No module named 'confluent_kafka'" on an
    executor), after the first ("An exception was thrown from the Python worker:")."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return text
    if any(ln.startswith("Traceback (most recent call last)") for ln in lines):
        said = [
            ln
            for ln in lines[1:]
            if not ln[0].isspace()
            and not ln.startswith(("Traceback (", "During handling of", "The above exception"))
        ]
        if said:
            return f"{lines[0].rstrip(':. ')}: {said[-1]}"[:500]
    return lines[0][:500]
