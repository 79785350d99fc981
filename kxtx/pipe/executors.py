"""`kxtx pipe --mode executors`, the driver side: plan rounds, run them as Spark jobs, report.

In driver mode every record passes through the driver twice (consume, ship to Spark, collect,
produce). Here the driver only plans. It is a member of the consumer group (it never reads records:
its partitions stay paused), so the group decides which input partitions are its own, new
partitions and pattern-matched topics arrive by rebalance, and instances that share the group split
the partitions as in driver mode. Per round it compares the group's committed offsets with the last
stable offset of each of its partitions and runs one Spark task per partition with work
(`kxtx.pipe.task`: consume, UDF, produce and commit in the task's own transaction, fenced by a
transactional id per partition; the module docstring there says why that is exactly once).

Two fences guard each commit: the partition's transactional id fences every other copy of the task
(Spark retries, speculation, zombies, a second instance with the same pipe id), and the driver's
group generation, sent with the task's offsets (KIP-447), refuses a task whose partition the group
has given to another member since the round was planned -- a member that may use other
transactional ids (another --transactional-id, or driver mode), which the first fence cannot see.

Failures: a crashed task is retried by Spark (on a cluster) or by the next round; a task that was
fenced or aborted is simply planned again; a task that stopped on a UDF error (no DLQ) aborted its
transaction and the run fails naming the record, as in driver mode. The driver itself holds no
transaction, so killing it loses nothing: a restart continues from the committed offsets.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kxtx import clients
from kxtx.errors import KafkaOperationError
from kxtx.log import logger
from kxtx.pipe import preflight, rounds, stopsignals
from kxtx.pipe import spark as sparkmod
from kxtx.pipe import task as taskmod
from kxtx.pipe import transform as tf
from kxtx.pipe import udf as udfmod
from kxtx.pipe.settings import PipeConfig, subscription_conf
from kxtx.pipe.stats import Stats, interrupted

#: Give up after this many rounds in a row in which no task committed and some failed.
MAX_FAILED_ROUNDS = 8
#: How often an idle driver looks for new records (seconds).
IDLE_POLL_S = 0.25
#: How soon the driver's group membership notices new input partitions and topics (librdkafka's
#: default is 5 minutes; one metadata request per interval); -X topic.metadata.refresh.interval.ms wins.
METADATA_REFRESH_MS = 5000
#: Before the group's first assignment the idle clock waits this much longer (joining takes a few
#: seconds; an instance the group gives nothing still stops after --until-idle plus this).
ASSIGN_GRACE_S = 30.0


class ExecutorPipe:
    def __init__(
        self,
        settings,
        cfg: PipeConfig,
        progress: Callable[[dict], None] | None = None,
        session=None,
        signals: stopsignals.Guard | None = None,
    ):
        cfg.validate()
        self.signals = signals or stopsignals.Guard()
        self.settings, self.cfg, self.progress = settings, cfg, progress
        self.session, self._own_session = session, session is None
        self.stats = Stats()
        self.admin = self.consumer = None
        self.tokens: dict[tuple[str, int], str] = {}
        self.lag: int | None = None
        self._next_progress = 0.0
        self._failed_rounds = 0
        self._plan_s = 0.0
        #: records per partition and round; lowered when rounds near max.poll.interval.ms (pace)
        self._limit = cfg.batch_max_records
        #: the input partitions the group gave this driver (its tasks may commit only those)
        self._assignment: set[tuple[str, int]] = set()
        self._unpaused: list = []
        self._last_data = 0.0

    # --- setup -----------------------------------------------------------------------------------
    def prepare(self) -> None:
        target = udfmod.locate(self.cfg.udf)
        sparkmod.require_pyspark()
        mode = "record" if self.cfg.record_input else "value"
        # The same checks as driver mode, before any client of this run and before Spark starts:
        # the cluster answers, the named topics exist (or a missing DESCRIBE permission is
        # named), a pattern matches something.
        preflight.check(self.settings, self.cfg.inputs, self.cfg.output_topics())
        self.admin = clients.admin(self.settings)
        self.consumer = clients.consumer(
            self.settings,
            **{
                "group.id": self.cfg.group,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "topic.metadata.refresh.interval.ms": self.settings.props.get(
                    "topic.metadata.refresh.interval.ms", METADATA_REFRESH_MS
                ),
                **subscription_conf(self.settings.props, self.cfg.inputs),
            },
        )
        loaded = None
        try:
            loaded = udfmod.load(target, mode)
        except Exception as exc:
            if not sparkmod.needs_session(exc):
                raise
        if self.session is None:
            self.session = sparkmod.start(
                self.cfg.master, self.cfg.spark_conf, self.cfg.debug, self.cfg.spark_ui
            )
        if loaded is None:
            loaded = udfmod.load(target, mode)
        ship(self.session, loaded)
        self.loaded = loaded
        mapper = tf.make_mapper(loaded.func, loaded.kind, self.cfg.value_format, self.cfg.record_input)
        job = taskmod.Job(
            conf=self.settings.confluent(),
            group=self.cfg.group,
            pipe_id=self.cfg.transactional_id,
            out=self.cfg.out,
            dlq=self.cfg.dlq,
            start=self.cfg.start,
            record_mode=self.cfg.record_input,
            mapper=mapper,
            chunk=sparkmod.batch_job(self.session, None).chunk,
            udf_name=loaded.name,
            timeout=self.settings.timeout,
            executor_log=not sparkmod.is_local(self.session.sparkContext.master),
        )
        self.task = taskmod.make_task(job)

    def _metadata(self):
        try:
            return self.admin.list_topics(timeout=self.settings.timeout)
        except Exception as exc:
            raise clients.translate(exc, "reading cluster metadata") from exc

    # --- the loop --------------------------------------------------------------------------------
    def run(self) -> dict:
        with self.signals:
            try:
                self.signals.check()
                self.prepare()
                self.signals.check()
                self._subscribe()
                self._loop()
                return self.stats.summary(self.cfg)
            except BaseException as exc:
                stop = interrupted(exc, self.stats, self.cfg)
                if stop is None:
                    raise
                raise stop from None
            finally:
                self.close()

    def _subscribe(self) -> None:
        """Join the group as a member of its own. Only partitions the group assigns to this driver
        are planned, and tasks commit their offsets with its generation (KIP-447): another member
        of the group -- a second kxtx pipe with another transactional id, a driver-mode instance --
        owns the rest, and a task from before a rebalance can no longer commit. The driver never
        reads records itself: assigned partitions stay paused."""
        self.consumer.subscribe(
            self.cfg.inputs, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )

    def _on_assign(self, consumer, partitions) -> None:
        consumer.assign(partitions)
        self._assignment |= {(p.topic, p.partition) for p in partitions}
        self._unpaused = list(partitions)
        self._pause()
        self._last_data = time.monotonic()
        logger.info("assigned %s", ", ".join(f"{p.topic}[{p.partition}]" for p in partitions))

    def _pause(self) -> None:
        """librdkafka refuses to pause a new partition its metadata does not show yet ("Unknown
        partition"): try again on the next call (meanwhile its records are fetched and dropped)."""
        from confluent_kafka import KafkaException

        if self._unpaused:
            try:
                self.consumer.pause(self._unpaused)
                self._unpaused = []
            except KafkaException as exc:
                logger.info("pausing %d new partition(s): %s", len(self._unpaused), exc)

    def _on_revoke(self, consumer, partitions) -> None:  # noqa: ARG002 - librdkafka's callback signature
        self._unpaused = []
        self._assignment -= {(p.topic, p.partition) for p in partitions}
        for p in partitions:
            self.tokens.pop((p.topic, p.partition), None)
        logger.info("revoked %s", ", ".join(f"{p.topic}[{p.partition}]" for p in partitions))

    def _serve(self, timeout: float) -> None:
        """Group membership: rebalance callbacks, heartbeats' errors (no records: all paused)."""
        from confluent_kafka import KafkaException

        msg = self.consumer.poll(timeout)
        self._pause()
        if msg is not None and msg.error() is not None:
            err = msg.error()
            if err.fatal():
                raise clients.translate(KafkaException(err), "taking part in the group")
            logger.info("group membership: %s", err.str())

    def _loop(self) -> None:
        cfg = self.cfg
        self._last_data = time.monotonic() + ASSIGN_GRACE_S  # _on_assign starts the idle clock
        while True:
            self.signals.check()  # between rounds: no task of this driver is running
            self._serve(0)
            budget = None
            if cfg.max_records is not None:
                budget = cfg.max_records - self.stats.records_in
                if budget <= 0:
                    self.stats.stopped = "max-records"
                    return
            planned = time.monotonic()
            plans = self._plan(budget)
            began = time.monotonic()
            self._plan_s = began - planned
            failures = self._failed_rounds
            got = self._round(plans) if plans else 0
            now = time.monotonic()
            if got:
                self._last_data = now
                if self.stats.first_record is None:
                    self.stats.first_record = began
            elif self._failed_rounds > failures:
                # A failed round is not an idle one: its records are still there. (A run whose
                # rounds keep failing ends after MAX_FAILED_ROUNDS, with an error.)
                self._last_data = now
            elif cfg.until_idle is not None and now - self._last_data >= cfg.until_idle:
                self.stats.stopped = "idle"
                return
            self._report()
            if not got:
                self._serve(IDLE_POLL_S)

    def _plan(self, budget: int | None) -> list:
        """One Plan per input partition whose last stable offset is past its committed offset."""
        from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        tps = [TopicPartition(t, p) for t, p in sorted(self._assignment)]
        if not tps:
            return []
        # Read now, after the last rebalance callback: the generation the tasks commit under.
        generation = self.consumer.consumer_group_metadata()
        committed = self._committed(tps)
        futures = self.admin.list_offsets(
            {tp: OffsetSpec.latest() for tp in tps},
            isolation_level=IsolationLevel.READ_COMMITTED,
            request_timeout=self.settings.timeout,
        )
        work, unknown = [], 0
        for tp, fut in futures.items():
            try:
                end = fut.result().offset
            except KafkaException as exc:
                if not rounds.later(exc):
                    raise clients.translate(exc, f"reading {tp.topic}[{tp.partition}]'s end") from exc
                unknown += 1
                continue
            key = (tp.topic, tp.partition)
            done = committed.get(key, -1001)
            if end > 0 and (done < 0 or end > done):
                work.append((key, end, end - max(done, 0)))
        if unknown:
            # A partition the group assigned before this client's metadata shows it (just
            # created), or one whose leader moves: planned next round, with fresh metadata.
            logger.info("%d partition(s) not readable yet; planned next round", unknown)
            self._metadata()
        self.lag = sum(n for _, _, n in work)
        limits = rounds.split(budget, [min(self._limit, n) for _, _, n in work])
        return [
            taskmod.Plan(t, p, limit, end, self.tokens.get((t, p)), generation)
            for ((t, p), end, _), limit in zip(work, limits)
            if limit > 0
        ]

    def _committed(self, tps: list) -> dict:
        """The group's committed offsets (not necessarily stable: the tasks read the stable ones;
        here they only decide which partitions get a task). Unknown ones count as "from the
        start", which costs at most a task that finds nothing new."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + min(5.0, self.settings.timeout)
        while True:
            try:
                got = self.consumer.committed(tps, timeout=self.settings.timeout)
                return {(tp.topic, tp.partition): tp.offset for tp in got}
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if err is not None and err.fatal():
                    raise clients.translate(exc, "reading the group's offsets") from None
                if time.monotonic() > deadline:
                    logger.info("reading the group's offsets: %s", exc)
                    return {}
                time.sleep(0.1)

    def _round(self, plans: list) -> int:
        """Run one round as a Spark job; returns the records read by tasks that committed."""
        t0 = time.perf_counter()
        with sparkmod._deferred_signals() as received:
            try:
                sc = self.session.sparkContext
                results, error = sc.parallelize(plans, len(plans)).mapPartitions(self.task).collect(), None
            except Exception as exc:  # noqa: BLE001 - lost executors, tasks out of retries
                results, error = [], exc
        job_s = time.perf_counter() - t0
        self.stats.spark_s += job_s
        rounds.log_round(plans, results, self._plan_s, job_s)
        self._limit = rounds.pace(
            self._limit, max(p.limit for p in plans), job_s, self.settings.props, "round"
        )
        if received:
            self._absorb(results)
            from kxtx.signals import Terminated

            raise Terminated() if received[-1] == 15 else KeyboardInterrupt()
        if error is not None:
            self._failed(f"Spark job failed: {sparkmod._first_line(error)}")
            return 0
        return self._absorb(results)

    def _absorb(self, results: list) -> int:
        got = failed = 0
        for r in results:
            key = (r["topic"], r["partition"])
            s = self.stats
            s.consume_s += r["consume_s"]
            s.produce_s += r["produce_s"] + r["udf_s"]
            s.commit_s += r["commit_s"]
            if r["status"] == "udf-error":
                raise _udf_failed(self.loaded.name, self.cfg.value_format, *r["error"])
            if r["status"] == "fatal":
                raise KafkaOperationError(f"{key[0]}[{key[1]}]: {r['error']}")
            if r["status"] != "ok":
                failed += 1
                s.aborted += 1
                self.tokens.pop(key, None)
                logger.info("%s[%d]: %s (%s); planned again", *key, r["status"], r.get("error"))
                continue
            self.tokens[key] = r["token"]
            if r["committed"] is not None:
                s.add_batch(r["in"], r["out"], r["dlq"], r["dropped"])
                got += r["in"]
        if failed and not got:
            self._failed(f"{failed} task(s) fenced or aborted")
        else:
            self._failed_rounds = 0
        return got

    def _failed(self, why: str) -> None:
        self._failed_rounds += 1
        if self._failed_rounds >= MAX_FAILED_ROUNDS:
            raise KafkaOperationError(
                f"gave up after {self._failed_rounds} failed rounds in a row; last: {why}"
            )
        logger.warning("round failed (%s); retrying (%d/%d)", why, self._failed_rounds, MAX_FAILED_ROUNDS)
        time.sleep(min(2.0, 0.1 * 2**self._failed_rounds))

    # --- progress and shutdown -------------------------------------------------------------------
    def _report(self) -> None:
        now = time.monotonic()
        if self.progress is None or now < self._next_progress:
            return
        self._next_progress = now + 1.0
        self.progress({**self.stats.progress(), "lag": self.lag})

    def close(self) -> None:
        if self.consumer is not None:
            try:
                self.consumer.close()
            except Exception as exc:  # noqa: BLE001 - closing anyway
                logger.info("closing the consumer: %s", exc)
            self.consumer = None
        if self._own_session and self.session is not None:
            sparkmod.stop(self.session)
            self.session = None


def ship(session, loaded) -> None:
    """The UDF and kxtx's worker code (task + `spark.worker_modules()`) to the executors: by value on
    a cluster, so executors need confluent-kafka and pyarrow (pandas for pandas UDFs), not kxtx."""
    sparkmod.ship(session, loaded.source, loaded.module)
    if not sparkmod.is_local(session.sparkContext.master):
        from pyspark import cloudpickle

        try:
            cloudpickle.register_pickle_by_value(taskmod)
        except ValueError:
            pass  # already registered


def _udf_failed(name: str, value_format: str, topic: str, partition: int, offset: int, text: str, n: int):
    from kxtx.pipe.engine import UdfFailed, bytes_hint

    more = f" (and {n - 1} more records of this round)" if n > 1 else ""
    return UdfFailed(
        f"UDF {name} failed on {topic}[{partition}]@{offset}: {text}"
        f"{bytes_hint(value_format, text)}{more}; the transaction was "
        "aborted: nothing of this batch was written and the partition's offset did not move "
        "(other partitions commit on their own; --on-udf-error dlq:TOPIC sets such records "
        "aside instead)"
    )


def run(settings, cfg: PipeConfig, progress=None, session=None, signals=None) -> dict:
    return ExecutorPipe(settings, cfg, progress, session, signals).run()
