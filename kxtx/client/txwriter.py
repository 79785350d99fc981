"""The transactional writer: one confluent-kafka transactional producer with one retry policy,
used by `kxtx produce` (all its paths) and `kxtx pipe` (the driver and the executors' tasks).

What a transactional call does on an error (`decide`, a pure function; librdkafka flags each
error fatal, txn_requires_abort or retriable):

- fatal (fenced, unsupported, ...): FAIL. Nothing more can be done with this producer.
- txn_requires_abort: ABORT. The open transaction is lost; the caller aborts it and redoes the
  batch (`Abortable`). An abort that itself needs an abort: FAIL.
- a later try gets past it (`kafkaerrors.later`: librdkafka's retriable flag, or the kinds of
  `kafkaerrors.LATER`: Kafka's own retriable / "refresh metadata" codes, librdkafka's "no answer
  yet" codes such as _TIMED_OUT): RETRY the same call, with `kafkaerrors.backoff` (50 ms doubling
  to 1 s), until the call's bound; then GIVE_UP (exit 75: the committed work is safe, run the same
  command again).
- anything else: FAIL (translated into a kxtx error, see `TxWriter.fail`).

The bound. A long-running job (produce, pipe's driver) waits max(--timeout, `kafkaerrors.FAILOVER_S`) for
every call: a killed broker is fenced after broker.session.timeout.ms, requests to a stalled one
time out after socket.timeout.ms, and only then does librdkafka find the new leader or coordinator;
a few immediate retries would give up before any of that. A task with a deadline (`retry_s=`,
pipe's executors: the job timeout) gives up at its own bound and lets the next round plan it again.

Except the commit. librdkafka's contract: a commit_transaction that raised a retriable error
(typically _TIMED_OUT: the process stalled, or the coordinator did not answer in time) has an
unknown outcome and must be called again until it succeeds or fails for good; aborting then fails
with _CONFLICT while the commit may go through anyway, and a run that reported "aborted" had in
fact committed. So a commit retries for at least the failover limit whatever a task's
bound, never aborts after a retriable error, and if the outcome is still unknown at the end it is
reported as such (`CommitInDoubt`, or exit 75 on the driver): the next init_transactions with the
same transactional id finishes it, and the stable committed offsets say what was committed.

The watchdog. librdkafka's send_offsets_to_transaction waits for its background work without a
bound of its own, and that work can stall forever after the group coordinator moved or its broker
left the metadata (librdkafka issues #5456 and #5511, open in confluent-kafka 2.16.1): with a
single broker stalled (SIGSTOP) a call returns only when the broker comes back, or after
socket.timeout.ms, whatever its own timeout. So that call runs in a thread of its own and is
given up `WATCHDOG_MARGIN_S` after its timeout (`bounded`, `Stuck`). Only that call: the other
transactional calls wait on the application side with their own timeout (init, commit, abort
return a retriable _TIMED_OUT, "retry call to resume", which the retry policy handles) or on local
work that needs no broker (begin), and no report shows one of them outliving its timeout in a
current librdkafka.

Producer settings every transactional writer shares are set here once (`producer_conf`).

No kxtx imports at module level but the dependency-free table: Spark executors get this module
by value (`kxtx.pipe.worker.SHIPPED_WITH`); driver-side translation imports lazily.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from kxtx.client.kafkaerrors import FAILING_OVER, FAILOVER_S, backoff, classify, later

#: librdkafka's retry.backoff.ms is also its wait when the coordinator answers
#: CONCURRENT_TRANSACTIONS because the previous transaction's markers are still being written: with
#: back-to-back transactions every commit or send_offsets_to_transaction then stalls that long, so
#: it is kept small (bench/README.md, "Client settings shared by every command"); `-X` overrides it.
#: partitioner: keyed records land on the partitions the Java client (and Kafka Streams) picks,
#: not on librdkafka's CRC32 default's, so consumers that co-partition by key see them together.
COMMON_DEFAULTS: dict[str, Any] = {"retry.backoff.ms": 10, "partitioner": "murmur2_random"}
#: How much longer than its own timeout a send_offsets_to_transaction may take before the watchdog
#: gives up on the producer (see the module docstring).
WATCHDOG_MARGIN_S = 10.0
#: librdkafka's bugs behind the watchdog, named in its warning and error.
STUCK_ISSUES = "librdkafka issues #5456/#5511"

#: kxtx.log's logger: this module imports no kxtx module at module level (Spark workers get it by
#: value and may not have kxtx installed), so it names the logger instead.
_log = logging.getLogger("kxtx")

INIT, BEGIN, OFFSETS, COMMIT, ABORT = "init", "begin", "offsets", "commit", "abort"
RETRY, ABORT_TXN, FAIL, GIVE_UP, IN_DOUBT = "retry", "abort", "fail", "give up", "in doubt"


def producer_conf(user: Mapping[str, Any], **defaults: Any) -> dict[str, Any]:
    """The shared defaults plus the caller's own, minus whatever the user set (the user's values
    win; the caller passes them to the client separately)."""
    return {k: v for k, v in {**COMMON_DEFAULTS, **defaults}.items() if k not in user}


def decide(op: str, err: Any, now: float, deadline: float) -> str:
    """What to do after transactional call `op` raised `err` (None: not a Kafka error) at `now`,
    retries allowed until `deadline` (monotonic seconds). See the module docstring."""
    if err is None or err.fatal():
        return FAIL
    if err.txn_requires_abort():
        return FAIL if op == ABORT else ABORT_TXN
    if later(err):
        if now < deadline:
            return RETRY
        return IN_DOUBT if op == COMMIT else GIVE_UP
    return FAIL


def call_bound(op: str, retry_s: float, failover_s: float = FAILOVER_S) -> float:
    """How long call `op` retries: a commit never less than a failover takes (see above)."""
    return max(retry_s, failover_s) if op == COMMIT else retry_s


class Abortable(Exception):
    """The open transaction must be aborted; the batch can be redone."""

    def __init__(self, message: str, *errors: Any) -> None:
        super().__init__(message)
        #: caused by a cluster failing over (leader or coordinator moving, brokers down): when the
        #: caller's own retries run out it stops with exit 75 (run again) rather than 1
        self.unavailable = any(e is not None and classify(e) in FAILING_OVER for e in errors)


class CommitInDoubt(Exception):
    """commit_transaction kept failing with retriable errors up to its bound: committed or not is
    unknown (and must not be aborted). Raised by a raw writer (a task); the driver side raises
    `Unavailable` instead."""

    def __init__(self, err: Any) -> None:
        super().__init__(err)
        self.err = err


class Stuck(Exception):
    """A transactional call did not return within its timeout plus `WATCHDOG_MARGIN_S`: the
    producer was abandoned (see `TxWriter.abandon`). Its transaction did not commit and never
    will. Raised by a raw writer (a task); the driver side raises `Unavailable` instead."""


def bounded(fn: Callable, args: tuple, limit: float) -> Any:
    """`fn(*args)`'s result (or exception), or `Stuck` when it has not returned after `limit`
    seconds. The call goes on in a daemon thread that is left behind: a call stuck inside
    librdkafka cannot be interrupted (it waits on a condition variable with the GIL released),
    and it may never return; a daemon thread does not keep the process from exiting."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["result"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="kxtx-txn-watchdog", daemon=True).start()
    if not done.wait(limit):
        raise Stuck(f"no answer after {limit:.0f}s")
    if "error" in box:
        raise box["error"]
    return box.get("result")


class TxWriter:
    """One transactional producer: init, begin, produce, send offsets, commit, abort, end for
    shutdown, close; every call through `decide`.

    `raw`: errors leave as the client's own exceptions (a task reports them to its driver);
    otherwise as kxtx errors through `translate` (default: `clients.translate` with the failover
    watch's reading of a fence). `check(err, doing)` sees each error first (produce stops on
    authorization errors there); `cause()` names a delivery error behind an abortable one.
    """

    def __init__(
        self,
        transactional_id: str,
        timeout: float,
        *,
        retry_s: float | None = None,
        failover_s: float = FAILOVER_S,
        raw: bool = False,
        translate: Callable[[BaseException, str], BaseException] | None = None,
        check: Callable[[Any, str], None] | None = None,
        cause: Callable[[], Any] | None = None,
    ) -> None:
        self.transactional_id, self.timeout = transactional_id, timeout
        self.failover_s = failover_s
        self.retry_s = max(timeout, failover_s) if retry_s is None else retry_s
        self.raw, self._translate, self._check, self._cause = raw, translate, check, cause
        self.producer: Any = None
        self.watch: Any = None
        if not raw:
            from kxtx.client import failover

            self.watch = failover.Watch()
        self._fatal_err: Any = None
        self.open = False
        self.offsets_sent = False
        #: a best-effort abort timed out: librdkafka goes on aborting, and every begin_transaction
        #: fails with _CONFLICT until abort_transaction is called again and returns
        self.abort_unfinished = False

    # --- making the producer ---------------------------------------------------------------------
    def connect(self, settings: Any, defaults: dict | None = None, fixed: dict | None = None) -> TxWriter:
        """Create the producer from kxtx `settings` (driver side): the common and the caller's
        `defaults` where the user set nothing, then the caller's `fixed` settings."""
        from kxtx.client import clients

        conf = {**producer_conf(settings.props, **(defaults or {})), **(fixed or {})}
        conf["transactional.id"] = self.transactional_id
        conf["error_cb"] = self.on_error
        self.producer = clients.producer(settings, **conf)
        return self

    def on_error(self, err: Any) -> None:
        """The producer's error callback: a fatal error's cause, and failover errors for the watch
        (a stalled broker may only show here)."""
        if err.fatal():
            self._fatal_err = err
        elif self.watch is not None:
            self.watch.note(err)

    @property
    def fatal_error(self) -> Any:
        """The fatal error the producer reported (fenced, ...), or None."""
        return self._fatal_err

    # --- the transaction -------------------------------------------------------------------------
    def init(self, doing: str = "initialising transactions") -> None:
        self.call(INIT, doing, self.producer.init_transactions, self.timeout)

    def begin(self) -> None:
        if self.abort_unfinished:
            doing = "finishing the abort of the failed transaction"
            self.call(ABORT, doing, self.producer.abort_transaction, self.timeout)
            self.abort_unfinished = False
        self.call(BEGIN, "beginning a transaction", self.producer.begin_transaction)
        self.open, self.offsets_sent = True, False

    def produce(self, topic: str, value: Any, key: Any, headers: Any = None, on_delivery: Any = None) -> None:
        """One record in the open transaction; a full local queue waits for delivery reports."""
        from confluent_kafka import KafkaException

        produce = self.producer.produce
        while True:
            try:
                # Called once per output record: no keyword dict built unless one is needed.
                if on_delivery is not None:
                    produce(topic, value, key, headers=headers or None, on_delivery=on_delivery)
                elif headers:
                    produce(topic, value, key, headers=headers)
                else:
                    produce(topic, value, key)
                return
            except BufferError:
                self._wait_for_room()
            except KafkaException as exc:
                self.fail(exc, f"producing to {topic}")

    def _wait_for_room(self) -> None:
        """The local queue is full: serve delivery reports for a moment (they free its room)."""
        self.producer.poll(0.05)

    def produce_records(self, records: Iterable[tuple[str, Any, Any, Any]]) -> None:
        """Each (topic, key, value, headers) record in the open transaction, as `produce` does:
        one loop for a batch (pipe's hot path: 0.5-0.7 us a record less than a `produce` call
        each, which imports its exception class and picks its keywords per record)."""
        from confluent_kafka import KafkaException

        produce = self.producer.produce
        for topic, key, value, headers in records:
            try:
                if headers:
                    produce(topic, value, key, headers=headers)
                else:
                    produce(topic, value, key)
            except BufferError:
                self._wait_for_room()
                self.produce(topic, value, key, headers)  # again, until there is room
            except KafkaException as exc:
                self.fail(exc, f"producing to {topic}")

    def send_offsets(self, offsets: list, group_metadata: Any) -> None:
        """send_offsets_to_transaction under the watchdog (see the module docstring)."""
        doing = "sending offsets to the transaction"
        limit = self.timeout + WATCHDOG_MARGIN_S
        send = self.producer.send_offsets_to_transaction
        try:
            self.call(OFFSETS, doing, bounded, send, (offsets, group_metadata, self.timeout), limit)
        except Stuck as exc:
            self.abandon(doing, exc)
        self.offsets_sent = True

    def abandon(self, doing: str, stuck: Stuck) -> NoReturn:
        """A call outlived its watchdog: drop the producer and raise what that means.

        The producer is unusable: every later transactional call fails with "Conflicting ... API
        call already in progress" or hangs too, and close/flush can block as well. So it is never
        called again; its stuck thread and librdkafka handle leak (a few threads and connections)
        until the process exits. Its transaction stays open and can no longer commit: the next
        init_transactions with this transactional id (a new producer's) fences it and aborts
        the transaction, its records and any offsets in it: nothing of it is ever committed, and
        exactly once holds (unless Kafka 4 skips the abort marker of a partition that has no leader
        at that moment, KAFKA-20734: see README "Hanging transactions").

        A task (raw) raises `Stuck`: its round is a retriable failure (planned again) and the
        task drops the producer, so the next round starts a new one. The driver side (pipe
        --mode driver) raises `Unavailable`, exit 75: the process ends and frees the leaked
        handle, and the same command run again starts from the committed offsets. Recreating
        the producer in the process would keep the stuck one's threads and connections for the
        rest of a long run, one more set per failover that hits the bug."""
        self.producer, self.open, self.offsets_sent = None, False, False
        message = (
            f"{doing}: {stuck} (its timeout: {self.timeout:.0f}s; transactional id "
            f"{self.transactional_id!r}; {STUCK_ISSUES}: a coordinator moved or stalled): "
            "abandoned the producer; its transaction is aborted when the next producer with "
            "this transactional id starts"
        )
        if self.raw:
            # A task's Stuck is a retried round: only the executor's log tells it happened. The
            # driver's message below reaches the user once, at the error boundary.
            _log.warning("%s", message)
            raise Stuck(message) from None
        from kxtx.errors import Unavailable

        raise Unavailable(f"{message}; run the same command again to continue") from None

    def commit(self, doing: str = "committing the transaction") -> None:
        self.call(COMMIT, doing, self.producer.commit_transaction, self.timeout)
        self.open = self.offsets_sent = False

    def abort(self, cause: BaseException | None = None) -> None:
        """Abort the open transaction; `cause` is the abortable error that made it necessary."""
        if not self.open:
            return
        self._failed(cause)
        self.call(ABORT, "aborting the transaction", self.producer.abort_transaction, self.timeout)
        self.open = self.offsets_sent = False

    def abort_quietly(
        self, timeout: float | None = None, cause: BaseException | None = None
    ) -> BaseException | None:
        """Best-effort abort (stopping, or after an error `cause`): the error it met, or None. A
        failed abort is harmless: the next init_transactions with this id aborts the transaction."""
        if not self.open or self.producer is None:
            return None
        self.open = self.offsets_sent = False
        self._failed(cause)
        try:
            self.producer.abort_transaction(self.timeout if timeout is None else timeout)
        except Exception as exc:  # noqa: BLE001 - reported to the caller, which decides
            err = exc.args[0] if exc.args else None
            self.abort_unfinished = later(err)
            return exc
        return None

    def _failed(self, cause: BaseException | None) -> None:
        """The open transaction is being aborted because of `cause`. When that is the cluster failing
        over, a fence now or soon is the coordinator having ended the transaction (exit 75, see
        kxtx.client.failover). Any other failure (none, a stop, a broker error such as the EndTxn of an
        instance being taken over) leaves a fence meaning what it says: another instance (exit 1)."""
        if self.watch is not None and getattr(cause, "unavailable", False):
            self.watch.failed_transaction()

    def end_for_shutdown(self) -> str | None:
        """On a signal or error: finish a transaction whose offsets are in (a commit whose outcome
        is unknown, included), abort any other. What happened, for the log."""
        if not self.open or self.producer is None:
            return None
        try:
            if self.offsets_sent:
                self.producer.commit_transaction(self.timeout)
                done = "finished the open transaction before stopping"
            else:
                self.producer.abort_transaction(self.timeout)
                done = "aborted the open transaction before stopping"
        except Exception as exc:  # noqa: BLE001 - e.g. fenced: the broker aborts it for us
            done = f"ending the open transaction: {exc}"
        self.open = self.offsets_sent = False
        return done

    def close(self) -> None:
        self.producer = None

    # --- the retry policy ------------------------------------------------------------------------
    def call(self, op: str, doing: str, fn: Callable, *args: Any) -> Any:
        """`fn(*args)` under the retry policy (`decide`)."""
        from confluent_kafka import KafkaException

        bound = call_bound(op, self.retry_s, self.failover_s)
        deadline = time.monotonic() + bound
        attempt = 0
        while True:
            try:
                return fn(*args)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if self.watch is not None:
                    self.watch.note(err)
                if self._check is not None and err is not None:
                    self._check(err, doing)
                action = decide(op, err, time.monotonic(), deadline)
                if action == RETRY:
                    time.sleep(backoff(attempt))
                    attempt += 1
                    continue
                if self.raw:
                    if action == IN_DOUBT:
                        raise CommitInDoubt(err) from exc
                    raise
                if action in (GIVE_UP, IN_DOUBT):
                    from kxtx.errors import Unavailable

                    outcome = " (the outcome is unknown)" if action == IN_DOUBT else ""
                    raise Unavailable(
                        f"{doing}: still failing after {bound:.0f}s ({err.str() if err else exc}){outcome}; "
                        "run the same command again to continue"
                    ) from None
                self.fail(exc, doing)

    def fail(self, exc: BaseException, doing: str) -> Any:
        """Raise what `exc` (a client exception) means: `Abortable`, or a kxtx error."""
        from confluent_kafka import KafkaError, KafkaException

        if self.raw:
            raise exc
        err = exc.args[0] if exc.args else None
        if self.watch is not None:
            self.watch.note(err)
        if isinstance(err, KafkaError) and err.txn_requires_abort() and not err.fatal():
            why = self._cause() if self._cause is not None else None
            raise Abortable(f"{doing}: {err.str()}" + (f" ({why.str()})" if why else ""), err, why) from None
        if isinstance(err, KafkaError) and err.code() == KafkaError._FATAL:
            # produce() only says "Fatal error"; the cause (e.g. fenced) reaches error_cb.
            if self._fatal_err is None and self.producer is not None:
                try:
                    self.producer.poll(0)
                except KafkaException as served:
                    self._fatal_err = served.args[0] if served.args else None
            if self._fatal_err is not None:
                exc = KafkaException(self._fatal_err)
        if self._translate is not None:
            raise self._translate(exc, doing) from None
        from kxtx.client import clients

        raise self.watch.explain(clients.translate(exc, doing)) from None
