"""Where the Kafka jars come from: an unpacked distribution, or Maven Central through `mvn`.

Resolved jars are cached in `~/.cache/kxtx/kafka/<version>/libs` and reused. "Newest 4.x" is the
newest version whose broker *and* tools artifacts resolve: Maven Central sometimes carries a release's
broker jars before its tools jars (4.4.0 was such a case), so the version is chosen by resolving
`kafka-tools` over a version range.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from kxtx.errors import KxtxError, UsageError

#: How long a resolved "newest" version is trusted before asking Maven again.
_LATEST_TTL_S = 24 * 3600
_SLF4J_SIMPLE = ("org.slf4j", "slf4j-simple", "1.7.36")


@dataclass(frozen=True)
class KafkaDistribution:
    version: str
    libs: Path  # a folder of jars

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def java(self, main_class: str, *args: str, jvm: tuple[str, ...] = ()) -> list[str]:
        """argv to run a Kafka main class (broker, tools, console clients) from these jars."""
        return [require_tool("java"), *jvm, "-cp", self.classpath, main_class, *args]


#: JVM options for Kafka's one-shot tools (storage format, formatters, admin tools): C1 only and the
#: serial collector. A tool runs for a second or two, too short for C2's compilations to pay back
#: (bench/README.md, "sandbox").
TOOL_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def kxtx_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kxtx"


def cache_root() -> Path:
    return kxtx_cache() / "kafka"


def mvn_command(mvn: str, goal_args: list[str]) -> list[str]:
    """The mvn command line, its local repository under kxtx's cache dir: Maven's default is
    ~/.m2 of Java's user.home, which comes from the password database, not $HOME, so a run with
    another HOME (a test, a CI job) would still fill the real user's ~/.m2."""
    return [mvn, "-B", f"-Dmaven.repo.local={kxtx_cache() / 'maven'}", *goal_args]


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    hints = {
        "java": "install a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless)",
        "mvn": "install Maven (Debian: apt-get install maven), or pass --kafka-home / set "
        "KXTX_KAFKA_HOME to an unpacked Apache Kafka distribution",
    }
    raise KxtxError(f"{name} not found on PATH: {hints.get(name, 'install it')}")


def resolve_distribution(
    version: str | None = None, kafka_home: str | None = None, progress: Callable[[str], None] | None = None
) -> KafkaDistribution:
    """The Kafka to run: --kafka-home / $KXTX_KAFKA_HOME first, else Maven Central via mvn.

    `progress(line)` hears what is being fetched: a first download takes minutes (~100 MB of jars,
    more with an empty ~/.m2), which must not look like a hang."""
    home = kafka_home or os.environ.get("KXTX_KAFKA_HOME")
    if home:
        return _from_home(Path(home))
    exact = _exact_version(version or "4", progress)
    libs = cache_root() / exact / "libs"
    if not (libs / ".complete").exists():
        if progress:
            progress(
                f"fetching the Kafka {exact} jars from Maven Central with mvn into {libs} "
                "(once; cached for later runs)"
            )
        _download(exact, libs, progress)
    return KafkaDistribution(exact, libs)


def _from_home(home: Path) -> KafkaDistribution:
    libs = home / "libs"
    names = sorted(j.name for j in libs.glob("kafka_2.1*-*.jar")) if libs.is_dir() else []
    versions = [
        m.group(1)
        for name in names
        if not re.search(r"-(sources|javadoc|test)\.jar$", name)
        and (m := re.search(r"kafka_2\.1\d-(.+)\.jar$", name))
    ]
    if not versions:
        raise KxtxError(f"--kafka-home {home}: no libs/kafka_2.13-<version>.jar (not a Kafka distribution?)")
    return KafkaDistribution(versions[0], libs)


def _exact_version(spec: str, progress: Callable[[str], None] | None = None) -> str:
    """`4.3.1` stays; `4`, `4.x`, `latest` -> newest 4.x; `3.9`, `3.9.x` -> newest 3.9.x."""
    spec = spec.strip().lower()
    if spec == "latest":
        spec = "4"
    spec = spec.removesuffix(".x")
    if re.fullmatch(r"\d+\.\d+\.\d+", spec):
        return spec
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?", spec)
    if not m:
        raise UsageError(f"--kafka-version {spec!r}: expected e.g. 4.3.1, 3.9, 3.9.x or 4")
    major, minor = int(m.group(1)), m.group(2)
    lo, hi = (
        (f"{major}.{minor}.0", f"{major}.{int(minor) + 1}.0")
        if minor
        else (f"{major}.0.0", f"{major + 1}.0.0")
    )
    memo = cache_root() / f"newest-{spec}.json"
    try:
        cached = json.loads(memo.read_text())
        if time.time() - cached["at"] < _LATEST_TTL_S:
            return cached["version"]
    except (OSError, ValueError, KeyError):
        pass
    if progress:
        progress(f"asking Maven Central for the newest Kafka in [{lo},{hi})")
    found = _newest_in_range(lo, hi, progress)
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(json.dumps({"version": found, "at": time.time()}))
    return found


def _pom(dependencies: list[tuple[str, str, str]]) -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in dependencies
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kxtx</groupId><artifactId>kafka-jars</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>"
    )


#: Maven's batch-mode transfer line for a finished download: what and how much.
_DOWNLOADED = re.compile(r"Downloaded from \S+: (\S+) \(([^)]*)\)")


def _mvn(pom: str, goal_args: list[str], what: str, progress: Callable[[str], None] | None = None) -> str:
    """Run mvn on `pom`; each downloaded jar is reported to `progress` as it arrives (Maven's
    batch mode prints one line per finished transfer; poms and metadata are only counted)."""
    mvn = require_tool("mvn")
    with tempfile.TemporaryDirectory(prefix="kxtx-mvn-") as tmp:
        Path(tmp, "pom.xml").write_text(pom)
        proc = subprocess.Popen(
            mvn_command(mvn, goal_args), cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        errors, small = [], 0
        try:
            for line in cast("IO[str]", proc.stdout):  # stdout=PIPE: never None
                if "[ERROR]" in line:
                    errors.append(line)
                m = _DOWNLOADED.search(line)
                if m and progress:
                    if m.group(1).endswith(".jar"):
                        progress(f"mvn: downloaded {m.group(1).rsplit('/', 1)[-1]} ({m.group(2)})")
                    else:
                        small += 1
            returncode = proc.wait(timeout=900)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if small and progress:
            progress(f"mvn: {small} more files downloaded (poms, metadata)")
        out = Path(tmp, "out.txt")
        listing = out.read_text() if out.exists() else ""
    if returncode != 0:
        detail = errors[0].replace("[ERROR]", "").strip() if errors else f"mvn exit {returncode}"
        raise KxtxError(f"{what}: {detail[:300]}")
    return listing


def _newest_in_range(lo: str, hi: str, progress: Callable[[str], None] | None = None) -> str:
    listing = _mvn(
        _pom([("org.apache.kafka", "kafka-tools", f"[{lo},{hi})")]),
        ["dependency:list", "-DexcludeTransitive=true", "-DoutputFile=out.txt"],
        f"finding the newest Kafka in [{lo},{hi}) on Maven Central",
        progress,
    )
    m = re.search(r"org\.apache\.kafka:kafka-tools:jar:(\S+?):", listing)
    if not m:
        raise KxtxError(f"no Kafka release in [{lo},{hi}) found on Maven Central")
    return m.group(1)


def _download(version: str, libs: Path, progress: Callable[[str], None] | None = None) -> None:
    """Resolve the broker and tools jars (and their dependencies) into `libs`."""
    staging = libs.with_name(f"libs.tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    deps = [
        ("org.apache.kafka", "kafka_2.13", version),
        ("org.apache.kafka", "kafka-tools", version),
        _SLF4J_SIMPLE,
    ]
    _mvn(
        _pom(deps),
        ["dependency:copy-dependencies", f"-DoutputDirectory={staging}", "-DincludeScope=runtime"],
        f"resolving Kafka {version} jars with mvn",
        progress,
    )
    # 3.x ships its own slf4j binding (reload4j); two bindings make slf4j pick one at random.
    if any(p.name.startswith(("slf4j-reload4j", "log4j-slf4j")) for p in staging.iterdir()):
        for p in staging.glob("slf4j-simple-*.jar"):
            p.unlink()
    (staging / ".complete").write_text(version)
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
