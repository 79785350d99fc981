import json

import pytest

from kxtx.cli import output
from kxtx.cli.common import OutputFormat

ROWS = [
    {"topic": "a", "partition": 0, "raw": b"\x00\x01", "nested": {"x": 1}},
    {"topic": "b", "partition": 1, "raw": None, "nested": None},
]


def test_jsonl_one_object_per_line(capsys):
    assert output.emit_rows(iter(ROWS), OutputFormat.jsonl) == 2
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x) for x in lines] == [
        {"topic": "a", "partition": 0, "raw": "AAE=", "nested": {"x": 1}},
        {"topic": "b", "partition": 1, "raw": None, "nested": None},
    ]


def _json(emitting, rows_key="rows") -> dict:
    """What a command's json document holds after `emitting()` (written by its boundary)."""
    with output.document(OutputFormat.json, rows_key) as doc:
        emitting()
    assert doc is not None
    return json.loads(json.dumps(doc.render(0), default=output._default))


def test_json_is_one_document():
    doc = _json(lambda: output.emit(ROWS, OutputFormat.json), "found")
    assert [r["topic"] for r in doc["found"]] == ["a", "b"] and doc["status"] == "ok"
    doc = _json(lambda: output.emit({"k": 1, "rows": ROWS}, OutputFormat.json))
    assert doc["rows"][1]["partition"] == 1 and doc["k"] == 1


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


@pytest.mark.parametrize(
    "value, expected",
    [
        (b"\xff", "/w=="),
        (OutputFormat.json, "json"),
        ((1, 2), [1, 2]),
        ({1: "a"}, {"1": "a"}),
    ],
)
def test_jsonable(value, expected):
    assert output.jsonable(value) == expected


def test_row_batches_same_output_as_rows(capsys):
    output.emit_rows(iter(ROWS), OutputFormat.jsonl)
    expected = capsys.readouterr().out
    assert output.emit_row_batches(iter([ROWS[:1], ROWS[1:]]), OutputFormat.jsonl) == 2
    assert capsys.readouterr().out == expected
    rows = _json(lambda: output.emit_rows(iter(ROWS), OutputFormat.json))
    batches = _json(lambda: output.emit_row_batches(iter([ROWS[:1], ROWS[1:]]), OutputFormat.json))
    assert rows == batches


#: What `kxtx find-hanging -o table` shows: 12 columns.
HANGING = [
    {
        "topic": "orders-enriched",
        "partition": 11,
        "producer_id": 1234567,
        "producer_epoch": 3,
        "start_offset": 858816,
        "age": "2h 14m",
        "transactional_id": "kxtx-pipe-enricher-3f9a2c",
        "coordinator_state": "CompleteAbort",
        "lso": 858816,
        "high_watermark": 902311,
        "held_back": 43495,
        "blocked_groups": ["billing", "fraud-check"],
    },
    {
        "topic": "payments",
        "partition": 0,
        "producer_id": 42,
        "producer_epoch": 0,
        "start_offset": 17,
        "age": "31m",
        "transactional_id": None,
        "coordinator_state": None,
        "lso": 17,
        "high_watermark": 20,
        "held_back": 3,
        "blocked_groups": [],
    },
]


def _rendered(capsys, monkeypatch, columns: str, rows=HANGING, cols=None) -> str:
    monkeypatch.setenv("COLUMNS", columns)
    output.emit_rows(rows, OutputFormat.table, cols or list(HANGING[0]), title="hanging transactions")
    return capsys.readouterr().out


def test_too_wide_rows_become_readable_records_at_80_columns(capsys, monkeypatch):
    out = _rendered(capsys, monkeypatch, "80")
    assert max(len(line) for line in out.splitlines()) <= 80
    for row in HANGING:
        for key, value in row.items():
            # every column name and every value whole, on one line, next to its name
            assert any(
                line.split()[:1] == [key] and output._cell(value) in line for line in out.splitlines()
            ), (key, value, out)


def test_rows_that_fit_stay_a_table(capsys, monkeypatch):
    narrow = ["topic", "partition", "producer_id", "lso", "held_back"]
    out = _rendered(capsys, monkeypatch, "80", cols=narrow)
    header = next(line for line in out.splitlines() if "producer_id" in line)
    assert all(c in header for c in narrow)  # one header line: a table
    assert any("orders-enriched" in line and "43495" in line for line in out.splitlines())


def test_a_table_into_a_file_is_not_squeezed_to_80_columns(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    output.emit_rows(HANGING, OutputFormat.table, list(HANGING[0]))
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "producer_id" in line)
    assert all(c in header for c in HANGING[0])
    assert any("kxtx-pipe-enricher-3f9a2c" in line and "CompleteAbort" in line for line in lines)


@pytest.mark.parametrize(
    "body",
    [
        {"batches": [], "summary": []},
        {
            "batches": [{"a": 1, "records": [{"k": "x\ny", "v": None}, {}]}, {"b": []}],
            "summary": [{"n": 1.5}],
        },
        {"batches": [{"nested": {"deep": [1, [2, {}]]}}], "summary": {"s": 'é "q"'}},
    ],
)
def test_a_streamed_document_has_the_bytes_of_the_whole_one(capsys, body):
    whole = output.Document()
    whole.body = body
    whole.write(0)
    expected = capsys.readouterr().out
    streamed = output.Document()
    streamed.body = {**body, "batches": output.Streamed(iter(body["batches"]))}
    streamed.write(0)
    assert capsys.readouterr().out == expected
