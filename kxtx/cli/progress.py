"""The progress of a long run (`produce`, `pipe`) on stderr, from the typed progress the library
reports: one line rewritten in place on a terminal; elsewhere, when asked, a plain line now and
then for logs. The DescribeProducers sweep of find-hanging, monitor collect and inspect txn
(`sweep`): a line on a terminal only, erased when the sweep is over."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from kxtx.cli.output import StatusLine, is_tty

P = TypeVar("P")


class Progress(Generic[P]):
    """Called with each progress report `P`; `text` words it. On a terminal (`tty`) the status line
    shows every report; elsewhere a line `kxtx: progress: ...` is written every `every` seconds
    (never when `every` is None). `transient`: `done` erases the status line instead of keeping it."""

    def __init__(
        self, text: Callable[[P], str], tty: bool, every: float | None = None, transient: bool = False
    ) -> None:
        self.text, self.tty, self.every, self.transient = text, tty, every, transient
        self.line = StatusLine()
        self.next_line = time.monotonic() + (every or 0.0)

    def __call__(self, report: P) -> None:
        if self.tty:
            self.line.show(self.text(report))
        elif self.every is not None and time.monotonic() >= self.next_line:
            self.next_line = time.monotonic() + self.every
            sys.stderr.write(f"kxtx: progress: {self.text(report)}\n")
            sys.stderr.flush()

    def done(self) -> None:
        if self.transient:
            self.line.clear()
        else:
            self.line.end()

    def calls(self, done: int, total: int) -> None:
        """As a `kxtx.client.admin.Progress` (`progress(done, total)`)."""
        self((done, total))  # type: ignore[arg-type]  # P is (done, total) here


def sweep(what: str) -> Progress[tuple[int, int]] | None:
    """On a terminal (stderr), the line of a DescribeProducers sweep over many partitions
    (`what: 500/20,000 partitions`), passed to the library as `.calls`; None elsewhere."""
    if not is_tty(sys.stderr):
        return None
    return Progress(lambda r: f"{what}: {r[0]:,}/{r[1]:,} partitions", tty=True, transient=True)
