"""Reading `__consumer_offsets` with transaction markers, to mark pending and aborted offset commits.

librdkafka never hands control records to applications and confluent-kafka exposes no producer id per
record, so it cannot say which offset commit belongs to which transaction. This reader sends Fetch
requests itself (kafka-python's protocol classes and connection manager, read_uncommitted) and reads
the raw record batches: each transactional batch carries its producer id, and the COMMIT / ABORT
control batch of that producer id later in the same partition decides its fate (spec sections 4.7, 7,
8). Records are held back from the first undecided transactional record on, so rows stay in offset
order; what is still undecided at the end bound is `pending` (memory grows with the span of open
transactions, as the broker's last stable offset does).

Sends its requests through kafka-python's internals, by way of `kxtx.client.kafka_internals`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kxtx.client import clients, kafka_internals
from kxtx.client.kafkaerrors import LEADER_MOVED
from kxtx.client.settings import Settings
from kxtx.dump.source import RawRecord, Start
from kxtx.errors import KafkaOperationError, Unavailable
from kxtx.log import logger
from kxtx.wording import partitions as _partitions

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

COMMITTED, ABORTED, PENDING = "committed", "aborted", "pending"
_FETCH_VERSION = 12  # the last Fetch version that names topics (13+ use topic ids); brokers 2.7+
_NONE = object()


class _Partition:
    """Per-partition hold-back queue and open transactions (producer id -> records awaiting a marker)."""

    def __init__(self) -> None:
        self.queue: deque[list] = deque()  # [p, o, ts, key, value, status-or-None(undecided)]
        self.open: dict[int, list[list]] = {}

    def add(self, row: list, producer_id: int | None) -> None:
        if producer_id is not None:
            self.open.setdefault(producer_id, []).append(row)
        self.queue.append(row)

    def decide(self, producer_id: int, status: str) -> None:
        for row in self.open.pop(producer_id, ()):
            row[5] = status

    def ready(self, flush: bool) -> Iterator[RawRecord]:
        q = self.queue
        while q and (q[0][5] is not _NONE or flush):
            row = q.popleft()
            if row[5] is _NONE:
                row[5] = PENDING
            yield tuple(row)


class RawFetchSource:
    def __init__(self, settings: Settings, topic: str, admin: KafkaAdminClient | None = None) -> None:
        """`admin`: a kafka-python admin client to borrow (`kxtx monitor` reads several topics with
        the one its Cluster holds); `close()` leaves a borrowed one open."""
        self.settings, self.topic = settings, topic
        self._owned = admin is None
        self.admin = clients.txn_admin(settings) if admin is None else admin

    # kafka-python's admin manager runs the coroutine and returns its result, whose type varies
    def _run(self, coro_fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return kafka_internals.run(self.admin, coro_fn, *args)
        except Exception as exc:
            raise clients.translate(exc, f"fetching {self.topic}") from exc

    def _leaders(self, partitions: list[int]) -> dict[int, int]:
        from kafka import TopicPartition

        tps = [TopicPartition(self.topic, p) for p in partitions]
        by_leader = self._run(kafka_internals.leaders, self.admin, tps)
        return {tp.partition: leader for leader, group in by_leader.items() for tp in group}

    def leaders_or_none(self, partitions: list[int]) -> dict[int, int]:
        """Each partition's leader (as `_leaders`), but while the cluster is electing: no answer means "ask again later"."""
        try:
            return self._leaders(partitions)
        except KafkaOperationError as exc:
            logger.info(f"looking up the leaders of {self.topic}: {exc}")
            return {}

    def log_starts(self, partitions: list[int]) -> dict[int, int]:
        """Each partition's log start, asked of its leader. A new consumer per attempt: one that
        asked a broker that just died keeps asking it (measured), a new one reads fresh metadata."""
        deadline = time.monotonic() + 3 * self.settings.timeout
        while True:
            try:
                return self._log_starts_once(partitions, min(10.0, self.settings.timeout))
            except KafkaOperationError as exc:
                if time.monotonic() >= deadline:
                    # asked for three --timeouts while leaders could move: a partition without one
                    raise Unavailable(f"{exc} (for {3 * self.settings.timeout:g}s: a broker down?)") from exc
                logger.info(f"{exc}; asking again (a leader may be moving)")

    def _log_starts_once(self, partitions: list[int], timeout: float) -> dict[int, int]:
        from confluent_kafka import TopicPartition

        c = clients.consumer(
            self.settings, **{"group.id": "kxtx-dump-log-start", "isolation.level": "read_uncommitted"}
        )
        try:
            return {
                p: c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=timeout, cached=False)[0]
                for p in partitions
            }
        except Exception as exc:
            raise clients.translate(exc, f"reading the log start offsets of {self.topic}") from exc
        finally:
            c.close()

    def fetch(self, leader: int, offsets: dict[int, int], max_bytes: int = 52428800) -> Any:
        """One read_uncommitted Fetch to broker `leader` for these partitions from these offsets
        (raw record batches, control batches and aborted-transaction lists included): the response."""
        from kafka.protocol.consumer import FetchRequest

        topic_cls = FetchRequest.FetchTopic
        part_cls = topic_cls.FetchPartition
        request = FetchRequest[_FETCH_VERSION](
            replica_id=-1,
            max_wait_ms=200,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            forgotten_topics_data=[],
            rack_id="",
            topics=[
                topic_cls(
                    topic=self.topic,
                    partitions=[
                        part_cls(
                            partition=p,
                            current_leader_epoch=-1,
                            fetch_offset=o,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=8388608,
                        )
                        for p, o in offsets.items()
                    ],
                )
            ],
        )

        async def send(req: Any) -> Any:  # kafka-python's request and response objects
            return await kafka_internals.send(self.admin, req, leader)

        return self._run(send, request)

    # One fetch loop whose steps share its state (offsets, ends, leaders, stale partitions) and
    # yield as they go: split, each step would take and return all of it.
    def batches(self, partitions: list[int], start: Start, follow: bool) -> Iterator[list[RawRecord]]:  # noqa: C901
        """Records in batches: what one partition of one Fetch response released."""
        if start.kind == "time" or follow:
            from kxtx.errors import UsageError

            raise UsageError(
                "marking pending/aborted offset commits reads from an offset: use "
                "--from-beginning or --from-offset, without --follow"
            )
        # The leaders can be moving now (a broker just died): what is not known yet is asked again.
        leaders = self.leaders_or_none(partitions)
        # Fetching below the log start (compaction, retention) is OFFSET_OUT_OF_RANGE: start at it.
        low = self.log_starts(partitions)
        first = start.value if start.kind == "offset" and start.value is not None else 0
        offsets = {p: max(low[p], first) for p in partitions}
        ends: dict[int, int] = {}
        state = {p: _Partition() for p in partitions}
        last_progress = time.monotonic()
        while offsets:
            by_leader: dict[int, dict[int, int]] = {}
            progressed, stale = False, {p for p in offsets if leaders.get(p, -1) < 0}
            for p, o in offsets.items():
                if p not in stale:
                    by_leader.setdefault(leaders[p], {})[p] = o
            for leader, wanted in by_leader.items():
                try:
                    resp = self.fetch(leader, wanted)
                except KafkaOperationError as exc:  # e.g. that broker is down: ask who leads now
                    logger.info(f"fetching {self.topic} from broker {leader}: {exc}")
                    stale.update(wanted)
                    continue
                for t in resp.responses:
                    for part in t.partitions:
                        p = part.partition_index
                        if part.error_code in LEADER_MOVED:  # its leader is looked up again
                            stale.add(p)
                            continue
                        if part.error_code:
                            raise KafkaOperationError(
                                f"fetching {self.topic}[{p}]: broker error code {part.error_code}"
                            )
                        ends.setdefault(p, part.high_watermark)  # the end that existed at start
                        before = offsets[p]
                        offsets[p] = max(before, part.log_start_offset)
                        released = list(self._batches(p, part.records, offsets, ends[p], state[p]))
                        progressed |= offsets[p] != before
                        if offsets[p] >= ends[p]:
                            del offsets[p]
                            released.extend(state[p].ready(flush=True))
                        if released:
                            yield released
            if stale:
                # The leader moved (or its broker is down): read on from whichever broker leads now.
                time.sleep(0.2)
                leaders.update(self.leaders_or_none(sorted(stale)))
            if progressed:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > self.settings.timeout:
                raise KafkaOperationError(
                    f"fetching {self.topic}: no progress on {_partitions(offsets)} for "
                    f"{self.settings.timeout:g}s"
                )

    def _batches(self, p: int, raw: bytes | None, offsets: dict, end: int, st: _Partition) -> Iterator[tuple]:
        from kafka.record import MemoryRecords

        if not raw:
            return
        records = MemoryRecords(raw)
        batch = records.next_batch()
        while batch is not None:
            if batch.base_offset >= end:
                offsets[p] = end
                break
            control = getattr(batch, "is_control_batch", False)
            pid = batch.producer_id if getattr(batch, "is_transactional", False) else None
            for r in batch:
                if r.offset < offsets[p] or r.offset >= end:
                    continue
                offsets[p] = r.offset + 1
                if control:
                    if pid is not None:
                        st.decide(pid, ABORTED if r.abort else COMMITTED)
                    continue
                st.add([p, r.offset, r.timestamp, r.key, r.value, _NONE if pid is not None else None], pid)
            # next_offset covers records removed by compaction at the end of a batch.
            offsets[p] = max(offsets[p], min(getattr(batch, "next_offset", offsets[p]), end))
            yield from st.ready(flush=False)
            batch = records.next_batch()

    def close(self) -> None:
        if self._owned:
            self.admin.close()
