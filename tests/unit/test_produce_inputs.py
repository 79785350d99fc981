"""Input readers: formats, gzip, offsets and line numbers, resume from an offset."""

import gzip

import pytest

from kxtx.errors import InputError, UsageError
from kxtx.produce import inputs


@pytest.mark.parametrize(
    "path, explicit, fmt, gz",
    [
        ("a.jsonl", None, "jsonl", False),
        ("a.NDJSON", None, "jsonl", False),
        ("a.json.gz", None, "jsonl", True),
        ("a.csv", None, "csv", False),
        ("dir.v2/a.csv.gz", None, "csv", True),
        ("a.txt", None, "lines", False),
        ("a.unknown", None, "lines", False),
        ("-", None, "lines", False),
        ("-", "jsonl", "jsonl", False),
        ("a.csv", "lines", "lines", False),
        ("a.log.gz", "csv", "csv", True),
    ],
)
def test_detect(path, explicit, fmt, gz):
    assert inputs.detect(path, explicit) == inputs.Source(path, fmt, gz)


def test_detect_rejects_unknown_format():
    with pytest.raises(UsageError, match="--input-format 'xml'"):
        inputs.detect("a.xml", "xml")


def _write(tmp_path, name, data: bytes):
    p = tmp_path / name
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(data))
    else:
        p.write_bytes(data)
    return str(p)


LINES = b'{"a":1}\n\n{"a":2}\r\n{"a":3}'


@pytest.mark.parametrize(
    "name, fmt, expected",
    [
        # (lineno, start, end, raw)
        (
            "x.txt",
            None,
            [(1, 0, 8, b'{"a":1}'), (2, 8, 9, b""), (3, 9, 18, b'{"a":2}'), (4, 18, 25, b'{"a":3}')],
        ),
        ("x.jsonl", None, [(1, 0, 8, b'{"a":1}'), (3, 9, 18, b'{"a":2}'), (4, 18, 25, b'{"a":3}')]),
        ("x.jsonl.gz", None, [(1, 0, 8, b'{"a":1}'), (3, 9, 18, b'{"a":2}'), (4, 18, 25, b'{"a":3}')]),
    ],
)
def test_lines_and_offsets(tmp_path, name, fmt, expected):
    src = inputs.detect(_write(tmp_path, name, LINES), fmt)
    got = [(r.lineno, r.start, r.end, r.raw) for r in inputs.read(src)]
    assert got == expected


@pytest.mark.parametrize("name", ["x.jsonl", "x.jsonl.gz"])
def test_resume_from_offset(tmp_path, name):
    src = inputs.detect(_write(tmp_path, name, LINES), None)
    got = [(r.lineno, r.raw) for r in inputs.read(src, offset=9, lineno=2)]
    assert got == [(3, b'{"a":2}'), (4, b'{"a":3}')]


CSV = b'id,name,note\n1,ann,"x, y"\n2,bob,"multi\nline"\n\n3,cy\n'


def test_csv_rows_offsets_and_header_marker(tmp_path):
    src = inputs.detect(_write(tmp_path, "p.csv", CSV), None)
    got = [(r.lineno, r.start, r.end, r.raw, r.row) for r in inputs.read(src)]
    assert got == [
        (0, 0, 13, b"", ["id", "name", "note"]),
        (2, 13, 26, b'1,ann,"x, y"', ["1", "ann", "x, y"]),
        (3, 26, 45, b'2,bob,"multi\nline"', ["2", "bob", "multi\nline"]),
        (6, 46, 51, b"3,cy", ["3", "cy"]),
    ]


@pytest.mark.parametrize("name", ["p.csv", "p.csv.gz"])
def test_csv_resume_reads_header_then_seeks(tmp_path, name):
    src = inputs.detect(_write(tmp_path, name, CSV), None)
    got = [(r.lineno, r.row) for r in inputs.read(src, offset=26, lineno=2)]
    assert got == [(0, ["id", "name", "note"]), (3, ["2", "bob", "multi\nline"]), (6, ["3", "cy"])]


def test_csv_bad_utf8_is_a_line_error(tmp_path):
    src = inputs.detect(_write(tmp_path, "p.csv", b"a,b\n1,\xff\n2,ok\n"), None)
    got = [(r.lineno, r.error) for r in inputs.read(src)][1:]
    assert got[0][0] == 2 and "not UTF-8" in got[0][1]
    assert got[1] == (3, None)


def test_csv_duplicate_header_refused(tmp_path):
    src = inputs.detect(_write(tmp_path, "p.csv", b"a,a\n1,2\n"), None)
    with pytest.raises(InputError, match="duplicate column"):
        list(inputs.read(src))


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="nope.jsonl"):
        list(inputs.read(inputs.detect(str(tmp_path / "nope.jsonl"))))


def test_bad_gzip(tmp_path):
    p = tmp_path / "x.txt.gz"
    p.write_bytes(b"not gzip\n")
    with pytest.raises(InputError, match="cannot read"):
        list(inputs.read(inputs.detect(str(p))))


def test_stdin(monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a\nb\n")))
    assert [r.raw for r in inputs.read(inputs.detect("-"))] == [b"a", b"b"]
    with pytest.raises(UsageError, match="stdin cannot be resumed"):
        list(inputs.read(inputs.detect("-"), offset=2, lineno=1))


def test_read_range(tmp_path):
    for name in ("r.txt", "r.txt.gz"):
        path = _write(tmp_path, name, b"hello\nworld\n")
        assert inputs.read_range(path, name.endswith(".gz"), 6, 12) == b"world\n"


class _Item:
    def __init__(self, n: int, span: int = 10) -> None:
        self.n, self.span = n, span


def _items(n: int, fail_at: int | None = None, closed: list | None = None):
    try:
        for i in range(n):
            if i == fail_at:
                raise InputError(f"x.jsonl.gz: cannot read: block {i}")
            yield _Item(i)
    finally:
        if closed is not None:
            closed.append(True)


@pytest.mark.parametrize(
    "steps_between, limit, most_waiting",
    [
        ([0] * 12, 30, 0),  # never asked to read ahead: a plain iteration
        ([5] + [0] * 11, 30, 3),  # five asked, three read (30 bytes wait), none after the end
        ([1] * 12, 30, 1),  # one read ahead before each block taken
        ([2] * 12, 30, 3),  # two asked each time: up to the limit
        ([9] * 12, 1, 1),  # one block may pass the limit
        ([20] + [0] * 11, 10_000, 10),  # everything read ahead at once
    ],
)
def test_read_ahead_keeps_the_order_and_the_limit(steps_between, limit, most_waiting):
    ahead = inputs.ReadAhead(_items(10), limit)
    taken, waiting, it = [], [], iter(ahead)
    for steps in steps_between:
        for _ in range(steps):
            ahead.step()
        waiting.append(len(ahead._queue))
        item = next(it, None)
        if item is None:
            break
        taken.append(item.n)
    assert taken == list(range(10))
    assert max(waiting) == most_waiting
    assert not ahead.step() and next(it, None) is None


@pytest.mark.parametrize("steps", [0, 2, 3, 4, 20])
def test_read_ahead_raises_an_error_where_its_block_was(steps):
    """A block that raised while read ahead raises when the loop comes to it: the blocks before
    it are taken first (their transactions commit as without reading ahead)."""
    ahead = inputs.ReadAhead(_items(10, fail_at=3), 10_000)
    for _ in range(steps):
        ahead.step()
    taken = []
    with pytest.raises(InputError, match="block 3"):
        for item in ahead:
            taken.append(item.n)
    assert taken == [0, 1, 2]
    assert not ahead.step()


def test_read_ahead_close_closes_the_reader():
    closed: list = []
    ahead = inputs.ReadAhead(_items(10, closed=closed), 10_000)
    ahead.step()
    assert next(iter(ahead)).n == 0
    ahead.close()
    assert closed == [True] and not ahead.step() and list(ahead) == []
