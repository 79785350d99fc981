"""Checkpoint record format and the file-identity rules for resuming."""

import pytest

from kxtx.errors import InputError, UsageError
from kxtx.produce import checkpoint as cp
from kxtx.produce.inputs import detect, read, read_range


def _position_after(path, n_records):
    """The FilePosition a run would commit after `n_records` records of `path`."""
    pos = cp.FilePosition(cp.identify(path))
    for i, line in enumerate(read(detect(path))):
        if i == n_records:
            break
        pos.advance(line.lineno, line.start, line.end, line.raw)
    else:
        pos.eof = True
    return pos


def test_roundtrip():
    ident = cp.FileIdentity("/d/a.jsonl", 10, 10, "ab")
    c = cp.Checkpoint("tid", "t", {"/d/a.jsonl": cp.FilePosition(ident, 5, 2, False, 3, "cd")}, 7, 2, 99)
    assert cp.Checkpoint.from_bytes(c.to_bytes(), "x") == c


@pytest.mark.parametrize(
    "data, message",
    [
        (b"nope", "unreadable checkpoint"),
        (b'{"version": 99}', "checkpoint version 99"),
        (b'{"version": 1, "files": [{}]}', "unreadable checkpoint"),
    ],
)
def test_bad_checkpoint(data, message):
    with pytest.raises(InputError, match=message):
        cp.Checkpoint.from_bytes(data, "kxtx-checkpoints/0@3")


def test_default_transactional_id_is_stable(tmp_path):
    a = cp.default_transactional_id("orders", [str(tmp_path / "a.jsonl")])
    assert a == cp.default_transactional_id("orders", [str(tmp_path / "a.jsonl")])
    assert a.startswith("kxtx-produce-orders-")
    assert a != cp.default_transactional_id("orders", [str(tmp_path / "b.jsonl")])
    assert a != cp.default_transactional_id("other", [str(tmp_path / "a.jsonl")])


DATA = b"l1\nl2\r\nl3\n"


@pytest.mark.parametrize(
    "done_records, after, expected",
    [
        # (records committed, how the file looks at the next run, Resume or error text)
        (None, DATA, cp.Resume()),
        (1, DATA, cp.Resume(3, 1, False, "resumed")),
        (2, DATA, cp.Resume(7, 2, False, "resumed")),
        (3, DATA, cp.Resume(10, 3, True, "done")),
        (3, DATA + b"l4\n", cp.Resume(10, 3, False, "appended")),
        (2, DATA + b"l4\n", cp.Resume(7, 2, False, "resumed")),
        (3, DATA[:-1], "now 9 bytes, was 10"),
        (1, b"L1\nl2\r\nl3\n", "the first 10 bytes differ"),
    ],
)
def test_plan(tmp_path, done_records, after, expected):
    path = tmp_path / "f.txt"
    path.write_bytes(DATA)
    prev = None if done_records is None else _position_after(str(path), done_records)
    path.write_bytes(after)
    if isinstance(expected, str):
        with pytest.raises(InputError, match=expected):
            cp.plan(prev, str(path), False, read_range)
    else:
        assert cp.plan(prev, str(path), False, read_range) == expected


def test_plan_detects_change_after_prefix(tmp_path, monkeypatch):
    monkeypatch.setattr(cp, "PREFIX_BYTES", 3)
    path = tmp_path / "f.txt"
    path.write_bytes(DATA)
    prev = _position_after(str(path), 2)
    path.write_bytes(b"l1\nL2\r\nl3\n")  # same size and prefix, the checkpointed line differs
    with pytest.raises(InputError, match="line 2 differs.*--restart"):
        cp.plan(prev, str(path), False, read_range)


def test_plan_refuses_growth_after_unterminated_line(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"a\nb")
    prev = _position_after(str(path), 2)
    assert prev.eof and prev.offset == 3
    path.write_bytes(b"a\nbc\n")
    with pytest.raises(InputError, match="had no line break"):
        cp.plan(prev, str(path), False, read_range)


def test_check_topic():
    cp.check_topic(cp.Checkpoint("tid", "t"), "t")
    with pytest.raises(UsageError, match="was used to produce to topic 't'"):
        cp.check_topic(cp.Checkpoint("tid", "t"), "u")
