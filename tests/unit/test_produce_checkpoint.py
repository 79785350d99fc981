"""Checkpoint record format and the file-identity rules for resuming."""

import gzip

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


def _committed_after(path, n_records, gz=False):
    """The FilePosition this kxtx commits after `n_records` records of `path`: the version 1 fields
    and the hash of the committed part, made as the engine makes it (CommittedPrefix)."""
    pos = _position_after(path, n_records)
    prefix = cp.CommittedPrefix(path, gz)
    assert prefix.advance(pos.offset, keep=pos.last_len) == pos.offset
    assert cp.sha256(prefix.window) == pos.last_sha256 or not pos.last_len
    pos.committed_sha256 = prefix.hexdigest()
    prefix.close()
    return pos


LINES = [b"l%d-%s" % (i, b"x" * (i % 7)) for i in range(1, 9)]
TEXT = b"\n".join(LINES) + b"\n"
#: where the 4th record ends
AFTER_4 = sum(len(x) + 1 for x in LINES[:4])


def _edit(line_no: int, new: bytes) -> bytes:
    lines = list(LINES)
    lines[line_no - 1] = new
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    "done_records, after, expected",
    [
        # (records committed, the file at the next run, Resume or error text)
        (4, _edit(5, b"fixed, and longer than it was"), cp.Resume(AFTER_4, 4, False, "resumed")),
        (4, _edit(5, b"f"), cp.Resume(AFTER_4, 4, False, "resumed")),  # now shorter
        (4, _edit(8, b"l8 fixed"), cp.Resume(AFTER_4, 4, False, "resumed")),
        (4, TEXT[:AFTER_4], cp.Resume(AFTER_4, 4, False, "resumed")),  # the rest cut off
        (8, TEXT, cp.Resume(len(TEXT), 8, True, "done")),
        (8, TEXT + b"l9\n", cp.Resume(len(TEXT), 8, False, "appended")),
        (4, _edit(4, b"L4"), r"part already produced \(its bytes differ\).*lines 1-4 a second time"),
        (4, _edit(1, b"L1-"), "its bytes differ"),
        (1, _edit(1, b"L1"), r"line 1 a second time \(duplicates\)"),
        (4, TEXT[: AFTER_4 - 1], f"now ends at byte {AFTER_4 - 1}, line 4 ended at {AFTER_4}"),
        (8, TEXT[:-1], "now ends at byte"),
    ],
)
def test_plan_by_the_committed_part(tmp_path, gz, done_records, after, expected):
    """Only the committed part decides: a fixed line after it, a new size, inode or mtime do not."""
    path = tmp_path / ("f.txt.gz" if gz else "f.txt")
    path.write_bytes(gzip.compress(TEXT) if gz else TEXT)
    prev = _committed_after(str(path), done_records, gz)
    path.unlink()  # a new inode, as sed -i makes
    path.write_bytes(gzip.compress(after, mtime=1) if gz else after)
    if isinstance(expected, str):
        with pytest.raises(
            InputError, match=f"{path}: changed since the last committed checkpoint.*{expected}"
        ):
            cp.plan(prev, str(path), gz, read_range)
    else:
        got = cp.plan(prev, str(path), gz, read_range)
        assert got == expected
        assert got.prefix is not None and got.prefix.offset == expected.offset
        got.prefix.close()


def test_plan_by_the_committed_part_refuses_growth_of_an_unterminated_line(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"a\nb")
    prev = _committed_after(str(path), 2)
    assert prev.eof and prev.offset == 3
    path.write_bytes(b"a\nbc\n")
    with pytest.raises(InputError, match="its last line 2 had no line break and now goes on"):
        cp.plan(prev, str(path), False, read_range)
    path.write_bytes(b"a\nb")
    assert cp.plan(prev, str(path), False, read_range) == cp.Resume(3, 2, True, "done")


#: A checkpoint as the previous kxtx wrote it (version 1: no hash of the committed part), after the
#: first 2 records of b"l1\nl2\r\nl3\n" in /d/f.txt.
V1 = (
    b'{"version":1,"transactional_id":"tid","topic":"t","files":[{"identity":{"path":"/d/f.txt",'
    b'"size":10,"prefix_len":10,"prefix_sha256":"'
    + cp.sha256(DATA).encode()
    + b'"},"offset":7,"line":2,"eof":false,"last_len":4,"last_sha256":"'
    + cp.sha256(b"l2\r\n").encode()
    + b'"}],"records":2,"transactions":1,"updated_ms":1}'
)


def test_a_version_1_checkpoint_still_resumes_or_is_refused_clearly(tmp_path):
    old = cp.Checkpoint.from_bytes(V1, "kxtx-checkpoints/0@0")
    (pos,) = old.files.values()
    assert pos.committed_sha256 is None and (pos.offset, pos.line) == (7, 2)
    path = tmp_path / "f.txt"
    path.write_bytes(DATA)
    got = cp.plan(pos, str(path), False, read_range)
    assert got == cp.Resume(7, 2, False, "resumed") and got.prefix is not None
    got.prefix.close()
    path.write_bytes(b"l1\nl2\r\nL3\n")  # inside the first 64 KiB: version 1 cannot tell where
    with pytest.raises(InputError, match="written by an earlier kxtx.*lines 1-2 a second time"):
        cp.plan(pos, str(path), False, read_range)
    # written again by this kxtx: version 2, with the hash, read back the same
    pos.committed_sha256 = cp.sha256(DATA[:7])
    again = cp.Checkpoint.from_bytes(old.to_bytes(), "x")
    assert again == old and b'"version":2' in old.to_bytes()


@pytest.mark.parametrize("gz", [False, True])
def test_committed_prefix_closed_between_commits_hashes_the_same(tmp_path, gz):
    """A run over many inputs closes each between uses (no file handle per input): opened again,
    it goes on where it was."""
    path = tmp_path / ("f.txt.gz" if gz else "f.txt")
    path.write_bytes(gzip.compress(TEXT) if gz else TEXT)
    straight = cp.CommittedPrefix(str(path), gz)
    straight.advance(len(TEXT))
    stepped = cp.CommittedPrefix(str(path), gz)
    for offset in (3, AFTER_4, AFTER_4, len(TEXT) - 2, len(TEXT)):
        stepped.advance(offset, keep=2)
        assert stepped.window == TEXT[offset - 2 : offset]
        assert stepped.more() == (offset < len(TEXT))
        stepped.close()
    assert stepped.hexdigest() == straight.hexdigest() == cp.sha256(TEXT)
    straight.close()
    prev = _committed_after(str(path), 4, gz)
    got = cp.plan(prev, str(path), gz, read_range)
    assert got.prefix is not None and got.prefix._stream is None  # planned, verified, closed


def _skipping(path, n_records, skipped, gz=False):
    """The FilePosition committed after `n_records` records of `path` with lines `skipped` (line
    numbers) skipped: their bytes left out of the hash, as the engine commits it."""
    pos = _position_after(path, n_records)
    pos.skipped = [
        cp.skipped_line(x.lineno, x.start, x.end, x.raw) for x in read(detect(path)) if x.lineno in skipped
    ]
    prefix = cp.CommittedPrefix(path, gz)
    prefix.advance(pos.offset, skip=tuple((s.start, s.end) for s in pos.skipped))
    pos.committed_sha256 = prefix.hexdigest()
    prefix.close()
    return pos


def _at(text, line_no):
    """(start, end) of line `line_no` (1-based) of `text`."""
    start = sum(len(x) + 1 for x in text.split(b"\n")[: line_no - 1])
    return start, start + len(text.split(b"\n")[line_no - 1]) + 1


@pytest.mark.parametrize("gz", [False, True])
def test_lines_skipped_may_change_and_are_found_where_they_are_now(tmp_path, gz):
    """Lines 3 and 6 were skipped within the 7 committed records: fixed to other lengths, the
    plan finds them where they are now (the committed part's end moves by the difference) and
    hands them back to try; a change of another line, or of a skipped line's line breaks, is a
    changed file as before."""
    path = tmp_path / ("f.txt.gz" if gz else "f.txt")

    def write(text):
        path.unlink(missing_ok=True)
        path.write_bytes(gzip.compress(text) if gz else text)

    write(TEXT)
    prev = _skipping(str(path), 7, {3, 6}, gz)
    assert [s.line for s in prev.skipped] == [3, 6] and prev.offset == sum(len(x) + 1 for x in LINES[:7])
    fixed = _edit(3, b"line three, now fixed")
    fixed = b"\n".join(fixed.split(b"\n")[:5] + [b"6"] + fixed.split(b"\n")[6:])
    write(fixed)
    got = cp.plan(prev, str(path), gz, read_range)
    after_7 = sum(len(x) + 1 for x in fixed.split(b"\n")[:7])
    assert (got.offset, got.line, got.done) == (after_7, 7, False)
    assert [(s.line, s.start, s.end) for s in got.retry] == [(3, *_at(fixed, 3)), (6, *_at(fixed, 6))]
    assert got.prefix is not None and got.prefix.excluded == (_at(fixed, 3), _at(fixed, 6))
    write(TEXT)  # unchanged: the same lines to try again, nothing else
    assert [(s.line, s.start, s.end) for s in cp.plan(prev, str(path), gz, read_range).retry] == [
        (s.line, s.start, s.end) for s in prev.skipped
    ]
    for changed, why in [
        (_edit(2, b"L2"), r"its bytes differ outside the 2 lines skipped earlier \(3, 6\)"),
        (_edit(3, b"l3\nsplit in two"), "its bytes differ"),
        (TEXT[: _at(TEXT, 3)[0] + 2], "the file now ends inside line 3, skipped earlier"),
    ]:
        write(changed)
        with pytest.raises(InputError, match=f"changed since the last committed checkpoint.*{why}"):
            cp.plan(prev, str(path), gz, read_range)
    # every record done but the skipped ones: not done, they are tried again
    write(TEXT)
    done = _skipping(str(path), 8, {8}, gz)
    assert done.eof
    got = cp.plan(done, str(path), gz, read_range)
    assert not got.done and [s.line for s in got.retry] == [8]


def test_a_checkpoint_with_skipped_lines_is_version_3_and_reads_back():
    ident = cp.FileIdentity("/d/a.jsonl", 10, 10, "ab")
    pos = cp.FilePosition(ident, 5, 2, False, 3, "cd", "ef", [cp.SkippedLine(1, 0, 2, 1)])
    c = cp.Checkpoint("tid", "t", {"/d/a.jsonl": pos}, 7, 2, 99)
    assert b'"version":3' in c.to_bytes() and cp.Checkpoint.from_bytes(c.to_bytes(), "x") == c
    pos.skipped = []
    assert b'"version":2' in c.to_bytes() and b"skipped" not in c.to_bytes()
    assert cp.Checkpoint.from_bytes(c.to_bytes(), "x") == c


def test_skipped_line_counts_its_line_breaks():
    assert cp.skipped_line(3, 10, 14, b"abc").breaks == 1
    assert cp.skipped_line(3, 10, 15, b"abc\r").breaks == 1  # \r\n: raw as the lines reader strips it
    assert cp.skipped_line(3, 10, 13, b"abc").breaks == 0  # the last line, no line break
    assert cp.skipped_line(3, 10, 20, b'1,"a\nb"').breaks == 2  # a CSV row over two lines
