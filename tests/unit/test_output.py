import json

import pytest

from kxtx.cli import output
from kxtx.cli.common import OutputFormat

ROWS = [{"topic": "a", "partition": 0, "raw": b"\x00\x01", "nested": {"x": 1}},
        {"topic": "b", "partition": 1, "raw": None, "nested": None}]


def test_jsonl_one_object_per_line(capsys):
    assert output.emit_rows(iter(ROWS), OutputFormat.jsonl) == 2
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x) for x in lines] == [
        {"topic": "a", "partition": 0, "raw": "AAE=", "nested": {"x": 1}},
        {"topic": "b", "partition": 1, "raw": None, "nested": None},
    ]


def test_json_is_one_document(capsys):
    output.emit(ROWS, OutputFormat.json)
    assert [r["topic"] for r in json.loads(capsys.readouterr().out)] == ["a", "b"]
    output.emit({"k": 1, "rows": ROWS}, OutputFormat.json)
    assert json.loads(capsys.readouterr().out)["rows"][1]["partition"] == 1


def test_table_shows_chosen_columns(capsys):
    output.emit(ROWS, OutputFormat.table, columns=["partition", "topic"])
    out = capsys.readouterr().out
    assert "partition" in out and "topic" in out and "nested" not in out
    assert out.index("partition") < out.index("topic")


def test_table_for_an_object_nests_row_lists(capsys):
    output.emit({"id": "tx", "partitions": [{"topic": "t", "partition": 3}]}, OutputFormat.table)
    out = capsys.readouterr().out
    assert "tx" in out and "partitions" in out and "3" in out


def test_default_format_is_jsonl_when_not_a_tty(capsys):
    assert output.choose(None) is OutputFormat.jsonl  # pytest captures stdout: not a TTY


@pytest.mark.parametrize("value, expected", [
    (b"\xff", "/w=="), (OutputFormat.json, "json"), ((1, 2), [1, 2]), ({1: "a"}, {"1": "a"}),
])
def test_jsonable(value, expected):
    assert output.jsonable(value) == expected


@pytest.mark.parametrize("fmt", [OutputFormat.jsonl, OutputFormat.json])
def test_row_batches_same_output_as_rows(capsys, fmt):
    output.emit_rows(iter(ROWS), fmt)
    expected = capsys.readouterr().out
    assert output.emit_row_batches(iter([ROWS[:1], ROWS[1:]]), fmt) == 2
    assert capsys.readouterr().out == expected
