"""`dump partition`: the record batches of a data partition over the wire, each transaction's fate.

Raw batches come from Fetch at read_uncommitted (`RawFetchSource`, the fetch client `dump offsets
--include-uncommitted` uses; kafka-python's batch reader decodes them), so aborted data and the
COMMIT / ABORT control batches are seen. No access to broker disks.

A transactional batch's fate is decided by the next control batch of its producer id. When the
range ends before that marker, the read goes on past `--to` (batch headers only, nothing shown)
until every transaction with data in the range has its marker, or the high watermark is reached.
(The Fetch response's aborted-transactions list is not used: brokers fill it only for
read_committed fetches.) A transaction without a marker up to the high watermark is `open`.

A run of `dump partition` (the group's committed offsets as a start, the producers named by
transactional id) is `kxtx.dump.partition_run`. With `records`, each data batch keeps its
`BatchRecords` (kxtx/records/batchrecords.py) for the CLI to show.

Counting: a transaction is counted once, in the range, when one of its data batches is in the range;
`read_committed` is what a read_committed consumer reads in the range now: data records below the
last stable offset that are not aborted (markers are never delivered).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kxtx.client.settings import Settings
from kxtx.dump.rawfetch import (
    LEADER_MOVED,  # look up the leader, fetch again
    RawFetchSource,
)
from kxtx.errors import KafkaOperationError, Unavailable, UsageError
from kxtx.log import logger
from kxtx.records.batchheader import HEADER_SIZE, Header, headers
from kxtx.records.batchrecords import BatchRecords
from kxtx.results import OMIT_EMPTY, Result, written_as
from kxtx.timefmt import iso_ms

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

COMMITTED, ABORTED, OPEN = "committed", "aborted", "open"
EARLIEST, LSO, HW = "earliest", "lso", "hw"
COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_OFFSET_OUT_OF_RANGE = 1
#: What the one Fetch of many partitions' first reads may bring back in all (the broker fills
#: partitions in order up to it): about what one partition's read held before. A partition left
#: empty by it is fetched on its own.
_FIRST_FETCHES_MAX_BYTES = 8 * 1024 * 1024


# --- the range (pure) ----------------------------------------------------------------------------------
def parse_target(text: str) -> tuple[str, list[int] | None]:
    """`TOPIC` (every partition) or `TOPIC:P[,P...]`. A topic name never holds ':'."""
    topic, sep, parts = text.partition(":")
    if not topic:
        raise UsageError(f"{text!r}: give TOPIC or TOPIC:P[,P...]")
    if not sep:
        return topic, None
    try:
        chosen = sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise UsageError(f"{text!r}: partitions are numbers, e.g. {topic}:0,2") from None
    if not chosen or chosen[0] < 0:
        raise UsageError(f"{text!r}: give one or more partitions of zero or more after ':'")
    return topic, chosen


COMMITTED_PREFIX = "committed:"


def parse_from(text: str) -> int | str:
    """`--from`: an offset, `earliest`, or `committed:GROUP` (kept as given: group names are case
    sensitive; the offset is asked of the cluster per partition)."""
    if text.strip().lower().startswith(COMMITTED_PREFIX):
        if not text.strip()[len(COMMITTED_PREFIX) :]:
            raise UsageError(f"--from {text!r}: name the group, e.g. committed:my-group")
        return text.strip()[: len(COMMITTED_PREFIX)].lower() + text.strip()[len(COMMITTED_PREFIX) :]
    return _bound(text, "--from", (EARLIEST, LSO, f"{COMMITTED_PREFIX}GROUP"))


def parse_to(text: str) -> int | str:
    """`--to` (exclusive): an offset, `lso` (the last stable offset) or `hw` (the high watermark)."""
    return _bound(text, "--to", (LSO, HW))


_AROUND = re.compile(r"lso[+-]\d+")


def around_lso(n: int) -> tuple[str, str]:
    """`--around-lso N`: the bounds N offsets either side of the last stable offset."""
    if n < 0:
        raise UsageError(f"--around-lso {n}: give zero or more offsets")
    return f"lso-{n}", f"lso+{n}"


def _bound(text: str, option: str, names: tuple[str, ...]) -> int | str:
    word = text.strip().lower()
    if word in names or _AROUND.fullmatch(word):
        return word
    try:
        value = int(word)
    except ValueError:
        raise UsageError(f"{option} {text!r}: give an offset, {' / '.join(names)} or lso-N / lso+N") from None
    if value < 0:
        raise UsageError(f"{option} {text!r}: an offset is zero or more")
    return value


def _offset(bound: int | str, log_start: int, lso: int, hw: int) -> int:
    if isinstance(bound, int):
        return bound
    if _AROUND.fullmatch(bound):
        return lso + int(bound[3:])
    return {EARLIEST: log_start, LSO: lso, HW: hw}[bound]


def resolve(start: int | str, end: int | str, log_start: int, lso: int, hw: int) -> tuple[int, int]:
    """The offsets [first, end) read: named bounds replaced, the start raised to the log start and
    the end capped at the high watermark."""
    first = max(_offset(start, log_start, lso, hw), log_start)
    return first, min(_offset(end, log_start, lso, hw), hw)


# --- batches and their fate (pure) ---------------------------------------------------------------------
@dataclass
class Batch:
    partition: int
    base_offset: int
    last_offset: int
    count: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    control: bool
    first_timestamp: int
    max_timestamp: int
    compression: str
    size: int
    control_type: str | None = None
    coordinator_epoch: int | None = None
    fate: str | None = None
    in_range: int = 0  # records of this batch in [first, end)
    committed_view: int = 0  # of those, below the LSO (what read_committed could deliver)
    transactional_id: str | None = None  # of its producer id, where it was found
    records: BatchRecords | None = field(default=None, repr=False)  # kept for --records

    def row(self) -> dict[str, Any]:
        return {
            "kind": "batch",
            "partition": self.partition,
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "count": self.count,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "base_sequence": self.base_sequence,
            "transactional": self.transactional,
            "control": self.control,
            "control_type": self.control_type,
            "coordinator_epoch": self.coordinator_epoch,
            "fate": self.fate,
            "transactional_id": self.transactional_id,
            "first_timestamp": self.first_timestamp,
            "first_time": iso_ms(self.first_timestamp),
            "max_timestamp": self.max_timestamp,
            "max_time": iso_ms(self.max_timestamp),
            "compression": self.compression,
            "size": self.size,
        }


@dataclass
class Txn:
    """One transaction with data in the range: its producer id, its batches, its fate once known."""

    producer_id: int
    batches: list[Batch] = field(default_factory=list)
    fate: str | None = None


class Fates:
    """Follows transactions batch by batch, in offset order: a data batch joins its producer id's
    current transaction, that producer's next control batch ends it."""

    def __init__(self) -> None:
        self.current: dict[int, Txn] = {}
        self.done: list[Txn] = []

    def add(self, b: Batch, shown: bool) -> None:
        """`shown`: the batch is in the range (transactions are counted only from such batches)."""
        if not b.transactional:
            return
        pid = b.producer_id
        if b.control:
            txn = self.current.pop(pid, None)
            if txn is not None and b.control_type in ("COMMIT", "ABORT"):
                txn.fate = COMMITTED if b.control_type == "COMMIT" else ABORTED
                for member in txn.batches:
                    member.fate = txn.fate
                self.done.append(txn)
            return
        if shown:
            self.current.setdefault(pid, Txn(pid)).batches.append(b)

    @property
    def undecided(self) -> bool:
        return bool(self.current)

    def finish(self) -> list[Txn]:
        """Every transaction seen, in order; those still without a marker are open."""
        for txn in self.current.values():
            txn.fate = OPEN
            for member in txn.batches:
                member.fate = OPEN
            self.done.append(txn)
        self.current = {}
        return sorted(self.done, key=lambda t: t.batches[0].base_offset)


@dataclass(frozen=True, slots=True)
class Bounds:
    """A partition's range as read, [first, end), with its log start, last stable offset and high
    watermark; `deleted` says what of the asked start was gone (below the log start)."""

    first: int
    end: int
    log_start: int
    lso: int
    hw: int
    deleted: str = ""


@dataclass(frozen=True, slots=True)
class ProducerCounts(Result):
    """One producer id's transactions in the range by fate, and its data records in it."""

    producer_id: int
    transactional_id: str | None
    committed: int
    aborted: int
    open: int
    records: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary(Result):
    """The counts of one partition's range: the last row of `dump partition`, what `count` and
    `monitor` read. Its json keys are the fields' ("from" for `first`, "to" for `end`)."""

    kind: str = "summary"
    partition: int
    first: int = field(metadata=written_as("from"))
    end: int = field(metadata=written_as("to"))
    log_start: int
    lso: int
    hw: int
    deleted: str = field(default="", metadata=OMIT_EMPTY)
    batches: int
    records: int
    markers: int
    committed_records: int
    aborted_records: int
    open_records: int
    non_transactional_records: int
    read_committed: int
    producers: list[ProducerCounts]


def summarize(partition: int, batches: list[Batch], txns: list[Txn], bounds: Bounds) -> Summary:
    """The counts of one partition's range, [bounds.first, bounds.end)."""
    data = [b for b in batches if not b.control]
    producers: dict[int, dict[str, int]] = {}  # ProducerCounts' counts by producer id
    for b in data:
        if b.producer_id >= 0:
            p = producers.setdefault(b.producer_id, _producer_counts())
            p["records"] += b.in_range
    for t in txns:
        producers.setdefault(t.producer_id, _producer_counts())[str(t.fate)] += 1
    by_fate = {f: sum(b.in_range for b in data if b.fate == f) for f in (COMMITTED, ABORTED, OPEN)}
    return Summary(
        partition=partition,
        first=bounds.first,
        end=bounds.end,
        log_start=bounds.log_start,
        lso=bounds.lso,
        hw=bounds.hw,
        deleted=bounds.deleted,
        batches=len(batches),
        records=sum(b.in_range for b in data),
        markers=sum(b.in_range for b in batches if b.control),
        committed_records=by_fate[COMMITTED],
        aborted_records=by_fate[ABORTED],
        open_records=by_fate[OPEN],
        non_transactional_records=sum(b.in_range for b in data if not b.transactional),
        read_committed=sum(b.committed_view for b in data if b.fate != ABORTED),
        producers=[ProducerCounts(pid, None, **c) for pid, c in sorted(producers.items())],
    )


def _producer_counts() -> dict[str, int]:
    return {COMMITTED: 0, ABORTED: 0, OPEN: 0, "records": 0}


# --- reading -------------------------------------------------------------------------------------------
@dataclass
class PartitionDump:
    batches: list[Batch]
    summary: Summary

    def name(self, ids: dict[int, str]) -> None:
        """Its transactional batches and producers named by the transactional ids of `ids` (by
        producer id; one not in it is unnamed)."""
        for b in self.batches:
            if b.transactional:
                b.transactional_id = ids.get(b.producer_id)
        producers = [replace(p, transactional_id=ids.get(p.producer_id)) for p in self.summary.producers]
        self.summary = replace(self.summary, producers=producers)


def read_ranges(
    settings: Settings,
    topic: str,
    starts: dict[int, int | str],
    end: int | str,
    records: bool = False,
    log_starts: dict[int, int] | None = None,
    admin: KafkaAdminClient | None = None,
) -> list[PartitionDump]:
    """Each partition of `starts` read from its start to `end`, in that order. `kxtx monitor`
    counts what a read_committed consumer still gets from a group's committed offset this way,
    giving the log starts it asked for all its topics at once and its own admin client (`admin`)."""
    with _readers(settings, topic, starts, end, records, log_starts, admin) as readers:
        return [r.read() for r in readers]


def read_headers(
    settings: Settings, topic: str, starts: dict[int, int | str]
) -> list[tuple[Bounds, list[Header]]]:
    """The marker audit's read: each partition of `starts` from its start to the high watermark, as
    (its bounds, the headers of its transactional batches), parsed straight from the Fetch bytes
    (`kxtx.records.batchheader`): no batch object, no record read but the markers'."""
    with _readers(settings, topic, starts, HW) as readers:
        return [r.transactional_headers() for r in readers]


@contextmanager
def _readers(
    settings: Settings,
    topic: str,
    starts: dict[int, int | str],
    end: int | str,
    records: bool = False,
    log_starts: dict[int, int] | None = None,
    admin: KafkaAdminClient | None = None,
) -> Iterator[list[_PartitionReader]]:
    from kxtx.dump.rawfetch import RawFetchSource

    source = RawFetchSource(settings, topic, admin)
    try:
        # Log starts and leaders asked for all partitions at once: one consumer and one metadata
        # lookup per topic instead of one each per partition (a read that meets a moved leader or
        # log start asks again for its partition alone).
        wanted = list(starts)
        if log_starts is None or any(p not in log_starts for p in wanted):
            log_starts = {**source.log_starts(wanted), **(log_starts or {})}
        leaders = source.leaders_or_none(wanted)
        heads = _first_fetches(source, starts, log_starts, leaders)
        yield [
            _PartitionReader(source, p, start, end, records, log_starts[p], leaders.get(p), heads.get(p))
            for p, start in starts.items()
        ]
    finally:
        source.close()


def _first_fetches(
    source: RawFetchSource, starts: dict[int, int | str], log_starts: dict[int, int], leaders: dict[int, int]
) -> dict:
    """The first Fetch of every partition with an offset start, one request per leader instead of
    one per partition: {partition: its response}. A partition that answered with an error, or a
    request that failed, is left out; its reader fetches it alone (and follows a moved leader)."""
    by_leader: dict[int, dict[int, int]] = {}
    for p, start in starts.items():
        if isinstance(start, int) and leaders.get(p, -1) >= 0:
            by_leader.setdefault(leaders[p], {})[p] = max(start, log_starts[p])
    heads = {}
    for leader, offsets in by_leader.items():
        try:
            resp = source.fetch(leader, offsets, max_bytes=_FIRST_FETCHES_MAX_BYTES)
        except KafkaOperationError as exc:
            logger.info(f"fetching {source.topic} from broker {leader}: {exc}")
            continue
        for topic in resp.responses:
            heads.update({part.partition_index: part for part in topic.partitions if part.error_code == 0})
    return heads


class _PartitionReader:
    def __init__(
        self,
        source: RawFetchSource,
        partition: int,
        start: int | str,
        end: int | str,
        records: bool,
        log_start: int | None = None,
        leader: int | None = None,
        head: Any = None,  # a kafka-python Fetch response partition (untyped), as _fetch's
    ) -> None:
        self.source, self.p, self.start, self.end = source, partition, start, end
        self.records = records
        self.log_start = log_start
        self.leader = leader
        #: the first Fetch's response, already fetched from max(start, log_start) (read_ranges)
        self.head = head

    def _fetch(self, offset: int) -> Any:
        """One Fetch of this partition from `offset`: the partition's response (leader moves followed)."""
        deadline = time.monotonic() + self.source.settings.timeout
        while True:
            if self.leader is None:
                self.leader = self.source.leaders_or_none([self.p]).get(self.p)
            if self.leader is not None and self.leader >= 0:
                try:
                    resp = self.source.fetch(self.leader, {self.p: offset})
                    part = resp.responses[0].partitions[0]
                    if part.error_code not in LEADER_MOVED:
                        return part
                except KafkaOperationError as exc:
                    logger.info(f"fetching {self.source.topic}[{self.p}] from broker {self.leader}: {exc}")
            self.leader = None
            if time.monotonic() > deadline:
                raise Unavailable(
                    f"fetching {self.source.topic}[{self.p}]: no leader answered for {self.source.settings.timeout:g}s"
                    " (a broker down?); run it again when the partition has a leader"
                )
            time.sleep(0.2)

    def _open(self) -> tuple[Any, Bounds]:
        """The first Fetch and the range it resolves: (its response from the range's first offset,
        the range)."""
        topic = self.source.topic
        log_start = self.log_start if self.log_start is not None else self.source.log_starts([self.p])[self.p]
        # A start relative to the LSO is known once a Fetch has answered: ask at the log start first.
        want = max(self.start, log_start) if isinstance(self.start, int) else log_start
        head = self.head if self.head is not None else self._fetch(want)
        if head.error_code == _OFFSET_OUT_OF_RANGE:  # the log start moved on meanwhile (retention)
            want = log_start = self.source.log_starts([self.p])[self.p]
            head = self._fetch(want)
        if head.error_code:
            raise KafkaOperationError(f"fetching {topic}[{self.p}]: broker error code {head.error_code}")
        hw, lso = head.high_watermark, head.last_stable_offset
        log_start = max(log_start, head.log_start_offset)
        first, end = resolve(self.start, self.end, log_start, lso, hw)
        asked = max(0, _offset(self.start, log_start, lso, hw))
        if asked > hw:  # not an empty range to show as a result: a start that cannot be
            raise UsageError(
                f"--from {asked}: beyond the end of {topic}:{self.p} (high watermark {hw}, its next "
                f"offset); nothing to read"
            )
        deleted = ""
        if asked < log_start:
            deleted = f"offsets {asked}..{log_start - 1} are gone (below the log start offset)"
        if first != want:
            head = self._fetch(first)
        return head, Bounds(first, end, log_start, lso, hw, deleted)

    def read(self) -> PartitionDump:
        head, bounds = self._open()
        batches, fates = self._scan(head, bounds.first, bounds.end, bounds.hw, bounds.lso)
        return PartitionDump(batches, summarize(self.p, batches, fates.finish(), bounds))

    def transactional_headers(self) -> tuple[Bounds, list[Header]]:
        """(the bounds, the headers of every transactional batch from the start to the high
        watermark): what the marker audit reads. Only message format v2 has transactions; a batch
        of an older one is passed over."""
        head, bounds = self._open()
        found = [
            raw
            for raw in self._walk(head, bounds.first, bounds.hw, lambda _pos: True, headers_only=True)
            if isinstance(raw, Header) and raw.is_transactional
        ]
        return bounds, found

    def _walk(
        self, part: Any, pos: int, hw: int, more: Callable[[int], bool], headers_only: bool = False
    ) -> Iterator[Any]:
        """Every batch from `pos` on, below the high watermark and while `more(next position)`,
        fetching as it goes (leader moves followed, a partition that stops progressing is an error)."""
        stalled_since = time.monotonic()
        while pos < hw and more(pos):
            before = pos
            for raw in _raw_batches(part.records, headers_only):
                if raw.base_offset >= hw:
                    return
                if raw.next_offset <= pos:
                    continue  # a batch fetched again (Fetch returns whole batches)
                yield raw
                pos = raw.next_offset
                if not more(pos):
                    return
            if pos >= hw:
                return
            if pos == before and time.monotonic() - stalled_since > self.source.settings.timeout:
                raise KafkaOperationError(f"fetching {self.source.topic}[{self.p}]: no progress at {pos}")
            if pos != before:
                stalled_since = time.monotonic()
            part = self._fetch(pos)
            if part.error_code:
                raise KafkaOperationError(
                    f"fetching {self.source.topic}[{self.p}] at {pos}: broker error code {part.error_code}"
                )

    def _scan(self, part: Any, first: int, end: int, hw: int, lso: int) -> tuple[list[Batch], Fates]:
        """Batches overlapping [first, end); then on, headers only, to the markers still missing."""
        from kxtx.records.control import decode_control

        shown: list[Batch] = []
        fates = Fates()
        for raw in self._walk(part, first, hw, lambda pos: pos < end or fates.undecided):
            b = _batch(self.p, raw)
            in_range = raw.base_offset < end
            offsets = BatchRecords(raw, f"{self.source.topic}[{self.p}]")
            if b.control:
                marker = decode_control(*offsets.first_key_value())
                b.control_type, b.coordinator_epoch = marker["type"], marker.get("coordinator_epoch")
            if in_range:
                b.in_range = offsets.count(first, end)
                b.committed_view = offsets.count(first, min(end, lso))
                if self.records and not b.control:
                    b.records = offsets
                shown.append(b)
            fates.add(b, in_range)
        return shown, fates


def _raw_batches(raw: bytes | None, headers_only: bool = False) -> Iterable[Any]:
    """The batches of a Fetch response's records: kafka-python's, or with `headers_only` our
    `Header`s as far as the message format is v2 (kafka-python's from there on)."""
    from kafka.record import MemoryRecords

    if not raw:
        return
    if headers_only:
        at = 0
        for h in headers(raw):
            at = h.end
            yield h
        if at >= len(raw) or len(raw) - at < HEADER_SIZE or raw[at + 16] == 2:
            return  # whole, or a v2 batch cut at the end: the next fetch starts with it
        raw = raw[at:]
    records = MemoryRecords(raw)
    batch = records.next_batch()
    while batch is not None:
        yield batch
        batch = records.next_batch()


def _batch(partition: int, raw: Any) -> Batch:
    return Batch(
        partition=partition,
        base_offset=raw.base_offset,
        last_offset=raw.last_offset,
        count=raw.records_count,
        producer_id=raw.producer_id,
        producer_epoch=raw.producer_epoch,
        base_sequence=raw.base_sequence,
        transactional=bool(raw.is_transactional),
        control=bool(raw.is_control_batch),
        first_timestamp=raw.first_timestamp,
        max_timestamp=raw.max_timestamp,
        compression=COMPRESSION.get(raw.compression_type, str(raw.compression_type)),
        size=raw.size_in_bytes,
    )
