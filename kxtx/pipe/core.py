"""What both modes of `kxtx pipe` do alike; `driver.DriverPipe` (driver mode) and
`executors.ExecutorPipe` (executors mode) add only what differs.

A run: the checks that can fail before a record is read (`prepare`), the group membership
(`_subscribe`, with the exactly-once consumer settings of `consumerconf`), the mode's loop, and on
the way out the summary or, on a stop signal, PipeInterrupted carrying it (`run`); the client,
Spark and the rest are closed whatever happens (`close`).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from kxtx.client import clients
from kxtx.errors import KxtxError, Unavailable, UsageError, carry
from kxtx.log import logger
from kxtx.pipe import preflight
from kxtx.pipe import schemas as pipeschemas
from kxtx.pipe import spark as sparkmod
from kxtx.pipe import udf as udfmod
from kxtx.pipe.runconfig import RunConfig, subscription_conf
from kxtx.pipe.stats import ProgressFn, Stats, Summary, interrupted
from kxtx.pipe.worker import consumerconf
from kxtx.pipe.worker.outputs import UdfFailure
from kxtx.schemas.codecs import REGISTRY_FORMATS
from kxtx.signals import Guard

if TYPE_CHECKING:
    from confluent_kafka import Consumer, TopicPartition

    from kxtx.client.settings import Settings


class UdfFailed(KxtxError):
    """The UDF raised (or returned something unusable) on a record, and --on-udf-error is fail."""


def bytes_hint(value_format: str, text: str) -> str:
    """The common first mistake: a UDF written for dicts or text gets the raw value (both modes).
    Every way Python refuses to treat bytes as a document or text names bytes ("byte indices must
    be integers" for `order["name"]`, "'bytes' object has no attribute 'get'", "can't concat str
    to bytes", "a bytes-like object is required"); a tombstone's None handed on ("... str, bytes
    or bytearray, not NoneType") is another mistake."""
    if value_format == "raw" and _BYTES.search(text) and "NoneType" not in text:
        return " (the UDF got the value as bytes: --value-format json or string decodes it)"
    return ""


_BYTES = re.compile(r"\bbytes?\b")


def udf_failed(name: str, value_format: str, failure: UdfFailure, unit: str, unmoved: str) -> UdfFailed:
    """The error a UDF failure without a DLQ stops the run with. `unit`: what the other failed
    records belonged to (batch, round); `unmoved`: which offsets stayed where they were."""
    f = failure
    more = f" (and {f.count - 1} more records of this {unit})" if f.count > 1 else ""
    if f.partial:  # the UDF stopped at the first failure: the rest of the unit was not run
        more = f" (and {f.count - 1} more of the records of this {unit} it ran on)" if f.count > 1 else ""
    return UdfFailed(
        f"UDF {name} failed on {f.topic}[{f.partition}]@{f.offset}: {f.text}"
        f"{bytes_hint(value_format, f.text)}{more}; the transaction was aborted: nothing of this "
        f"batch was written and {unmoved}--on-udf-error dlq:TOPIC sets such records aside instead)"
    )


def _names(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{p.topic}[{p.partition}]" for p in partitions)


class PipeCore:
    """One run of `kxtx pipe`. A mode implements `_prepare_mode`, `_loop` and `_lag`, and may
    extend the hooks (`_consumer_conf`, `_assigned`, `_revoked`, `_end_open_work`, `_close_mode`)."""

    #: for the UDF-failure message (see `udf_failed`)
    UNIT = "batch"
    UNMOVED = "the group's offsets did not move ("

    def __init__(
        self,
        settings: Settings,
        cfg: RunConfig,
        progress: ProgressFn | None = None,
        session: Any = None,  # a SparkSession (pyspark is imported lazily)
        signals: Guard | None = None,
    ) -> None:
        self.settings, self.cfg, self.progress = settings, cfg, progress
        self.session, self._own_session = session, session is None
        # The caller's guard if it holds one already (the CLI's, from its first line), so a
        # signal before run() is acted on like any other.
        self.signals = signals or Guard()
        self.stats = Stats()
        #: the group member (a confluent-kafka Consumer), from _subscribe on
        self.consumer: Any = None
        #: the UDF, from prepare() on
        self.loaded: udfmod.LoadedUdf
        #: the input partitions the group gave this instance
        self._assignment: set[tuple[str, int]] = set()
        #: since when the group took partitions away (revoked or lost: a rebalance, its
        #: coordinator down or moving) without assigning again, or None
        self._lost_since: float | None = None
        self._last_data = 0.0
        self._next_progress = 0.0
        #: records per transaction (driver) or per partition and round (executors); lowered when
        #: one nears max.poll.interval.ms (rounds.pace)
        self._limit = cfg.batch_max_records
        #: the schema registry reader of the input and encoder of the output (kxtx.pipe.schemas)
        self.reader: Any = None
        self.encoder: Any = None

    # --- the run ---------------------------------------------------------------------------------
    def run(self) -> Summary:
        """Run until a stop condition; return the summary. SIGINT, SIGTERM and SIGHUP are noted
        and acted on between steps (see kxtx.signals): open work is ended, Spark
        stopped, and PipeInterrupted raised with the summary."""
        with self.signals:
            try:
                self.signals.check()
                self.prepare()
                self.signals.check()
                self._subscribe()
                self._loop()
                return self.stats.summary(self.cfg)
            except BaseException as exc:
                self._end_open_work()
                stop = interrupted(exc, self.stats, self.cfg)
                if stop is None:
                    if self.consumer is not None:  # it consumed: what it did, with the error
                        carry(exc, self.stats.summary(self.cfg))
                    raise
                raise stop from None
            finally:
                self.close()

    def prepare(self) -> None:
        """Everything that can fail before a record is consumed, the fastest to fail first: the
        UDF (a local import: a typo is reported in milliseconds, before any network round trip or
        connection timeout), then the cluster and the topics (kxtx.pipe.preflight), then the
        registry's schemas and Spark, then what the mode needs. Spark's JVM is launched while the
        schemas are looked up (the lookup's time hides in the launch's); when that lookup fails,
        its error is the run's, reported once the launch is over, and the JVM is ended unused."""
        target = udfmod.locate(self.cfg.udf)
        sparkmod.require_pyspark()
        mode = "record" if self.cfg.record_input else "value"
        loaded = None
        try:
            loaded = udfmod.load(target, mode)
        except KxtxError as exc:  # load reports every failure of user code as a UsageError
            if not sparkmod.needs_session(exc):
                raise
        preflight.check(self.settings, self.cfg.inputs, self.cfg.output_topics())
        self.signals.check()
        starting = None
        if self.session is None:
            starting = sparkmod.begin(self.cfg.master, self.cfg.spark_conf, self.cfg.debug, self.cfg.spark_ui)
        try:
            # before the Spark context: a registry or schema problem waits for the JVM's launch
            # only, not for the whole of Spark's start
            self._schemas(loaded)
            self.signals.check()
        except BaseException:
            if starting is not None:
                starting.abandon()
            raise
        if starting is not None:
            self.session = starting.session()
        if loaded is None:  # e.g. @udf("string") parses its type with a live SparkContext
            loaded = udfmod.load(target, mode)
            if self.encoder is None:
                self._schemas(loaded)
        sparkmod.ship(self.session, loaded.source, loaded.module)
        self.loaded = loaded
        self.signals.check()
        self._prepare_mode(loaded)
        self.signals.check()

    def _schemas(self, loaded: udfmod.LoadedUdf | None) -> None:
        """The registry reader and encoder (kxtx.pipe.schemas), when the run uses a registry: its
        --value-format, --out-schema, or an output schema the UDF declares (`fn.out_schema`)."""
        declared = pipeschemas.declared(loaded) if loaded is not None else None
        if self.cfg.register and not (self.cfg.out_schema or declared) and loaded is not None:
            raise UsageError("--register needs --out-schema FILE (or a UDF that declares out_schema)")
        if self.cfg.value_format in REGISTRY_FORMATS or self.cfg.out_schema or declared:
            self.reader, self.encoder = pipeschemas.serdes(self.cfg, self.settings, declared)

    def _prepare_mode(self, loaded: udfmod.LoadedUdf) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        raise NotImplementedError

    def udf_failed(self, failure: UdfFailure) -> UdfFailed:
        return udf_failed(self.loaded.name, self.cfg.value_format, failure, self.UNIT, self.UNMOVED)

    # --- group membership ------------------------------------------------------------------------
    def _subscribe(self) -> None:
        conf = {
            **consumerconf.exactly_once(self.cfg.group, self.cfg.start),
            **self._consumer_conf(),
            **subscription_conf(self.settings.props, self.cfg.inputs),
        }
        self.consumer = clients.consumer(self.settings, **conf)
        self.consumer.subscribe(
            self.cfg.inputs, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def _consumer_conf(self) -> dict:
        """The mode's own consumer settings (the exactly-once ones come first and stay)."""
        return {}

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._lost_since = None
        self._assignment |= {(p.topic, p.partition) for p in partitions}
        self._assigned(consumer, partitions)
        self._last_data = time.monotonic()  # the idle clock starts with the first assignment
        logger.info("assigned %s", _names(partitions))

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """The membership was lost (e.g. the group coordinator died): as a revocation."""
        self._on_revoke(consumer, partitions)

    def lost(self) -> bool:
        """Whether the group took partitions away and has not assigned again (a rebalance, or
        the group's coordinator down or moving: the new one may take long to load the group):
        until it assigns (maybe nothing), the run is not idle. For longer than a transactional
        call waits out a failover (KXTX_FAILOVER_TIMEOUT): exit 75."""
        if self._lost_since is None:
            return False
        bound = self.settings.failover
        if time.monotonic() - self._lost_since > bound:
            raise Unavailable(
                f"the consumer group {self.cfg.group!r} stayed unavailable for {bound:.0f} s "
                "(its coordinator down or moving); run the same command again to continue"
            )
        return True

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:  # noqa: ARG002 - librdkafka's callback signature
        if self._lost_since is None:
            self._lost_since = time.monotonic()
        self._assignment -= {(p.topic, p.partition) for p in partitions}
        self._revoked(partitions)
        logger.info("revoked %s", _names(partitions))

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """The mode's part of an assignment (called inside the consumer's poll)."""

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        """The mode's part of a revocation or loss (called inside the consumer's poll)."""

    # --- progress and shutdown -------------------------------------------------------------------
    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.progress is None or (now < self._next_progress and not force):
            return
        self._next_progress = now + 1.0
        self.progress(self.stats.progress(self._lag()))

    def _lag(self) -> int | None:
        """Records left to read in this instance's partitions (None: not known)."""
        raise NotImplementedError

    def _end_open_work(self) -> None:
        """On an error or a stop: what the mode must finish or abort before closing."""

    def close(self) -> None:
        if self.consumer is not None:
            try:
                self.consumer.close()
            except Exception as exc:  # noqa: BLE001 - closing anyway
                logger.info("closing the consumer: %s", exc)
            self.consumer = None
        self._close_mode()
        if self._own_session and self.session is not None:
            sparkmod.stop(self.session)
            self.session = None

    def _close_mode(self) -> None:
        """The mode's own clients (closed after the consumer, before Spark stops)."""
