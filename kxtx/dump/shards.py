"""A dump in several processes, each reading every N-th partition of the internal topic.

Why: decoding and JSON-encoding cost 2-3 µs a record in Python, several times what librdkafka needs
to fetch it, so one process keeps one core busy while the others idle (measured: two processes
dumping 208k transaction-log records took 0.8 s against 1.15 s for one). The partitions of
`__transaction_state` and `__consumer_offsets` are independent logs and a dump orders rows only
within a partition, so N processes that read the partitions p with p % N == i write the same rows,
partitions interleaved by batch as librdkafka interleaves them anyway.

The workers are forked before any Kafka client exists: librdkafka runs threads, and a fork keeps
only the calling one. Output goes to the one shared stdout; a token passed through a pipe lets one
process at a time write a whole batch, so lines never tear.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

from kxtx.signals import exit_status

if TYPE_CHECKING:
    from types import FrameType

#: At most this many processes by default: beyond it the broker's fetch rate, not decoding, limits.
DEFAULT_MAX = 4


def default_count() -> int:
    """One process per core this process may run on, at most DEFAULT_MAX; one where forking is
    not the platform's habit (macOS system libraries are not fork-safe; Windows cannot fork)."""
    if not sys.platform.startswith("linux"):
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, DEFAULT_MAX))


def _exit_terminated(signum: int, frame: FrameType | None) -> NoReturn:  # noqa: ARG001 - signal handler signature
    os._exit(exit_status(signal.SIGTERM))


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:  # not Linux: Python's own threads at least
        import threading

        return threading.active_count()


class Shards:
    """`fork(n)` returns in n processes: the parent (`index` 0) and n-1 workers (`index` 1..n-1)."""

    def __init__(self, count: int) -> None:
        self.count, self.index = count, 0
        self.children: list[int] = []
        self._token_r, self._token_w = os.pipe()
        os.write(self._token_w, b".")  # the write token: whoever read it may write
        import mmap

        # the rows every process wrote, in memory the fork shares: the parent says when there were none
        self._rows = mmap.mmap(-1, 8)

    @classmethod
    def fork(cls, count: int) -> Shards:
        """n processes, or only this one if it runs threads already (a Kafka client's): a forked
        copy would hold their locks without the threads that release them."""
        if _threads() > 1 or not hasattr(os, "fork"):
            count = 1
        shards = cls(count)
        for stream in (sys.stdout, sys.stderr):  # or each process would write them again
            stream.flush()
        for index in range(1, count):
            pid = os.fork()
            if pid == 0:
                shards.index, shards.children = index, []
                return shards
            shards.children.append(pid)
        return shards

    @property
    def is_worker(self) -> bool:
        return self.index > 0

    def worker_signals(self) -> None:
        """In a worker: leave Ctrl-C to the parent, which reports it once and stops the workers
        with SIGTERM; on SIGTERM end at once and quietly (a dump changes nothing, and the parent
        has the write token back by then or no longer needs it)."""
        if self.is_worker:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, _exit_terminated)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the write token while writing (and flushing) one batch."""
        os.read(self._token_r, 1)
        try:
            yield
        finally:
            os.write(self._token_w, b".")

    def add_rows(self, rows: int) -> None:
        """Add this process's rows to the dump's count (under the write token: one at a time)."""
        with self.writing():
            self._rows[:8] = (self.rows() + rows).to_bytes(8, "little")

    def rows(self) -> int:
        """The rows every process counted so far (all of them once `wait` returned)."""
        return int.from_bytes(self._rows[:8], "little")

    def exit_worker(self, code: int) -> NoReturn:
        """End a worker without running the parent's exit handlers (they would, e.g., delete the
        parent's temporary key files)."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)

    def stop(self) -> None:
        """Ask the workers to stop (SIGTERM: each aborts its read and exits 143)."""
        for pid in self.children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def wait(self, code: int) -> int:
        """The parent's exit code for the whole dump once every worker has ended: its own if it
        failed, else the first failing worker's (a worker has reported its error itself)."""
        if code:
            self.stop()
        codes = []
        for pid in self.children:
            while True:
                try:
                    _, status = os.waitpid(pid, 0)
                    break
                except KeyboardInterrupt:  # Ctrl-C reached the workers too: wait for them
                    code = code or exit_status(signal.SIGINT)
                    self.stop()
            ended = os.waitstatus_to_exitcode(status)
            codes.append(exit_status(-ended) if ended < 0 else ended)  # killed by a signal
        self.children = []
        return code or next((c for c in codes if c), 0)
