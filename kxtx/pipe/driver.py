"""Driver mode of `kxtx pipe` (`DriverPipe`): this process runs the exactly-once loop, consume
(read_committed) → Spark UDF → produce, offsets in the same transaction.

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
from typing import TYPE_CHECKING, Any

from kxtx.client import clients
from kxtx.errors import KafkaOperationError, Unavailable
from kxtx.fast import gcpause
from kxtx.log import logger
from kxtx.pipe import rounds
from kxtx.pipe import spark as sparkmod
from kxtx.pipe.core import PipeCore
from kxtx.pipe.offsets import Committed, batch_offsets
from kxtx.pipe.txn import Abortable, TxnProducer
from kxtx.pipe.worker import transform as tf
from kxtx.pipe.worker.outputs import to_records

if TYPE_CHECKING:
    from confluent_kafka import TopicPartition

    from kxtx.pipe.udf import LoadedUdf

#: Consumer errors that mean a missing READ permission on this kind of resource.
_AUTHZ_NEEDS = {"GROUP_AUTHORIZATION_FAILED": "Group", "TOPIC_AUTHORIZATION_FAILED": "Topic"}

#: Give up on a batch after this many aborts in a row (e.g. an output topic that does not exist).
MAX_ATTEMPTS = 5


class DriverPipe(PipeCore):
    """Driver mode: this process consumes, runs each batch through Spark, and produces and commits
    it in one transaction of its own producer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # PipeCore's
        super().__init__(*args, **kwargs)
        self._txn: TxnProducer | None = None
        self.pending: list = []
        self._dropped: list = []  # records read but dropped by a rebalance, for the rewind
        self._rebalanced = False
        self.committed = Committed()
        self._next_catch_up = 0.0
        #: aborted transactions in a row, and when they give up
        self.streak = rounds.Streak(MAX_ATTEMPTS, "aborted transaction")

    # --- setup -----------------------------------------------------------------------------------
    def _prepare_mode(self, loaded: LoadedUdf) -> None:
        """The batch job (the UDF in a mapper) and the transactional producer."""
        mapper = tf.make_mapper(
            loaded.func, loaded.kind, self.cfg.value_format, self.cfg.record_input, self.reader, self.encoder
        )
        self.job = sparkmod.batch_job(self.session, tf.make_ipc_task(mapper))
        self._txn = TxnProducer(self.settings, self.cfg.transactional_id, self.settings.timeout)
        self._txn.init()

    @property
    def txn(self) -> TxnProducer:
        """The transactional producer (made by prepare)."""
        if self._txn is None:
            raise RuntimeError("no transactional producer before prepare()")
        return self._txn

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        # No transaction is open here (see the module docstring); drop what was read but not
        # transformed so it is neither produced by this instance nor skipped.
        self.committed.forget(partitions)
        self._dropped.extend(self.pending)
        self.pending = []
        self._rebalanced = True

    # --- the loop --------------------------------------------------------------------------------
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
                if self.lost():  # the group coordinator down: not idle (see PipeCore.lost)
                    self._last_data = now
                elif cfg.until_idle is not None and now - self._last_data >= cfg.until_idle:
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

                from kxtx.client.authz import Need

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
        if now < self._next_catch_up or self.streak.n:
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
        began = time.monotonic()
        try:
            with gcpause.paused():  # the batch's output tables and records: see kxtx.fast.gcpause
                self._transact(batch)
            self.streak.ok()
        except Exception as exc:
            # An abortable Kafka error, or a schema registry that did not answer (retriable: the
            # batch's new schema ids are fetched before the job). Abort, rewind to the last
            # committed offsets (= the first record of this batch in each partition) and read
            # again: a rebalance that caused it is served on the way.
            registry = exc if isinstance(exc, Unavailable) and getattr(exc, "retriable", False) else None
            if not isinstance(exc, Abortable) and registry is None:
                raise
            self.stats.aborted += 1
            self.txn.abort(exc)
            self._seek_to_first(batch)
            unavailable = registry is not None or getattr(exc, "unavailable", False)
            # exit 75 when it is the cluster or the registry: run again (KafkaOperationError else);
            # while they do not answer, the streak ends at KXTX_FAILOVER_TIMEOUT (rounds.Streak)
            n = self.streak.failed(
                str(exc), self.settings.failover, unavailable, began, type(registry) if registry else None
            )
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
        if self.reader is not None:  # the batch's new schema ids travel with its job (see Reader)
            self.reader.prefetch(m.value() for m in batch)
        out = sparkmod.transform(self.session, tf.input_table(batch, self.cfg.record_input), self.job)
        t1 = time.perf_counter()
        stats.spark_s += t1 - t0
        self.signals.check()  # a stop during the job: abort rather than produce
        outputs = to_records(batch, out, self.cfg.out, self.cfg.dlq, self.loaded.name)
        if outputs.failure is not None:
            self.txn.abort()
            stats.aborted += 1  # the message says so: the summary counts it
            raise self.udf_failed(outputs.failure)
        self.txn.produce_records(outputs.records)
        t2 = time.perf_counter()
        stats.produce_s += t2 - t1
        offsets = batch_offsets(batch, self.consumer)
        self.txn.commit(offsets, self.consumer.consumer_group_metadata())
        self.committed.note(offsets)
        stats.commit_s += time.perf_counter() - t2
        stats.add_batch(len(batch), outputs.produced, outputs.dlq, outputs.dropped)

    # --- progress and shutdown -------------------------------------------------------------------
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

    def _end_open_work(self) -> None:
        if self._txn is not None:
            self._txn.end_for_shutdown()

    def _close_mode(self) -> None:
        if self._txn is not None:
            self._txn.close()
