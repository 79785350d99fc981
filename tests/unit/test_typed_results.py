"""The summaries and progress that produce and pipe hand the CLI are typed (kxtx.results), and what
the commands write from them is byte for byte what they wrote from dicts: the same keys in the same
order, the same values, an empty "errors" or "message" left out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from io import StringIO
from types import SimpleNamespace

import pytest

from kxtx.cli import output
from kxtx.cli.output import OutputFormat
from kxtx.pipe import stats as pipestats
from kxtx.pipe.runconfig import PipeConfig
from kxtx.results import OMIT_EMPTY, Result, written_as


def _document(result, partial=False) -> list:
    """The `-o json` document of a command that emitted `result` (or whose exception carried it),
    as ordered (key, value) pairs, nested objects too."""
    with output.document(OutputFormat.json) as doc:
        if partial:
            doc.partial = result
        else:
            output.emit(result, OutputFormat.json)
        rendered = output._dumps(doc.render(0), indent=2)
    return json.loads(rendered, object_pairs_hook=lambda pairs: [list(p) for p in pairs])


# --- the renderer ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Row(Result):
    name: str
    n: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _Summary(Result):
    z_first: str
    rows: list[_Row]
    notes: list[str] = field(default_factory=list, metadata=OMIT_EMPTY)
    a_last: int | None = None
    message: str = field(default="", metadata=OMIT_EMPTY)


def test_a_result_is_written_in_field_order_its_empty_optional_fields_left_out():
    s = _Summary(z_first="x", rows=[_Row("r", 1)])
    assert s.to_dict() == {"z_first": "x", "rows": [{"name": "r", "n": 1}], "a_last": None}
    assert list(s.to_dict()) == ["z_first", "rows", "a_last"]
    full = _Summary(z_first="x", rows=[], notes=["n"], a_last=2, message="m")
    assert list(full.to_dict()) == ["z_first", "rows", "notes", "a_last", "message"]


@dataclass(frozen=True, slots=True)
class _Range(Result):
    first: int = field(metadata=written_as("from"))  # a keyword
    to: int = 0


def test_a_field_is_written_under_the_key_it_names():
    assert list(_Range(1, 2).to_dict().items()) == [("from", 1), ("to", 2)]


@pytest.mark.parametrize("fmt", ["json", "jsonl", "table"])
def test_a_result_renders_as_the_dict_it_stands_for(fmt, capsys):
    s = _Summary(z_first="x", rows=[_Row("r", 1), _Row("s", 2)], notes=["n"])
    written = []
    for data in (s, s.to_dict()):
        with output.document(OutputFormat(fmt)) as doc:
            output.emit(data, OutputFormat(fmt), title="t")
            if doc is not None:
                doc.write(0)
        written.append(capsys.readouterr().out)
    assert written[0] == written[1] and '"z_first"' in written[0].replace("z_first ", '"z_first"')
    assert output.jsonable([s]) == [s.to_dict()]


def test_a_result_carried_by_an_exception_is_the_document():
    s = _Summary(z_first="x", rows=[])
    assert _document(s, partial=True) == [
        ["status", "ok"],
        ["exit_code", 0],
        ["error", None],
        ["z_first", "x"],
        ["rows", []],
        ["a_last", None],
    ]


# --- pipe ----------------------------------------------------------------------------------------
PIPE_DOCUMENT = [
    ["status", "ok"],
    ["exit_code", 0],
    ["error", None],
    ["group", "g"],
    ["transactional_id", "tid"],
    ["input", "a,b"],
    ["output", "out"],
    ["records_in", 50],
    ["records_out", 40],
    ["dropped", 3],
    ["dlq", 7],
    ["transactions", 2],
    ["aborted", 1],
    ["lost_results", 0],
    ["elapsed_s", 10.0],
    ["records_per_s", 5.0],
    ["processing_s", 8.0],
    ["processing_records_per_s", 6.2],
    ["spark_ms_per_batch", 1500.0],
    ["commit_ms_per_batch", 250.0],
    ["produce_ms_per_batch", 100.0],
    ["consume_s", 0.123],
    ["stopped", "idle"],
]


def _pipe_stats(monkeypatch) -> pipestats.Stats:
    monkeypatch.setattr(pipestats, "time", SimpleNamespace(monotonic=lambda: 110.0))
    stats = pipestats.Stats(started=100.0, first_record=102.0)
    stats.add_batch(20, 15, 2, 3)
    stats.add_batch(30, 25, 5, 0)
    stats.aborted, stats.spark_s, stats.commit_s, stats.produce_s = 1, 3.0, 0.5, 0.2
    stats.consume_s, stats.stopped = 0.12345, "idle"
    return stats


def _pipe_cfg() -> PipeConfig:
    return PipeConfig(inputs=["a", "b"], out="out", udf="m:f", group="g", transactional_id="tid")


def test_the_pipe_summary_document(monkeypatch):
    assert _document(_pipe_stats(monkeypatch).summary(_pipe_cfg())) == PIPE_DOCUMENT


def test_a_stopped_pipe_writes_the_same_summary(monkeypatch):
    import signal

    stats = _pipe_stats(monkeypatch)
    stop = pipestats.interrupted(KeyboardInterrupt(), stats, _pipe_cfg())
    assert str(stop).startswith("stopped by SIGINT after 50 records in 2 transactions")
    want = [kv if kv[0] != "stopped" else ["stopped", "SIGINT"] for kv in PIPE_DOCUMENT]
    assert _document(stop.partial, partial=True) == want
    assert stop.exit_code == 128 + signal.SIGINT


def _screen(written: str) -> str:
    """What a terminal shows of one line after `written` (a carriage return goes back to column 0)."""
    cells: list[str] = []
    col = 0
    for ch in written:
        if ch == "\r":
            col = 0
        else:
            assert ch != "\n", "the status line wrote a line break"
            cells[col : col + 1] = [ch]
            col += 1
    return "".join(cells).rstrip()


def test_the_pipe_progress_line_off_a_terminal_every_30_s(monkeypatch):
    from kxtx.cli import progress as progressmod
    from kxtx.cli.pipe import _progress

    now = [1000.0]
    monkeypatch.setattr(progressmod, "time", SimpleNamespace(monotonic=lambda: now[0]))
    err = StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    show = _progress(tty=False)
    report = pipestats.Progress(1234, 1200, 34, 5, 0, 99.6)
    for t in (1000.0, 1029.0, 1030.0, 1040.0, 1060.5):
        now[0] = t
        show(report)
    line = "kxtx: progress: 1,234 in  1,200 out  34 dlq  5 txns  0 aborted  100 rec/s  lag ?\n"
    assert err.getvalue() == line * 2
    show.done()
    assert err.getvalue() == line * 2


# --- produce -------------------------------------------------------------------------------------
def test_the_produce_progress_line(monkeypatch):
    from kxtx.cli.produce import _line
    from kxtx.cli.progress import Progress
    from kxtx.produce.counters import Progress as Report

    err = StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    show = Progress(_line, tty=True)
    show(Report(records=1_234_567, bytes=98_765_432, records_per_s=45_678.4, transactions=12, elapsed_s=3.0))
    show(Report(records=9, bytes=1_000, records_per_s=3.0, transactions=0, elapsed_s=3.0))
    assert _screen(err.getvalue()) == "9 records  0.0 MB  3 rec/s  0 transactions committed"
    show.done()
    assert err.getvalue().endswith("\n")


def _kxtx(tmp_path, *args: str) -> tuple[int, str]:
    r = subprocess.run(
        [sys.executable, "-m", "kxtx", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "100"},
        timeout=120,
    )
    return r.returncode, re.sub(r"(elapsed_s\W+)[0-9.]+ *", r"\1E", r.stdout)


DRY_JSON = """{
  "status": "%s",
  "exit_code": %d,
  "error": %s,
  "result": "dry run: nothing written",
  "topic": "t",
  "records": 2,
  "bytes": 26,
  "bad_lines": 1,
  "elapsed_s": E,
  "files": [
    {
      "file": "in.jsonl",
      "format": "jsonl",
      "records": 2
    }
  ],
  "errors": [
    "in.jsonl:2: bad JSON: Expecting value: line 1 column 1 (char 0)"
  ]
}
"""
DRY_FAIL = (
    '"1 bad line (first: in.jsonl:2: bad JSON: Expecting value: line 1 column 1 (char 0)); use '
    '--on-error skip or dlq:TOPIC to load the others"'
)
DRY_JSONL = (
    '{"result":"dry run: nothing written","topic":"t","records":2,"bytes":26,"bad_lines":1,'
    '"elapsed_s":E,"files":[{"file":"in.jsonl","format":"jsonl","records":2}],'
    '"errors":["in.jsonl:2: bad JSON: Expecting value: line 1 column 1 (char 0)"]}\n'
)
DRY_TABLE = """\
                                 kxtx produce                                 
result     dry run: nothing written                                           
topic      t                                                                  
records    2                                                                  
bytes      26                                                                 
bad_lines  1                                                                  
elapsed_s  E
errors     ["in.jsonl:2: bad JSON: Expecting value: line 1 column 1 (char 0)"]

             files             
┏━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━┓
┃ file     ┃ format ┃ records ┃
┡━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━┩
│ in.jsonl │ jsonl  │ 2       │
└──────────┴────────┴─────────┘
"""  # noqa: W291 - rich pads the key/value table to its width


def test_produce_dry_run_writes_what_it_wrote(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"k": 1, "v": "a"}\nnot json\n{"k": 2}\n')
    dry = ["produce", "in.jsonl", "-t", "t", "-k", "k", "--dry-run"]
    assert _kxtx(tmp_path, *dry, "--on-error", "skip", "-o", "json") == (0, DRY_JSON % ("ok", 0, "null"))
    assert _kxtx(tmp_path, *dry, "-o", "json") == (1, DRY_JSON % ("error", 1, DRY_FAIL))
    assert _kxtx(tmp_path, *dry, "--on-error", "skip", "-o", "jsonl") == (0, DRY_JSONL)
    assert _kxtx(tmp_path, *dry, "--on-error", "skip", "-o", "table") == (0, DRY_TABLE)


# --- fence ---------------------------------------------------------------------------------------
def test_the_fence_result_document(monkeypatch):
    """What `fence -o json` writes from the result: keys in their order, `before`/`after` nested."""
    from kxtx.client.model import CoordinatorTxn, Offsets
    from kxtx.ops import fence

    tps = [("t", 0), ("t", 1)]
    desc = CoordinatorTxn("tid", 1, "Ongoing", 7, 3, 60_000, 0, frozenset(tps))
    after = CoordinatorTxn("tid", 1, "CompleteAbort", 7, 4, 60_000, 0, frozenset())
    reads = iter(
        [
            {("t", 0): Offsets(5, 9), ("t", 1): Offsets(2, 2)},  # 4 records held back in t:0
            {("t", 0): Offsets(10, 10), ("t", 1): Offsets(2, 2)},
        ]
    )
    cluster = SimpleNamespace(
        settings=SimpleNamespace(timeout=5.0),
        offsets=lambda tps: next(reads),
        describe_txns=lambda ids: {"tid": after},
    )
    fenced = SimpleNamespace(init_transactions=lambda timeout: None, flush=lambda timeout: 0)
    monkeypatch.setattr(fence, "producer", lambda settings, **conf: fenced)
    result = fence.fence(cluster, desc)
    state = [["state", "Ongoing"], ["producer_id", 7], ["producer_epoch", 3]]
    assert _document(result) == [
        ["status", "ok"],
        ["exit_code", 0],
        ["error", None],
        ["transactional_id", "tid"],
        ["before", state],
        ["after", [["state", "CompleteAbort"], ["producer_id", 7], ["producer_epoch", 4]]],
        [
            "partitions",
            [
                [
                    ["topic", "t"],
                    ["partition", 0],
                    ["lso_before", 5],
                    ["lso_after", 10],
                    ["high_watermark", 10],
                    ["lso_moved", True],
                    ["unseen", None],
                ],
                [
                    ["topic", "t"],
                    ["partition", 1],
                    ["lso_before", 2],
                    ["lso_after", 2],
                    ["high_watermark", 2],
                    ["lso_moved", True],
                    ["unseen", None],
                ],
            ],
        ],
        ["ok", True],
    ]


def test_the_pipe_rate_is_over_the_last_interval_not_since_the_start(monkeypatch):
    """1,000 records in the first 10 s, then idle: the rate falls to 0 at once, not to 1,000/20 s
    (issue 63, item 10); new records after that show their own rate."""
    clock = [110.0]
    monkeypatch.setattr(pipestats.time, "monotonic", lambda: clock[0])
    stats = pipestats.Stats(started=100.0)
    stats.records_in = 1000
    assert stats.progress().rate == 100.0
    clock[0] = 120.0
    assert stats.progress().rate == 0.0  # idle for the last 10 s (since the start: 50)
    stats.records_in, clock[0] = 1300, 121.0
    assert stats.progress().rate == 300.0
    clock[0] = 121.5
    assert stats.progress().rate == 300.0  # under RATE_INTERVAL_S: the last interval's
