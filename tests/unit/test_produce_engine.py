"""The transactional loop against a fake producer: abortable errors retry from the checkpoint,
fatal errors stop, the checkpoint travels in the same transaction as its records."""

from __future__ import annotations

import re

import pytest
from confluent_kafka import KafkaError, KafkaException

from kxtx.client.settings import Settings
from kxtx.errors import FencedError, KafkaOperationError, Unavailable, UsageError, partial_of
from kxtx.produce import DEFAULT_SECONDS_PER_TXN, brokerside, loop
from kxtx.produce.checkpoint import Checkpoint
from kxtx.produce.options import ProduceOptions, seconds_limit
from tests.conftest import fast_only


class FakeProducer:
    """Records what each transaction produced; `fail_commits` maps commit number -> KafkaError."""

    def __init__(self, conf, fail_commits):
        self.conf, self.fail_commits = conf, fail_commits
        self.open: list | None = None
        self.committed: list[list] = []
        self.commits = 0
        self.aborts = 0
        self.poll_raises = None

    def init_transactions(self, timeout):
        pass

    def begin_transaction(self):
        assert self.open is None, "begin inside an open transaction"
        self.open = []

    def produce(self, topic, value=None, key=None, *args, **kw):
        assert self.open is not None, "produce outside a transaction"
        self.open.append((topic, key, value))

    def poll(self, timeout=0):
        if self.poll_raises is not None:  # as confluent-kafka's poll() raises a fatal error
            raise KafkaException(self.poll_raises)
        return 0

    def flush(self, timeout=None):
        """Records not acknowledged yet: those of the open transaction (until it commits)."""
        return len(self.open or ())

    def commit_transaction(self, timeout):
        self.commits += 1
        err = self.fail_commits.get(self.commits)
        if err is not None:
            raise KafkaException(err)
        self.committed.append(self.open)
        self.open = None

    def abort_transaction(self, timeout):
        self.aborts += 1
        self.open = None


@pytest.fixture
def fake(monkeypatch):
    made = {}

    def install(fail_commits=None, checkpoint=None):
        monkeypatch.setattr(loop.clients, "probing_admin", lambda s: object())
        monkeypatch.setattr(
            brokerside,
            "describe_topic",
            lambda a, s, t, what="topic", keyed=None: brokerside.TopicInfo(t, 1, 1_000_000),
        )
        monkeypatch.setattr(brokerside, "ensure_checkpoint_topic", lambda a, s, t: False)
        monkeypatch.setattr(brokerside, "read_checkpoint", lambda s, t, tid, admin: checkpoint)

        def producer(settings, **conf):
            made["p"] = FakeProducer(conf, fail_commits or {})
            return made["p"]

        monkeypatch.setattr(loop.clients, "producer", producer)
        return made

    return install


def _data(p: FakeProducer, topic="t"):
    return [v for txn in p.committed for (t, _, v) in txn if t == topic]


def _checkpoints(p: FakeProducer):
    return [
        Checkpoint.from_bytes(v, "test")
        for txn in p.committed
        for (t, _, v) in txn
        if t == "kxtx-checkpoints"
    ]


def _run(path, **opts):
    return loop.Run(
        Settings(props={"bootstrap.servers": "x:1"}), ProduceOptions(topic="t", paths=[str(path)], **opts)
    ).execute()


def test_every_transaction_carries_its_checkpoint(fake, tmp_path):
    made = fake()
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"line%d\n" % i for i in range(10)))
    summary = _run(path, records_per_txn=4)
    p = made["p"]
    assert p.conf["partitioner"] == "murmur2_random" and p.conf["transactional.id"].startswith(
        "kxtx-produce-t-"
    )
    assert [len(txn) for txn in p.committed] == [5, 5, 3]  # 4 + checkpoint, 4 + checkpoint, 2 + checkpoint
    assert _data(p) == [b"line%d" % i for i in range(10)]
    cps = _checkpoints(p)
    assert [(c.records, list(c.files.values())[0].line, list(c.files.values())[0].eof) for c in cps] == [
        (4, 4, False),
        (8, 8, False),
        (10, 10, True),
    ]
    assert summary.records == 10 and summary.transactions == 3


@pytest.mark.parametrize(
    "props, defaults, left",
    [
        ({}, {"batch.num.messages": 2000, "linger.ms": 20}, []),
        ({"batch.num.messages": "10000"}, {"linger.ms": 20}, ["batch.num.messages"]),
        ({"linger.ms": "5"}, {"batch.num.messages": 2000}, ["linger.ms"]),
    ],
)
def test_producer_batch_defaults_leave_the_users_settings_alone(fake, tmp_path, props, defaults, left):
    """produce's own defaults for its producer; a setting the user made (-X, --command-config) is
    not among them (the client takes it from the settings)."""
    made = fake()
    path = tmp_path / "a.jsonl"
    path.write_text('{"a":1}\n')
    settings = Settings(props={"bootstrap.servers": "x:1", **props})
    loop.Run(settings, ProduceOptions(topic="t", paths=[str(path)])).execute()
    conf = made["p"].conf
    assert {k: conf.get(k) for k in defaults} == defaults
    assert not [k for k in left if k in conf]


def test_abortable_commit_retries_from_the_checkpoint(fake, tmp_path):
    abortable = KafkaError(KafkaError._STATE, "abortable", txn_requires_abort=True)
    made = fake({2: abortable})
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"line%d\n" % i for i in range(10)))
    summary = _run(path, records_per_txn=4)
    p = made["p"]
    assert p.aborts == 1
    assert _data(p) == [b"line%d" % i for i in range(10)]  # exactly once, in order
    assert summary.aborted_transactions == 1 and summary.records == 10


def test_repeated_abortable_errors_give_up(fake, tmp_path):
    abortable = KafkaError(KafkaError._STATE, "abortable", txn_requires_abort=True)
    made = fake({i: abortable for i in range(1, 20)})
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nb\n")
    # the first attempt and MAX_RETRIES retries: the message counts every one of them
    with pytest.raises(KafkaOperationError, match=r"giving up after 6 aborted attempts \(5 retries\)"):
        _run(path)
    assert made["p"].aborts == 6


def test_a_cluster_that_stays_unavailable_carries_what_was_committed(fake, tmp_path):
    """Exit 75 after the first transaction: the exception carries the summary of what was
    committed (the json document shows it, kxtx.errors.carry)."""
    unavailable = KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "too few", txn_requires_abort=True)
    fake({i: unavailable for i in range(2, 20)})
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"line%d\n" % i for i in range(10)))
    with pytest.raises(Unavailable) as info:
        _run(path, records_per_txn=4)
    done = partial_of(info.value)
    assert (done.records, done.transactions, done.aborted_transactions) == (4, 1, 6)
    assert done.files[0].committed_through_line == 4


def test_fenced_stops_with_a_message(fake, tmp_path):
    fake({1: KafkaError(KafkaError._FENCED, "fenced", fatal=True)})
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\n")
    with pytest.raises(FencedError, match="was taken over by another producer"):
        _run(path)


@pytest.mark.parametrize(
    "first,expected,message",
    [
        # the cluster failing over made the transaction fail: the coordinator ended it and bumped the
        # epoch (kxtx.client.failover): exit 75, not 1 "taken over" (the message still names both)
        (
            KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "too few", txn_requires_abort=True),
            Unavailable,
            "taken over .* run the same command again",
        ),
        (
            KafkaError(KafkaError._MSG_TIMED_OUT, "timed out", txn_requires_abort=True),
            Unavailable,
            "taken over .* run the same command again",
        ),
        # any other failure first (here the EndTxn of an instance being taken over, seen under load
        # in test_zombie_is_fenced): the fence means what it says, exit 1
        (
            KafkaError(KafkaError.UNKNOWN, "Unknown broker error", txn_requires_abort=True),
            FencedError,
            "taken over",
        ),
        (KafkaError(KafkaError._STATE, "abortable", txn_requires_abort=True), FencedError, "taken over"),
    ],
)
def test_a_fence_after_a_failed_transaction(fake, tmp_path, first, expected, message):
    fake({1: first, 2: KafkaError(KafkaError._FENCED, "fenced", fatal=True)})
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\n")
    with pytest.raises(expected, match=message) as info:
        _run(path)
    assert (expected is Unavailable) == ("run the same command again" in str(info.value))


def test_resume_from_a_checkpoint_and_nothing_to_do(fake, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nb\nc\n")
    made = fake()
    _run(path, records_per_txn=2)
    last = _checkpoints(made["p"])[-1]
    made = fake(checkpoint=last)
    summary = _run(path)
    assert summary.result == "nothing to do" and made["p"].committed == []
    path.write_bytes(b"a\nb\nc\nd\n")
    made = fake(checkpoint=last)
    summary = _run(path)
    assert _data(made["p"]) == [b"d"] and summary.files[0].start == "appended"


INF = float("inf")


@pytest.mark.parametrize(
    "records,bytes_,seconds,age,n,nb,due",
    [
        (4, INF, 10, 0, 0, 0, True),  # nothing begun yet
        (4, INF, 10, 0, 3, 10**9, False),
        (4, INF, 10, 0, 4, 0, True),
        (INF, 100, 10, 0, 50, 99, False),
        (INF, 100, 10, 0, 50, 100, True),
        (INF, INF, INF, 10**6, 10**9, 10**12, False),  # --all-or-nothing: one transaction
        (4, 100, 10, 0, 2, 150, True),
        (4, 100, 10, 9.9, 1, 1, False),  # --seconds-per-txn: open for less
        (4, 100, 10, 10, 1, 1, True),  # and for that long
    ],
)
def test_txn_due_one_rule_for_every_loop(monkeypatch, records, bytes_, seconds, age, n, nb, due):
    run = loop.Run.__new__(loop.Run)  # the rule only: no cluster, no inputs
    run.records_limit, run.bytes_limit, run.seconds_limit = records, bytes_, seconds
    run._txn_t0 = 1000.0
    monkeypatch.setattr(loop.time, "monotonic", lambda: 1000.0 + age)
    assert run.txn_due(n, nb) is due


@pytest.mark.parametrize(
    "given, all_or_nothing, props, limit",
    [
        (None, False, {}, DEFAULT_SECONDS_PER_TXN),
        (None, False, {"transaction.timeout.ms": "8000"}, 4.0),  # half the timeout
        (2.5, False, {}, 2.5),
        (59, False, {}, 59),
        (None, True, {}, INF),
        (60, False, {}, "less than transaction.timeout.ms (60 s)"),
        (3, False, {"transaction.timeout.ms": "3000"}, "less than transaction.timeout.ms (3 s)"),
        (0, False, {}, "more than 0"),
        (-1, False, {}, "more than 0"),
        (1, True, {}, "exclude each other"),
        (None, False, {"transaction.timeout.ms": "1m"}, "expected milliseconds"),
    ],
)
def test_seconds_per_txn_stays_within_the_transaction_timeout(given, all_or_nothing, props, limit):
    opts = ProduceOptions("t", ["-"], seconds_per_txn=given, all_or_nothing=all_or_nothing)
    if isinstance(limit, str):
        with pytest.raises(UsageError, match=re.escape(limit)):
            seconds_limit(opts, props)
    else:
        assert seconds_limit(opts, props) == limit


def _document(summary) -> list:
    """The `-o json` document of a run that emitted `summary`, as ordered (key, value) pairs."""
    import json

    from kxtx.cli import output

    with output.document(output.OutputFormat.json) as doc:
        output.emit(summary, output.OutputFormat.json)
        rendered = output._dumps(doc.render(0), indent=2)
    return json.loads(rendered, object_pairs_hook=lambda pairs: [list(p) for p in pairs])


@fast_only
def test_the_summary_document(fake, tmp_path, monkeypatch):
    """What `produce -o json` writes from the summary: its keys in their order, "errors" only after
    a bad line, "message" only when there was nothing to do."""
    from types import SimpleNamespace

    from kxtx.produce import counters

    monkeypatch.setattr(counters, "time", SimpleNamespace(monotonic=lambda: 100.0))
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nb\nc\n")
    made = fake()
    first = _document(_run(path, records_per_txn=2))
    status = [["status", "ok"], ["exit_code", 0], ["error", None]]
    counts = [["records", 3], ["transactions", 2], ["bytes", 3], ["skipped", 0], ["dead_lettered", 0]]
    txid = dict(first)["transactional_id"]
    assert txid.startswith("kxtx-produce-t-")
    assert first == [
        *status,
        ["result", "produced"],
        ["topic", "t"],
        ["transactional_id", txid],
        *counts,
        ["aborted_transactions", 0],
        ["elapsed_s", 0.0],
        ["records_per_s", None],
        ["partitions", [[["partition", 0], ["first_offset", None], ["last_offset", None], ["records", 3]]]],
        [
            "files",
            [
                [
                    ["file", str(path)],
                    ["format", "lines"],
                    ["start", "new"],
                    ["from_line", 1],
                    ["committed_through_line", 3],
                ]
            ],
        ],
    ]
    fake(checkpoint=_checkpoints(made["p"])[-1])
    again = _document(_run(path))
    assert [k for k, _ in again] == [k for k, _ in first] + ["message"]
    assert dict(again)["message"] == (
        f"nothing to do: every input was already produced under transactional id {txid}"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"a": 1}\nnot json\n')
    fake()
    skipped = _document(_run(bad, on_error="skip"))
    assert [k for k, _ in skipped] == [k for k, _ in first[:-1]] + ["errors", "files"]
    assert dict(skipped)["errors"] == [f"{bad}:2: bad JSON: Expecting value: line 1 column 1 (char 0)"]


def test_a_fence_raised_by_poll_names_the_transactional_id(fake, tmp_path):
    """confluent-kafka's poll() raises the producer's fatal error itself (here where the general
    path serves delivery reports): it is the fence's own message, naming the transactional id and
    what was committed, not the boundary's generic one (test_zombie_is_fenced under load)."""
    made = fake()
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"line%d\n" % i for i in range(10000)))
    run = loop.Run(  # a partitioner of the user's own: the general path, which polls every 2048 records
        Settings(props={"bootstrap.servers": "x:1", "partitioner": "consistent_random"}),
        ProduceOptions(topic="t", paths=[str(path)], records_per_txn=3000),
    )
    real_commit = loop.Run.commit

    def commit_then_fence(self, state):
        real_commit(self, state)
        made["p"].poll_raises = KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True)

    run.commit = commit_then_fence.__get__(run)
    with pytest.raises(FencedError, match=r"transactional id 'kxtx-produce-t-.*' was taken over") as info:
        run.execute()
    assert "after committing 3,000 records" in str(info.value)
    assert made["p"].committed and len(made["p"].committed) == 1  # the first transaction only


def test_delivery_reports_extend_the_open_transactions_ranges():
    """A delivered record widens its partition's offset range and counts; a sampled one (counted
    already by a fast path) only widens it; an error is kept and changes no range."""
    from types import SimpleNamespace

    from kxtx.produce.counters import Stats

    def msg(p, o):
        return SimpleNamespace(partition=lambda: p, offset=lambda: o)

    stats = Stats("t", "x")
    stats.sampled(None, msg(1, 7))
    stats.delivered(None, msg(0, 5))
    stats.delivered(None, msg(0, 3))
    stats.sampled(None, msg(0, 9))
    stats.sampled(None, msg(1, 4))
    stats.delivered(None, msg(1, 8))
    assert stats.txn_ranges == {0: [3, 9, 2], 1: [4, 8, 1]}
    err = KafkaError(KafkaError._MSG_TIMED_OUT)
    stats.sampled(err, msg(0, 1))
    stats.delivered(KafkaError(KafkaError._MSG_TIMED_OUT), msg(0, 1))
    assert stats.txn_ranges == {0: [3, 9, 2], 1: [4, 8, 1]} and stats.delivery_error == err
