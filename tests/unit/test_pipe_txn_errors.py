"""How `kxtx pipe`'s transactional producer maps librdkafka errors to exit codes when a fence follows
a failure (the error objects are librdkafka's own; only the producer's answers are scripted). The
behaviour against a real 3-node cluster is in tests/integration/test_multibroker_pipe.py."""

import pytest
from confluent_kafka import KafkaError, KafkaException

from kxtx import failover
from kxtx.errors import FencedError, Unavailable
from kxtx.pipe.txn import Abortable, TxnProducer


class ScriptedProducer:
    """Answers each transactional call with the next scripted error (or success)."""

    def __init__(self, **answers):
        self.answers = {name: list(errs) for name, errs in answers.items()}

    def _answer(self, name):
        errs = self.answers.get(name) or [None]
        err = errs.pop(0)
        if err is not None:
            raise KafkaException(err)

    def abort_transaction(self, *_):
        self._answer("abort")

    def commit_transaction(self, *_):
        self._answer("commit")

    def send_offsets_to_transaction(self, *_):
        self._answer("offsets")

    def poll(self, *_):
        return 0


def _txn(producer) -> TxnProducer:
    txn = TxnProducer.__new__(TxnProducer)  # no client: the scripted producer stands in
    txn._fatal, txn.failover = None, failover.Watch()
    txn.producer, txn.transactional_id, txn.timeout = producer, "t", 1.0
    txn.open, txn.offsets_sent = True, False
    return txn


FENCED = KafkaError(KafkaError._FENCED, "fenced", fatal=True)
ABORTABLE = KafkaError(KafkaError._INCONSISTENT, "batch failed", txn_requires_abort=True)
TIMED_OUT = KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True)


@pytest.mark.parametrize(
    "cause,expected",
    [
        (None, FencedError),  # no failure before: another instance took over -> exit 1
        (Abortable("committing the transaction: batch failed"), Unavailable),  # -> exit 75
    ],
)
def test_fence_while_aborting_a_failed_transaction_is_run_again(cause, expected):
    txn = _txn(ScriptedProducer(abort=[FENCED]))
    with pytest.raises(expected) as info:
        txn.abort(cause)
    if cause is not None:
        assert "run the same command again" in str(info.value)


def test_fence_after_a_timed_out_commit_counts_as_failover():
    """A stalled coordinator shows only as calls that time out (error_cb may stay silent): a fence
    that follows is the coordinator's epoch bump, exit 75, not a takeover."""
    txn = _txn(ScriptedProducer(commit=[TIMED_OUT, FENCED]))
    with pytest.raises(Unavailable, match="shortly after the cluster failed over"):
        txn.commit([], None)


def test_abortable_error_is_raised_as_abortable():
    txn = _txn(ScriptedProducer(commit=[ABORTABLE]))
    with pytest.raises(Abortable):
        txn.commit([], None)


def test_fence_with_no_failure_before_is_a_takeover():
    txn = _txn(ScriptedProducer(commit=[FENCED]))
    with pytest.raises(FencedError):
        txn.commit([], None)
