"""`fence`: Kafka 4.1's forceTerminateTransaction, from Python.

Initialising a producer with the transactional id makes the coordinator bump the epoch, abort the
open transaction (writing ABORT markers to its partitions) and fence the live producer. It is for an
ongoing transaction of a dead or stuck application; a hanging partition the coordinator no longer
tracks needs `abort-hanging` instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kxtx.client.admin import Cluster
from kxtx.client.authz import Need
from kxtx.client.clients import producer, translate
from kxtx.client.model import NOT_FOUND, TP, CoordinatorTxn, Offsets
from kxtx.errors import KxtxError
from kxtx.ops import decide
from kxtx.results import Result

VERIFY_S = 10.0


@dataclass(frozen=True, slots=True)
class ProducerState(Result):
    """The coordinator's producer of the id, before or after fencing."""

    state: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class FencedPartition(Result):
    """A partition of the fenced transaction: did its LSO move past the aborted records?

    `lso_moved` is None when kxtx could not read the partition's offsets before or after (no
    leader, a broker down): `unseen` says why, and that partition's marker is unchecked."""

    topic: str
    partition: int
    lso_before: int | None
    lso_after: int | None
    high_watermark: int | None
    lso_moved: bool | None
    unseen: str | None = None


@dataclass(frozen=True, slots=True)
class FenceResult(Result):
    """What `fence` did, in the order of its output's keys; `ok`: every partition's LSO was read
    and moved (a partition that could not be read is never ok: see `unseen`)."""

    transactional_id: str
    before: ProducerState
    after: ProducerState
    partitions: list[FencedPartition]
    ok: bool


def describe(
    cluster: Cluster, transactional_id: str, unknown: str = "; fencing it would only create it"
) -> CoordinatorTxn:
    """The coordinator's transaction of the id; an id it does not know is an error (`unknown`: what
    that means for the command)."""
    desc = cluster.describe_txns([transactional_id]).get(transactional_id, NOT_FOUND)
    if not isinstance(desc, CoordinatorTxn):
        raise KxtxError(f"transactional id {transactional_id!r} is unknown to its coordinator{unknown}")
    return desc


def plan(cluster: Cluster, desc: CoordinatorTxn) -> dict:
    """What fencing will do, for the preview."""
    tps = sorted(desc.partitions)
    offsets = cluster.offsets(tps)
    return {
        "transactional_id": desc.transactional_id,
        "coordinator": desc.coordinator_id,
        "state": desc.state,
        "producer_id": desc.producer_id,
        "producer_epoch": desc.producer_epoch,
        "timeout_ms": desc.timeout_ms,
        "verdict": decide.txn_verdict(desc, int(time.time() * 1000), []),
        "partitions": [
            {
                **offsets_row(tp, offsets[tp]),
                # unread: fencing still aborts there, but kxtx cannot check it afterwards
                "unseen": None if offsets[tp].held_back is not None else unseen_reason(tp, offsets[tp].why),
            }
            for tp in tps
        ],
    }


def offsets_row(tp: TP, offsets: Offsets) -> dict:
    """A partition of a preview (`fence`, `complete`): its LSO, high watermark and what it holds back."""
    return {
        "topic": tp[0],
        "partition": tp[1],
        "lso": offsets.lso,
        "high_watermark": offsets.high_watermark,
        "held_back": offsets.held_back,
    }


def fence(cluster: Cluster, desc: CoordinatorTxn) -> FenceResult:
    """InitProducerId for the id (bumps the epoch, aborts the open transaction), then verify."""
    tps = sorted(desc.partitions)
    before = cluster.offsets(tps)
    # Keep the id's own timeout: the coordinator stores the value of the last InitProducerId.
    p = producer(
        cluster.settings,
        **{"transactional.id": desc.transactional_id, "transaction.timeout.ms": max(1000, desc.timeout_ms)},
    )
    try:
        p.init_transactions(cluster.settings.timeout)
    except Exception as exc:
        raise translate(
            exc,
            f"fencing transactional id {desc.transactional_id!r}",
            need=Need("WRITE", "TransactionalId", desc.transactional_id),
        ) from exc
    finally:
        try:
            p.flush(0)
        except Exception:  # noqa: BLE001 - after a fatal error flush raises it again; keep the first
            pass
    after = describe(cluster, desc.transactional_id)
    rows = wait_for_lso(cluster, tps, before)
    return FenceResult(
        desc.transactional_id,
        ProducerState(desc.state, desc.producer_id, desc.producer_epoch),
        ProducerState(after.state, after.producer_id, after.producer_epoch),
        rows,
        all(r.lso_moved is True for r in rows),
    )


def wait_for_lso(
    cluster: Cluster, tps: list[TP], before: dict[tuple[str, int], Offsets], marker: str = "ABORT"
) -> list[FencedPartition]:
    """Each partition that held records back must see its LSO move (markers are written async).
    `marker`: the one the coordinator writes (ABORT here, COMMIT or ABORT for `complete`)."""
    deadline = time.monotonic() + min(VERIFY_S, cluster.settings.timeout)
    while True:
        now = cluster.offsets(tps)
        rows = [_checked(tp, before[tp], now[tp], marker) for tp in tps]
        # A partition not read before can never be shown to have moved: no reason to wait for it
        # (a leaderless one cost every fence the whole wait).
        pending = [
            r for r, tp in zip(rows, tps) if r.lso_moved is not True and before[tp].held_back is not None
        ]
        if not pending or time.monotonic() >= deadline:
            return rows
        time.sleep(0.2)


def _checked(tp: TP, b: Offsets, a: Offsets, marker: str = "ABORT") -> FencedPartition:
    """One partition's verdict from its offsets before and after. Unread offsets (before or
    after) are no evidence: the partition is unseen, whatever the other read said (a None
    `held_back` once passed for "nothing held back", and a leaderless partition was `ok`)."""
    if b.held_back is None or a.lso is None:
        why = b.why if b.held_back is None else a.why
        return FencedPartition(
            tp[0], tp[1], b.lso, a.lso, a.high_watermark, None, unseen_reason(tp, why, marker)
        )
    # Nothing was held back (the transaction had written nothing yet): nothing to move.
    moved = b.held_back == 0 or (b.lso is not None and a.lso > b.lso)
    return FencedPartition(tp[0], tp[1], b.lso, a.lso, a.high_watermark, moved)


def unseen_reason(tp: TP, why: str | None, marker: str = "ABORT") -> str:
    """What an operator needs about a partition fence could not read: why, and how to check its
    marker once the partition is back (a leaderless partition may never get it: KAFKA-20734)."""
    return (
        f"offsets not read ({why or 'no answer'}); its {marker} marker is unchecked: once the partition "
        f"has a leader, run `kxtx audit-markers --topic {tp[0]} --partition {tp[1]}`"
    )
