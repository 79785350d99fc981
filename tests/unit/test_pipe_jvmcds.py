"""The Spark driver JVM's class-data-sharing archive (kxtx.pipe.fast.jvmcds): naming, planning, keeping
and pruning, on files in a temporary cache. That real JVMs write and map it: tests/integration/test_pipe.py."""

import os

import pytest

from kxtx.fast import jvmcds as cds
from kxtx.pipe.fast import jvmcds
from tests.conftest import fast_only

pytestmark = fast_only  # a fast path's own code (kxtx.fast), which KXTX_FAST=0 turns off

JAVA = ("/usr/lib/jvm/17/bin/java", 100, 1)
JARS = [("/venv/pyspark/jars/spark-core.jar", 10, 5), ("/venv/pyspark/jars/py4j.jar", 2, 5)]
OPTS = ["-XX:TieredStopAtLevel=1"]


@pytest.mark.parametrize(
    "java, jars, opts, conf",
    [
        (("/usr/lib/jvm/21/bin/java", 100, 1), JARS, OPTS, {}),  # another JDK
        (("/usr/lib/jvm/17/bin/java", 100, 2), JARS, OPTS, {}),  # the same JDK path, upgraded
        (JAVA, [("/venv/pyspark/jars/spark-core.jar", 11, 5), JARS[1]], OPTS, {}),  # another Spark
        (JAVA, [("/venv/pyspark/jars/spark-core.jar", 10, 6), JARS[1]], OPTS, {}),  # reinstalled
        (JAVA, [("/venv2/pyspark/jars/spark-core.jar", 10, 5), JARS[1]], OPTS, {}),  # another venv
        (JAVA, JARS + [("/venv/pyspark/jars/extra.jar", 1, 5)], OPTS, {}),
        (JAVA, JARS, ["-XX:+UseSerialGC"], {}),
        (JAVA, JARS, OPTS, {"spark.jars": "/x.jar"}),
        (JAVA, JARS, OPTS, {"spark.driver.extraClassPath": "/x"}),
        (JAVA, JARS, OPTS, {"spark.jars.packages": "g:a:1"}),
    ],
)
def test_every_input_of_the_class_path_names_another_archive(java, jars, opts, conf):
    base = jvmcds.archive_key(JAVA, JARS, OPTS, {})
    assert jvmcds.archive_key(java, jars, opts, conf) != base


def test_the_same_set_up_names_the_same_archive_whatever_the_order_and_other_settings():
    assert jvmcds.archive_key(JAVA, JARS, OPTS, {}) == jvmcds.archive_key(
        JAVA, list(reversed(JARS)), OPTS, {"spark.executor.memory": "2g"}
    )


@pytest.mark.parametrize(
    "value, on",
    [(None, True), ("", True), ("1", True), ("off", False), ("0", False), ("OFF", False), ("no", False)],
)
def test_enabled(value, on):
    assert jvmcds.enabled({} if value is None else {jvmcds.ENV: value}) is on


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvmcds, "_setup", lambda env: (JAVA, JARS))
    return tmp_path / "kxtx" / "spark-cds"


def test_first_start_writes_then_later_starts_map_the_archive(cache):
    opts, pending = jvmcds.plan(OPTS, {})
    assert pending is not None and pending.parent == cache
    assert opts[0] == f"-XX:ArchiveClassesAtExit={pending}"
    assert set(cds.LOG_OPTIONS) <= set(opts)
    pending.write_bytes(b"archive")  # what the JVM writes as it exits
    jvmcds.settle(pending, 0)
    (archive,) = cache.glob("*.jsa")
    assert not pending.exists()
    opts, pending = jvmcds.plan(OPTS, {})
    assert pending is None
    assert opts[0] == f"-XX:SharedArchiveFile={archive}"


@pytest.mark.parametrize("exit_code, content", [(1, b"half"), (None, b"x"), (-9, b"x"), (0, b"")])
def test_an_archive_of_a_jvm_that_did_not_exit_normally_is_dropped(cache, exit_code, content):
    _, pending = jvmcds.plan(OPTS, {})
    pending.write_bytes(content)
    jvmcds.settle(pending, exit_code)
    assert list(cache.iterdir()) == []


def test_off_means_no_option(cache, monkeypatch):
    assert jvmcds.plan(OPTS, {}, {jvmcds.ENV: "off"}) == ([], None)
    assert not cache.exists()


def test_without_java_or_spark_no_option(monkeypatch):
    monkeypatch.setattr(jvmcds, "_setup", lambda env: None)
    assert jvmcds.plan(OPTS, {}) == ([], None)


def test_without_a_java_binary_no_set_up(monkeypatch):
    monkeypatch.setattr(jvmcds.shutil, "which", lambda name: None)
    assert jvmcds._setup({}) is None


def test_prune_keeps_the_most_recently_used_archives_and_drops_stale_leftovers(tmp_path):
    for i in range(5):
        path = tmp_path / f"a{i}.jsa"
        path.write_bytes(b"x")
        os.utime(path, (1000 + i, 1000 + i))
    fresh, stale = tmp_path / "b.1.2.tmp", tmp_path / "c.1.2.tmp"
    for path, mtime in ((fresh, 9000), (stale, 9000 - cds.STALE_S - 1)):
        path.write_bytes(b"x")
        os.utime(path, (mtime, mtime))
    cds.prune(tmp_path, keep=3, now=9000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a2.jsa", "a3.jsa", "a4.jsa", "b.1.2.tmp"]


def test_using_an_archive_drops_stale_leftovers_of_killed_runs(cache):
    _, pending = jvmcds.plan(OPTS, {})
    pending.write_bytes(b"archive")
    jvmcds.settle(pending, 0)
    left = cache / "x.1.2.tmp"  # a JVM that wrote at exit after kxtx was SIGKILLed
    left.write_bytes(b"half")
    os.utime(left, (1, 1))
    opts, pending = jvmcds.plan(OPTS, {})
    assert pending is None and not left.exists()


@pytest.mark.parametrize("pending, grace", [(True, jvmcds.WRITE_GRACE_S), (False, 15.0)])
def test_a_jvm_writing_the_archive_gets_the_time_to_finish_it(tmp_path, monkeypatch, pending, grace):
    """Killed at the usual grace, a JVM still writing its archive loses it (seen under load)."""
    from pyspark import SparkContext

    from kxtx.pipe import spark

    waited = []

    class Proc:
        returncode = 0
        stdin = open(os.devnull, "w")

        def wait(self, timeout=None):
            waited.append(timeout)

    class Gateway:
        proc = Proc()

        def shutdown(self):
            pass

    monkeypatch.setattr(SparkContext, "_gateway", Gateway())
    monkeypatch.setattr(SparkContext, "_jvm", None)
    monkeypatch.setattr(spark, "_CDS_PENDING", tmp_path / "key.1.2.tmp" if pending else None)
    spark._end_jvm()
    assert waited == [grace]
    assert spark._CDS_PENDING is None


def test_a_jvm_ended_unused_is_killed_and_its_archive_dropped(tmp_path, monkeypatch):
    """A pipe whose schema lookup failed while the JVM launched (kxtx.pipe.spark.Starting.abandon):
    an archive written at that JVM's exit would hold only the launch's classes."""
    from kxtx.pipe import spark

    done = []

    class Proc:
        returncode = None
        stdin = open(os.devnull, "w")

        def kill(self):
            done.append("kill")
            self.returncode = -9

        def wait(self, timeout=None):
            done.append(("wait", timeout))

    class Gateway:
        proc = Proc()

        def shutdown(self):
            pass

    pending = tmp_path / "key.1.2.tmp"
    pending.write_bytes(b"half an archive")
    monkeypatch.setattr(spark, "_CDS_PENDING", pending)
    spark._end_jvm(Gateway(), keep_archive=False)  # a gateway no SparkContext has taken up
    assert done == ["kill", ("wait", None)]
    assert not pending.exists() and not (tmp_path / "key.jsa").exists()
    assert spark._CDS_PENDING is None
