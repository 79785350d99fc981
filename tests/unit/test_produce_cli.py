"""`kxtx produce` option parsing that needs no broker."""

import pytest
import typer

from kxtx.cli.produce import _bytes, _line
from kxtx.errors import InputError, UsageError
from kxtx.produce import inputs
from kxtx.produce.options import ProduceOptions, checked_sources, error_policy, sources_of


@pytest.mark.parametrize(
    "text, n",
    [
        ("1048576", 1048576),
        ("512k", 512 << 10),
        ("16MiB", 16 << 20),
        ("2g", 2 << 30),
        ("10 MB", 10 << 20),
        ("7b", 7),
    ],
)
def test_sizes(text, n):
    assert _bytes(text) == n


@pytest.mark.parametrize("text", ["", "1.5M", "lots", "-1"])
def test_bad_sizes(text):
    with pytest.raises(typer.BadParameter):
        _bytes(text)


@pytest.mark.parametrize(
    "text, policy",
    [("fail", ("fail", None)), ("skip", ("skip", None)), ("dlq:bad-orders", ("dlq", "bad-orders"))],
)
def test_error_policy(text, policy):
    assert error_policy(text) == policy


@pytest.mark.parametrize("text", ["dlq:", "ignore", "DLQ:x"])
def test_bad_error_policy(text):
    with pytest.raises(UsageError, match="--on-error"):
        error_policy(text)


@pytest.mark.parametrize("paths, message", [([], "no input"), (["-", "-"], "only once")])
def test_bad_sources(paths, message):
    with pytest.raises(UsageError, match=message):
        sources_of(paths, None)


ELF = b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256))


@pytest.mark.parametrize(
    "name, data, fmt, allow, error, warning",
    [
        ("empty.jsonl", b"", None, False, None, "{path}: empty file: no records in it"),
        ("empty.txt.gz", b"", None, False, None, "{path}: empty file: no records in it"),  # after gunzip
        (
            "tool",
            ELF,
            None,
            False,
            "{path}:1: a NUL byte: this is not a text file; --allow-binary loads it as lines all the same",
            None,
        ),
        (
            "tool",
            ELF,
            "csv",
            False,
            "{path}:1: a NUL byte: this is not a text file; --allow-binary loads it as csv all the same",
            None,
        ),
        (
            "late.log",
            b"a\nb\n\x00c\n",
            None,
            False,
            "{path}:3: a NUL byte: this is not a text file; --allow-binary loads it as lines all the same",
            None,
        ),
        (
            "late.txt.gz",
            b"a\n\x00",
            None,
            False,
            "{path}:2: a NUL byte: this is not a text file; --allow-binary loads it as lines all the same",
            None,
        ),
        ("tool", ELF, None, True, None, None),  # asked for
        ("tool.jsonl", ELF, None, False, None, None),  # JSON lines: each line's own "bad JSON"
        ("ok.txt", b"a\nb\n", None, False, None, None),
        ("far.txt", b"a\n" * (1 << 16) + b"\x00", None, False, None, None),  # only the first 64 KiB
    ],
)
def test_checked_sources(tmp_path, caplog, name, data, fmt, allow, error, warning):
    import gzip

    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    opts = ProduceOptions("t", [str(path)], input_format=fmt, allow_binary=allow)
    if error:
        with pytest.raises(InputError) as err:
            checked_sources(opts)
        assert str(err.value) == error.format(path=path)
        return
    with caplog.at_level("WARNING", logger="kxtx"):
        assert [s.path for s in checked_sources(opts)] == [str(path)]
    assert [r.getMessage() for r in caplog.records] == ([warning.format(path=path)] if warning else [])


def test_a_pipe_is_not_looked_at(tmp_path):
    """A FIFO's first bytes would be gone: only regular files are checked."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert inputs.head(inputs.detect(str(fifo)), 10) is None


@pytest.mark.parametrize(
    "data, errors",
    [
        # a lone carriage return: kxtx's words, not csv's advice for Python code
        (
            b"a,b\n1,2\n3\r4,5\n",
            [
                "bad CSV: a carriage return inside an unquoted field (quote the field; or is this not a CSV text file?)"
            ],
        ),
        (b'a,b\n1,"2\r\n3"\n', []),  # quoted: part of the field
    ],
)
def test_csv_errors_in_kxtx_words(tmp_path, data, errors):
    path = tmp_path / "in.csv"
    path.write_bytes(data)
    assert [line.error for line in inputs.read(inputs.detect(str(path))) if line.error] == errors


@pytest.mark.parametrize(
    "records, transactions, line",
    [
        (1, 1, "1 record  0.0 MB  10 rec/s  1 transaction committed"),
        (0, 0, "0 records  0.0 MB  10 rec/s  0 transactions committed"),
        (12345, 3, "12,345 records  0.0 MB  10 rec/s  3 transactions committed"),
    ],
)
def test_progress_line(records, transactions, line):
    from kxtx.produce.counters import Progress

    assert _line(Progress(records, 10, 10.0, transactions, 1.0)) == line


@pytest.mark.parametrize(
    ("on_error", "code", "outcome"),
    [
        ("fail", 1, "a run would fail here"),
        ("skip", 0, "a run would skip it"),
        ("dlq:bad-orders", 0, "a run would dead-letter it to bad-orders"),
    ],
)
def test_a_dry_run_says_what_a_run_would_do_with_each_bad_line(tmp_path, on_error, code, outcome):
    """A dry run connects to nothing: the real CLI, no broker. Its warnings name what --on-error
    would do, not "skipped" whatever it is."""
    from tests import cli

    data = tmp_path / "in.jsonl"
    data.write_text('{"a": 1}\nnope\n{"a": 2}\n{broken\n')
    r = cli.run(
        "produce", str(data), "-t", "t", "--dry-run", "--on-error", on_error, "-o", "json", expect=code
    )
    warned = [line for line in r.stderr.splitlines() if line.startswith("kxtx: warning:")]
    assert [w.rpartition(" (")[2] for w in warned] == [f"{outcome})"] * 2, r.stderr
    assert "(skipped)" not in r.stderr
