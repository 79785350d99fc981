"""The transactional producer side of `kxtx pipe`, with librdkafka's error model applied.

Retriable errors: the same call again (until --timeout). Abortable (`txn_requires_abort`): raise
`Abortable`; the engine aborts, rewinds and re-reads. Everything else (fenced, authorization, other
fatal errors) becomes a KxtxError with a one-line message via `clients.translate`.
"""

from __future__ import annotations

import time

from kxtx import clients, failover
from kxtx.errors import KafkaOperationError, Unavailable
from kxtx.log import logger

#: librdkafka's retry.backoff.ms default (100 ms) is also its backoff when the coordinator answers
#: CONCURRENT_TRANSACTIONS because the previous commit's markers are still being written: with
#: back-to-back transactions every send_offsets_to_transaction then waits >= 100 ms. 10 ms keeps
#: that stall small (measured in bench/bench_pipe.py); -X retry.backoff.ms=... overrides it.
DEFAULT_RETRY_BACKOFF_MS = "10"


class Abortable(Exception):
    """The transaction must be aborted; the batch can be re-read and retried."""

    #: caused by a cluster failing over (leader/coordinator moving, brokers down): when the
    #: retries run out, the run stops with exit 75 (run it again) instead of 1
    unavailable = False


class TxnProducer:
    def __init__(self, settings, transactional_id: str, timeout: float):
        self._fatal = None
        self.failover = failover.Watch()
        conf = {"transactional.id": transactional_id, "error_cb": self._on_error}
        if "retry.backoff.ms" not in settings.props:
            conf["retry.backoff.ms"] = DEFAULT_RETRY_BACKOFF_MS
        self.producer = clients.producer(settings, **conf)
        self.transactional_id = transactional_id
        self.timeout = timeout
        self.open = False
        self.offsets_sent = False

    def init(self) -> None:
        self._call(
            self.producer.init_transactions,
            f"initialising transactions (transactional id {self.transactional_id!r})",
            self.timeout,
        )

    def begin(self) -> None:
        self._call(self.producer.begin_transaction, "beginning a transaction")
        self.open, self.offsets_sent = True, False

    def produce(self, topic, value, key, headers) -> None:
        """One record into the open transaction (a full local queue waits for room). Called once
        per output record: nothing is imported on the way unless it fails."""
        while True:
            try:
                if headers:
                    self.producer.produce(topic, value, key, headers=headers)
                else:
                    self.producer.produce(topic, value, key)
                return
            except BufferError:
                # The local queue is full: let librdkafka send some, then go on.
                self.producer.poll(0.05)
            except Exception as exc:
                from confluent_kafka import KafkaException

                if not isinstance(exc, KafkaException):
                    raise
                self._raise(exc, f"producing to {topic}")

    def commit(self, offsets: list, group_metadata) -> None:
        self._call(
            self.producer.send_offsets_to_transaction,
            "sending offsets to the transaction",
            offsets,
            group_metadata,
            self.timeout,
        )
        self.offsets_sent = True
        self._call(self.producer.commit_transaction, "committing the transaction", self.timeout)
        self.open = self.offsets_sent = False

    def abort(self, cause: Abortable | None = None) -> None:
        """Abort the open transaction; `cause` is the abortable error that made it necessary."""
        if not self.open:
            return
        if cause is not None:
            self.failover.failed_transaction()  # a fence now: see kxtx.failover
        self._call(self.producer.abort_transaction, "aborting the transaction", self.timeout)
        self.open = self.offsets_sent = False

    def end_for_shutdown(self) -> None:
        """On a signal or error: finish a transaction whose offsets are in, abort any other."""
        if not self.open:
            return
        try:
            if self.offsets_sent:
                self.producer.commit_transaction(self.timeout)
                logger.info("finished the open transaction before stopping")
            else:
                self.producer.abort_transaction(self.timeout)
                logger.info("aborted the open transaction before stopping")
        except Exception as exc:  # noqa: BLE001 - e.g. fenced: the broker aborts it for us
            logger.info("ending the open transaction: %s", exc)
        self.open = self.offsets_sent = False

    def close(self) -> None:
        self.producer = None

    def _call(self, fn, doing: str, *args):
        from confluent_kafka import KafkaException

        # Retriable errors are retried past --timeout while a failover can still end: a killed
        # broker is fenced after broker.session.timeout.ms (9 s), requests to a stalled one time out
        # after socket.timeout.ms (60 s), then librdkafka finds the new leader or coordinator.
        deadline = time.monotonic() + max(self.timeout, FAILOVER_RETRY_S)
        while True:
            try:
                return fn(*args)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if err is not None and err.retriable() and not err.txn_requires_abort():
                    self.failover.note(err)
                    if time.monotonic() < deadline:
                        logger.info("%s: %s (retrying)", doing, err.str())
                        time.sleep(0.05)
                        continue
                    # Retriable all along (failover): the committed offsets are safe; exit 75.
                    raise Unavailable(
                        f"{doing}: still failing after {max(self.timeout, FAILOVER_RETRY_S):.0f}s "
                        f"({err.str()}); run the same command again to continue"
                    ) from None
                self._raise(exc, doing)

    def _on_error(self, err) -> None:
        if err.fatal():
            self._fatal = err
        else:
            self.failover.note(err)

    def _raise(self, exc, doing: str):
        from confluent_kafka import KafkaError, KafkaException

        err = exc.args[0] if exc.args else None
        self.failover.note(err)
        if err is not None and err.txn_requires_abort() and not err.fatal():
            abortable = Abortable(f"{doing}: {err.str()}")
            abortable.unavailable = err.name() in failover.FAILOVER
            raise abortable from None
        if err is not None and err.code() == KafkaError._FATAL:
            # produce() only says "Fatal error"; the cause (e.g. fenced) reaches error_cb.
            if self._fatal is None and self.producer is not None:
                try:
                    self.producer.poll(0)
                except KafkaException as served:
                    self._fatal = served.args[0] if served.args else None
            if self._fatal is not None:
                exc = KafkaException(self._fatal)
        raise self.failover.explain(clients.translate(exc, doing)) from None


#: How long a transactional call retries retriable errors at least (see TxnProducer._call).
FAILOVER_RETRY_S = 90.0

__all__ = ["Abortable", "KafkaOperationError", "TxnProducer"]
