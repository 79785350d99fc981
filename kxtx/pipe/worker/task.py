"""`kxtx pipe --mode executors`, the executor side: one Spark task = one input partition, one round.

A task reads its partition read_committed from the group's committed offset, runs the UDF in its
own Python worker (the same mapper and output contract as driver mode, `transform.make_mapper`),
produces the outputs and commits the new input offset in one transaction of its own producer.

Why a transactional id per input partition is safe (the model Kafka Streams called EOS-alpha, used
before KIP-447 made one producer per thread possible):

- The transactional id is a fixed function of (pipe id, topic, partition). Whoever processes a
  partition — a task, Spark's retry of it, a speculative copy, a task on an executor that was lost
  and comes back, another `kxtx pipe` with the same pipe id — uses the same id.
- `init_transactions` bumps that id's producer epoch and does not return before the coordinator has
  finished (committed or aborted) the previous epoch's open transaction, offsets included. From then
  on every request of an older producer with that id is refused (fenced): it can no longer add
  records or offsets to a transaction nor commit one.
- Only then does the task read its start offset, as a *stable* offset (the OffsetFetch asks the
  broker to refuse an answer while transactional offsets for it are pending: KIP-447's
  require_stable; librdkafka sets it with isolation.level=read_committed). So it starts exactly
  where the last committed transaction for the partition ended.
- Records and the input offset commit in one transaction. Two producers can both have read the same
  start offset, but only the newest epoch can commit; the older one's work is aborted. Hence each
  input record's outputs are committed once, whatever Spark retries or whoever comes back.
- KIP-447's alternative (one producer per process, fenced through the consumer group generation)
  needs a group membership that follows the work; Spark tasks are not group members and partitions
  move between workers every round, so per-partition ids are the model that fits.

Clients are kept per Python worker process (Spark reuses them, spark.python.worker.reuse) for one
run (the driver's run token): the consumer across all partitions, a producer per transactional id.
The driver passes the token of the producer that last committed a partition; a worker that still
holds that very producer reuses it (no init_transactions), any other one starts a new producer and
so fences the rest. Code that Spark
ships by value gets fresh module globals per task, so the cache hangs off a module in sys.modules.

Tasks never raise for Kafka or UDF errors: they return a `TaskResult` (its `status`), so local mode
(no task retries) and clusters behave alike and the driver decides what to do.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import types
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from kxtx.client import txwriter as tw
from kxtx.client.kafkaerrors import FAILOVER_S, Kind, classify, later
from kxtx.fast import gcpause
from kxtx.pipe.worker import transform as tf
from kxtx.pipe.worker.consumerconf import exactly_once
from kxtx.pipe.worker.outputs import Outputs, UdfFailure, plain_records, to_records

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer, TopicPartition

_STATE = "kxtx_pipe_worker_state"
#: records per consume() call, and how long a call waits for them when fewer are there
CONSUME_BATCH, CONSUME_WAIT_S = 10000, 0.02
#: The producer's id mapping is gone (expired, transactional.id.expiration.ms): like a fence, the
#: task drops the producer and the next starts anew.
_ID_GONE = "INVALID_PRODUCER_ID_MAPPING"


@dataclass(frozen=True)
class Plan:
    """One input partition for one round."""

    topic: str
    partition: int
    limit: int  # at most this many records
    end: int  # the partition's last stable offset when the round was planned
    token: str | None  # the producer that last committed this partition (or None)
    #: the driver's group metadata (member id and generation) when it planned the round: the
    #: offsets commit only while the group still gives this partition to that driver (KIP-447).
    #: None: no generation check (a task run on its own, as in the tests' task runner).
    generation: bytes | None = None
    #: the input offset up to which the driver has counted this partition's records
    #: (`rounds.counted_from`); -1: not known; LOG_START: the log's start (nothing was committed
    #: and the run reads from the start). A commit of this run past it is an earlier attempt
    #: whose result was lost (`_recovered`).
    counted: int = -1


#: Plan.counted: the count stands at the log's start (kxtx.pipe.rounds.LOG_START, the same value:
#: this module ships to the executors without the driver's modules)
LOG_START = -2


@dataclass(frozen=True)
class Job:
    """What is the same for every task of a run (pickled into the Spark job, never logged)."""

    #: the confluent-kafka config resolved on the driver (secrets included: never in a repr)
    conf: dict = field(repr=False)
    group: str
    pipe_id: str
    out: str
    dlq: str | None
    start: str
    record_mode: bool
    mapper: tf.Mapper
    chunk: int
    udf_name: str
    timeout: float
    #: write a line to the executor's log (its stderr) when an attempt does not commit: on a
    #: cluster the driver's log is not where the attempt ran; locally the driver logs it anyway
    executor_log: bool = False
    #: the driver's run token, committed as the offsets' metadata: who committed a partition last
    #: tells a fence by another instance from one by this run's own copies (`rounds.taken_over`)
    run: str = ""
    #: the least a commit retries (see kxtx.client.txwriter): the driver's KXTX_FAILOVER_TIMEOUT
    failover_s: float = FAILOVER_S
    #: a file the tasks of a local run share with the driver (its disk): a task whose UDF failed
    #: without a dead-letter topic creates it, and the round's other tasks, which see it, stop
    #: where they are (the run ends at this round anyway). None on a cluster: the tasks there do
    #: not share a disk, and their round runs to its end.
    stop_file: str | None = None
    #: the driver runs with --debug: the tasks' librdkafka log lines are shown (see `client_log`)
    debug: bool = False


def client_log(job: Job) -> logging.Logger:
    """The logger of a task's librdkafka clients, as every kxtx client has (kxtx.client.clients):
    without one, librdkafka writes its own lines (`%4|...|GETPID|... Coordinator load in progress`,
    `CONFWARN` for a consumer property given to the producer) to the worker's stderr, which a
    local run shares with the user's terminal. Shown only with --debug, as the driver's are."""
    log = logging.getLogger("kxtx.librdkafka")
    log.setLevel(logging.DEBUG if job.debug else logging.CRITICAL)
    return log


@dataclass(frozen=True)
class TaskResult:
    """What one task did for one plan (returned, never raised: see the module docstring)."""

    topic: str
    partition: int
    #: ok | fenced | aborted | fatal (this producer can do nothing more) | udf-error
    status: str = "ok"
    records_in: int = 0
    records_out: int = 0
    dlq: int = 0
    dropped: int = 0
    #: the producer that committed (the next plan's `token`); None when none did
    token: str | None = None
    #: whether the task started a new producer (init_transactions)
    init: bool = False
    #: the input offset committed; None: no transaction committed (nothing new, or failed)
    committed: int | None = None
    #: fenced, aborted, fatal: the Kafka error, as "NAME: text"
    error: str | None = None
    #: the error is one of a cluster failing over (Kafka's table, kxtx.client.kafkaerrors): rounds that
    #: keep failing with such errors end the run with exit 75, not 1
    unavailable: bool = False
    #: udf-error: the record the UDF failed on (no DLQ)
    udf_failure: UdfFailure | None = None
    #: of records_in: those an earlier attempt committed and whose result never reached the
    #: driver (see `_recovered`); their outputs are not in records_out/dlq/dropped
    recovered: int = 0
    consume_s: float = 0.0
    udf_s: float = 0.0
    produce_s: float = 0.0
    commit_s: float = 0.0
    init_s: float = 0.0
    task_s: float = 0.0


def transactional_id(pipe_id: str, topic: str, partition: int) -> str:
    return f"{pipe_id}.{topic}.{partition}"


def make_plan_task(job: Job) -> Callable[[Iterable[Plan]], Iterator[TaskResult]]:
    """The function of `RDD.mapPartitions`: plans in, one `TaskResult` per plan out."""

    def task(plans: Iterable[Plan]) -> Iterator[TaskResult]:
        for plan in plans:
            yield run_plan(job, plan)

    return task


def _state() -> Any:
    state: Any = sys.modules.get(_STATE)
    if state is None:
        state = types.ModuleType(_STATE)
        state.producers, state.consumers = {}, {}
        #: (consumer key, topic) pairs whose metadata that consumer has loaded (see _consumer)
        state.topics_known = set()
        state.run = None  # the run (the driver's token) the clients above are for
        sys.modules[_STATE] = state
    return state


def _for_run(job: Job) -> None:
    """Let go of the clients this worker process kept for another run. Spark reuses its Python
    workers for every job of an application: a session that runs pipes one after another (kxtx's
    engine in-process) kept each earlier run's producers and consumers, connected, for the life of
    the process (a transactional id's producer included, and its cluster's connections). Two runs at
    once in one application would take turns starting clients (correct, as any producer of an id
    fences the older ones, only slower)."""
    state = _state()
    if state.run == job.run:
        return
    consumers = state.consumers.values()
    # a producer without references is destroyed: no transaction is open between runs
    state.producers, state.consumers, state.topics_known, state.run = {}, {}, set(), job.run
    for consumer in consumers:
        try:
            consumer.close()
        except Exception:  # noqa: BLE001 - closed already, or its cluster gone: nothing to keep
            pass


class _Producer:
    """A task's transactional writer (kxtx.client.txwriter: errors stay the client's own, for the task's
    result; retries end at the job timeout, a commit's later) and the token that names it."""

    def __init__(self, job: Job, tid: str) -> None:
        from confluent_kafka import Producer

        self.writer = tw.TxWriter(tid, job.timeout, raw=True, retry_s=job.timeout, failover_s=job.failover_s)
        self.writer.producer = Producer(producer_conf(job, tid))
        self.tid, self.token = tid, uuid.uuid4().hex
        self.writer.init()

    @property
    def producer(self) -> Producer:
        return self.writer.producer


def producer_conf(job: Job, tid: str) -> dict:
    # A task starts a producer whenever its partition moved to another worker (Spark does not
    # keep a partition's task on one executor). librdkafka drops the bootstrap connection after
    # the first metadata; the coordinator lookup of init_transactions then often found no broker
    # up and waited for its retry timer. So the producer connects to the brokers as soon as they
    # are known (the cost: it connects to every broker, not only to the coordinator and the
    # output's leaders); see bench/README.md, "Driver mode against executors mode". The common
    # settings: kxtx.client.txwriter. A user's own values win.
    return {
        **tw.producer_conf(job.conf, **{"enable.sparse.connections": False}),
        **job.conf,
        "transactional.id": tid,
        "logger": client_log(job),
    }


def _producer(job: Job, plan: Plan, tid: str) -> tuple[_Producer, bool]:
    producers = _state().producers
    cached = producers.pop(tid, None)
    if cached is not None and plan.token is not None and cached.token == plan.token:
        producers[tid] = cached
        return cached, False
    producers[tid] = fresh = _Producer(job, tid)  # fences every older producer of this id
    return fresh, True


def _consumer_key(job: Job) -> tuple:
    return job.group, tuple(sorted((k, str(v)) for k, v in job.conf.items()))


def _consumer(job: Job, topic: str) -> Consumer:
    state = _state()
    key = _consumer_key(job)
    c = state.consumers.get(key)
    if c is None:
        from confluent_kafka import Consumer

        c = Consumer(consumer_conf(job))
        state.consumers[key] = c
    if (key, topic) not in state.topics_known:
        # librdkafka does not look up the leaders of a topic first seen in assign(): the fetch
        # waited for its periodic metadata scan. If this fails, the fetcher finds the leader later.
        try:
            c.list_topics(topic, timeout=job.timeout)
            state.topics_known.add((key, topic))
        except Exception:  # noqa: BLE001
            pass
    return c


def consumer_conf(job: Job) -> dict:
    # A task reads up to a known end offset and then unassigns; the next task of the worker
    # assigns another partition. fetch.wait.max.ms: librdkafka's long poll at the end of a
    # partition is still in flight then and the next assign waits for it. fetch.queue.backoff.ms:
    # a partition whose prefetch queue filled up in one round kept its fetch backoff into the
    # next. queued.min.messages: librdkafka prefetches far past a round, and what waits at the
    # unassign is dropped (parsed by the worker's librdkafka threads, served again by the broker
    # next round); one consume() batch keeps the queue full enough. Figures: bench/README.md,
    # "Driver mode against executors mode" and "The task consumer's settings, and Spark's start
    # and stop". A user's own values win.
    return {
        "fetch.wait.max.ms": 10,
        "fetch.queue.backoff.ms": 10,
        "queued.min.messages": CONSUME_BATCH,
        **job.conf,
        **exactly_once(job.group, job.start),
        "enable.partition.eof": True,
        "logger": client_log(job),
    }


def run_plan(job: Job, plan: Plan) -> TaskResult:
    began = time.perf_counter()
    # A round keeps up to --batch-max-records Messages, decoded values and output tuples alive:
    # without the pause the cyclic collector ran over and over on them (kxtx.fast.gcpause).
    with gcpause.paused():
        attempt = _attempt(job, plan)
    attempt["task_s"] = time.perf_counter() - began
    return TaskResult(plan.topic, plan.partition, **attempt)


def _attempt(job: Job, plan: Plan) -> dict:
    """TaskResult's fields for one attempt at `plan` (see `run_plan`)."""
    from confluent_kafka import KafkaException

    tid = transactional_id(job.pipe_id, plan.topic, plan.partition)
    attempt: dict = {}  # filled in as the attempt goes
    began = time.perf_counter()
    prod = None
    try:
        _for_run(job)
        prod, attempt["init"] = _producer(job, plan, tid)
        attempt["init_s"] = time.perf_counter() - began
        attempt["token"] = prod.token
        _process(job, plan, prod, attempt)
    except tw.CommitInDoubt as exc:
        # Committed or not, unknown: never abort it. The next producer of this id (init_transactions)
        # finishes it, and the next round starts from the stable committed offset either way.
        _state().producers.pop(tid, None)
        attempt["status"], attempt["token"], attempt["unavailable"] = "in-doubt", None, True
        attempt["error"] = f"{exc.err.name()}: {exc.err.str()} (committing; outcome unknown)"
    except tw.Stuck as exc:
        # send_offsets_to_transaction outlived its watchdog (kxtx.client.txwriter): the writer abandoned
        # the producer. Drop it: the next round for this partition starts a new one, whose
        # init_transactions aborts this attempt's transaction. A failover, not a failure.
        _state().producers.pop(tid, None)
        attempt["status"], attempt["token"], attempt["unavailable"] = "aborted", None, True
        attempt["error"] = f"_TIMED_OUT: {exc}"
        _executor_log(job, plan, tid, attempt)
    except KafkaException as exc:
        err = _settle(tid, prod, exc.args[0] if exc.args else None)
        name = err.name() if hasattr(err, "name") else ""
        attempt["status"] = "fenced" if _fenced(err) else ("fatal" if _final(err) else "aborted")
        attempt["error"] = f"{name}: {err.str() if err is not None else exc}"
        attempt["unavailable"] = later(err)
        attempt["token"] = None
        _executor_log(job, plan, tid, attempt)
    except Exception as exc:
        if not getattr(exc, "retriable", False):
            raise
        # A schema registry that did not answer (kxtx.client.registry.RegistryUnavailable): no
        # record's fault. The round is aborted and retried as after a failover; the driver gives
        # up after the failover time (exit 75).
        if prod is not None:
            _settle(tid, prod, None)
        attempt["status"], attempt["token"], attempt["unavailable"] = "aborted", None, True
        attempt["error"] = f"_REGISTRY: {exc}"
        _executor_log(job, plan, tid, attempt)
    return attempt


def _executor_log(job: Job, plan: Plan, tid: str, attempt: dict) -> None:
    """The line for the executor's log about an attempt that committed nothing (see Job)."""
    if job.executor_log:
        sys.stderr.write(
            f"kxtx pipe: {plan.topic}[{plan.partition}] (transactional id "
            f"{tid}): {attempt['status']}, {attempt['error']}; nothing of this "
            "attempt was committed\n"
        )
        sys.stderr.flush()


def _settle(tid: str, prod: _Producer | None, err: Any) -> Any:  # a KafkaError, or what was raised
    """Abort the attempt's transaction, or drop the producer when it cannot abort; the error to
    report. A produce() call after a fence raises only `_FATAL` (not flagged fatal) while the
    fence itself reaches the producer's state: the abort then raises the fence by its name."""
    from confluent_kafka import KafkaException

    if prod is None:
        return err
    if not _final(err):
        exc = prod.writer.abort_quietly()
        if exc is None:
            return err
        cause = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
        if _final(cause):
            err = cause
    # cannot abort: start over with a new producer next time
    _state().producers.pop(tid, None)
    return err


def _fenced(err: Any) -> bool:
    """The producer can do nothing more with this transactional id: fenced (`Kind.FENCED`), or its
    producer id mapping gone."""
    return hasattr(err, "name") and (classify(err) is Kind.FENCED or err.name() == _ID_GONE)


def _final(err: Any) -> bool:
    """Fenced or fatal: this producer can do nothing more."""
    return _fenced(err) or (hasattr(err, "name") and bool(err.fatal()))


def _process(job: Job, plan: Plan, prod: _Producer, attempt: dict) -> None:
    from confluent_kafka import TopicPartition

    consumer = _consumer(job, plan.topic)
    tp = TopicPartition(plan.topic, plan.partition)
    t0 = time.perf_counter()
    # Read after init_transactions (see the module docstring): a stable committed offset.
    (committed,) = prod.writer.call(
        "committed", "reading the committed offset", consumer.committed, [tp], job.timeout
    )
    start = committed.offset
    recovered = _recovered(job, plan, consumer, committed)
    if recovered:
        attempt["records_in"] = attempt["recovered"] = recovered
        attempt["committed"] = start
    stopped = _stop_check(job)
    msgs, next_offset = _consume(job, plan, consumer, start, stopped)
    t1 = time.perf_counter()
    attempt["consume_s"] = t1 - t0
    if next_offset is None or (start >= 0 and next_offset <= start):
        return  # nothing new: no transaction
    if stopped is not None and stopped():
        return  # another task's UDF failed: the run ends at this round; nothing begun here
    writer = prod.writer
    writer.begin()
    if msgs:
        try:
            outputs = _transform(job, msgs, attempt, stopped)
        except tf.Stopped:
            writer.abort()
            attempt["status"], attempt["token"] = "aborted", None
            attempt["error"] = "stopped: the UDF failed on another partition of this round"
            return
        if outputs.failure is not None:  # a UDF error and no DLQ: nothing of the round is written
            _signal_stop(job)
            writer.abort()
            attempt["status"], attempt["udf_failure"] = "udf-error", outputs.failure
            return
        t1 = time.perf_counter()
        writer.produce_records(outputs.records)
        attempt["produce_s"] = time.perf_counter() - t1
        attempt["records_out"], attempt["dlq"], attempt["dropped"] = (
            outputs.produced,
            outputs.dlq,
            outputs.dropped,
        )
    t2 = time.perf_counter()
    # confluent-kafka 2.16 refuses metadata=None: a job without a run token commits none.
    where = (plan.topic, plan.partition, next_offset)
    tp = TopicPartition(*where, metadata=job.run) if job.run else TopicPartition(*where)
    writer.send_offsets([tp], plan.generation or consumer.consumer_group_metadata())
    writer.commit()
    attempt["commit_s"] = time.perf_counter() - t2
    attempt["records_in"], attempt["committed"] = len(msgs) + recovered, next_offset


def _stop_check(job: Job) -> Callable[[], bool] | None:
    """Whether another task of the round has asked the others to stop (see Job.stop_file)."""
    if job.stop_file is None:
        return None
    return partial(os.path.exists, job.stop_file)


def _signal_stop(job: Job) -> None:
    if job.stop_file is not None:
        try:
            open(job.stop_file, "a").close()
        except OSError:  # the driver's temp dir gone: the others run to the round's end
            pass


def _recovered(job: Job, plan: Plan, consumer: Any, committed: TopicPartition) -> int:
    """How many records an earlier attempt of this plan committed whose result never reached the
    driver: its worker or executor died after the commit and Spark ran the task again. The stable
    committed offset is then past what the driver counted and carries this run's token (another
    instance's commit carries its own). Counted by reading them again, read_committed, so that
    the run's records_in stays the number of records it moved; their outputs are not known."""
    if not job.run or (plan.counted < 0 and plan.counted != LOG_START) or committed.offset <= plan.counted:
        return 0
    if committed.metadata != job.run:
        return 0
    span = replace(plan, limit=committed.offset - plan.counted, end=committed.offset)
    msgs, _ = _consume(job, span, consumer, plan.counted)
    # consume() may hand over a record past the range (the range can end in markers)
    return sum(1 for m in msgs if m.offset() < committed.offset)


def _consume(
    job: Job, plan: Plan, consumer: Any, start: int, stopped: Callable[[], bool] | None = None
) -> tuple[list[Any], int | None]:
    # consumer: a Consumer, Any with its Messages: confluent-kafka's stubs make a fetched record's
    # offset Optional
    """Records from `start` (or the reset policy) up to the planned end, the limit, or the end of
    the partition; and the offset to commit after them (None: nothing was read). `stopped`, asked
    between fetches: True ends the reading where it is."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    consumer.assign([TopicPartition(plan.topic, plan.partition, _start_offset(job, start))])
    try:
        msgs: list = []
        eof, eof_at = False, -1
        deadline = time.monotonic() + job.timeout
        while len(msgs) < plan.limit and not eof:
            nxt = msgs[-1].offset() + 1 if msgs else start
            got = consumer.consume(consume_count(plan.limit - len(msgs), nxt, plan.end), CONSUME_WAIT_S)
            for m in got:
                err = m.error()
                if err is None:
                    msgs.append(m)
                elif err.code() == KafkaError._PARTITION_EOF:
                    eof, eof_at = True, m.offset()  # the fetch position: past all it skipped
                elif err.fatal() or not later(err):  # Kafka's table: kxtx.client.kafkaerrors
                    raise KafkaException(err)
            if msgs and msgs[-1].offset() + 1 >= plan.end:
                break
            if not got and time.monotonic() > deadline:
                break
            if stopped is not None and stopped():
                break
        nxt = msgs[-1].offset() + 1 if msgs else None
        if eof_at >= 0:
            # Commit the end, past aborted records and transaction markers, so the group's lag
            # reaches 0 instead of pointing at records nobody can read. With no committed
            # offset and nothing read, this pins where --from resolved to: the next round
            # starts there, not at a new "latest" that skips what came in between.
            nxt = max(nxt or 0, eof_at)
        return msgs, nxt
    finally:
        consumer.unassign()


def consume_count(left: int, nxt: int, end: int) -> int:
    """Records for one consume() call: `left` may still be read, `nxt` is the next offset (< 0:
    not known yet), `end` the planned end. consume() returns with that many or after its wait,
    not at the end of the partition: no more than the planned range (which may hold fewer
    records than offsets: markers, aborted records) and a short wait spare each task a wait."""
    want = min(CONSUME_BATCH, left)
    return max(1, min(want, end - nxt)) if nxt >= 0 else want


def _start_offset(job: Job, committed: int) -> int:
    """The committed offset, else --from as a logical offset: INVALID would reach the same start
    through auto.offset.reset, after a 100 ms backoff. (auto.offset.reset still serves a
    committed offset that has left the log.)"""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END

    if committed >= 0:
        return committed
    return OFFSET_BEGINNING if job.start == "earliest" else OFFSET_END


def _transform(job: Job, msgs: list, attempt: dict, stopped: Callable[[], bool] | None = None) -> Outputs:
    """The UDF over `msgs` (chunks of `job.chunk` per call), as the records to produce. Without
    --input record the mapper takes the values as a list: the records never leave this worker,
    so no Arrow table is built for them. Without a dead-letter topic the first chunk with a
    failing record ends the calls (the batch fails whatever the rest gives); `stopped` (see
    Job.stop_file) raises tf.Stopped between chunks."""
    import pyarrow as pa

    t0 = time.perf_counter()
    if job.record_mode:
        table = tf.input_table(msgs, job.record_mode)
        out = pa.Table.from_batches(
            list(job.mapper(iter(table.to_batches(job.chunk)))), schema=tf.output_schema()
        )
    else:
        try:
            out = job.mapper.map_values([m.value() for m in msgs], job.chunk, job.dlq is None, stopped)
        except tf.FailedEarly as early:
            attempt["udf_s"] = time.perf_counter() - t0
            outputs = to_records(msgs[: early.mapped], early.outputs, job.out, job.dlq, job.udf_name)
            assert outputs.failure is not None  # FailedEarly comes after a failing record only
            return replace(outputs, failure=replace(outputs.failure, partial=True))
    attempt["udf_s"] = time.perf_counter() - t0
    if type(out) is list:  # one plain value per record
        return plain_records(msgs, out, job.out)
    return to_records(msgs, out, job.out, job.dlq, job.udf_name)
