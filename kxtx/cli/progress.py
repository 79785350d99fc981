"""The progress of a long run (`produce`, `pipe`) on stderr, from the typed progress the library
reports: one line rewritten in place on a terminal; elsewhere, when asked, a plain line now and
then for logs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from kxtx.cli.output import StatusLine

P = TypeVar("P")


class Progress(Generic[P]):
    """Called with each progress report `P`; `text` words it. On a terminal (`tty`) the status line
    shows every report; elsewhere a line `kxtx: progress: ...` is written every `every` seconds
    (never when `every` is None)."""

    def __init__(self, text: Callable[[P], str], tty: bool, every: float | None = None) -> None:
        self.text, self.tty, self.every = text, tty, every
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
        self.line.end()
