"""A Schema Registry beside the sandbox's brokers: AxonOps Schema Registry (Confluent's REST API and
wire format), in memory, on a loopback port. `kxtx sandbox start --schema-registry` runs it; the
test suite starts its registries from the same binary (tests/registry.py).

It is built once with Go from the Go module proxy into `~/.cache/kxtx/tools/` (XDG_CACHE_HOME), as
the Kafka jars are fetched once with mvn: a Go program starts in a tenth of a second on ~25 MB, where
a Java registry would be another JVM beside the brokers. The proxy serves exact tags only, so
`go install MODULE@VERSION` fails (it asks for the version list): the module is downloaded at its tag
and built in place. Go's module downloads go to kxtx's cache dir too (writable, so removing that dir
removes them), not ~/go.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from kxtx.errors import KxtxError
from kxtx.sandbox.distribution import kxtx_cache

MODULE = "github.com/axonops/axonops-schema-registry"
VERSION = "v0.2.1"
NAME = f"AxonOps Schema Registry {VERSION}"
#: where Go's official tarball puts it (not always on PATH)
_GO_FALLBACK = "/usr/local/go/bin/go"


def cache_dir() -> Path:
    return kxtx_cache() / "tools" / f"axonops-schema-registry-{VERSION}"


def cached_binary() -> Path:
    return cache_dir() / "schema-registry"


def find_go() -> str | None:
    return shutil.which("go") or (_GO_FALLBACK if os.access(_GO_FALLBACK, os.X_OK) else None)


def binary(progress: Callable[[str], None] | None = None) -> Path:
    """The registry's binary, built when missing (one builder at a time: two starts, or a test
    suite's workers, may ask at once). `progress(line)` hears that a build starts: the first one
    takes minutes (the module's dependencies, and the Go toolchain it asks for if this Go is older)."""
    target = cached_binary()
    if target.is_file():
        return target
    go = find_go()
    if go is None:
        raise KxtxError(
            f"go not found on PATH: the sandbox's schema registry ({NAME}) is built from the Go "
            "module proxy once; install Go (https://go.dev/dl/, Debian: apt-get install golang-go)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():  # another builder finished while this one waited
            return target
        if progress:
            progress(
                f"building {NAME} from the Go module proxy with {go} into {target.parent} "
                "(once, a few minutes; cached for later runs)"
            )
        _build(go, target)
    return target


def _build(go: str, target: Path) -> None:
    # GOTOOLCHAIN is left to Go: an older Go (Debian's) fetches the toolchain the module asks for.
    env = {
        **os.environ,
        "GOFLAGS": "-mod=mod -modcacherw",
        "GOMODCACHE": str(kxtx_cache() / "go" / "mod"),
        "GOPATH": str(kxtx_cache() / "go"),
    }

    def go_run(args: list[str], cwd: Path, what: str) -> str:
        got = subprocess.run([go, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
        if got.returncode != 0:
            lines = (got.stderr or got.stdout).strip().splitlines() or [f"exit {got.returncode}"]
            raise KxtxError(f"{what} failed: {lines[-1][:300]}")
        return got.stdout

    go_run(["mod", "download", f"{MODULE}@{VERSION}"], target.parent, f"go mod download {MODULE}@{VERSION}")
    modcache = go_run(["env", "GOMODCACHE"], target.parent, "go env GOMODCACHE").strip()
    partial = target.with_suffix(".partial")
    go_run(
        ["build", "-o", str(partial), "./cmd/schema-registry"],
        Path(modcache) / f"{MODULE}@{VERSION}",
        f"building {NAME}",
    )
    partial.rename(target)


def config_text(port: int, security: Sequence[str] = ()) -> str:
    """The registry's YAML config: in-memory storage on 127.0.0.1:`port`, BACKWARD compatibility
    (Confluent's default), warnings only. `security` lines go under a `security:` key (TLS, users)."""
    lines = [
        "server:",
        '  host: "127.0.0.1"',
        f"  port: {port}",
        "storage:",
        "  type: memory",
        "compatibility:",
        "  default_level: BACKWARD",
        "logging:",
        "  level: warn",
        "  format: text",
    ]
    if security:
        lines += ["security:", *security]
    return "\n".join(lines) + "\n"


def command(config: Path | str) -> list[str]:
    return [str(binary()), "-config", str(config)]


def wait_ready(
    url: str, exited: Callable[[], bool], log: Path, timeout: float = 30, tls: bool = False
) -> None:
    """Until the registry at `url` answers HTTP (any status: 401 with auth); a TLS one only until its
    port takes connections. Raises when `exited()` says the process is gone, or at `timeout`."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exited():
            raise KxtxError(f"the schema registry exited during start-up: {_tail(log)}")
        try:
            with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=1):
                pass
            if tls:
                return
            urllib.request.urlopen(url + "/", timeout=2).read()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.05)
    raise KxtxError(f"the schema registry did not answer within {timeout:.0f} s; see {log}")


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"no log at {log}"
    return lines[-1][:300] if lines else f"nothing logged (see {log})"
