"""kxtx's admin façade, `Cluster`: the Kafka calls every command reads the cluster through, returning
`kxtx.client.model` values.

KIP-664 calls go through kafka-python's KafkaAdminClient (librdkafka has none of them); metadata,
offsets and consumer groups through confluent-kafka. Clients are created on first use and closed by
`close()` (use `with Cluster(settings) as c:`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from kxtx.client import kafka_internals
from kxtx.client.authz import Need
from kxtx.client.clients import admin, error_name, ride_out, translate, txn_admin, unreachable
from kxtx.client.model import NOT_FOUND, TP, CoordinatorTxn, Offsets, OpenTxn
from kxtx.client.settings import Settings
from kxtx.errors import KafkaOperationError, NoSuchTopic, Unavailable, Unreachable
from kxtx.log import logger

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

#: Kafka's find-hanging sends DescribeProducers for at most this many partitions at once.
BATCH = 500

#: progress(done, total), called as a long series of calls advances.
Progress = Callable[[int, int], None]


class Cluster:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._admin: AdminClient | None = None
        self._txn: KafkaAdminClient | None = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ride_out(self, call: Callable[[], KafkaAdminClient], doing: str) -> KafkaAdminClient:
        """A kafka-python admin call, asked again while the cluster moves (`clients.ride_out`),
        each time with a new client: it caches coordinators and leaders that may have moved."""
        return ride_out(call, doing, self.settings.timeout, renew=self.close)

    def close(self) -> None:
        if self._txn is not None:
            try:
                self._txn.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
            self._txn = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = admin(self.settings)
        return self._admin

    @property
    def txn(self) -> KafkaAdminClient:
        if self._txn is None:
            self._txn = txn_admin(self.settings)
        return self._txn

    # --- metadata ----------------------------------------------------------------------------------
    def topics(self, topic: str | None = None) -> dict[str, dict[int, tuple[int, list[int]]]]:
        """{topic: {partition: (leader, [replicas])}}, internal topics included."""
        wait = self.settings.timeout
        md = ride_out(lambda: self.admin.list_topics(topic=topic, timeout=wait), "reading metadata", wait)
        out: dict[str, dict[int, tuple[int, list[int]]]] = {}
        for name, t in md.topics.items():
            if t.error is not None:
                if topic is not None and t.error.name() == "UNKNOWN_TOPIC_OR_PART":
                    raise NoSuchTopic(topic)
                if topic is not None:
                    raise KafkaOperationError(f"topic {name!r}: {t.error.str()}")
                logger.warning(f"topic {name!r} skipped: {t.error.str()}")
                continue
            out[name] = {p.id: (p.leader, list(p.replicas)) for p in t.partitions.values()}
        return out

    def leaders(self, tps: Collection[TP]) -> dict[TP, int]:
        """{partition: leader broker id} from fresh metadata; -1 while a partition has no leader."""
        out: dict[TP, int] = {}
        for topic in sorted({t for t, _p in tps}):
            try:
                parts = self.topics(topic).get(topic, {})
            except (KafkaOperationError, NoSuchTopic) as exc:  # deleted since
                logger.warning(f"no leader for {topic!r}: {exc}")
                continue
            out.update({(topic, p): leader for p, (leader, _r) in parts.items() if (topic, p) in tps})
        return out

    def broker_ids(self) -> list[int]:
        """The brokers in fresh metadata; Unavailable (exit 75) when the answer lists none."""
        t = self.settings.timeout
        ids = sorted(ride_out(lambda: self.admin.list_topics(timeout=t), "reading metadata", t).brokers)
        if not ids:
            # librdkafka answers with no broker after a broker stalled (SIGSTOP) until it has
            # reconnected: an empty list, which callers indexed ("list index out of range")
            raise Unavailable(
                "reading metadata: the answer lists no broker (a broker stalled or restarting?)"
            )
        return ids

    # --- DescribeProducers ---------------------------------------------------------------------------
    def describe_producers(
        self, tps: list[TP], broker_id: int | None = None, progress: Progress | None = None
    ) -> tuple[dict[TP, list[OpenTxn]], dict[TP, str]]:
        """Producer state per partition, in batches; a failing batch is retried partition by partition
        so one bad partition costs only itself. Returns (states, errors)."""
        states: dict[TP, list[OpenTxn]] = {}
        errors: dict[TP, str] = {}
        for i in range(0, len(tps), BATCH):
            batch = tps[i : i + BATCH]
            try:
                states.update(self._describe_producers(batch, broker_id))
            except Unreachable:
                raise  # the cluster, not a partition: nothing to isolate
            except Exception as exc:  # noqa: BLE001 - isolated below
                if len(batch) == 1:
                    errors[batch[0]] = _reason(exc)
                else:
                    for tp in batch:
                        try:  # the batch waited out a moving cluster already: once each
                            states.update(self._describe_producers([tp], broker_id, patient=False))
                        except Exception as exc1:  # noqa: BLE001
                            errors[tp] = _reason(exc1)
            if progress:
                progress(min(i + BATCH, len(tps)), len(tps))
        return states, errors

    def _describe_producers(
        self, tps: list[TP], broker_id: int | None, patient: bool = True
    ) -> dict[TP, list[OpenTxn]]:
        from kafka.structs import TopicPartition

        def ask() -> Any:  # kafka-python's results are untyped
            return self.txn.describe_producers([TopicPartition(t, p) for t, p in tps], broker_id=broker_id)

        # Asked of one broker (abort-hanging's re-check), a leader that moved stays moved: the
        # caller says so. Asked of the leaders, a moving one is waited for.
        res = self._ride_out(ask, "DescribeProducers") if broker_id is None and patient else ask()
        return {
            (tp.topic, tp.partition): [
                OpenTxn(
                    tp.topic,
                    tp.partition,
                    s.producer_id,
                    s.producer_epoch,
                    s.coordinator_epoch,
                    s.last_timestamp,
                    s.current_transaction_start_offset,
                    s.last_sequence,
                )
                for s in st.active_producers
            ]
            for tp, st in res.items()
        }

    # --- transactional ids ---------------------------------------------------------------------------
    def ids_for_producers(self, pids: set[int]) -> dict[int, tuple[str, str]]:
        """ListTransactions filtered by producer id on every broker: {pid: (txn id, state)}.

        Listings for producer ids we did not ask for are ignored (as Kafka does)."""
        if not pids:
            return {}
        out: dict[int, tuple[str, str]] = {}
        for tid, pid, state in self._listings(producer_id_filters=sorted(pids)):
            if pid in pids:
                out[pid] = (tid, state)
        return out

    def transactions(self) -> dict[str, tuple[int, str]]:
        """ListTransactions on every broker, unfiltered: {transactional id: (producer id, state)}
        for every id the coordinators hold (not Dead ones: they are gone)."""
        return {tid: (pid, state) for tid, pid, state in self._listings()}

    def _listings(self, **filters: Any) -> list[tuple[str, int, str]]:
        by_broker = self._ride_out(lambda: self.txn.list_transactions(**filters), "ListTransactions")
        return [
            (t.transactional_id, t.producer_id, _state(t.state))
            for listings in by_broker.values()
            for t in listings
        ]

    def list_txn_ids(self, id_pattern: str | None = None) -> list[str] | None:
        """ListTransactions on every broker: the transactional ids their coordinators hold, in any
        state but Dead. `id_pattern`: KIP-1152's filter, a Java (RE2/J) regular expression the whole
        id must match, which needs ListTransactions v2 (Kafka 4.1+): None when a broker lacks it."""
        try:
            by_broker = self.txn.list_transactions(transactional_id_pattern=id_pattern)
        except Exception as exc:
            # kafka-python refuses the pattern itself (UnsupportedVersionError) rather than send
            # a version that would drop it: the caller then lists everything and filters.
            if id_pattern is not None and error_name(exc) == "UNSUPPORTED_VERSION":
                return None
            raise translate(exc, "ListTransactions") from exc
        return sorted({t.transactional_id for listings in by_broker.values() for t in listings})

    def describe_txns(self, ids: list[str]) -> dict[str, CoordinatorTxn | str]:
        """DescribeTransactions: {id: CoordinatorTxn or NOT_FOUND}. Other errors raise (as Kafka)."""
        ids = sorted(set(ids))
        if not ids:
            return {}
        doing = f"DescribeTransactions {', '.join(ids)}"
        try:
            # a coordinator that moved or is still loading (right after a broker start) is waited for
            return self._ride_out(lambda: self._describe_txns(ids), doing)
        except KafkaOperationError as exc:
            if error_name(exc.__cause__ or exc) != "TRANSACTIONAL_ID_NOT_FOUND":
                raise
            if len(ids) == 1:
                return {ids[0]: NOT_FOUND}
        out: dict[str, CoordinatorTxn | str] = {}
        for one in ids:
            out.update(self.describe_txns([one]))
        return out

    def _describe_txns(self, ids: list[str]) -> dict[str, CoordinatorTxn | str]:
        res = self.txn.describe_transactions(ids)
        return {
            tid: CoordinatorTxn(
                tid,
                d.coordinator_id,
                _state(d.state),
                d.producer_id,
                d.producer_epoch,
                d.transaction_timeout_ms,
                d.transaction_start_time_ms,
                frozenset((tp.topic, tp.partition) for tp in d.topic_partitions),
            )
            for tid, d in res.items()
        }

    def max_txn_timeout_ms(self) -> int | None:
        """The broker's `transaction.max.timeout.ms` (DescribeConfigs), or None when not allowed."""
        from kafka.admin import ConfigResource, ConfigResourceType

        key = "transaction.max.timeout.ms"
        # Outside the try: an unreachable cluster is the command's error, not a reason to fall back
        # to a default and then wait for the same timeout again (find-hanging took twice --timeout).
        broker = self.broker_ids()[0]
        try:
            res = self.txn.describe_configs(
                [ConfigResource(ConfigResourceType.BROKER, str(broker), [key])], config_filter="all"
            )
            return int(res["broker"][str(broker)][key]["value"])
        except Exception as exc:  # noqa: BLE001 - a default applies; say why
            logger.debug(f"cannot read {key}: {_reason(exc)}")
            return None

    def cluster_operations(self) -> set[str] | None:
        """Operations the principal may perform on the Cluster, or None when unknown."""
        try:
            res = self.admin.describe_cluster(
                include_authorized_operations=True, request_timeout=self.settings.timeout
            )
            ops = res.result(timeout=self.settings.timeout).authorized_operations
        except Exception as exc:
            if unreachable(exc):  # the next call would wait for the same timeout again
                raise translate(exc, "DescribeCluster") from exc
            logger.debug(f"DescribeCluster failed: {_reason(exc)}")
            return None
        # The request succeeded: no list means the broker granted no operation (bitfield 0).
        return set() if ops is None else {o.name for o in ops}

    # --- offsets and groups --------------------------------------------------------------------------
    def offsets(self, tps: list[TP]) -> dict[TP, Offsets]:
        """LSO (read_committed end offset) and high watermark (read_uncommitted) per partition."""
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        out = {tp: Offsets() for tp in tps}
        if not tps:
            return out
        # both isolation levels asked before either answer is awaited: the requests go out together
        asked = [
            (
                attr,
                self.admin.list_offsets(
                    {TopicPartition(t, p): OffsetSpec.latest() for t, p in tps},
                    isolation_level=level,
                    request_timeout=self.settings.timeout,
                ),
            )
            for level, attr in (
                (IsolationLevel.READ_COMMITTED, "lso"),
                (IsolationLevel.READ_UNCOMMITTED, "high_watermark"),
            )
        ]
        for attr, futs in asked:
            for ctp, fut in futs.items():
                try:
                    offset = _offset(fut.result(timeout=self.settings.timeout).offset)
                    setattr(out[(ctp.topic, ctp.partition)], attr, offset)
                except Exception as exc:  # noqa: BLE001 - one partition; keep the others
                    why = _reason(exc, "ListOffsets")
                    logger.warning(f"ListOffsets {ctp.topic}:{ctp.partition}: {why}")
                    # the value stays None: unread, never a 0 (the callers say what is missing)
                    out[(ctp.topic, ctp.partition)].why = why
        return out

    def offsets_for_times(self, times: dict[TP, int]) -> dict[TP, int]:
        """The first offset written at or after each time (ListOffsets by timestamp); -1 where
        nothing is, and a partition that did not answer is left out (with a warning)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if not times:
            return {}
        t = self.settings.timeout
        futs = self.admin.list_offsets(
            {TopicPartition(*tp): OffsetSpec.for_timestamp(ms) for tp, ms in times.items()}, request_timeout=t
        )
        out: dict[TP, int] = {}
        for ctp, fut in futs.items():
            try:
                out[(ctp.topic, ctp.partition)] = fut.result(timeout=t).offset
            except Exception as exc:  # noqa: BLE001 - the caller reads such a partition from its start
                logger.warning(
                    f"ListOffsets by time {ctp.topic}:{ctp.partition}: {_reason(exc, 'ListOffsets')}"
                )
        return out

    def log_starts(self, tps: list[TP]) -> dict[TP, int]:
        """Each partition's log start offset (ListOffsets earliest), in one request per leader;
        a partition that did not answer is left out."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if not tps:
            return {}
        t = self.settings.timeout
        futs = self.admin.list_offsets(
            {TopicPartition(*tp): OffsetSpec.earliest() for tp in tps}, request_timeout=t
        )
        out: dict[TP, int] = {}
        for ctp, fut in futs.items():
            try:
                out[(ctp.topic, ctp.partition)] = _offset(fut.result(timeout=t).offset)
            except Exception as exc:  # noqa: BLE001 - the reader asks for this one itself
                logger.info(
                    f"ListOffsets earliest {ctp.topic}:{ctp.partition}: {_reason(exc, 'ListOffsets')}"
                )
        return out

    def committed(self, tps: list[TP], groups: list[str] | None = None) -> dict[TP, dict[str, int]]:
        """{partition: {group: committed offset}} over every consumer group that committed there
        (or over `groups` only)."""
        out: dict[TP, dict[str, int]] = {tp: {} for tp in tps}
        if not tps:
            return out
        if groups is None:
            try:
                groups = self.group_ids()
            except Exception as exc:  # noqa: BLE001 - groups are extra evidence, not the verdict
                logger.warning(f"cannot list consumer groups (blocked groups not shown): {_reason(exc)}")
                return out
        by_group, failed = self.group_offsets(groups, tps)
        for gid, why in failed.items():
            logger.warning(f"group {gid!r}: cannot read committed offsets: {why}")
        for gid, offsets in by_group.items():
            for tp, offset in offsets.items():
                out.setdefault(tp, {})[gid] = offset
        return out

    def group_ids(self) -> list[str]:
        """Every consumer group the principal may DESCRIBE (raises what the client raised)."""
        return self.group_listing()[0]

    def group_listing(self) -> tuple[list[str], list[str]]:
        """(every consumer group the principal may DESCRIBE, why each broker that did not answer
        ListGroups did not: the groups it coordinates are missing from the list). Raises when the
        cluster's brokers cannot be listed.

        kafka-python's admin client, not librdkafka's: librdkafka aborts the process when a group
        request times out (`rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0`,
        librdkafka issue 4605, still in 2.16): a frozen broker would kill `monitor serve`."""
        ids: set[str] = set()
        errors: list[str] = []
        for broker in self.broker_ids():
            try:
                ids.update(g["group_id"] for g in self.txn.list_groups(broker_ids=[broker]))
            except Exception as exc:  # noqa: BLE001 - one broker; its groups are the unseen part
                errors.append(f"broker {broker}: {_reason(exc, 'ListGroups')}")
        return sorted(ids), errors

    def group_offsets(
        self, groups: list[str], tps: list[TP] | None = None
    ) -> tuple[dict[str, dict[TP, int]], dict[str, str]]:
        """({group: {partition: committed offset}}, {group: why it could not be read}) over `tps`,
        or over every partition the group committed when None. A partition-level error fails its
        group (kafka-python raises it): a group is read whole or not at all. kafka-python for the
        reason given in `group_listing`."""
        from kafka.structs import TopicPartition

        wanted = None if tps is None else [TopicPartition(t, p) for t, p in tps]
        if not groups:
            return {}, {}
        try:  # one OffsetFetch per coordinator for every group (KIP-709)
            res = self.txn.list_group_offsets(dict.fromkeys(groups, wanted))
        except Exception as exc:  # noqa: BLE001 - which group? asked one by one below
            if unreachable(exc) or len(groups) == 1:
                # a broker that does not answer would cost every group its timeout again
                return {}, dict.fromkeys(groups, _reason(exc, "OffsetFetch"))
            res = {}
            failed: dict[str, str] = {}
            for g in groups:
                try:
                    res.update(self.txn.list_group_offsets({g: wanted}))
                except Exception as exc1:  # noqa: BLE001 - one group; keep the others
                    failed[g] = _reason(exc1, "OffsetFetch")
            return _committed_offsets(res), failed
        return _committed_offsets(res), {}

    # --- writes --------------------------------------------------------------------------------------
    def write_marker(
        self, tp: TP, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool = False
    ) -> None:
        """WriteTxnMarkers to the partition leader: ABORT, or COMMIT with `commit` (raises translated
        errors). The request Admin.abortTransaction sends; brokers take `transaction_result=true`
        from a client too (what writes a COMMIT marker the coordinator lost). kafka-python's
        abort_transaction can only abort, so the request is sent through its connection manager."""
        from kafka.protocol.producer.transaction import WriteTxnMarkersRequest
        from kafka.structs import TopicPartition

        marker_cls = WriteTxnMarkersRequest.WritableTxnMarker
        request = WriteTxnMarkersRequest(
            markers=[
                marker_cls(
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    transaction_result=commit,
                    topics=[marker_cls.WritableTxnMarkerTopic(name=tp[0], partition_indexes=[tp[1]])],
                    coordinator_epoch=coordinator_epoch,
                )
            ]
        )
        admin = self.txn

        async def send() -> Any:
            leaders = await kafka_internals.leaders(admin, [TopicPartition(*tp)])
            return await kafka_internals.send(admin, request, next(iter(leaders)))

        doing = f"WriteTxnMarkers {'COMMIT' if commit else 'ABORT'} on {tp[0]}:{tp[1]}"
        try:
            response = kafka_internals.run(admin, send)
            _raise_marker_errors(response)
        except Exception as exc:
            raise translate(exc, doing, need=Need("ALTER", "Cluster")) from exc


def _raise_marker_errors(response: Any) -> None:  # a kafka-python WriteTxnMarkersResponse
    import kafka.errors as errors

    for result in response.markers:
        for topic in result.topics:
            for partition in topic.partitions:
                if partition.error_code:
                    raise errors.for_code(partition.error_code)()


def _committed_offsets(res: dict) -> dict[str, dict[TP, int]]:
    """kafka-python's {group: {TopicPartition: OffsetAndMetadata}}, without "no offset" (-1)."""
    return {
        g: {(tp.topic, tp.partition): o.offset for tp, o in offs.items() if o.offset >= 0}
        for g, offs in res.items()
    }


def _offset(offset: int) -> int:
    """A ListOffsets answer's offset; a request that timed out resolves with -1001 (librdkafka's
    OFFSET_INVALID) instead of an error: that is no offset (taken as one, a lag became 0)."""
    if offset < 0:
        raise KafkaOperationError(f"no offset in the answer ({offset}: the request timed out or failed)")
    return offset


def _state(s: object) -> str:
    return getattr(s, "value", None) or str(s)


def _reason(exc: BaseException, doing: str = "DescribeProducers") -> str:
    name = error_name(exc)
    text = str(translate(exc, doing))
    return f"{name}: {text}" if name and name not in text else text
