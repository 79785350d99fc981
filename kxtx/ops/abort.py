"""Ending open transactions on partitions with WriteTxnMarkers, safely.

For each target: re-check on the leader that the same producer (id, epoch) still has the same open
transaction start offset (and, for a repair, has written nothing since the plan); write an ABORT
marker (or the COMMIT a coordinator decided but never wrote, `Target.commit`) with Kafka's
coordinator-epoch rule (< 0 becomes 0); then wait until the LSO is past the transaction's start
offset. Outcome per partition: aborted / committed / already resolved / failed (reason). Nothing is
printed here; the CLI renders the outcomes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kxtx.client.admin import Cluster, Progress
from kxtx.client.kafkaerrors import leader_moved
from kxtx.client.model import TP, OpenTxn
from kxtx.errors import InputError, KxtxError, carry
from kxtx.ops import decide
from kxtx.ops.model import AbortOutcome, HangingTxn

#: How long to wait for the LSO to move after a marker (the leader updates it once the marker is
#: replicated to the high watermark).
VERIFY_S = 10.0


@dataclass
class Target:
    expected: OpenTxn
    #: explicit values from `kxtx abort --producer-epoch/--coordinator-epoch`; None = the partition's
    marker_epoch: int | None = None
    coordinator_epoch: int | None = None
    transactional_id: str | None = None
    #: the partition's leader when the plan was made (None: not known)
    leader: int | None = None
    #: write COMMIT instead of ABORT (repair-markers: the coordinator committed, the marker was lost)
    commit: bool = False
    #: refuse when the producer wrote to the partition since the plan (its last sequence moved): a
    #: repair's marker must end only the records the audit attributed to the lost decision
    same_writes: bool = False

    @property
    def marker(self) -> str:
        return "COMMIT" if self.commit else "ABORT"

    def plan_row(self) -> dict:
        e = self.expected
        return {
            "topic": e.topic,
            "partition": e.partition,
            "producer_id": e.producer_id,
            "producer_epoch": self.marker_epoch if self.marker_epoch is not None else e.producer_epoch,
            "coordinator_epoch": decide.abort_coordinator_epoch(
                self.coordinator_epoch if self.coordinator_epoch is not None else e.coordinator_epoch
            ),
            "start_offset": e.start_offset,
            "transactional_id": self.transactional_id,
            "leader": self.leader,
            "marker": self.marker,
        }


def preflight(cluster: Cluster, purpose: str = "abort transactions (WriteTxnMarkers)") -> None:
    """Before asking anything: WriteTxnMarkers needs ALTER (Kafka 3.8+) or CLUSTER_ACTION on the
    Cluster. Raises when the broker says the principal has neither; unknown passes."""
    from kxtx.client.authz import check_cluster_ops

    check_cluster_ops(cluster.cluster_operations(), ["ALTER", "CLUSTER_ACTION"], purpose)


def targets_from_hanging(rows: list[HangingTxn]) -> list[Target]:
    return [
        Target(
            OpenTxn(
                r.topic,
                r.partition,
                r.producer_id,
                r.producer_epoch,
                r.coordinator_epoch,
                r.last_timestamp,
                r.start_offset,
            ),
            transactional_id=r.transactional_id,
            leader=r.leader,
        )
        for r in rows
    ]


def manual_target(
    cluster: Cluster,
    tp: TP,
    start_offset: int | None = None,
    producer_id: int | None = None,
    producer_epoch: int | None = None,
    coordinator_epoch: int | None = None,
) -> Target:
    """`kxtx abort`: find the open transaction by start offset (Kafka 3.0+ style) or producer id."""
    states, errors = cluster.describe_producers([tp])
    if tp in errors:
        cluster.topics(tp[0])  # NoSuchTopic when that is why (kafka-python's words name neither)
        raise KxtxError(f"DescribeProducers {tp[0]}:{tp[1]}: {errors[tp]}")
    open_ = [p for p in states.get(tp, []) if p.is_open]
    if start_offset is not None:
        match = [p for p in open_ if p.start_offset == start_offset]
        if not match:
            raise InputError(
                f"no open transaction starts at offset {start_offset} on {tp[0]}:{tp[1]}{_listing(open_)}"
            )
        return Target(match[0])
    match = [p for p in open_ if p.producer_id == producer_id]
    if not match:
        raise InputError(
            f"producer id {producer_id} has no open transaction on {tp[0]}:{tp[1]}{_listing(open_)}"
        )
    return Target(match[0], marker_epoch=producer_epoch, coordinator_epoch=coordinator_epoch)


def _listing(open_: list[OpenTxn]) -> str:
    if not open_:
        return " (it has none)"
    return (
        " (open: "
        + ", ".join(f"producer {p.producer_id} epoch {p.producer_epoch} at {p.start_offset}" for p in open_)
        + ")"
    )


def execute(cluster: Cluster, targets: list[Target], progress: Progress | None = None) -> list[AbortOutcome]:
    """Abort each target in turn; a failure or stop carries the outcomes so far (`carry`)."""
    out: list[AbortOutcome] = []
    try:
        for i, t in enumerate(targets, 1):
            out.append(abort_one(cluster, t))
            if progress:
                progress(i, len(targets))
    except BaseException as exc:
        carry(exc, out)
        raise
    return out


def abort_one(cluster: Cluster, t: Target) -> AbortOutcome:
    e = t.expected
    res = AbortOutcome(
        e.topic,
        e.partition,
        e.producer_id,
        e.producer_epoch,
        e.start_offset,
        "failed",
        planned_leader=t.leader,
        marker=t.marker,
    )
    # Leaders move (a broker restarts, a reassignment, a preferred-leader election): look again
    # right before acting, and say so when the plan's leader is no longer the one.
    res.leader = cluster.leaders([e.tp]).get(e.tp)
    moved = _moved(t.leader, res.leader)
    if res.leader is None or res.leader < 0:
        res.outcome = "leader moved"
        res.detail = f"{moved or 'the partition'} has no leader now (a broker is down?); nothing written"
        return res
    states, errors = cluster.describe_producers([e.tp])
    if e.tp in errors:
        res.detail = f"re-check failed: {errors[e.tp]}"
        if leader_moved(errors[e.tp]):
            res.outcome, res.detail = "leader moved", f"{moved or 'leader changed'}: {res.detail}"
        return res
    current, why = decide.recheck(e, states.get(e.tp, []))
    if current is not None and t.same_writes and current.last_sequence != e.last_sequence:
        res.detail = (
            f"the producer wrote to the partition since the plan (last sequence {e.last_sequence} -> "
            f"{current.last_sequence}); nothing written: run the audit again"
        )
        return res
    if current is None:
        res.outcome, res.detail = "already resolved", _join(moved, why)
        _fill_offsets(cluster, res)
        return res
    epoch = t.marker_epoch if t.marker_epoch is not None else current.producer_epoch
    res.producer_epoch = epoch
    res.coordinator_epoch = decide.abort_coordinator_epoch(
        t.coordinator_epoch if t.coordinator_epoch is not None else current.coordinator_epoch
    )
    res.lso_before = cluster.offsets([e.tp])[e.tp].lso
    try:
        cluster.write_marker(e.tp, e.producer_id, epoch, res.coordinator_epoch, commit=t.commit)
    except KxtxError as exc:
        res.detail = str(exc)
        if leader_moved(exc.__cause__ or exc) or leader_moved(str(exc)):
            # The marker went to a broker that was no longer (or not yet) the leader: it wrote
            # nothing. Not a failure of the transaction's abort: the next run finds it on the new one.
            res.outcome = "leader moved"
            res.detail = f"the leader moved while writing the marker; nothing written ({exc})"
        return res
    _verify(cluster, res, current, _done(t))
    if moved and res.outcome == _done(t):
        res.detail = _join(f"{moved}; re-checked and {_done(t)} on broker {res.leader}", res.detail)
    return res


def _moved(planned: int | None, now: int | None) -> str:
    if planned is None or planned == now:
        return ""
    return f"leader moved from broker {planned} to {now if now is not None and now >= 0 else 'none'}"


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _done(t: Target) -> str:
    return "committed" if t.commit else "aborted"


def _verify(cluster: Cluster, res: AbortOutcome, before: OpenTxn, done: str = "aborted") -> None:
    deadline = time.monotonic() + min(VERIFY_S, cluster.settings.timeout)
    while True:
        _fill_offsets(cluster, res)
        if decide.lso_moved(res.start_offset, res.lso_after):
            res.outcome, res.detail = done, f"LSO moved to {res.lso_after}"
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    # The LSO can stay put because another, earlier transaction holds it: then this one is still
    # gone from the partition's producer state.
    states, _errors = cluster.describe_producers([(res.topic, res.partition)])
    still, _why = decide.recheck(before, states.get(before.tp, []))
    if still is None:
        res.outcome = done
        res.detail = f"marker written; LSO {res.lso_after} is held by another open transaction"
    else:
        res.detail = f"marker written but the LSO stayed at {res.lso_after}"


def _fill_offsets(cluster: Cluster, res: AbortOutcome) -> None:
    o = cluster.offsets([(res.topic, res.partition)])[(res.topic, res.partition)]
    res.lso_after, res.high_watermark = o.lso, o.high_watermark
