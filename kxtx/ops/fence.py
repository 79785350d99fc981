"""`fence`: Kafka 4.1's forceTerminateTransaction, from Python.

Initialising a producer with the transactional id makes the coordinator bump the epoch, abort the
open transaction (writing ABORT markers to its partitions) and fence the live producer. It is for an
ongoing transaction of a dead or stuck application; a hanging partition the coordinator no longer
tracks needs `abort-hanging` instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kxtx.client.authz import Need
from kxtx.client.clients import producer, translate
from kxtx.errors import KxtxError
from kxtx.ops import decide
from kxtx.ops.calls import Cluster
from kxtx.ops.model import NOT_FOUND, TP, CoordinatorTxn, Offsets
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
    """A partition of the fenced transaction: did its LSO move past the aborted records?"""

    topic: str
    partition: int
    lso_before: int | None
    lso_after: int | None
    high_watermark: int | None
    lso_moved: bool


@dataclass(frozen=True, slots=True)
class FenceResult(Result):
    """What `fence` did, in the order of its output's keys; `ok`: every partition's LSO moved."""

    transactional_id: str
    before: ProducerState
    after: ProducerState
    partitions: list[FencedPartition]
    ok: bool


def describe(cluster: Cluster, transactional_id: str) -> CoordinatorTxn:
    desc = cluster.describe_txns([transactional_id]).get(transactional_id, NOT_FOUND)
    if not isinstance(desc, CoordinatorTxn):
        raise KxtxError(
            f"transactional id {transactional_id!r} is unknown to its coordinator; "
            "fencing it would only create it"
        )
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
                "topic": t,
                "partition": p,
                "lso": offsets[(t, p)].lso,
                "high_watermark": offsets[(t, p)].high_watermark,
                "held_back": offsets[(t, p)].held_back,
            }
            for t, p in tps
        ],
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
    rows = _wait_for_lso(cluster, tps, before)
    return FenceResult(
        desc.transactional_id,
        ProducerState(desc.state, desc.producer_id, desc.producer_epoch),
        ProducerState(after.state, after.producer_id, after.producer_epoch),
        rows,
        all(r.lso_moved for r in rows),
    )


def _wait_for_lso(
    cluster: Cluster, tps: list[TP], before: dict[tuple[str, int], Offsets]
) -> list[FencedPartition]:
    """Each partition that held records back must see its LSO move (markers are written async)."""
    deadline = time.monotonic() + min(VERIFY_S, cluster.settings.timeout)
    while True:
        now = cluster.offsets(tps)
        rows = []
        for tp in tps:
            b, a = before[tp], now[tp]
            # Nothing was held back (the transaction had written nothing yet): nothing to move.
            moved = not b.held_back or (a.lso is not None and b.lso is not None and a.lso > b.lso)
            rows.append(FencedPartition(tp[0], tp[1], b.lso, a.lso, a.high_watermark, moved))
        if all(r.lso_moved for r in rows) or time.monotonic() >= deadline:
            return rows
        time.sleep(0.2)
