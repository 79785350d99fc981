"""Class-data-sharing (AppCDS) archives for the JVMs kxtx starts: the Spark driver of `kxtx pipe`
(kxtx.pipe.fast.jvmcds) and the nodes of `kxtx sandbox` (kxtx.sandbox.broker).

Every such JVM loads and verifies the same thousands of classes. Java's dynamic archive
(`-XX:ArchiveClassesAtExit`) stores them once, parsed and verified, and later JVMs map the file
(`-XX:SharedArchiveFile`): their start-up takes about half the CPU (bench/README.md, "The Spark
driver JVM" and "sandbox").

- The first JVM of a set-up writes the archive as it exits, to a pending file; the archive is kept
  (renamed to its final name) only when that JVM exited normally (`settle`). Its name is a key of
  what the JVM's class path is made of (the java binary, the jars: where they are, their sizes and
  times), so an upgrade or another virtualenv makes a new one.
- The JVM checks an archive before using it (same JDK build, same class path) and starts without
  it otherwise: a stale or unusable archive only costs the speed-up.
- The `KEEP` most recently used archives of a kind are kept; pending files older than `STALE_S`
  (left by a JVM that never exited normally) are removed.

No kxtx imports: this is the base tier.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

#: archives kept per kind (one per Java and jar set in use)
KEEP = 3
#: a pending archive still there after this long was left by a JVM that did not exit normally
STALE_S = 3600.0
#: with `one_writer`, a pending file younger than this means a node is writing that archive; past
#: it another node may write it too (a node killed outside kxtx leaves its file; two archives of one
#: key only replace each other)
ONE_WRITER_S = 300.0
#: the JVM's CDS messages off: an archive it cannot use is not the user's concern
LOG_OPTIONS = ("-Xlog:cds*=off:stderr",)


def cache_dir(kind: str) -> Path:
    """`$XDG_CACHE_HOME/kxtx/<kind>` (`~/.cache/kxtx/<kind>`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kxtx" / kind


def file_stat(path: str | os.PathLike) -> tuple:
    """(real path, size, mtime) of a file: what an archive's validity depends on."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return (real, st.st_size, st.st_mtime_ns)


def jar_stats(directory: Path) -> list[tuple]:
    """(path, size, mtime) of every jar in `directory`."""
    return [(str(p), st.st_size, st.st_mtime_ns) for p in directory.glob("*.jar") for st in [p.stat()]]


def archive_key(*parts: str) -> str:
    """A name for the archive of one JVM set-up (the parts: what its class path is made of)."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def plan_archive(directory: Path, key: str, one_writer: bool = False) -> tuple[list[str], Path | None]:
    """The JVM options for one start: map the archive `key` when it exists, else write it as the JVM
    exits (the pending file is returned, for `settle`). With `one_writer`, a JVM whose archive another
    JVM is writing now starts without either (several nodes start at once; one archive is enough).
    ([], None) when the cache directory cannot be made: the same JVM, without the speed-up."""
    final = directory / f"{key}.jsa"
    if final.is_file():
        try:
            os.utime(final)  # the most recently used are kept when pruning
            # Also drops what a JVM left half-written when its launcher was killed (no `settle`).
            prune(directory)
        except OSError:
            pass  # another user's cache, read-only: using the archive is enough
        return [f"-XX:SharedArchiveFile={final}", *LOG_OPTIONS], None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if one_writer and any(
            time.time() - p.stat().st_mtime < ONE_WRITER_S for p in directory.glob(f"{key}.*.tmp")
        ):
            return [], None
        pending = directory / f"{key}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        if one_writer:
            pending.touch()  # seen by the nodes starting next to this one
    except OSError:
        return [], None  # no cache directory: no archive, same JVM otherwise
    return [f"-XX:ArchiveClassesAtExit={pending}", *LOG_OPTIONS], pending


def settle(pending: Path | None, exited_normally: bool) -> None:
    """After the JVM that was to write `pending` has exited: keep the archive if it exited
    normally and wrote it, drop it otherwise; prune old archives and leftovers."""
    if pending is None:
        return
    final = pending.parent / (pending.name.split(".", 1)[0] + ".jsa")
    try:
        if exited_normally and pending.is_file() and pending.stat().st_size > 0:
            os.replace(pending, final)
        else:
            pending.unlink(missing_ok=True)
        prune(pending.parent)
    except OSError:
        pass  # a cache problem never fails the run


def prune(directory: Path, keep: int = KEEP, now: float | None = None) -> None:
    """Keep the `keep` most recently used archives; remove pending files older than STALE_S."""
    now = time.time() if now is None else now
    archives = sorted(directory.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        old.unlink(missing_ok=True)
    for tmp in directory.glob("*.tmp"):
        if now - tmp.stat().st_mtime > STALE_S:
            tmp.unlink(missing_ok=True)
