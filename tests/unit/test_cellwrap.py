"""Table cells wrap ids at their separators at 80 columns, not mid-word (issue 63, item 10)."""

from __future__ import annotations

import itertools

import pytest

from kxtx.cli import output
from kxtx.cli.cellwrap import breaks
from kxtx.cli.output import OutputFormat

TXID = "kxtx-produce-ORDERS.TOPIC.PARTITION-3f9a2c0d11e4-2343d99042"


@pytest.mark.parametrize(
    ("text", "width", "lines"),
    [
        ("orders.TOPIC.PARTITION", 16, ["orders.TOPIC.", "PARTITION"]),
        ("a-b-c", 10, ["a-b-c"]),
        ("topic:12", 6, ["topic:", "12"]),
        ("two words", 5, ["two ", "words"]),
        ("abcdefghij", 4, ["abcd", "efgh", "ij"]),  # no separator: folded, as before
        ("x.abcdefghij", 4, ["x.", "abcd", "efgh", "ij"]),
    ],
)
def test_breaks(text, width, lines):
    cuts = [0, *breaks(text, width), len(text)]
    assert [text[a:b] for a, b in itertools.pairwise(cuts)] == lines


def test_an_id_in_an_80_column_table_wraps_at_its_separators(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rows = [
        {
            "transactional_id": TXID,
            "topic": "orders",
            "partition": 3,
            "producer_id": 43495,
            "state": "Ongoing",
        }
    ]
    output.emit_rows(rows, OutputFormat.table, list(rows[0]))
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert "".join(cells) == TXID, out  # a table, the id split over several lines
    assert len(cells) > 1, out
    assert all(c[-1] in ".-:" for c in cells[:-1]), cells  # each line ends at a separator
