"""`kxtx pipe --mode executors`, the driver side: plan rounds, run them as Spark jobs, report.

In driver mode every record passes through the driver twice (consume, ship to Spark, collect,
produce). Here the driver only plans. It is a member of the consumer group (it never reads records:
its partitions stay paused), so the group decides which input partitions are its own, new
partitions and pattern-matched topics arrive by rebalance, and instances that share the group split
the partitions as in driver mode. Per round it compares the group's committed offsets with the last
stable offset of each of its partitions and runs one Spark task per partition with work
(`kxtx.pipe.worker.task`: consume, UDF, produce and commit in the task's own transaction, fenced by a
transactional id per partition; the module docstring there says why that is exactly once).

Two fences guard each commit: the partition's transactional id fences every other copy of the task
(Spark retries, speculation, zombies, a second instance with the same pipe id), and the driver's
group generation, sent with the task's offsets (KIP-447), refuses a task whose partition the group
has given to another member since the round was planned -- a member that may use other
transactional ids (another --transactional-id, or driver mode), which the first fence cannot see.

Failures: a crashed task is retried by Spark (on a cluster) or by the next round; a task that was
fenced or aborted is planned again, unless another instance has committed its partition since
(another `kxtx pipe` with the same group and transactional id took over, e.g. while this one was
frozen): then this one stops, as in driver mode (`_watch_fences`); a task that stopped on a UDF error (no DLQ) aborted its
transaction and the run fails naming the record, as in driver mode. The driver itself holds no
transaction, so killing it loses nothing: a restart continues from the committed offsets.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from kxtx.client import clients
from kxtx.client.kafkaerrors import later
from kxtx.errors import FencedError, KafkaOperationError, Unavailable
from kxtx.log import logger
from kxtx.pipe import rounds
from kxtx.pipe import spark as sparkmod
from kxtx.pipe.core import PipeCore
from kxtx.pipe.worker import task as taskmod
from kxtx.pipe.worker import transform as tf
from kxtx.wording import plural

if TYPE_CHECKING:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import ClusterMetadata

    from kxtx.pipe.udf import LoadedUdf

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
#: How long a partition whose task was fenced is watched for another instance's commit (which may
#: come after the fence: the other instance's task starts its producer first, then commits).
FENCE_WATCH_S = 120.0
#: How long one round's end-offset request may take. librdkafka's admin client sends it to the
#: leader its metadata names and waits for that broker to answer, up to the request timeout: a
#: SIGKILLed or frozen leader stalled every partition's round for the whole --timeout after a
#: leader move. A partition not answered within this is planned next round, with fresh metadata.
PLAN_READ_S = 5.0


class ExecutorPipe(PipeCore):
    """Executors mode: this process plans rounds; Spark tasks consume, produce and commit."""

    UNIT = "round"
    UNMOVED = "the partition's offset did not move (other partitions commit on their own; "

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # PipeCore's
        super().__init__(*args, **kwargs)
        self.admin: Any = None  # a confluent-kafka AdminClient, from prepare() on
        self.tokens: dict[tuple[str, int], str] = {}
        self.lag: int | None = None
        self.streak = rounds.Streak(MAX_FAILED_ROUNDS, "failed round")
        #: when the current round began (monotonic): a streak of failed rounds counts from the first's
        self._round_began: float | None = None
        self._plan_s = 0.0
        self._unpaused: list = []
        #: this run's token, committed by its tasks (see rounds.taken_over)
        self.run_token = rounds.run_token()
        #: partition -> (its committed offset when the fenced task was planned, watch deadline)
        self._fenced: dict[tuple[str, int], tuple[int, float]] = {}
        self._planned_from: dict[tuple[str, int], int] = {}
        #: partition -> the input offset up to which this run counted its records: where it first
        #: planned from, then what its results reported (kept across rebalances: a commit by
        #: another instance carries its own token and moves it up, see rounds.counted_from)
        self._counted: dict[tuple[str, int], int] = {}
        #: since when some assigned partition's end or committed offset cannot be read (None:
        #: all readable), and why the group's committed offsets could not be read last
        self._unreadable_since: float | None = None
        self._offsets_error = ""

    # --- setup -----------------------------------------------------------------------------------
    def _prepare_mode(self, loaded: LoadedUdf) -> None:
        """The admin client the rounds are planned with, and the task every round runs."""
        self.admin = clients.admin(self.settings)
        mapper = tf.make_mapper(
            loaded.func, loaded.kind, self.cfg.value_format, self.cfg.record_input, self.reader, self.encoder
        )
        batch = sparkmod.batch_job(self.session, None)
        job = taskmod.Job(
            conf=self.settings.confluent(),
            group=self.cfg.group,
            pipe_id=self.cfg.transactional_id,
            out=self.cfg.out,
            dlq=self.cfg.dlq,
            start=self.cfg.start,
            record_mode=self.cfg.record_input,
            mapper=mapper,
            chunk=batch.chunk,
            udf_name=loaded.name,
            timeout=self.settings.timeout,
            executor_log=not sparkmod.is_local(self.session.sparkContext.master),
            run=self.run_token,
            failover_s=self.settings.failover,
            debug=logger.isEnabledFor(logging.DEBUG),
            # local tasks share the driver's disk (as driver mode's spool does): a UDF failure in
            # one stops the others of its round
            stop_file=os.path.join(batch.spool, f"kxtx-udf-failed-{self.run_token}") if batch.spool else None,
        )
        self.task = taskmod.make_plan_task(job)

    def _metadata(self) -> ClusterMetadata:
        try:
            return self.admin.list_topics(timeout=self.settings.timeout)
        except Exception as exc:
            raise clients.translate(exc, "reading cluster metadata") from exc

    # --- the loop --------------------------------------------------------------------------------
    def _consumer_conf(self) -> dict:
        """The driver joins the group as a member of its own. Only partitions the group assigns
        to it are planned, and tasks commit their offsets with its generation (KIP-447): another
        member of the group -- a second kxtx pipe with another transactional id, a driver-mode
        instance -- owns the rest, and a task from before a rebalance can no longer commit. The
        driver never reads records itself: assigned partitions stay paused."""
        return {
            "topic.metadata.refresh.interval.ms": self.settings.props.get(
                "topic.metadata.refresh.interval.ms", METADATA_REFRESH_MS
            )
        }

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.assign(partitions)
        self._unpaused = list(partitions)
        self._pause()

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

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        self._unpaused = []
        for p in partitions:
            self.tokens.pop((p.topic, p.partition), None)

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
            began = self._round_began = time.monotonic()
            self._plan_s = began - planned
            failures = self.streak.n
            got = self._round(plans) if plans else 0
            now = time.monotonic()
            if got:
                self._last_data = now
                if self.stats.first_record is None:
                    self.stats.first_record = began
            elif self.streak.n > failures or self._unreadable_since is not None or self.lost():
                # A failed round is not an idle one: its records are still there; nor is one
                # that could not read a partition's end (its leader moving), or that had no
                # partitions because the group was lost (its coordinator down). (A run whose
                # rounds keep failing ends after MAX_FAILED_ROUNDS or, failing because nothing
                # answers, after KXTX_FAILOVER_TIMEOUT (rounds.Streak); one that cannot read a
                # partition or stays without its group for longer than KXTX_FAILOVER_TIMEOUT,
                # with an error.)
                self._last_data = now
            elif cfg.until_idle is not None and now - self._last_data >= cfg.until_idle:
                self.stats.stopped = "idle"
                return
            self._report()
            if not got:
                self._serve(IDLE_POLL_S)

    def _plan(self, budget: int | None) -> list[taskmod.Plan]:
        """One Plan per input partition whose last stable offset is past its committed offset, and
        a count-only one (limit 0) per partition this run committed past its count (rounds.uncounted)."""
        from confluent_kafka import TopicPartition

        tps = [TopicPartition(t, p) for t, p in sorted(self._assignment)]
        watched = [TopicPartition(t, p) for t, p in sorted(self._fenced.keys() - self._assignment)]
        if not tps and not watched:
            return []
        # Read now, after the last rebalance callback: the generation the tasks commit under.
        generation = self.consumer.consumer_group_metadata()
        found = self._committed(tps + watched)
        self._watch_fences(found)
        committed = {key: tp.offset for key, tp in found.items()}
        self._planned_from = committed
        counted = self._count_from(found)
        if not tps:
            return []
        work = self._work(tps, committed)
        self.lag = sum(n for _, _, n in work)
        limits = rounds.split(budget, [min(self._limit, n) for _, _, n in work])
        plans = [
            taskmod.Plan(t, p, limit, end, self.tokens.get((t, p)), generation, counted.get((t, p), -1))
            for ((t, p), end, _), limit in zip(work, limits)
            if limit > 0
        ]
        return plans + self._count_only(plans, found, counted, generation)

    def _work(
        self, tps: list, committed: dict[tuple[str, int], int]
    ) -> list[tuple[tuple[str, int], int, int]]:
        """(partition, end, records to read) per partition of `tps` whose last stable offset is past
        its committed offset. A partition whose end cannot be read yet is planned next round."""
        from confluent_kafka import IsolationLevel, KafkaException
        from confluent_kafka.admin import OffsetSpec

        futures = self.admin.list_offsets(
            {tp: OffsetSpec.latest() for tp in tps},
            isolation_level=IsolationLevel.READ_COMMITTED,
            request_timeout=min(PLAN_READ_S, self.settings.timeout),
        )
        work, unknown, why = [], 0, ""
        for tp, fut in futures.items():
            try:
                end = fut.result().offset
            except KafkaException as exc:
                # a partition that is new, or whose leader moves: planned again next round
                if not later(exc):
                    raise clients.translate(exc, f"reading {tp.topic}[{tp.partition}]'s end") from exc
                unknown += 1
                why = f"{tp.topic}[{tp.partition}]: {exc}"
                continue
            key = (tp.topic, tp.partition)
            done = committed.get(key, -1001)
            if end > 0 and (done < 0 or end > done):
                work.append((key, end, end - max(done, 0)))
        self._note_readable(unknown, why)
        return work

    def _note_readable(self, unknown: int, why: str) -> None:
        """Start, keep or stop the clock of unreadable partitions after a round's end offsets."""
        if unknown:
            # A partition the group assigned before this client's metadata shows it (just
            # created), or one whose leader moves: planned next round, with fresh metadata.
            logger.info("%d partition(s) not readable yet (%s); planned next round", unknown, why)
            self._unreadable(why)
            self._metadata()
        elif self._offsets_error:
            self._unreadable(self._offsets_error)
        else:
            self._unreadable_since = None

    def _count_only(
        self, plans: list[taskmod.Plan], found: dict, counted: dict[tuple[str, int], int], generation: Any
    ) -> list[taskmod.Plan]:
        """A commit of this run that no result reported (the Spark job failed after the attempt
        committed) on a partition with nothing new since: a task that only counts it."""
        planned = {(plan.topic, plan.partition) for plan in plans}
        extra = []
        for key in sorted(self._assignment - planned):
            tp = found.get(key)
            if tp is not None and rounds.uncounted(
                counted.get(key, -1), tp.offset, tp.metadata, self.run_token
            ):
                extra.append(taskmod.Plan(*key, 0, tp.offset, self.tokens.get(key), generation, counted[key]))
        return extra

    def _count_from(self, found: dict) -> dict[tuple[str, int], int]:
        """Per partition read, the offset from which a plan counts its records
        (rounds.counted_from). Kept as this run's count until a result moves it: a commit whose
        result never came stays past it, and the next task of the partition counts it."""
        for key, tp in found.items():
            if tp.error is None:
                self._counted[key] = rounds.counted_from(
                    self._counted.get(key),
                    tp.offset,
                    tp.metadata,
                    self.run_token,
                    self.cfg.start == "earliest",
                )
        return {key: self._counted[key] for key in found if key in self._counted}

    def _unreadable(self, why: str) -> None:
        """A partition's end could not be read (its leader moving, a broker down): waited out as
        long as a transactional call waits out a failover (KXTX_FAILOVER_TIMEOUT), then exit 75."""
        now, bound = time.monotonic(), self.settings.failover
        if self._unreadable_since is None:
            self._unreadable_since = now
        elif now - self._unreadable_since > bound:
            raise Unavailable(
                f"reading the end offsets: a partition stayed unreadable for {bound:.0f} s "
                f"(last: {why}); run the same command again to continue"
            )

    def _committed(self, tps: list) -> dict:
        """The group's committed offsets, as TopicPartitions (with their metadata), by partition
        (not necessarily stable: the tasks read the stable ones; here they only decide which
        partitions get a task). Unknown ones count as "from the start", which costs at most a
        task that finds nothing new."""
        from confluent_kafka import KafkaException

        self._offsets_error = ""
        deadline = time.monotonic() + min(5.0, self.settings.timeout)
        while True:
            try:
                got = self.consumer.committed(tps, timeout=self.settings.timeout)
                return {(tp.topic, tp.partition): tp for tp in got}
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if err is not None and err.fatal():
                    raise clients.translate(exc, "reading the group's offsets") from None
                if time.monotonic() > deadline:
                    # the group's coordinator down or moving: a round that cannot tell, not an
                    # idle one (see _unreadable)
                    logger.info("reading the group's offsets: %s", exc)
                    self._offsets_error = f"reading the group's offsets: {exc}"
                    return {}
                time.sleep(0.1)

    def _round(self, plans: list) -> int:
        """Run one round as a Spark job; returns the records read by tasks that committed."""
        t0 = time.perf_counter()
        with self.signals:  # entered by run(): a stop waits for the job, then for the loop's check
            try:
                sc = self.session.sparkContext
                results: list[taskmod.TaskResult] = (
                    sc.parallelize(plans, len(plans)).mapPartitions(self.task).collect()
                )
                error: Exception | None = None
            except Exception as exc:  # noqa: BLE001 - lost executors, tasks out of retries
                results, error = [], exc
        job_s = time.perf_counter() - t0
        self.stats.spark_s += job_s
        rounds.log_round(plans, results, self._plan_s, job_s)
        self._limit = rounds.pace(
            self._limit, max(p.limit for p in plans), job_s, self.settings.props, "round"
        )
        if error is not None:
            self._failed(f"Spark job failed: {sparkmod.first_line(error)}")
            return 0
        return self._absorb(results)

    def _absorb(self, results: list[taskmod.TaskResult]) -> int:
        got = failed = unavailable = 0
        how: dict[str, int] = {}  # failed tasks by what became of them (aborted, fenced, in-doubt)
        s = self.stats
        udf_failure = None
        last_error = ""
        for r in results:
            key = (r.topic, r.partition)
            s.consume_s += r.consume_s
            s.produce_s += r.produce_s + r.udf_s
            s.commit_s += r.commit_s
            if r.status == "udf-error" and r.udf_failure is not None:
                # The run stops on it once the round is counted: the other tasks of the round
                # committed or aborted on their own, and the summary must say what they did.
                s.aborted += 1
                udf_failure = udf_failure or r.udf_failure
                continue
            if r.status == "fatal":
                raise KafkaOperationError(f"{key[0]}[{key[1]}]: {r.error}")
            if r.status == "fenced" and key in self._planned_from:
                self._fenced.setdefault(key, (self._planned_from[key], time.monotonic() + FENCE_WATCH_S))
            if r.status != "ok":
                failed += 1
                how[r.status] = how.get(r.status, 0) + 1
                unavailable += r.unavailable
                last_error = r.error or last_error
                # a commit whose outcome is unknown was not aborted: it is not counted as one
                s.aborted += r.status != "in-doubt"
                self.tokens.pop(key, None)
                logger.info("%s[%d]: %s (%s); planned again", *key, r.status, r.error)
                continue
            if r.token is not None:
                self.tokens[key] = r.token
            if r.committed is not None:
                self._fenced.pop(key, None)  # this run commits the partition again
                s.add_batch(r.records_in, r.records_out, r.dlq, r.dropped)
                got += r.records_in
                self._counted[key] = r.committed
                if r.recovered:
                    s.lost_results += 1
                    logger.warning(
                        "%s[%d]: %s committed by an attempt whose result was lost (its worker or "
                        "executor died); counted in records_in, their outputs are not in records_out",
                        *key,
                        plural(r.recovered, "record"),
                    )
        if udf_failure is not None:
            raise self.udf_failed(udf_failure)
        if failed and not got:
            # the tasks' own words for a cause outside Kafka (a schema registry that did not answer)
            why = f": {last_error.partition(': ')[2]}" if last_error.startswith("_REGISTRY") else ""
            said = ", ".join(f"{n} {status}" for status, n in sorted(how.items()))
            self._failed(f"{failed} task(s) failed ({said}){why}", unavailable == failed)
        else:
            self.streak.ok()
        return got

    def _watch_fences(self, committed: dict) -> None:
        """Stop when a partition on which a task of this run was fenced has since been committed
        by another instance (`rounds.taken_over`): a newer `kxtx pipe` with the same group and
        transactional id took over, as a restart does in driver mode. Retries and speculative
        copies of this run's own tasks commit this run's token and do not count."""
        now = time.monotonic()
        for key, (before, until) in list(self._fenced.items()):
            tp = committed.get(key)
            if (
                tp is not None
                and tp.error is None
                and rounds.taken_over(before, tp.offset, tp.metadata, self.run_token)
            ):
                raise FencedError(
                    f"{key[0]}[{key[1]}]: fenced: another instance with the same transactional id "
                    f"({self.cfg.transactional_id}) took over and committed this partition; "
                    "this instance stops"
                )
            if now > until:
                del self._fenced[key]

    def _failed(self, why: str, unavailable: bool = False) -> None:
        """`unavailable`: every task failed with an error of a cluster failing over or a schema
        registry that did not answer: giving up is then exit 75 (run the same command again), as
        in driver mode, and the streak as a whole has the one bound of a failover (rounds.Streak)."""
        n = self.streak.failed(why, self.settings.failover, unavailable, began=self._round_began)
        logger.warning("round failed (%s); retrying (%d/%d)", why, n, MAX_FAILED_ROUNDS)
        time.sleep(min(2.0, 0.1 * 2**n))

    # --- progress and shutdown -------------------------------------------------------------------
    def _lag(self) -> int | None:
        return self.lag
