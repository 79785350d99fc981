"""Real Schema Registries for the tests, on loopback ports, started by the tests themselves:

- AxonOps Schema Registry (Go; Confluent's REST API and wire format), in-memory storage: ready in
  0.1 s on ~25 MB, so most tests use it (`Registry`);
- Apicurio Registry 3.3.3 (Quarkus, Java 21+) through its Confluent-compatible API
  (`/apis/ccompat/v7`): another implementation of the same API, for the round trips (`Apicurio`).

The AxonOps binary is kxtx's own (`kxtx.sandbox.registry`: built once with Go from the Go module proxy
into kxtx's cache dir, the one `kxtx sandbox start --schema-registry` runs; `.ci/run` builds it before
the suite, a minute of both cores). Without Go the tests are skipped (a failure under CI, as
tests/binaries.py does).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from kxtx.errors import KxtxError
from kxtx.sandbox import registry as sandbox_registry
from kxtx.sandbox.nodes import free_port

#: user and password of the registries started with `auth=True`; the bcrypt hash is of PASSWORD
USER, PASSWORD = "kxtx", "kxtx-registry-pass"
_HASH = "$2b$04$Pl0.cJUGScyrrwH0jXJHseUTogwmzd6hrXLoGK8BkUYRqCVAnewOS"


def binary() -> str:
    """The binary's path; else a skip (a failure under CI) saying why."""
    try:
        return str(sandbox_registry.binary())
    except (OSError, KxtxError) as exc:
        why = f"the schema registry could not be built ({exc})"
        if os.environ.get("CI"):
            pytest.fail(f"{why}; CI must run this test (.ci/run builds it)")
        pytest.skip(why)


class Registry:
    """One registry process. `url` is where it listens; `pause()`/`resume()` stop and continue it
    (SIGSTOP: it neither answers nor refuses, as a hung registry), `stop()` ends it."""

    def __init__(self, auth: bool = False, tls: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="kxtx-registry-")
        security: list[str] = []
        if tls:
            security += [
                "  tls:",
                "    enabled: true",
                f'    cert_file: "{tls["cert"]}"',
                f'    key_file: "{tls["key"]}"',
                f'    ca_file: "{tls["ca"]}"',
                f"    client_auth: {'require' if tls.get('client_auth') else 'none'}",
            ]
        if auth:
            security += [
                "  auth:",
                "    enabled: true",
                "    methods: [basic]",
                "    basic:",
                '      realm: "kxtx tests"',
                "      users:",
                # through the environment: the registry expands $VARS in its config file, and a
                # bcrypt hash is full of dollar signs
                f'        {USER}: "${{KXTX_TEST_REGISTRY_HASH}}"',
                "    rbac:",
                "      enabled: false",
                "      default_role: admin",
            ]
        path = os.path.join(self.dir, "registry.yaml")
        Path(path).write_text(sandbox_registry.config_text(self.port, security))
        self.log = open(os.path.join(self.dir, "registry.log"), "wb")
        env = {**os.environ, "KXTX_TEST_REGISTRY_HASH": _HASH}
        self.proc = subprocess.Popen(
            [binary(), "-config", path], stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self._wait(tls is not None)

    def _wait(self, tls: bool, timeout: float = 30) -> None:
        try:
            sandbox_registry.wait_ready(
                self.url, lambda: self.proc.poll() is not None, Path(self.dir, "registry.log"), timeout, tls
            )
        except KxtxError as exc:
            raise RuntimeError(f"{exc}: {self.logged()}") from None

    def logged(self) -> str:
        self.log.flush()
        return Path(self.dir, "registry.log").read_text(errors="replace")[-2000:]

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    @contextmanager
    def paused(self):
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- Apicurio ---------------------------------------------------------------------------------------
APICURIO = "3.3.3"


def apicurio_home() -> Path:
    """Apicurio's unpacked Quarkus app, fetched from Maven Central once (158 MB) into kxtx's cache."""
    home = sandbox_registry.cache_dir().parent / f"apicurio-registry-{APICURIO}"
    if (home / "quarkus-run.jar").is_file():
        return home
    from kxtx.sandbox.distribution import mvn_command

    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError("mvn is not installed (Apicurio comes from Maven Central)")
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / ".apicurio.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / "quarkus-run.jar").is_file():
            return home
        with tempfile.TemporaryDirectory(prefix="kxtx-apicurio-") as tmp:
            artifact = f"io.apicurio:apicurio-registry-app:{APICURIO}:tar.gz:all"
            goal = ["-q", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={tmp}"]
            got = subprocess.run(mvn_command(mvn, goal), cwd=tmp, capture_output=True, text=True)
            if got.returncode != 0:
                raise OSError(f"mvn could not fetch {artifact}: {(got.stdout + got.stderr)[-1500:]}")
            partial = Path(tmp) / "app"
            partial.mkdir()
            (tarball,) = Path(tmp).glob("*.tar.gz")
            subprocess.run(["tar", "xzf", str(tarball), "-C", str(partial)], check=True)
            shutil.rmtree(home, ignore_errors=True)
            shutil.move(str(partial), str(home))
    return home


def java21() -> str | None:
    """A java of release 21 or later: $KXTX_TEST_JAVA21, else one under /usr/lib/jvm."""
    given = os.environ.get("KXTX_TEST_JAVA21")
    if given:
        return given
    for release in sorted(Path("/usr/lib/jvm").glob("*/release")):
        text = release.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith("JAVA_VERSION="):
                major = line.split("=", 1)[1].strip('"').split(".")[0]
                if major.isdigit() and int(major) >= 21 and (release.parent / "bin" / "java").is_file():
                    return str(release.parent / "bin" / "java")
    return None


class Apicurio:
    """Apicurio Registry, in memory, its Confluent-compatible API at `url`. Its own API and its
    management interface stay on loopback (left alone, the latter listens on 0.0.0.0:9000)."""

    def __init__(self) -> None:
        java = java21()
        try:
            if java is None:
                raise FileNotFoundError("no Java 21+ (Apicurio 3 needs it): set KXTX_TEST_JAVA21")
            home = apicurio_home()
        except (OSError, subprocess.CalledProcessError) as exc:
            why = f"Apicurio Registry cannot run here ({exc})"
            if os.environ.get("CI"):
                pytest.fail(f"{why}; CI must run this test")
            pytest.skip(why)
        self.port, management = free_port(), free_port()
        self.dir = tempfile.mkdtemp(prefix="kxtx-apicurio-")
        self.log = open(os.path.join(self.dir, "registry.log"), "wb")  # closed by stop()
        self.proc = subprocess.Popen(
            [
                java,
                "-Xmx384m",
                "-XX:TieredStopAtLevel=1",  # a short-lived test server: C1 only, less CPU to start
                "-Dquarkus.http.host=127.0.0.1",
                f"-Dquarkus.http.port={self.port}",
                "-Dquarkus.management.host=127.0.0.1",
                f"-Dquarkus.management.port={management}",
                "-jar",
                str(home / "quarkus-run.jar"),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=self.dir,
        )
        self.url = f"http://127.0.0.1:{self.port}/apis/ccompat/v7"
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Apicurio exited ({self.proc.returncode}): {self.logged()}")
            try:
                urllib.request.urlopen(self.url + "/subjects", timeout=2).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Apicurio did not answer within 120 s: {self.logged()}") from None
                time.sleep(0.2)

    logged = Registry.logged
    stop = Registry.stop


if __name__ == "__main__":  # test.sh: fetch and build them before the suite (a problem fails there)
    print(sandbox_registry.binary(progress=lambda line: print(line, file=sys.stderr)))
    print(apicurio_home())
