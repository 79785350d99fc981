"""A real Flink job for the tests (tests/integration/java/flink/): Flink 2.2 and its Kafka connector
from Maven Central, run in a local MiniCluster inside one JVM (no Flink cluster).

`build()` compiles the job with Maven once and keeps its classes and the jars it runs on in kxtx's
cache dir, under a name hashed from the job's source and its pom: an unchanged job is never built
again, a changed one gets a new directory. Maven's downloads go to the local repository the Kafka
jars use (kxtx.sandbox.distribution.mvn_command). `.ci/run` (scripts/test.sh) builds it before the
suite, so that the two stages never run Maven at once; a lock keeps xdist workers to one builder.
`python tests/flink.py` builds it and prints the directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

FLINK = "2.2.1"
CONNECTOR = "5.0.0-2.2"
MAIN = "KxtxFlinkPreCommit"
SOURCE = Path(__file__).parent / "integration" / "java" / "flink" / f"{MAIN}.java"

DEPENDENCIES = (
    ("org.apache.flink", "flink-streaming-java", FLINK),
    ("org.apache.flink", "flink-clients", FLINK),
    ("org.apache.flink", "flink-connector-base", FLINK),  # the Kafka connector declares it provided
    ("org.apache.flink", "flink-connector-datagen", FLINK),
    ("org.apache.flink", "flink-connector-kafka", CONNECTOR),
    ("org.slf4j", "slf4j-simple", "1.7.36"),  # Flink's slf4j-api is 1.7.36
)

#: JVM options: C1 only and the serial collector (a job of seconds, as Kafka's tools), and the
#: simple logger at WARN (what the test prints when the job fails)
JVM = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xmx512m",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
)


def _pom() -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in DEPENDENCIES
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kxtx</groupId><artifactId>kxtx-flink-job</artifactId><version>1</version>"
        "<properties><maven.compiler.release>17</maven.compiler.release>"
        "<project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>"
        f"<dependencies>{deps}</dependencies>"
        "<build><plugins><plugin><groupId>org.apache.maven.plugins</groupId>"
        "<artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>"
        "</plugins></build></project>"
    )


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(_pom().encode() + b"\0" + SOURCE.read_bytes()).hexdigest()[:12]
    return Path(base) / "kxtx" / "tools" / f"flink-{FLINK}-job-{digest}"


def build() -> Path:
    """The job's directory (classes/, libs/), built when missing."""
    from kxtx.sandbox.distribution import mvn_command, require_tool

    target = cache_dir()
    if (target / ".complete").is_file():
        return target
    mvn = require_tool("mvn")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return target
        with tempfile.TemporaryDirectory(prefix="kxtx-flink-") as tmp:
            work = Path(tmp)
            (work / "pom.xml").write_text(_pom())
            (work / "src" / "main" / "java").mkdir(parents=True)
            shutil.copy(SOURCE, work / "src" / "main" / "java" / SOURCE.name)
            staging = work / "out"
            goals = [
                "-q",
                "compile",
                "dependency:copy-dependencies",
                f"-DoutputDirectory={staging / 'libs'}",
                "-DincludeScope=runtime",
            ]
            proc = subprocess.run(mvn_command(mvn, goals), cwd=work, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"building the Flink job with mvn failed: {(proc.stdout + proc.stderr)[-3000:]}"
                )
            shutil.copytree(work / "target" / "classes", staging / "classes")
            (staging / ".complete").write_text(FLINK)
            shutil.rmtree(target, ignore_errors=True)
            shutil.move(str(staging), target)
    return target


def job() -> list[str]:
    """argv of the job's JVM (its arguments follow); else a skip (a failure under CI) saying why."""
    try:
        built = build()
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        why = f"the Flink job could not be built ({exc})"
        if os.environ.get("CI"):
            pytest.fail(f"{why}; CI must run this test")
        pytest.skip(why)
    java = shutil.which("java") or "java"
    return [java, *JVM, "-cp", f"{built / 'classes'}{os.pathsep}{built / 'libs' / '*'}", MAIN]


if __name__ == "__main__":
    print(build(), file=sys.stdout)
