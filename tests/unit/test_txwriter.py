"""The transactional writer's retry policy (`kxtx.client.txwriter.decide`, table-driven) and how the writer
acts on it, with a scripted stand-in for the producer's answers. The error objects are librdkafka's
own; the behaviour against real brokers is in tests/integration (test_produce_faults.py,
test_multibroker_*.py, test_pipe*.py)."""

import threading

import pytest
from confluent_kafka import KafkaError, KafkaException

from kxtx.client import kafkaerrors
from kxtx.client import txwriter as tw
from kxtx.client.txwriter import Abortable, CommitInDoubt, TxWriter
from kxtx.errors import FencedError, Unavailable

FENCED = KafkaError(KafkaError._FENCED, "fenced", fatal=True)
ABORTABLE = KafkaError(KafkaError._INCONSISTENT, "batch failed", txn_requires_abort=True)
TIMED_OUT = KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True)
# librdkafka does not flag these retriable; Kafka's protocol does (kxtx.client.kafkaerrors)
NOT_COORDINATOR = KafkaError(KafkaError.NOT_COORDINATOR, "not coordinator")
CONCURRENT = KafkaError(KafkaError.CONCURRENT_TRANSACTIONS, "concurrent transactions")
# a retriable flag on an abortable error: the abort wins
ABORTABLE_RETRIABLE = KafkaError(KafkaError._TIMED_OUT, "x", retriable=True, txn_requires_abort=True)
DENIED = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied")
STATE = KafkaError(KafkaError._STATE, "wrong state")
NOT_ENOUGH_REPLICAS = KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "too few", txn_requires_abort=True)

NOW, LATER = 100.0, 200.0  # before and after the deadline (150)


@pytest.mark.parametrize(
    "op,err,now,expected",
    [
        (tw.INIT, None, NOW, tw.FAIL),  # not a Kafka error
        (tw.COMMIT, FENCED, NOW, tw.FAIL),
        (tw.BEGIN, DENIED, NOW, tw.FAIL),
        (tw.INIT, STATE, NOW, tw.FAIL),
        (tw.COMMIT, ABORTABLE, NOW, tw.ABORT_TXN),
        (tw.OFFSETS, ABORTABLE, NOW, tw.ABORT_TXN),
        (tw.OFFSETS, ABORTABLE_RETRIABLE, NOW, tw.ABORT_TXN),
        (tw.ABORT, ABORTABLE, NOW, tw.FAIL),  # an abort cannot be fixed by aborting
        (tw.INIT, TIMED_OUT, NOW, tw.RETRY),
        (tw.INIT, TIMED_OUT, LATER, tw.GIVE_UP),
        (tw.BEGIN, NOT_COORDINATOR, NOW, tw.RETRY),
        (tw.OFFSETS, CONCURRENT, NOW, tw.RETRY),
        (tw.OFFSETS, CONCURRENT, LATER, tw.GIVE_UP),
        (tw.ABORT, TIMED_OUT, LATER, tw.GIVE_UP),
        (tw.COMMIT, TIMED_OUT, NOW, tw.RETRY),
        # issue 29: a commit that timed out has an unknown outcome: never an abort
        (tw.COMMIT, TIMED_OUT, LATER, tw.IN_DOUBT),
        (tw.COMMIT, NOT_COORDINATOR, LATER, tw.IN_DOUBT),
    ],
)
def test_decide(op, err, now, expected):
    assert tw.decide(op, err, now, 150.0) == expected


@pytest.mark.parametrize(
    "op,retry_s,expected",
    [
        (tw.INIT, 5.0, 5.0),  # a task's own deadline
        (tw.OFFSETS, 120.0, 120.0),
        (tw.COMMIT, 5.0, kafkaerrors.FAILOVER_S),  # a commit outlasts a failover whatever the task's bound
        (tw.COMMIT, 120.0, 120.0),
    ],
)
def test_call_bound(op, retry_s, expected):
    assert tw.call_bound(op, retry_s) == expected


#: the Java client's partitioning, for produce and both pipe modes alike
MURMUR = "murmur2_random"


@pytest.mark.parametrize(
    "user,defaults,expected",
    [
        ({}, {}, {"retry.backoff.ms": 10, "partitioner": MURMUR}),
        # the user's value wins (passed separately)
        ({"retry.backoff.ms": "100"}, {}, {"partitioner": MURMUR}),
        ({"partitioner": "consistent_random"}, {}, {"retry.backoff.ms": 10}),
        ({}, {"linger.ms": 20}, {"retry.backoff.ms": 10, "partitioner": MURMUR, "linger.ms": 20}),
        ({"linger.ms": 5}, {"linger.ms": 20}, {"retry.backoff.ms": 10, "partitioner": MURMUR}),
    ],
)
def test_producer_conf(user, defaults, expected):
    assert tw.producer_conf(user, **defaults) == expected


class ScriptedProducer:
    """Answers each transactional call with the next scripted error (or success)."""

    def __init__(self, **answers):
        self.answers = {name: list(errs) for name, errs in answers.items()}
        self.calls: list[str] = []

    def _answer(self, name):
        self.calls.append(name)
        errs = self.answers.get(name) or [None]
        err = errs.pop(0)
        if err is not None:
            raise KafkaException(err)

    def init_transactions(self, *_):
        self._answer("init")

    def begin_transaction(self, *_):
        self._answer("begin")

    def abort_transaction(self, *_):
        self._answer("abort")

    def commit_transaction(self, *_):
        self._answer("commit")

    def send_offsets_to_transaction(self, *_):
        self._answer("offsets")

    def poll(self, *_):
        return 0


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(tw.time, "sleep", lambda _s: None)


def _writer(producer, raw=False, retry_s=None) -> TxWriter:
    w = TxWriter("t", 1.0, raw=raw, retry_s=retry_s)
    w.producer, w.open = producer, True
    return w


@pytest.mark.parametrize(
    "cause,expected",
    [
        (None, FencedError),  # no failure before: another instance took over -> exit 1
        # the transaction failed as the cluster failed over: the coordinator's epoch bump -> exit 75
        (Abortable("committing the transaction: too few replicas", NOT_ENOUGH_REPLICAS), Unavailable),
        # it failed otherwise (e.g. the EndTxn of an instance being taken over): a takeover -> exit 1
        (Abortable("committing the transaction: batch failed", ABORTABLE), FencedError),
    ],
)
def test_fence_while_aborting_a_failed_transaction_is_run_again(cause, expected):
    w = _writer(ScriptedProducer(abort=[FENCED]))
    with pytest.raises(expected) as info:
        w.abort(cause)
    assert ("run the same command again" in str(info.value)) == (expected is Unavailable)


def test_fence_after_a_timed_out_commit_counts_as_failover():
    """A stalled coordinator shows only as calls that time out (error_cb may stay silent): a fence
    that follows is the coordinator's epoch bump, exit 75, not a takeover."""
    w = _writer(ScriptedProducer(commit=[TIMED_OUT, FENCED]))
    with pytest.raises(Unavailable, match="shortly after the cluster failed over"):
        w.commit()


def test_abortable_error_is_raised_as_abortable():
    w = _writer(ScriptedProducer(commit=[ABORTABLE]))
    with pytest.raises(Abortable):
        w.commit()


def test_fence_with_no_failure_before_is_a_takeover():
    w = _writer(ScriptedProducer(commit=[FENCED]))
    with pytest.raises(FencedError):
        w.commit()


@pytest.mark.parametrize("raw", [False, True])
def test_a_timed_out_commit_is_committed_again_not_aborted(raw):
    """Issue 29: a commit that timed out past a task's own deadline (retry_s=0: the deadline has
    passed) is called again and succeeds; nothing is aborted. The tasks' old policy gave up at the
    deadline and aborted."""
    p = ScriptedProducer(commit=[TIMED_OUT, TIMED_OUT])
    w = _writer(p, raw=raw, retry_s=0.0)
    w.commit()
    assert p.calls == ["commit", "commit", "commit"]
    assert not w.open


def test_a_commit_still_unknown_at_its_bound_is_in_doubt(monkeypatch):
    clock = iter([0.0, 1000.0])
    monkeypatch.setattr(tw.time, "monotonic", lambda: next(clock))
    p = ScriptedProducer(commit=[TIMED_OUT])
    with pytest.raises(CommitInDoubt):
        _writer(p, raw=True, retry_s=0.0).commit()
    assert "abort" not in p.calls


@pytest.mark.parametrize("raw", [False, True])
def test_other_calls_give_up_at_the_task_deadline(raw):
    p = ScriptedProducer(offsets=[TIMED_OUT, None])
    w = _writer(p, raw=raw, retry_s=0.0)
    with pytest.raises(KafkaException if raw else Unavailable):
        w.send_offsets([], None)
    assert p.calls == ["offsets"]


def test_retriable_calls_retry_until_they_pass():
    p = ScriptedProducer(begin=[NOT_COORDINATOR, CONCURRENT])
    w = _writer(p)
    w.begin()
    assert p.calls == ["begin"] * 3 and w.open


@pytest.mark.parametrize(
    "abort_errors,expected_calls",
    [
        # timed out: librdkafka goes on aborting; begin_transaction would fail with _CONFLICT until
        # the abort is called again (a run then gave up after 90 s of _CONFLICT)
        ([TIMED_OUT, TIMED_OUT, None], ["abort", "abort", "abort", "begin"]),
        ([STATE], ["abort", "begin"]),  # nothing left to finish
        ([None], ["abort", "begin"]),
    ],
)
def test_a_timed_out_abort_is_finished_before_the_next_begin(abort_errors, expected_calls):
    p = ScriptedProducer(abort=abort_errors)
    w = _writer(p)
    w.abort_quietly()
    w.begin()
    assert p.calls == expected_calls and w.open


class HangingProducer(ScriptedProducer):
    """send_offsets_to_transaction never returns until the test releases it, as librdkafka's did
    after a group coordinator moved (librdkafka #5456/#5511); every call is recorded."""

    def __init__(self, **answers):
        super().__init__(**answers)
        self.release = threading.Event()

    def send_offsets_to_transaction(self, *_):
        self.calls.append("offsets")
        self.release.wait()


@pytest.fixture
def hanging(monkeypatch):
    monkeypatch.setattr(tw, "WATCHDOG_MARGIN_S", 0.05)
    p = HangingProducer()
    yield p
    p.release.set()  # let the abandoned thread end


@pytest.mark.timeout(30)  # without the watchdog the call would hang
@pytest.mark.parametrize("raw,expected", [(True, tw.Stuck), (False, Unavailable)])
def test_a_hung_send_offsets_abandons_the_producer(hanging, caplog, raw, expected):
    """The writer returns control while the call is still stuck, raises what its callers treat as
    a failover (a task: Stuck, its round planned again; the driver: exit 75), names the
    librdkafka issue, and never calls that producer again."""
    w = TxWriter("t", 0.05, raw=raw)
    w.producer, w.open = hanging, True
    with caplog.at_level("WARNING", logger="kxtx"), pytest.raises(expected, match="#5456") as info:
        w.send_offsets([], None)
    assert ("run the same command again" in str(info.value)) == (not raw)
    assert not hanging.release.is_set()  # still stuck: the writer did not wait for it
    # Warned once: by a task (its round is retried quietly), or by the error the driver exits with.
    assert ("#5456" in caplog.text and "abandoned the producer" in caplog.text) == raw
    assert w.producer is None and not w.open
    assert w.abort_quietly() is None and w.end_for_shutdown() is None
    w.abort()
    assert hanging.calls == ["offsets"]


@pytest.mark.parametrize("answers,calls", [([None], ["offsets"]), ([CONCURRENT, None], ["offsets"] * 2)])
def test_send_offsets_under_the_watchdog_returns_and_retries_as_before(answers, calls):
    p = ScriptedProducer(offsets=answers)
    w = _writer(p)
    w.send_offsets([], None)
    assert p.calls == calls and w.offsets_sent and w.producer is p


@pytest.mark.parametrize("err,expected", [(ABORTABLE, Abortable), (FENCED, FencedError)])
def test_errors_raised_under_the_watchdog_reach_the_caller(err, expected):
    p = ScriptedProducer(offsets=[err])
    with pytest.raises(expected):
        _writer(p).send_offsets([], None)


def test_bounded_passes_result_and_exception():
    assert tw.bounded(lambda a, b: a + b, (1, 2), 5.0) == 3
    with pytest.raises(ZeroDivisionError):
        tw.bounded(lambda: 1 / 0, (), 5.0)


class QueueingProducer:
    """A local queue that is full for the first `full` produce calls, then takes every record."""

    def __init__(self, full=0, fail_on=None):
        self.full, self.fail_on = full, fail_on
        self.produced: list = []
        self.polls = 0

    def produce(self, topic, value, key, **kw):
        if self.full:
            self.full -= 1
            raise BufferError("queue full")
        if value == self.fail_on:
            raise KafkaException(ABORTABLE)
        self.produced.append((topic, key, value, kw))

    def poll(self, *_):
        self.polls += 1
        return 0


RECORDS = [("a", b"k1", b"v1", None), ("b", None, b"v2", [("h", b"1")]), ("a", b"k3", b"v3", [])]


@pytest.mark.parametrize("full", [0, 1, 3])
def test_produce_records_waits_for_room_and_keeps_order_and_headers(full):
    producer = QueueingProducer(full=full)
    _writer(producer).produce_records(RECORDS)
    assert producer.produced == [
        ("a", b"k1", b"v1", {}),
        ("b", None, b"v2", {"headers": [("h", b"1")]}),
        ("a", b"k3", b"v3", {}),
    ]
    assert producer.polls == full


@pytest.mark.parametrize("raw, expected", [(True, KafkaException), (False, Abortable)])
def test_produce_records_raises_a_failed_record_as_produce_does(raw, expected):
    producer = QueueingProducer(fail_on=b"v2")
    with pytest.raises(expected):
        _writer(producer, raw=raw).produce_records(RECORDS)
    assert [r[2] for r in producer.produced] == [b"v1"]
