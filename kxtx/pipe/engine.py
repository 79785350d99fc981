"""The exactly-once loop: consume (read_committed) → Spark UDF → produce, offsets in the same transaction.

One Kafka transaction per batch: begin → transform → produce → send_offsets_to_transaction(offsets,
consumer_group_metadata) → commit. The consumer's group metadata lets the broker fence a zombie that
missed a rebalance (KIP-447); the transactional id fences an older instance with the same id.

Rebalance safety: librdkafka only runs rebalance callbacks inside consume(), and a transaction is
begun and ended entirely between two consume() calls, so no transaction is open when partitions are
released. The callback only drops the records read but not yet transformed (they were not committed,
so they are read again by whoever owns the partition next).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kxtx import clients
from kxtx.errors import KafkaOperationError, KxtxError, Unavailable, UsageError
from kxtx.log import logger
from kxtx.pipe import preflight, rounds, stopsignals
from kxtx.pipe import spark as sparkmod
from kxtx.pipe import transform as tf
from kxtx.pipe import udf as udfmod
from kxtx.pipe.offsets import Committed, batch_offsets
from kxtx.pipe.settings import PipeConfig, subscription_conf
from kxtx.pipe.stats import PipeInterrupted, Stats, interrupted
from kxtx.pipe.txn import Abortable, TxnProducer
from kxtx.wording import plural

#: Consumer errors that mean a missing READ permission on this kind of resource.
_AUTHZ_NEEDS = {"GROUP_AUTHORIZATION_FAILED": "Group", "TOPIC_AUTHORIZATION_FAILED": "Topic"}

#: Give up on a batch after this many aborts in a row (e.g. an output topic that does not exist).
MAX_ATTEMPTS = 5


class UdfFailed(KxtxError):
    """The UDF raised (or returned something unusable) on a record, and --on-udf-error is fail."""


class Pipe:
    def __init__(
        self,
        settings,
        cfg: PipeConfig,
        progress: Callable[[dict], None] | None = None,
        session=None,
        signals: stopsignals.Guard | None = None,
    ):
        cfg.validate()
        self.settings, self.cfg, self.progress = settings, cfg, progress
        self.session, self._own_session = session, session is None
        self.stats = Stats()
        self.consumer = None
        self.txn: TxnProducer | None = None
        self.pending: list = []
        self._dropped: list = []  # records read but dropped by a rebalance, for the rewind
        self._rebalanced = False
        self._last_data = 0.0
        self._assignment: set[tuple[str, int]] = set()
        self._next_progress = 0.0
        self.committed = Committed()
        self._next_catch_up = 0.0
        #: records per transaction; lowered when one nears max.poll.interval.ms (rounds.pace)
        self._limit = cfg.batch_max_records
        # The caller's guard if it holds one already (the CLI's, from its first line), so a
        # signal before run() is acted on like any other.
        self.signals = signals or stopsignals.Guard()

    # --- setup -----------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Everything that can fail before a record is consumed: UDF, cluster and topics, Spark."""
        target = udfmod.locate(self.cfg.udf)
        sparkmod.require_pyspark()
        mode = "record" if self.cfg.record_input else "value"
        loaded = None
        try:
            # Import before Spark starts, so a wrong UDF fails in a second, not after a JVM start.
            loaded = udfmod.load(target, mode)
        except KxtxError as exc:
            if not sparkmod.needs_session(exc):
                raise
        preflight.check(self.settings, self.cfg.inputs, self.cfg.output_topics())  # before the JVM
        self.signals.check()
        if self.session is None:
            self.session = sparkmod.start(
                self.cfg.master, self.cfg.spark_conf, self.cfg.debug, self.cfg.spark_ui
            )
        if loaded is None:  # e.g. @udf("string") parses its type with a live SparkContext
            loaded = udfmod.load(target, mode)
        sparkmod.ship(self.session, loaded.source, loaded.module)
        mapper = tf.make_mapper(loaded.func, loaded.kind, self.cfg.value_format, self.cfg.record_input)
        self.job = sparkmod.batch_job(self.session, tf.make_task(mapper))
        self.loaded = loaded
        self.signals.check()
        self.txn = TxnProducer(self.settings, self.cfg.transactional_id, self.settings.timeout)
        self.txn.init()
        self.signals.check()

    def _subscribe(self) -> None:
        conf = {
            "group.id": self.cfg.group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": self.cfg.start,
            **subscription_conf(self.settings.props, self.cfg.inputs),
        }
        self.consumer = clients.consumer(self.settings, **conf)
        topics = self.cfg.inputs
        self.consumer.subscribe(
            topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )

    def _on_assign(self, consumer, partitions) -> None:  # noqa: ARG002 - librdkafka's callback signature
        self._assignment |= {(p.topic, p.partition) for p in partitions}
        self._last_data = time.monotonic()
        logger.info("assigned %s", ", ".join(f"{p.topic}[{p.partition}]" for p in partitions))

    def _on_revoke(self, consumer, partitions) -> None:  # noqa: ARG002 - librdkafka's callback signature
        # No transaction is open here (see the module docstring); drop what was read but not
        # transformed so it is neither produced by this instance nor skipped.
        self._assignment -= {(p.topic, p.partition) for p in partitions}
        self.committed.forget(partitions)
        self._dropped.extend(self.pending)
        self.pending = []
        self._rebalanced = True
        logger.info("revoked %s", ", ".join(f"{p.topic}[{p.partition}]" for p in partitions))

    # --- the loop --------------------------------------------------------------------------------
    def run(self) -> dict:
        """Run until a stop condition; return the summary. SIGINT, SIGTERM and SIGHUP are noted
        and acted on between steps (see kxtx.pipe.stopsignals): the open transaction is aborted,
        Spark stopped, and PipeInterrupted raised with the summary."""
        with self.signals:
            try:
                self.signals.check()
                self.prepare()
                self._subscribe()
                self._loop()
                return self.stats.summary(self.cfg)
            except BaseException as exc:
                self._abort_quietly()
                stop = interrupted(exc, self.stats, self.cfg)
                if stop is None:
                    raise
                raise stop from None
            finally:
                self.close()

    def _loop(self) -> None:
        cfg = self.cfg
        # The idle clock starts with the first assignment (joining a group takes a few seconds);
        # with no assignment at all it runs out after --until-idle plus a grace of 30 s.
        self._last_data = time.monotonic() + 30.0
        batch_deadline = None
        while True:
            self.signals.check()
            limit = self._limit
            if cfg.max_records is not None:
                limit = min(limit, cfg.max_records - self.stats.records_in)
                if limit <= 0:
                    self.stats.stopped = "max-records"
                    return
            now = time.monotonic()
            wait = 0.5 if batch_deadline is None else max(0.0, batch_deadline - now)
            t0 = time.perf_counter()
            want = max(1, min(limit - len(self.pending), 10000))
            msgs = self.consumer.consume(num_messages=want, timeout=wait)
            self.stats.consume_s += time.perf_counter() - t0
            got = self._accept(msgs)
            now = time.monotonic()
            if got:
                self._last_data = now
                if self.stats.first_record is None:
                    self.stats.first_record = now
                if batch_deadline is None:
                    batch_deadline = now + cfg.batch_max_ms / 1000
            due = batch_deadline is not None and now >= batch_deadline
            if self.pending and (len(self.pending) >= limit or due):
                size, began = len(self.pending), time.perf_counter()
                self._process_batch()
                self._limit = rounds.pace(
                    self._limit, size, time.perf_counter() - began, self.settings.props, "transaction"
                )
                batch_deadline = None
            elif not self.pending:
                batch_deadline = None
                self._catch_up(now)
                if cfg.until_idle is not None and now - self._last_data >= cfg.until_idle:
                    self.stats.stopped = "idle"
                    return
            self._report()

    def _accept(self, msgs: list) -> int:
        got = 0
        for m in msgs:
            err = m.error()
            if err is None:
                got += 1
                continue
            if err.fatal():
                raise clients.translate(KafkaOperationError(err.str()), "consuming")
            if err.name() in _AUTHZ_NEEDS:
                # A missing ACL does not heal by waiting: stop, naming the permission (nothing of
                # an open batch is committed).
                from confluent_kafka import KafkaException

                from kxtx.authz import Need

                kind = _AUTHZ_NEEDS[err.name()]
                name = self.cfg.group if kind == "Group" else (m.topic() or None)
                raise clients.translate(KafkaException(err), "consuming", need=Need("READ", kind, name))
            logger.warning("consumer: %s", err.str())
        if self._rebalanced:
            self._rewind_dropped(msgs)
            return 0
        self.pending.extend(m for m in msgs if m.error() is None)
        return got

    def _rewind_dropped(self, msgs: list) -> None:
        """After a rebalance inside consume(): forget this call's records too, and put the
        positions of partitions we still own back to the first dropped record."""
        dropped = self._dropped + [m for m in msgs if m.error() is None]
        self._dropped, self._rebalanced = [], False
        self._seek_to_first(dropped, only_owned=True)

    def _seek_to_first(self, records: list, only_owned: bool = False) -> None:
        from confluent_kafka import TopicPartition

        first: dict[tuple[str, int], int] = {}
        for m in records:
            tp = (m.topic(), m.partition())
            first[tp] = min(first.get(tp, m.offset()), m.offset())
        for (topic, part), offset in first.items():
            if only_owned and (topic, part) not in self._assignment:
                continue
            try:
                self.consumer.seek(TopicPartition(topic, part, offset))
            except Exception as exc:  # noqa: BLE001 - partition moved meanwhile: its owner re-reads
                logger.info("seek %s[%d] to %d: %s", topic, part, offset, exc)

    def _catch_up(self, now: float) -> None:
        """With nothing read and unprocessed: commit, in a transaction of offsets only, the
        position of partitions that moved past aborted records and markers since the last commit
        (see kxtx.pipe.offsets), so the group's lag is 0 when nothing is left to read."""
        if now < self._next_catch_up or self.stats.consecutive_aborts:
            return  # after an abort the batch is read again first
        self._next_catch_up = now + 1.0
        behind = self.committed.behind(self.consumer, self._assignment, self.settings.timeout)
        if not behind:
            return
        try:
            self.txn.begin()
            self.txn.commit(behind, self.consumer.consumer_group_metadata())
        except Abortable as exc:  # e.g. a rebalance: the next catch-up tries again
            self.txn.abort(exc)
            logger.info("committing offsets past skipped records: %s", exc)
            return
        self.committed.note(behind)
        logger.info(
            "committed offsets past skipped records: %s",
            ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in behind),
        )

    # --- one transaction -------------------------------------------------------------------------
    def _process_batch(self) -> None:
        batch, self.pending = self.pending, []
        try:
            self._transact(batch)
            self.stats.consecutive_aborts = 0
        except Abortable as exc:
            # Abort, rewind to the last committed offsets (= the first record of this batch in
            # each partition) and read again: a rebalance that caused it is served on the way.
            self.stats.aborted += 1
            self.stats.consecutive_aborts += 1
            self.txn.abort(exc)
            self._seek_to_first(batch)
            n = self.stats.consecutive_aborts
            if n >= MAX_ATTEMPTS:
                error = Unavailable if exc.unavailable else KafkaOperationError  # 75: run again
                raise error(
                    f"gave up after {plural(n, 'aborted transaction')} in a row; last error: {exc}"
                ) from None
            logger.warning(
                "transaction aborted (%s); rewound %d records, retrying (%d/%d)",
                exc,
                len(batch),
                n,
                MAX_ATTEMPTS,
            )
            time.sleep(min(2.0, 0.05 * 2**n))

    def _transact(self, batch: list) -> None:
        stats = self.stats
        self.txn.begin()
        t0 = time.perf_counter()
        out = sparkmod.transform(self.session, tf.input_table(batch, self.cfg.record_input), self.job)
        t1 = time.perf_counter()
        stats.spark_s += t1 - t0
        self.signals.check()  # a stop during the job: abort rather than produce
        values = tf.plain_output(out, len(batch))
        if values is not None:  # the common case: no per-record output columns to walk
            produced = self.txn.produce_values(batch, values.to_pylist(), self.cfg.out)
            dlq = dropped = 0
        else:
            produced, dlq, dropped = self._produce_rows(batch, out.to_pydict())
        t2 = time.perf_counter()
        stats.produce_s += t2 - t1
        offsets = batch_offsets(batch, self.consumer)
        self.txn.commit(offsets, self.consumer.consumer_group_metadata())
        self.committed.note(offsets)
        stats.commit_s += time.perf_counter() - t2
        stats.add_batch(len(batch), produced, dlq, dropped)

    def _produce_rows(self, batch: list, rows: dict) -> tuple[int, int, int]:
        """Outputs through the contract's columns: (produced, set aside in the DLQ, dropped)."""
        errors = [(i, e) for i, e in zip(rows["idx"], rows["error"]) if e is not None]
        if errors and not self.cfg.dlq:
            self.txn.abort()
            raise UdfFailed(_udf_failure(self.loaded.name, batch, errors, self.cfg.value_format))
        produced = self.txn.produce_outputs(batch, rows, self.cfg.out)
        dlq = self.txn.produce_dlq(batch, errors, self.cfg.dlq, self.loaded.name) if errors else 0
        return produced, dlq, len(batch) - len(set(rows["idx"]))

    # --- progress and shutdown -------------------------------------------------------------------
    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.progress is None or (now < self._next_progress and not force):
            return
        self._next_progress = now + 1.0
        self.progress({**self.stats.progress(), "lag": self._lag()})

    def _lag(self) -> int | None:
        from confluent_kafka import TopicPartition

        try:
            parts = [TopicPartition(t, p) for t, p in self._assignment]
            total = 0
            for tp in self.consumer.position(parts):
                _, high = self.consumer.get_watermark_offsets(tp, cached=True)
                if high >= 0 and tp.offset >= 0:
                    total += max(0, high - tp.offset)
            return total + len(self.pending)
        except Exception:  # noqa: BLE001 - progress is best effort
            return None

    def _abort_quietly(self) -> None:
        if self.txn is not None:
            self.txn.end_for_shutdown()

    def close(self) -> None:
        if self.consumer is not None:
            try:
                self.consumer.close()
            except Exception as exc:  # noqa: BLE001 - closing anyway
                logger.info("closing the consumer: %s", exc)
            self.consumer = None
        if self.txn is not None:
            self.txn.close()
        if self._own_session and self.session is not None:
            sparkmod.stop(self.session)
            self.session = None


def run(settings, cfg: PipeConfig, progress=None, session=None, signals=None) -> dict:
    """Run `kxtx pipe`; returns the summary. See `Pipe` (and `kxtx.pipe.executors` for
    --mode executors)."""
    cfg.validate()
    if cfg.resolved_mode() == "executors":
        from kxtx.pipe import executors

        return executors.run(settings, cfg, progress, session, signals)
    return Pipe(settings, cfg, progress, session, signals).run()


def bytes_hint(value_format: str, text: str) -> str:
    """The common first mistake: a UDF written for dicts or text gets the raw value (both modes)."""
    if value_format == "raw" and ("'bytes'" in text or "bytes-like" in text):
        return " (the UDF got the value as bytes: --value-format json or string decodes it)"
    return ""


def _udf_failure(name: str, batch: list, errors: list, value_format: str = "raw") -> str:
    idx, text = errors[0]
    m = batch[idx]
    more = f" (and {len(errors) - 1} more records of this batch)" if len(errors) > 1 else ""
    hint = bytes_hint(value_format, text)
    return (
        f"UDF {name} failed on {m.topic()}[{m.partition()}]@{m.offset()}: {text}{hint}{more}; "
        "the transaction was aborted: nothing of this batch was written and the group's "
        "offsets did not move (--on-udf-error dlq:TOPIC sets such records aside instead)"
    )


__all__ = ["Pipe", "PipeConfig", "PipeInterrupted", "UdfFailed", "UsageError", "run"]
