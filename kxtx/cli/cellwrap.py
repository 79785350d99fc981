"""Table cells that wrap at an identifier's own separators.

rich wraps a cell at whitespace and folds a longer word at the column's edge, mid-word
(`orders.eu-west.PARTI` / `TION`). An id (a topic, a transactional id, `topic:partition`) has no
whitespace, but it has separators: a line may end after a `.`, `-`, `:`, `/` or `,` too, and a
part longer than the column is still folded.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.cells import cell_len, chop_cells
from rich.measure import Measurement
from rich.text import Lines, Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod

#: a part a line may end after: up to and including a run of separators, or of whitespace
PART = re.compile(r"\s+|[^\s.:/,-]*[.:/,-]+\s*|[^\s.:/,-]+\s*")


def parts(text: str) -> list[str]:
    return PART.findall(text)


def breaks(text: str, width: int) -> list[int]:
    """Where to break `text` (one line) for lines of at most `width` cells: after a part that
    fills a line, and inside a part wider than a whole line."""
    out: list[int] = []
    offset = used = 0
    for part in parts(text):
        need = cell_len(part.rstrip())
        if used and used + need > width:
            out.append(offset)
            used = 0
        if need > width:  # wider than a line: folded, as rich folds a long word
            pieces = chop_cells(part, width)
            for piece in pieces[:-1]:
                offset += len(piece)
                out.append(offset)
            part, used = pieces[-1], 0
        used += cell_len(part)
        offset += len(part)
    return [b for b in out if 0 < b < len(text)]


class Cell(Text):
    """A cell's text (never markup) that wraps at separators as well as at spaces."""

    def wrap(
        self,
        console: Console,
        width: int,
        *,
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        tab_size: int = 8,
        no_wrap: bool | None = None,
    ) -> Lines:
        if no_wrap or self.no_wrap or overflow == "ignore":
            return super().wrap(
                console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap
            )
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            pieces = line.divide(breaks(line.plain, width))
            for piece in pieces:
                piece.rstrip_end(width)
                piece.rstrip()
                piece.truncate(width, overflow=overflow or "fold")
            lines.extend(pieces)
        return lines

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """The narrowest the column may be: the widest part, not the widest space-free word."""
        text = self.plain
        widest = max((cell_len(line) for line in text.splitlines()), default=0)
        narrowest = max((cell_len(p.rstrip()) for p in parts(text)), default=widest)
        return Measurement(narrowest, widest)
