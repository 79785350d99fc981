"""Every command that names a topic says the same line, with the same exit code, when the topic does
not exist (issue 63, item 6): `kxtx.errors.NoSuchTopic`, exit 2 (nothing was changed)."""

from __future__ import annotations

import uuid

import pytest

from kxtx.exitcodes import ExitCode

pytestmark = pytest.mark.kafka

T = "{topic}"

#: (command line, with {topic} for the missing topic and {file} for an input file)
COMMANDS = [
    ("produce", "{file}", "-t", T),
    ("pipe", "--in", T, "--out", f"{T}-out", "--udf", "{udf}"),
    ("dump", "partition", T),
    ("topic", "count", T),
    ("inspect", "partition", f"{T}:0"),
    ("find-hanging", "--topic", T),
    ("abort-hanging", "--topic", T, "--dry-run"),
    ("audit-markers", "--topic", T),
    ("repair-markers", "--topic", T, "--dry-run"),
    ("monitor", "collect", "--topic", T),
    ("abort", "--topic", T, "--partition", "0", "--start-offset", "0", "--dry-run"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_a_missing_topic_gets_one_line_and_exit_2(run_kxtx, tmp_path, args):
    name = f"nosuch-{uuid.uuid4().hex[:8]}"
    (tmp_path / "in.txt").write_text("a\n")
    (tmp_path / "udf.py").write_text("def fn(v):\n    return v\n")
    argv = [a.format(topic=name, file=tmp_path / "in.txt", udf=f"{tmp_path / 'udf.py'}:fn") for a in args]
    r = run_kxtx(*argv, "--timeout", "10", expect=ExitCode.USAGE)
    line = f"topic {name!r} does not exist: create it first (kxtx topic create {name})"
    assert line in r.stderr, r.stderr
    assert "Unknown topic or partition" not in r.stderr


def test_dump_offsets_names_a_missing_topic_and_still_reads_the_commits(run_kxtx):
    """A deleted topic's offset commits stay in __consumer_offsets, so `dump offsets --topic` still
    reads them, but says that the topic does not exist (it printed nothing at all before)."""
    name = f"nosuch-{uuid.uuid4().hex[:8]}"
    r = run_kxtx("dump", "offsets", "--topic", name, "--timeout", "10", expect=0)
    assert f"topic {name!r} does not exist" in r.stderr, r.stderr
