"""`kxtx produce` option parsing that needs no broker."""

import pytest
import typer

from kxtx.cli.produce import _bytes
from kxtx.errors import UsageError
from kxtx.produce.options import error_policy, sources_of


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
