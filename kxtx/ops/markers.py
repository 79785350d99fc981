"""Lost transaction markers: the coordinators' decisions held against a data partition's markers (pure).

A coordinator ends a transaction in three steps: it writes PrepareCommit / PrepareAbort to
`__transaction_state` (with the partitions that are to get a marker), has each partition's leader
write the COMMIT / ABORT marker, then writes CompleteCommit / CompleteAbort once every marker is
acknowledged. Kafka 4.0-4.4 can complete without the marker of a partition that had no leader at that
moment (KAFKA-20734); an unclean leader election can drop a written one (KAFKA-20716). On that
partition the transaction stays open until its producer's next marker there, and that marker then
decides the fate of both transactions' records.

Here, per data partition and producer id: each marker is matched to the decision it carries out
(same outcome, the Prepare record's producer epoch, written between Prepare and Complete), each
data batch to the transaction that wrote it (by producer epoch where epochs tell transactions apart,
as under transactions v2; else by time: a batch belongs to the first transaction prepared after it
was written), and every ended decision without a marker becomes a `Finding` whose `kind` says what
became of its records. Nothing here guesses: records whose transaction is not in the history read are
`UNDETERMINED`, never assigned to a neighbour.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kxtx.client.model import TP
from kxtx.dump.partition import ABORTED, COMMITTED, OPEN  # a data batch's fate on its partition
from kxtx.timefmt import iso_ms

COMMIT, ABORT = "COMMIT", "ABORT"

#: The classes of a lost marker, by what became of the transaction's records on the partition.
LOST_COMMIT_OPEN = "lost-commit-open"  # committed by the coordinator, still open: the LSO is stuck
LOST_ABORT_OPEN = "lost-abort-open"  # aborted by the coordinator, still open: the LSO is stuck
LOST_ABORT_COMMITTED = "lost-abort-committed"  # aborted, then committed by the producer's next marker
LOST_COMMIT_ABORTED = "lost-commit-aborted"  # committed, then aborted by the producer's next marker
UNDETERMINED = "undetermined"  # open records whose transaction's decision is not in the history
#: A lost marker whose records ended as decided (a later marker of the same outcome, or a repair).
HEALED = "healed"
#: A lost marker on a partition where the transaction wrote nothing: no record was affected.
NO_RECORDS = "no-records"

#: What each class means for the data, in the words the report uses.
MEANING = {
    LOST_COMMIT_OPEN: "committed records held back (LSO stuck)",
    LOST_ABORT_OPEN: "aborted records still open (LSO stuck)",
    LOST_ABORT_COMMITTED: "aborted records made visible by a later commit",
    LOST_COMMIT_ABORTED: "committed records dropped by a later abort",
    UNDETERMINED: "open records whose coordinator decision is not in the history",
    HEALED: "marker lost, records ended as decided",
    NO_RECORDS: "marker lost, no records on the partition",
}
#: The classes that need an operator: data held back, exposed, dropped or unexplained.
NEEDS_ACTION = (LOST_COMMIT_OPEN, LOST_ABORT_OPEN, LOST_ABORT_COMMITTED, LOST_COMMIT_ABORTED, UNDETERMINED)
#: The classes a marker can still repair: the records are open and the decision is known.
REPAIRABLE = (LOST_COMMIT_OPEN, LOST_ABORT_OPEN)

#: How far a marker's timestamp (the partition leader's clock) may lie outside its decision's
#: Prepare..Complete window (the coordinator's clock): the brokers' clock difference.
MARKER_SLACK_MS = 2000
#: How much earlier than its transaction's start a data batch's timestamp may be: CreateTime is the
#: producer's clock, stamped before the partition is added to the transaction.
START_SLACK_MS = 60_000

_STATUS = {"PrepareCommit": COMMIT, "PrepareAbort": ABORT, "CompleteCommit": COMMIT, "CompleteAbort": ABORT}


@dataclass
class Decision:
    """One transaction of a transactional id as its coordinator recorded it."""

    transactional_id: str
    producer_id: int
    #: the epoch its data batches carry (its Ongoing records'); None when only its end was read
    data_epoch: int | None
    start_ms: int
    partitions: set[TP] = field(default_factory=set)
    outcome: str | None = None  # COMMIT / ABORT once prepared
    #: the Prepare record's epoch: what its markers carry (one above the data's under transactions v2
    #: and after a fence)
    marker_epoch: int | None = None
    prepare_ms: int | None = None
    complete_ms: int | None = None
    #: where the Prepare record is: (partition of __transaction_state, offset)
    prepared_at: tuple[int, int] | None = None

    @property
    def ended(self) -> bool:
        return self.complete_ms is not None


def _partitions(value: dict) -> set[TP]:
    return {
        (p["topic"], i) for p in value.get("transaction_partitions") or () for i in p.get("partition_ids", ())
    }


def decisions(rows: Iterable[Mapping[str, Any]]) -> list[Decision]:
    """The transactions in `__transaction_state` rows (the dump engine's, in log order per partition),
    oldest first per transactional id. A transaction whose start precedes the rows read is still
    listed from its Prepare record on (its data epoch then unknown unless transactions v1 says it)."""
    current: dict[str, Decision] = {}
    out: list[Decision] = []
    #: an ongoing transaction's partitions as its newest Ongoing record lists them (each lists all
    #: added so far): made a set once, when it prepares or the rows end
    added: dict[int, list] = {}
    for row in rows:
        key = row.get("key") or {}
        tid = key.get("transactional_id")
        if tid is None:
            continue
        v = row.get("value")
        if v is None:  # a tombstone: the id expired
            current.pop(tid, None)
            continue
        status, pid, epoch = v.get("transaction_status"), v.get("producer_id"), v.get("producer_epoch")
        # The value's last-update time is when the coordinator took the step; the record's own
        # timestamp, when it appended it. A Complete is appended once every marker is acknowledged
        # (Kafka 3.9 sets its last-update time before that): the later of the two bounds the
        # markers, the earlier of the two starts them.
        updated = v.get("transaction_last_update_timestamp_ms", row.get("timestamp_ms"))
        appended = row.get("timestamp_ms", updated)
        ts = min(updated, appended)
        d = current.get(tid)
        if status == "Ongoing":
            if d is None or d.outcome is not None:
                d = Decision(tid, pid, epoch, v.get("transaction_start_timestamp_ms", ts))
                current[tid] = d
                out.append(d)
            added[id(d)] = v.get("transaction_partitions") or []
        elif status in ("PrepareCommit", "PrepareAbort"):
            parts = _partitions(v)
            if not parts:  # transactions v2 aborting from Empty: nothing was written anywhere
                current.pop(tid, None)
                continue
            if d is None or d.outcome is not None:
                # The start is before the rows read. Under transactions v1 a commit's data carries
                # the Prepare's epoch; an abort's may be one lower (a fence bumps it), so unknown.
                v1 = not v.get("client_transaction_version")
                d = Decision(
                    tid,
                    pid,
                    epoch if v1 and status == "PrepareCommit" else None,
                    v.get("transaction_start_timestamp_ms", ts),
                )
                current[tid] = d
                out.append(d)
            d.outcome, d.marker_epoch, d.prepare_ms = _STATUS[status], epoch, ts
            d.partitions = parts
            added.pop(id(d), None)
            d.prepared_at = (row["partition"], row["offset"])
        elif status in ("CompleteCommit", "CompleteAbort") and d is not None and d.outcome == _STATUS[status]:
            d.complete_ms = d.complete_ms if d.complete_ms is not None else max(updated, appended)
        # Empty (InitProducerId) starts nothing; a transaction still open there was aborted first.
    for d in out:
        if id(d) in added:
            d.partitions = _partitions({"transaction_partitions": added[id(d)]})
    return out


# --- one data partition ------------------------------------------------------------------------------
class BatchLike(Protocol):
    """What the audit reads of a transactional batch (`kxtx.records.batchheader.Header` has it)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def records_count(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def control_type(self) -> str | None: ...


@dataclass(frozen=True)
class PBatch:
    """A transactional batch written by hand (tests): a BatchLike."""

    base_offset: int
    last_offset: int
    records_count: int
    producer_id: int
    producer_epoch: int
    max_timestamp: int
    control_type: str | None = None  # COMMIT / ABORT for a marker, None for data


@dataclass
class Finding:
    """One decision whose marker is missing on one partition (or open records nobody decided)."""

    topic: str
    partition: int
    kind: str
    producer_id: int
    producer_epoch: int | None
    transactional_id: str | None
    decided: str | None  # COMMIT / ABORT
    decided_ms: int | None
    completed_ms: int | None
    #: the transaction's records on this partition
    first_offset: int | None = None
    last_offset: int | None = None
    records: int = 0
    fate: str | None = None
    #: the marker that ended them since (classes 3, 4, healed)
    marker_offset: int | None = None
    marker_type: str | None = None
    ended_by: str | None = None
    #: a marker of the decided outcome can be written now (see `repair_blocker`)
    repairable: bool = False
    detail: str = ""
    #: how its records were told from its neighbours': "epoch" or "time"
    assigned_by: str | None = None
    prepared_at: tuple[int, int] | None = None

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)


def match_markers(markers: list[BatchLike], decided: list[Decision]) -> dict[int, Decision]:
    """{marker base offset: the decision it carries out} for one producer id on one partition.

    In order: each decision takes the first unused later marker of its outcome and epoch written
    inside its Prepare..Complete window, else within MARKER_SLACK_MS of it. A marker no decision
    takes was written by someone else (an admin's abort or repair). Markers are in offset order,
    which is their time order: each decision scans on from the last one taken, up to its window's
    end (linear in markers and decisions together)."""
    taken: dict[int, Decision] = {}
    first = 0  # markers before this index are taken or passed
    for d in sorted(decided, key=lambda d: d.prepare_ms or 0):
        lo = d.prepare_ms or 0
        hi = d.complete_ms if d.complete_ms is not None else 2**62
        exact = near = None
        for i in range(first, len(markers)):
            mk = markers[i]
            if mk.max_timestamp > hi + MARKER_SLACK_MS:
                break
            if mk.control_type != d.outcome or mk.producer_epoch != d.marker_epoch:
                continue
            if lo <= mk.max_timestamp <= hi:
                exact = i
                break
            if near is None and mk.max_timestamp >= lo - MARKER_SLACK_MS:
                near = i
        chosen = exact if exact is not None else near
        if chosen is not None:
            taken[markers[chosen].base_offset] = d
            first = chosen + 1
    return taken


class _Assigner:
    """The transaction (of one producer id, on one partition) that wrote a batch: by producer epoch
    where it names exactly one transaction and epochs differ (transactions v2), else the first
    transaction prepared at or after the batch's timestamp (ongoing ones last), among those whose
    data epoch fits. Candidates in order of their Prepare; a bisection per batch."""

    def __init__(self, candidates: list[Decision]) -> None:
        self.candidates = candidates
        self.by_epoch: dict[int | None, list[Decision]] = {}
        for d in candidates:
            self.by_epoch.setdefault(d.data_epoch, []).append(d)
        self.pools: dict[int, tuple[list[Decision], list[float]]] = {}

    def __call__(self, batch: BatchLike) -> tuple[Decision | None, str]:
        epoch = batch.producer_epoch
        same = self.by_epoch.get(epoch, [])
        if len(same) == 1 and len(self.by_epoch) > 1:
            return same[0], "epoch"
        if epoch not in self.pools:
            pool = [d for d in self.candidates if d.data_epoch in (None, epoch)]
            self.pools[epoch] = (pool, [float("inf") if d.prepare_ms is None else d.prepare_ms for d in pool])
        pool, prepared = self.pools[epoch]
        i = bisect_left(prepared, batch.max_timestamp)
        if i == len(pool):
            return None, ""
        d = pool[i]
        if batch.max_timestamp < d.start_ms - START_SLACK_MS:
            return None, ""  # written before this transaction began: its own is not in the history
        return d, "time"


def audit_partition(
    tp: TP, batches: Sequence[BatchLike], history: list[Decision]
) -> tuple[list[Finding], dict[int, list[BatchLike]]]:
    """The lost markers of one partition: (findings, {producer id: open data batches no transaction in
    `history` wrote}). `batches`: the partition's transactional batches in offset order;
    `history`: the decisions naming it (others are ignored)."""
    findings: list[Finding] = []
    orphans: dict[int, list[BatchLike]] = {}
    by_pid: dict[int, list[Decision]] = {}
    for d in history:
        if tp in d.partitions:
            by_pid.setdefault(d.producer_id, []).append(d)
    written: dict[int, list[BatchLike]] = {}
    for b in batches:
        written.setdefault(b.producer_id, []).append(b)
    for pid in sorted(set(written) | set(by_pid)):
        found, unexplained = _audit_producer(tp, written.get(pid, []), by_pid.get(pid, []))
        findings.extend(found)
        if unexplained:
            orphans[pid] = unexplained
    return findings, orphans


def _audit_producer(
    tp: TP, batches: list[BatchLike], decided: list[Decision]
) -> tuple[list[Finding], list[BatchLike]]:
    markers = [b for b in batches if b.control_type in (COMMIT, ABORT)]
    data = [b for b in batches if b.control_type is None]
    fates = fates_of(batches)
    prepared = sorted((d for d in decided if d.outcome), key=lambda d: d.prepare_ms or 0)
    ongoing = [d for d in decided if not d.outcome]
    matched = match_markers(markers, prepared)
    candidates = prepared + ongoing
    assign = _Assigner(candidates)
    owned: dict[int, list[BatchLike]] = {}
    how: dict[int, str] = {}
    unexplained = []
    for b in data:
        d, by = assign(b)
        if d is None:
            if fates[id(b)] == OPEN:
                unexplained.append(b)
            continue
        owned.setdefault(id(d), []).append(b)
        how[id(d)] = by
    carried_out = {id(d) for d in matched.values()}
    lost = [d for d in prepared if d.ended and id(d) not in carried_out]
    out = []
    for d in lost:
        mine = owned.get(id(d), [])
        f = _finding(tp, d, mine, markers, matched, fates)
        f.assigned_by = how.get(id(d))
        out.append(f)
    _mark_repairable(out, [b for b in data if fates[id(b)] == OPEN], owned, {id(d): d for d in candidates})
    return out, unexplained


def fates_of(batches: list[BatchLike]) -> dict[int, str]:
    """{id(data batch): its fate on the partition} for one producer id's batches in offset order, as
    the partition decides it: its producer's next marker there (COMMIT or ABORT), else open."""
    out: dict[int, str] = {}
    waiting: list[BatchLike] = []
    for b in batches:
        if b.control_type is None:
            waiting.append(b)
        elif b.control_type in (COMMIT, ABORT):
            fate = COMMITTED if b.control_type == COMMIT else ABORTED
            out.update((id(x), fate) for x in waiting)
            waiting = []
    out.update((id(x), OPEN) for x in waiting)
    return out


def _finding(
    tp: TP,
    d: Decision,
    mine: list[BatchLike],
    markers: list[BatchLike],
    matched: dict[int, Decision],
    fate_of: dict[int, str],
) -> Finding:
    f = Finding(
        tp[0],
        tp[1],
        NO_RECORDS,
        d.producer_id,
        d.data_epoch,
        d.transactional_id,
        d.outcome,
        d.prepare_ms,
        d.complete_ms,
        prepared_at=d.prepared_at,
    )
    if not mine:
        f.detail = "the transaction wrote nothing to this partition"
        return f
    f.first_offset, f.last_offset = mine[0].base_offset, mine[-1].last_offset
    f.records = sum(b.records_count for b in mine)
    f.producer_epoch = mine[0].producer_epoch
    fates = {fate_of[id(b)] for b in mine}
    if len(fates) != 1:
        f.kind, f.detail = (
            UNDETERMINED,
            f"its batches ended differently ({', '.join(sorted(map(str, fates)))})",
        )
        return f
    f.fate = fates.pop()
    if f.fate == OPEN:
        f.kind = LOST_COMMIT_OPEN if d.outcome == COMMIT else LOST_ABORT_OPEN
        return f
    end = next((m for m in markers if m.base_offset > mine[-1].last_offset), None)
    if end is not None:
        f.marker_offset, f.marker_type = end.base_offset, end.control_type
        other = matched.get(end.base_offset)
        f.ended_by = (
            f"the {other.outcome.lower()} of {other.transactional_id}'s transaction prepared at "
            f"{iso_ms(other.prepare_ms)}"
            if other is not None and other.outcome
            else "a marker no coordinator decided (an admin's abort or repair)"
        )
    decided_fate = COMMITTED if d.outcome == COMMIT else ABORTED
    if f.fate == decided_fate:
        f.kind = HEALED
    else:
        f.kind = LOST_ABORT_COMMITTED if d.outcome == ABORT else LOST_COMMIT_ABORTED
    return f


def _mark_repairable(
    found: list[Finding],
    open_batches: list[BatchLike],
    owned: dict[int, list[BatchLike]],
    by_id: dict[int, Decision],
) -> None:
    """A still-open finding can be repaired with one marker only when every open record of its
    producer on the partition belongs to lost decisions of the same outcome: otherwise the marker
    would also end records of a transaction still running (or decided otherwise)."""
    owner = {id(b): did for did, bs in owned.items() for b in bs}
    for f in found:
        if f.kind not in REPAIRABLE:
            continue
        blocker = repair_blocker(f, open_batches, owner, by_id)
        f.repairable = blocker is None
        if blocker:
            f.detail = blocker


def repair_blocker(
    f: Finding, open_batches: list[BatchLike], owner: dict[int, int], by_id: dict[int, Decision]
) -> str | None:
    """Why one marker for `f`'s producer on its partition would end more than `f`'s decision, or None."""
    for b in open_batches:
        did = owner.get(id(b))
        d = by_id.get(did) if did is not None else None
        if d is None:
            return f"open records at {b.base_offset} of the same producer belong to no known transaction"
        if not d.ended:
            return (
                f"{d.transactional_id}'s next transaction (still running) wrote to this partition at "
                f"{b.base_offset}: its marker will end both"
            )
        if d.outcome != f.decided:
            return f"open records at {b.base_offset} belong to a transaction decided {d.outcome}: one marker cannot end both"
    return None
