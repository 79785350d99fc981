"""`kxtx produce` against a real broker: formats and mappings as a read_committed consumer sees them,
transaction boundaries, rerun/append/changed files, bad lines, dry run."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable

import pytest

from tests import cli
from tests.integration.kafka_io import read, read_committed, read_uncommitted, values
from tests.integration.produce_helpers import summary, write_jsonl

JSONL = (
    b'{"id":1,"c":{"k":"a"},"src":"web","ts":1700000000000}\n'
    b'{"id":2,"c":{"k":"b"},"ts":"2024-01-01T00:00:00Z"}\n'
    b'{"id":3,"c":{"k":"a"},"src":"app","ts":1700000000002}\n'
)
CSV = b'id,name,note\n1,ann,"x, y"\n2,bob,"two\nlines"\n'


def _file(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return str(p)


@pytest.mark.parametrize(
    "name, data, args, expected",
    [
        (
            "a.jsonl",
            JSONL,
            ["-k", "c.k", "-H", "origin=test", "--header-field", "source=src", "--timestamp-field", "ts"],
            [
                (b"a", JSONL.splitlines()[0], [("origin", b"test"), ("source", b"web")], 1700000000000),
                (b"b", JSONL.splitlines()[1], [("origin", b"test")], 1704067200000),
                (b"a", JSONL.splitlines()[2], [("origin", b"test"), ("source", b"app")], 1700000000002),
            ],
        ),
        (
            "a.jsonl.gz",
            JSONL,
            ["--value-field", "c"],
            [
                (None, b'{"k":"a"}', None, None),
                (None, b'{"k":"b"}', None, None),
                (None, b'{"k":"a"}', None, None),
            ],
        ),
        (
            "p.csv",
            CSV,
            ["-k", "id", "--value-as-json"],
            [
                (b"1", b'{"id":"1","name":"ann","note":"x, y"}', None, None),
                (b"2", b'{"id":"2","name":"bob","note":"two\\nlines"}', None, None),
            ],
        ),
        (
            "p.csv",
            CSV,
            ["-k", "name"],
            [(b"ann", b'1,ann,"x, y"', None, None), (b"bob", b'2,bob,"two\nlines"', None, None)],
        ),
        (
            "plain.txt",
            b"one\n\nthree",
            [],
            [(None, b"one", None, None), (None, b"", None, None), (None, b"three", None, None)],
        ),
    ],
)
def test_formats_and_mappings(kafka, topic, run_kxtx, tmp_path, name, data, args, expected):
    p = run_kxtx("produce", _file(tmp_path, name, data), "-t", topic, *args, expect=0)
    got = [
        (k, v, h, ts if expected[0][3] is not None else None)
        for _, k, v, h, ts in read(kafka.bootstrap, topic)
    ]
    assert got == expected
    s = summary(p)
    assert s["records"] == len(expected) and s["transactions"] == 1
    assert s["partitions"] == [
        {"partition": 0, "first_offset": 0, "last_offset": len(expected) - 1, "records": len(expected)}
    ]
    assert s["transactional_id"].startswith(f"kxtx-produce-{topic}-")


def test_stdin_is_transactional(kafka, topic, run_kxtx):
    run_kxtx("produce", "-", "-t", topic, "-I", "jsonl", "-k", "id", input=JSONL.decode(), expect=0)
    assert [(r[1], r[2]) for r in read(kafka.bootstrap, topic)] == [
        (b"1", JSONL.splitlines()[0]),
        (b"2", JSONL.splitlines()[1]),
        (b"3", JSONL.splitlines()[2]),
    ]


def _produce_from_a_pipe(kafka, topic: str, *args: str) -> subprocess.Popen:
    """`kxtx produce -` in the background, reading a pipe the test writes into."""
    return cli.start(
        "produce", "-", "-t", topic, *args,
        env={"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _write_until(proc: subprocess.Popen, data: bytes, seen: Callable[[], list]) -> None:
    """Write `data` into the run's stdin, leave the pipe open, and wait until `seen()` has records."""
    assert proc.stdin is not None
    proc.stdin.write(data)
    proc.stdin.flush()
    deadline = time.monotonic() + 20
    while not seen() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()


@pytest.mark.parametrize("args", [["-I", "lines"], ["-I", "jsonl", "-k", "id"]], ids=["plain", "keyed"])
def test_slow_stdin_is_committed_by_age(kafka, topic, args):
    """A pipe on stdin that writes now and then (`tail -f log | kxtx produce -`): what came is
    committed within --seconds-per-txn, read_committed consumers see it while the run goes on, and
    a quiet spell longer than transaction.timeout.ms is no failure (the open transaction waited
    for 50,000 records before: invisible, then aborted by the coordinator, the run failing with
    librdkafka's "Local: Fatal error")."""
    lines = [b'{"id":"%d","n":%d}' % (i, i) for i in range(3)]
    proc = _produce_from_a_pipe(
        kafka, topic, *args, "--seconds-per-txn", "0.5", "-X", "transaction.timeout.ms=3000", "-o", "json"
    )
    _write_until(proc, lines[0] + b"\n", lambda: read_committed(kafka.bootstrap, topic, timeout=2))
    assert values(read_committed(kafka.bootstrap, topic)) == lines[:1], "visible while stdin is open"
    time.sleep(4)  # quiet for longer than transaction.timeout.ms
    assert proc.poll() is None and proc.stdin is not None
    proc.stdin.write(lines[1] + b"\n" + lines[2] + b"\n")
    proc.stdin.close()
    proc.stdin = None  # closed: communicate() must not flush it
    s = json.loads(cli.finish(proc, 0, timeout=60).stdout)
    assert s["records"] == 3 and s["transactions"] >= 2
    assert values(read_committed(kafka.bootstrap, topic)) == lines


def test_a_stop_signal_stops_a_run_waiting_for_stdin(kafka, topic):
    """SIGTERM while stdin is quiet stops the run within a second or two (it waited for the next
    line before), the open transaction aborted: exit 143, nothing visible."""
    proc = _produce_from_a_pipe(kafka, topic, "-I", "lines", "--seconds-per-txn", "30")
    _write_until(proc, b"one\n", lambda: read_uncommitted(kafka.bootstrap, topic, timeout=2))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 143, "stdin still open: the run stopped by itself"
    assert proc.stderr is not None and proc.stdin is not None
    assert b"terminated: aborted the open transaction" in proc.stderr.read()
    assert read_committed(kafka.bootstrap, topic) == []
    proc.stdin.close()


def test_keys_partition_like_java_and_partition_field(kafka, run_kxtx, tmp_path):
    from kafka.partitioner.default import murmur2  # the Java client's partitioner, in Python

    topic = kafka.create_topic(partitions=3)
    lines = [json.dumps({"k": f"key-{i}", "p": i % 3}).encode() for i in range(30)]
    path = _file(tmp_path, "k.jsonl", b"\n".join(lines) + b"\n")
    run_kxtx("produce", path, "-t", topic, "-k", "k", expect=0)
    keyed = read(kafka.bootstrap, topic)
    assert sorted(r[2] for r in keyed) == sorted(lines)
    assert {r[0] for r in keyed} == {0, 1, 2}
    for part, key, _, _, _ in keyed:
        assert part == (murmur2(key) & 0x7FFFFFFF) % 3, key
    topic2 = kafka.create_topic(partitions=3)
    run_kxtx("produce", path, "-t", topic2, "--partition-field", "p", expect=0)
    for part, _, v, _, _ in read(kafka.bootstrap, topic2):
        assert json.loads(v)["p"] == part


def test_rerun_writes_nothing_and_append_continues(kafka, topic, run_kxtx, tmp_path):
    path = tmp_path / "in.jsonl"
    first = write_jsonl(path, 100)
    run_kxtx("produce", str(path), "-t", topic, "-n", "30", expect=0)
    again = run_kxtx("produce", str(path), "-t", topic, "-n", "30", expect=0)
    assert "nothing to do" in again.stderr
    s = summary(again)
    assert s["result"] == "nothing to do" and s["records"] == 0 and s["transactions"] == 0
    assert values(read(kafka.bootstrap, topic)) == first
    more = write_jsonl(path, 10, start=100)
    p = run_kxtx("produce", str(path), "-t", topic, "-n", "30", expect=0)
    assert summary(p)["records"] == 10 and summary(p)["files"][0]["start"] == "appended"
    assert values(read(kafka.bootstrap, topic)) == first + more


def test_changed_file_refused_unless_restart(kafka, topic, run_kxtx, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nb\nc\n")
    run_kxtx("produce", str(path), "-t", topic, expect=0)
    path.write_bytes(b"a\nB\nc\n")
    p = run_kxtx("produce", str(path), "-t", topic, expect=1)
    assert "changed since the last committed checkpoint" in p.stderr and "--restart" in p.stderr
    assert values(read(kafka.bootstrap, topic)) == [b"a", b"b", b"c"]
    p = run_kxtx("produce", str(path), "-t", topic, "--restart", expect=0)
    assert values(read(kafka.bootstrap, topic)) == [b"a", b"b", b"c", b"a", b"B", b"c"]


@pytest.mark.parametrize("name", ["bad.jsonl", "bad.jsonl.gz"])
def test_a_fixed_bad_line_continues_after_the_committed_part(kafka, run_kxtx, tmp_path, name):
    """Issue 42: line 500 is bad, 400 records are committed; the line is fixed (a new file, as
    `sed -i` makes, another size) and the same command continues: 1,000 distinct records, none
    twice. A change inside the committed part is still refused, saying what --restart would do."""
    topic = kafka.create_topic(partitions=3)
    lines = [json.dumps({"order": {"id": i}, "pad": "x" * (i % 13)}).encode() for i in range(1, 1001)]
    bad = list(lines)
    bad[499] = b'{"order": {"id": 500}, broken'
    path = tmp_path / name

    def write(rows):
        data = b"\n".join(rows) + b"\n"
        path.unlink(missing_ok=True)
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)

    write(bad)
    cmd = ["produce", str(path), "-t", topic, "-k", "order.id", "-n", "100"]
    p = run_kxtx(*cmd, expect=1)
    assert f"{path}:500: bad JSON" in p.stderr
    assert len(read_committed(kafka.bootstrap, topic)) == 400
    write(lines)  # line 500 fixed
    p = run_kxtx(*cmd, expect=0)
    assert summary(p)["records"] == 600 and summary(p)["files"][0]["start"] == "resumed"
    got = read_committed(kafka.bootstrap, topic)
    assert len(got) == 1000 and Counter(r.value for r in got) == Counter(lines)
    assert {r.key for r in got} == {str(i).encode() for i in range(1, 1001)}

    changed = list(lines)
    changed[9] = json.dumps({"order": {"id": 10}, "pad": "changed"}).encode()
    write(changed)
    p = run_kxtx(*cmd, expect=1)
    assert f"{path}: changed since the last committed checkpoint in the part already produced" in p.stderr
    assert (
        "--restart to produce it again from line 1, which writes the records of lines 1-1000 a second time"
        in (" ".join(p.stderr.split()))
    )
    assert len(read_committed(kafka.bootstrap, topic)) == 1000


def test_a_file_cut_short_commits_what_comes_before_the_cut(kafka, topic, run_kxtx, tmp_path):
    """A gzip file cut short (a copy that did not finish): the transactions before the part that
    cannot be read commit, although the fast path reads blocks ahead while a commit waits; the run
    stops naming the file, and once the whole file is there the same command writes the rest,
    every record once."""
    lines = [b'{"id":%d,"pad":"%s"}' % (i, b"x" * (i % 17)) for i in range(200_000)]
    packed = gzip.compress(b"\n".join(lines) + b"\n", mtime=0)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[: len(packed) // 2])
    cmd = ["produce", str(path), "-t", topic, "-n", "20000"]
    p = run_kxtx(*cmd, expect=1)
    assert f"{path}: cannot read" in p.stderr
    got = values(read_committed(kafka.bootstrap, topic))
    assert len(got) >= 60_000 and len(got) % 20_000 == 0 and got == lines[: len(got)]
    path.write_bytes(packed)
    p = run_kxtx(*cmd, expect=0)
    assert summary(p)["files"][0]["start"] == "resumed"
    assert values(read_committed(kafka.bootstrap, topic)) == lines


def test_bad_line_fails_and_its_transaction_is_invisible(kafka, topic, run_kxtx, tmp_path):
    path = tmp_path / "in.jsonl"
    good = write_jsonl(path, 7)
    with open(path, "ab") as f:
        f.write(b'{"id": broken\n')
    tail = write_jsonl(path, 3, start=8)
    p = run_kxtx("produce", str(path), "-t", topic, "-n", "5", expect=1)
    assert f"{path}:8: bad JSON" in p.stderr
    assert values(read(kafka.bootstrap, topic)) == good[:5]
    # skip: the run continues after the checkpoint, counting the bad line
    p = run_kxtx("produce", str(path), "-t", topic, "-n", "5", "--on-error", "skip", expect=0)
    s = summary(p)
    assert s["skipped"] == 1 and s["records"] == 5
    assert s["errors"] == [f"{path}:8: bad JSON: Expecting value: line 1 column 8 (char 7)"]
    assert values(read(kafka.bootstrap, topic)) == good + tail


@pytest.mark.parametrize(
    "name, args",
    [
        ("s.jsonl", []),
        ("s.jsonl.gz", ["-k", "id"]),
        ("s.csv", ["-k", "id", "--value-as-json", "-X", "partitioner=consistent_random"]),
    ],
)
def test_lines_skipped_then_fixed_are_loaded_once_by_the_same_command(kafka, run_kxtx, tmp_path, name, args):
    """Issue 63: a skip run leaves lines 4 and 9 out (in two committed transactions); fixed in
    place (another length: `sed -i`), the same command loads just line 4 (9 is still bad: said,
    skipped again), then, once 9 is fixed too, just line 9: every line once, read_committed. The
    plain fast path, the keyed one on a gzip file, and CSV on the record-by-record path (a
    partitioner of librdkafka's own)."""
    csv = name.endswith(".csv")
    topic = kafka.create_topic(partitions=1 if not args else 3)
    good = [b"%d,row%d" % (i, i) if csv else b'{"id":%d,"pad":"%s"}' % (i, b"x" * i) for i in range(1, 13)]
    bad = {4: b"4" if csv else b'{"id":4,', 9: b"9,x,y" if csv else b"{nine"}
    path = tmp_path / name

    def write(broken):
        rows = [bad[i] if i in broken else row for i, row in enumerate(good, 1)]
        data = (b"id,name\n" if csv else b"") + b"\n".join(rows) + b"\n"
        path.unlink(missing_ok=True)
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)

    def loaded():
        got = read_committed(kafka.bootstrap, topic)
        if csv:
            return [b"%s,%s" % (r.key, json.loads(r.value)["name"].encode()) for r in got]
        return [r.value for r in got]

    cmd = ["produce", str(path), "-t", topic, "-n", "3", "--on-error", "skip", *args]
    line = 5 if csv else 4  # the header is line 1
    write({4, 9})
    p = run_kxtx(*cmd, expect=0)
    assert summary(p)["skipped"] == 2 and summary(p)["records"] == 10
    assert f"2 lines skipped and not loaded (first: {path}:{line})" in p.stderr
    assert "fix them in place and run the same command again" in p.stderr
    write({9})
    p = run_kxtx(*cmd, expect=0)
    s = summary(p)
    assert (s["records"], s["skipped"]) == (1, 1), p.stderr
    assert f"loading 1 line skipped earlier ({path}:{line}), now valid" in p.stderr
    assert f"{path}:{line + 5}: " in p.stderr and "skipped earlier, still bad" in p.stderr
    assert f"1 line skipped and not loaded (first: {path}:{line + 5})" in p.stderr
    others = [g for i, g in enumerate(good, 1) if i not in (4, 9)]  # 10 lines
    assert Counter(loaded()) == Counter(others + [good[3]])
    good += [b"%d,row%d" % (i, i) if csv else b'{"id":%d}' % i for i in (13, 14)]  # appended
    write(set())
    p = run_kxtx(*cmd, expect=0)
    assert (summary(p)["records"], summary(p)["skipped"]) == (3, 0)
    assert f"loading 1 line skipped earlier ({path}:{line + 5}), now valid" in p.stderr
    assert "skipped and not loaded" not in p.stderr
    got = loaded()
    assert Counter(got) == Counter(good)
    if not args:  # one partition: the file's order, each line loaded later after what came before it
        assert got == others + [good[3], good[8]] + good[-2:]
    if args:
        return
    # done now: nothing to do, nothing twice; a change outside the skipped lines is still refused
    p = run_kxtx(*cmd, expect=0)
    assert "nothing to do" in p.stderr
    good[1] += b"0"
    write(set())
    p = run_kxtx(*cmd, expect=1)
    assert "changed since the last committed checkpoint" in p.stderr
    assert len(read_committed(kafka.bootstrap, topic)) == 14


def test_a_skipped_line_emptied_is_no_record_and_no_longer_skipped(kafka, topic, run_kxtx, tmp_path):
    """A bad JSON line skipped, then blanked (the way to say: no record for it), the last line of
    the file: the same command loads nothing for it, says so, and is done."""
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"id":1}\n{"id":2}\n{bad\n')
    cmd = ["produce", str(path), "-t", topic, "--on-error", "skip"]
    run_kxtx(*cmd, expect=0)
    path.write_bytes(b'{"id":1}\n{"id":2}\n   \n')
    p = run_kxtx(*cmd, expect=0)
    assert f"{path}:3: skipped earlier, now blank" in p.stderr and summary(p)["records"] == 0
    assert "nothing to do" in run_kxtx(*cmd, expect=0).stderr
    assert values(read_committed(kafka.bootstrap, topic)) == [b'{"id":1}', b'{"id":2}']


def test_a_failed_run_says_fix_the_line_and_run_again_which_loads_it_once(kafka, topic, run_kxtx, tmp_path):
    """Default --on-error fail: the run stops at the bad line 6 after committing lines 1-5, and
    its message says the way that loses and repeats nothing: fix the line, run the same command
    again. Done, the topic has every line once."""
    path = tmp_path / "in.jsonl"
    first = write_jsonl(path, 5)
    with open(path, "ab") as f:
        f.write(b'{"id": broken\n')
    rest = write_jsonl(path, 4, start=6)
    cmd = ["produce", str(path), "-t", topic, "-n", "5"]
    p = run_kxtx(*cmd, expect=1)
    [line] = [x for x in p.stderr.splitlines() if x.startswith("kxtx: error:")]
    assert f"{path}:6: bad JSON" in line and "fix the line and run the same command again" in line
    assert values(read_committed(kafka.bootstrap, topic)) == first
    fixed = json.dumps({"id": 5.5}).encode()
    path.write_bytes(b"\n".join([*first, fixed, *rest]) + b"\n")
    p = run_kxtx(*cmd, expect=0)
    assert values(read_committed(kafka.bootstrap, topic)) == [*first, fixed, *rest]
    # stdin cannot continue, and --restart would start over: the message does not say it there
    p = run_kxtx("produce", "-", "-t", topic, "-I", "jsonl", input="{bad\n", expect=1)
    assert "run the same command again" not in p.stderr and "--on-error skip" in p.stderr


def test_a_bad_line_says_where_and_what_else_to_do(kafka, topic, run_kxtx, tmp_path):
    """Default --on-error fail, the whole file in one transaction: the run stops with one line that
    names file:line and the other --on-error choices (as the dry run does), and nothing of the
    file is committed."""
    path = tmp_path / "in.jsonl"
    write_jsonl(path, 5)
    with open(path, "ab") as f:
        f.write(b'{"id": broken\n')
    write_jsonl(path, 2, start=6)
    hint = "use --on-error skip or dlq:TOPIC to load the others"
    for dry in ([], ["--dry-run"]):
        p = run_kxtx("produce", str(path), "-t", topic, *dry, expect=1)
        [line] = [x for x in p.stderr.splitlines() if x.startswith("kxtx: error:")]
        assert f"{path}:6: bad JSON" in line and hint in line, p.stderr
    assert read(kafka.bootstrap, topic) == []


def test_aborted_batch_is_written_but_invisible(kafka, topic, run_kxtx, tmp_path):
    path = tmp_path / "in.jsonl"
    # Enough lines that librdkafka has sent some before the bad last one aborts the transaction
    # (with 20k, the fast path got there before anything left, now and then).
    good = write_jsonl(path, 200_000)
    with open(path, "ab") as f:
        f.write(b"not json\n")
    p = run_kxtx("produce", str(path), "-t", topic, "--all-or-nothing", "-X", "linger.ms=0", expect=1)
    assert f"{path}:200001: bad JSON" in p.stderr
    assert "nothing of the open transaction was written" in p.stderr
    written = values(read(kafka.bootstrap, topic, committed=False))
    assert written and written == good[: len(written)]  # in the log, then aborted
    assert read(kafka.bootstrap, topic) == []


def test_dead_letter_topic(kafka, topic, run_kxtx, tmp_path):
    dlq = kafka.create_topic()
    path = _file(tmp_path, "in.csv", b"id,v\n1,a\n2\n3,c\n")
    p = run_kxtx("produce", path, "-t", topic, "-k", "id", "--on-error", f"dlq:{dlq}", expect=0)
    assert summary(p)["dead_lettered"] == 1
    assert [(r[1], r[2]) for r in read(kafka.bootstrap, topic)] == [(b"1", b"1,a"), (b"3", b"3,c")]
    [(_, key, value, headers, _)] = read(kafka.bootstrap, dlq)
    assert value == b"2" and key is None
    assert dict(headers) == {
        "kxtx.error": b"expected 2 CSV columns, got 1",
        "kxtx.source": f"{path}:3".encode(),
        "kxtx.topic": topic.encode(),
    }


def test_dry_run_writes_nothing(kafka, topic, run_kxtx, tmp_path):
    path = _file(tmp_path, "in.jsonl", JSONL + b"nope\n")
    p = run_kxtx("produce", path, "-t", topic, "-k", "c.k", "--dry-run", "--on-error", "skip", expect=0)
    s = summary(p)
    assert s["records"] == 3 and s["bad_lines"] == 1
    assert s["errors"][0].startswith(f"{path}:4: bad JSON")
    # with the default --on-error fail, bad lines make the dry run fail (a validator for scripts)
    p = run_kxtx("produce", path, "-t", topic, "--dry-run", expect=1)
    assert summary(p)["bad_lines"] == 1
    assert f"{path}:4: bad JSON" in p.stderr
    assert read(kafka.bootstrap, topic, committed=False) == []
    # and the real run afterwards starts from the beginning
    run_kxtx("produce", path, "-t", topic, "--on-error", "skip", expect=0)
    assert values(read(kafka.bootstrap, topic)) == JSONL.splitlines()


def test_usage_errors(kafka, topic, run_kxtx, tmp_path):
    path = _file(tmp_path, "in.txt", b"a\n")
    p = run_kxtx("produce", path, "-t", topic, "-k", "id", expect=2)
    assert "--key-field needs JSON or CSV input" in p.stderr
    p = run_kxtx("produce", path, "-t", "no-such-topic-x", expect=2)
    assert "'no-such-topic-x' does not exist" in p.stderr
    assert "create it first (kxtx topic create no-such-topic-x)" in p.stderr


def test_bytes_per_transaction_and_multiple_files(kafka, topic, run_kxtx, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.txt"
    first = write_jsonl(a, 100)  # ~70 bytes per line
    b.write_bytes(b"x\ny\n")
    p = run_kxtx("produce", str(a), str(b), "-t", topic, "--bytes-per-txn", "1KiB", expect=0)
    s = summary(p)
    assert s["records"] == 102 and 6 <= s["transactions"] <= 9
    assert [f["start"] for f in s["files"]] == ["new", "new"]
    assert values(read(kafka.bootstrap, topic)) == first + [b"x", b"y"]
    again = run_kxtx("produce", str(a), str(b), "-t", topic, "--bytes-per-txn", "1KiB", expect=0)
    assert summary(again)["result"] == "nothing to do"


def test_record_over_the_topics_max_size_is_a_bad_line(kafka, run_kxtx, tmp_path):
    topic = kafka.create_topic(config={"max.message.bytes": "2000"})
    path = tmp_path / "in.txt"
    path.write_bytes(b"small\n" + b"x" * 5000 + b"\nlast\n")
    p = run_kxtx("produce", str(path), "-t", topic, expect=1)
    assert f"{path}:2: record of 5000 bytes is over the limit of 2000" in p.stderr
    p = run_kxtx("produce", str(path), "-t", topic, "--on-error", "skip", expect=0)
    assert summary(p)["skipped"] == 1
    assert values(read(kafka.bootstrap, topic)) == [b"small", b"last"]


def test_careless_inputs_are_named(kafka, topic, run_kxtx, tmp_path):
    """An empty file is produced (nothing) with a warning naming it; an executable given as lines is
    refused before anything is written, naming file:line, unless --allow-binary; a binary read as
    CSV gets kxtx's own line, not csv's advice about Python's universal-newline mode."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    p = run_kxtx("produce", str(empty), "-t", topic, expect=0)
    assert f"kxtx: warning: {empty}: empty file: no records in it" in p.stderr.splitlines()
    elf = tmp_path / "tool"  # no extension: lines
    elf.write_bytes(open("/bin/true", "rb").read())
    for fmt in ("lines", "csv"):
        p = run_kxtx("produce", str(elf), "-t", topic, "-I", fmt, expect=1)
        assert p.stderr.strip() == (
            f"kxtx: error: {elf}:1: a NUL byte: this is not a text file; --allow-binary loads it as {fmt} all the same"
        )
    assert read(kafka.bootstrap, topic) == []
    s = summary(run_kxtx("produce", str(elf), "-t", topic, "--allow-binary", expect=0))
    assert s["records"] == len(elf.read_bytes().split(b"\n")) - (elf.read_bytes()[-1:] == b"\n")


def test_keyless_records_into_a_compacted_topic_are_refused_before_writing(kafka, run_kxtx, tmp_path):
    """A compacted topic refuses records without a key: before, every transaction was aborted and
    retried, and the run ended with the broker's "failed to validate record" (issue 63, item 8)."""
    compacted = kafka.create_topic(config={"cleanup.policy": "compact"})
    path = _file(tmp_path, "in.jsonl", b'{"id": 1}\n{"id": 2}\n')
    r = run_kxtx("produce", path, "-t", compacted, expect=2, timeout=120)
    assert f"topic {compacted!r} has cleanup.policy=compact" in r.stderr, r.stderr
    assert "-k" in r.stderr and "nothing was written" in r.stderr
    assert "aborted" not in r.stderr
    # with a key the same file loads
    run_kxtx("produce", path, "-t", compacted, "-k", "id", expect=0, timeout=120)


def test_a_changed_format_or_key_is_refused_not_taken_for_done(kafka, run_kxtx, tmp_path):
    """The transactional id comes from the path alone: the same file again with `-I csv -k id`
    said `nothing to do` (issue 63, item 4). The checkpoint knows the mapping it was produced with."""
    topic = kafka.create_topic()
    path = _file(tmp_path, "orders.txt", b"id,name\n1,a\n2,b\n")
    run_kxtx("produce", path, "-t", topic, expect=0, timeout=120)
    r = run_kxtx("produce", path, "-t", topic, "-I", "csv", "-k", "id", expect=2, timeout=120)
    assert "another mapping" in r.stderr and "now -I csv" in r.stderr and "no -k, now -k id" in r.stderr, (
        r.stderr
    )
    assert "--restart" in r.stderr and "--transactional-id" in r.stderr
    assert len(values(read(kafka.bootstrap, topic))) == 3  # nothing written
    # the same command as the first: still done, under the same id
    again = run_kxtx("produce", path, "-t", topic, "-o", "json", expect=0, timeout=120).json
    assert "nothing to do" in again["message"], again
    # --restart produces the file again with the new mapping
    run_kxtx("produce", path, "-t", topic, "-I", "csv", "-k", "id", "--restart", expect=0, timeout=120)
    assert len(values(read(kafka.bootstrap, topic))) == 5
