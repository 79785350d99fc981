"""A class-data-sharing (AppCDS) archive for the Spark driver JVM: its start-up at half the CPU.

Every `kxtx pipe` starts a JVM that loads and verifies the same ~10,000 classes of Spark. Java
17's dynamic archive (`-XX:ArchiveClassesAtExit`) stores them once, parsed and verified, and later
JVMs map the file (`-XX:SharedArchiveFile`). Measured on the 2-core machine (start, six small jobs,
stop): the JVM's CPU 5.4 s -> 2.8 s, the wall time 5.9 s -> 3.6 s (bench/README, "The Spark driver
JVM").

- The first run with a given Java and Spark writes the archive when its JVM exits (~115 MB, under
  `$XDG_CACHE_HOME/kxtx/spark-cds/`); it is kept only when that JVM exits normally, under a name
  keyed by the java binary, Spark's jars (where they are, their sizes and times) and the settings
  that change the driver's class path, so an upgrade or another virtualenv makes a new one. The
  `KEEP` most recently used archives are kept.
- The JVM checks an archive before using it (same JDK build, same class path) and starts without
  it otherwise: a stale archive only costs the speed-up.
- `KXTX_SPARK_CDS=off` turns it off; `--spark-conf spark.driver.extraJavaOptions=...` replaces
  kxtx's JVM options, this one included.

The JVM's CDS messages are off: an archive it cannot use is not the user's concern.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

ENV = "KXTX_SPARK_CDS"
#: archives kept in the cache (one per Java/Spark combination in use)
KEEP = 3
#: an archive still being written after this long was left by a JVM that did not exit normally
STALE_S = 3600.0
#: how long a JVM that writes the archive as it exits is waited for (kxtx.pipe.spark._end_jvm):
#: far longer than a quiet machine needs, since a loaded one needs many times that (see
#: bench/README.md, "The task consumer's settings, and Spark's start and stop")
WRITE_GRACE_S = 120.0
#: CDS messages off (after kxtx's JVM options, which send the JVM's warnings to stderr)
LOG_OPTIONS = ("-Xlog:cds*=off:stderr",)
#: Spark settings that change the driver JVM's class path (an archive is valid for one class path)
CLASSPATH_SETTINGS = (
    "spark.jars",
    "spark.jars.packages",
    "spark.driver.extraClassPath",
    "spark.driver.userClassPathFirst",
)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kxtx" / "spark-cds"


def enabled(env: Mapping[str, str]) -> bool:
    return env.get(ENV, "").strip().lower() not in ("0", "off", "false", "no")


def archive_key(
    java: tuple, jars: Iterable[tuple], jvm_options: Iterable[str], conf: Mapping[str, str]
) -> str:
    """A name for the archive of one JVM set-up: the java binary (path, size, mtime), Spark's jars
    (path, size, mtime), kxtx's JVM options and the class-path settings."""
    parts = [repr(java), repr(sorted(jars)), repr(list(jvm_options))]
    parts += [f"{k}={conf.get(k, '')}" for k in CLASSPATH_SETTINGS]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def plan(
    jvm_options: Iterable[str], conf: Mapping[str, str], env: Mapping[str, str] = os.environ
) -> tuple[list[str], Path | None]:
    """The JVM options for this start (the archive to use, or to write) and the file being written
    (None: an archive is used, or none is wanted). See `settle`."""
    if not enabled(env):
        return [], None
    setup = _setup(env)
    if setup is None:
        return [], None
    java, jars = setup
    directory = cache_dir()
    final = directory / f"{archive_key(java, jars, list(jvm_options), conf)}.jsa"
    if final.is_file():
        try:
            os.utime(final)  # the most recently used are kept when pruning
            # Also drops what a JVM left half-written when kxtx was killed (no `settle` then).
            prune(directory)
        except OSError:
            pass  # another user's cache, read-only: using the archive is enough
        return [f"-XX:SharedArchiveFile={final}", *LOG_OPTIONS], None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return [], None  # no cache directory: no archive, same JVM otherwise
    pending = directory / f"{final.stem}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    return [f"-XX:ArchiveClassesAtExit={pending}", *LOG_OPTIONS], pending


def settle(pending: Path | None, exit_code: int | None) -> None:
    """After the JVM that was to write `pending` has exited: keep the archive if it exited
    normally, drop it otherwise; prune old archives and leftovers."""
    if pending is None:
        return
    final = pending.parent / (pending.name.split(".", 1)[0] + ".jsa")
    try:
        if exit_code == 0 and pending.is_file() and pending.stat().st_size > 0:
            os.replace(pending, final)
        else:
            pending.unlink(missing_ok=True)
        prune(pending.parent)
    except OSError:
        pass  # a cache problem never fails the run


def prune(directory: Path, keep: int = KEEP, now: float | None = None) -> None:
    """Keep the `keep` most recently used archives; remove leftovers older than STALE_S."""
    now = time.time() if now is None else now
    archives = sorted(directory.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        old.unlink(missing_ok=True)
    for tmp in directory.glob("*.tmp"):
        if now - tmp.stat().st_mtime > STALE_S:
            tmp.unlink(missing_ok=True)


def _setup(env: Mapping[str, str]) -> tuple[tuple, list[tuple]] | None:
    """(java binary, Spark's jars) as PySpark will start them, or None when either is not found."""
    home = env.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    try:
        # PySpark's own order: SPARK_HOME, else the pip package's directory.
        spec = importlib.util.find_spec("pyspark")
        spark_home = env.get("SPARK_HOME") or os.path.dirname(str(spec.origin if spec else ""))
        jars_dir = Path(spark_home) / "jars"
        real = os.path.realpath(java) if java else ""
        stat = os.stat(real)
        # The JVM uses an archive only for the class path it was made with, down to each jar's
        # path, size and modification time (a venv elsewhere or a reinstall needs a new one).
        jars = [(str(p), st.st_size, st.st_mtime_ns) for p in jars_dir.glob("*.jar") for st in [p.stat()]]
    except Exception:  # noqa: BLE001 - no java or no Spark here: Spark's own start will say so
        return None
    if not jars:
        return None
    return (real, stat.st_size, stat.st_mtime_ns), jars
