"""The class-data-sharing archive of the Spark driver JVM (how archives work: kxtx.fast.jvmcds).

Every `kxtx pipe` starts a JVM that loads and verifies the same ~10,000 classes of Spark; with the
archive its start takes about half the CPU (bench/README.md, "The Spark driver JVM"). The archive
(~115 MB, under `$XDG_CACHE_HOME/kxtx/spark-cds/`) is keyed by the java binary, Spark's jars, kxtx's
JVM options and the settings that change the driver's class path.
`KXTX_FAST=0` (or `KXTX_SPARK_CDS=off`) turns it off; `--spark-conf spark.driver.extraJavaOptions=...` replaces kxtx's
JVM options, this one included.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from kxtx import fast
from kxtx.fast import jvmcds as cds

ENV = "KXTX_SPARK_CDS"
#: how long a JVM that writes the archive as it exits is waited for (kxtx.pipe.spark._end_jvm):
#: far longer than a quiet machine needs, since a loaded one needs many times that (see
#: bench/README.md, "The task consumer's settings, and Spark's start and stop")
WRITE_GRACE_S = 120.0
#: Spark settings that change the driver JVM's class path (an archive is valid for one class path)
CLASSPATH_SETTINGS = (
    "spark.jars",
    "spark.jars.packages",
    "spark.driver.extraClassPath",
    "spark.driver.userClassPathFirst",
)


def cache_dir() -> Path:
    return cds.cache_dir("spark-cds")


def enabled(env: Mapping[str, str]) -> bool:
    return fast.enabled("spark-cds", env)


def archive_key(
    java: tuple, jars: Iterable[tuple], jvm_options: Iterable[str], conf: Mapping[str, str]
) -> str:
    """A name for the archive of one JVM set-up: the java binary (path, size, mtime), Spark's jars
    (path, size, mtime), kxtx's JVM options and the class-path settings."""
    parts = [repr(java), repr(sorted(jars)), repr(list(jvm_options))]
    parts += [f"{k}={conf.get(k, '')}" for k in CLASSPATH_SETTINGS]
    return cds.archive_key(*parts)


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
    return cds.plan_archive(cache_dir(), archive_key(java, jars, list(jvm_options), conf))


def settle(pending: Path | None, exit_code: int | None) -> None:
    """After the JVM that was to write `pending` has exited: keep the archive if it exited
    normally, drop it otherwise; prune old archives and leftovers."""
    cds.settle(pending, exit_code == 0)


def _setup(env: Mapping[str, str]) -> tuple[tuple, list[tuple]] | None:
    """(java binary, Spark's jars) as PySpark will start them, or None when either is not found."""
    home = env.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java:
        return None  # no java here: Spark's own start will say so
    try:
        # PySpark's own order: SPARK_HOME, else the pip package's directory.
        spec = importlib.util.find_spec("pyspark")
        spark_home = env.get("SPARK_HOME") or os.path.dirname(str(spec.origin if spec else ""))
        # The JVM uses an archive only for the class path it was made with, down to each jar's
        # path, size and modification time (a venv elsewhere or a reinstall needs a new one).
        jars = cds.jar_stats(Path(spark_home) / "jars")
        binary = cds.file_stat(java)
    except Exception:  # noqa: BLE001 - no java or no Spark here: Spark's own start will say so
        return None
    if not jars:
        return None
    return binary, jars
