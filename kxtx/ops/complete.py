"""`complete`: end one open transaction as its producer would, by EndTxn with its producer id and epoch.

What Flink's resume-and-commit sends for a pre-committed transaction: the coordinator then writes
the COMMIT (or ABORT) markers itself, on every partition of the transaction. kxtx writes none.
Safe only when the caller knows the producer id and epoch belong to the transaction meant (a Flink
checkpoint, a job's log) or accepts the coordinator's: `check` refuses any other case before
anything is sent, and `complete` verifies the outcome on the coordinator and on every partition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kxtx.client import kafka_internals
from kxtx.client.admin import Cluster
from kxtx.client.authz import Need
from kxtx.client.clients import ride_out, translate
from kxtx.client.model import CoordinatorTxn
from kxtx.errors import KxtxError, Refused
from kxtx.ops import decide, fence
from kxtx.ops.fence import FencedPartition, ProducerState, offsets_row, wait_for_lso
from kxtx.ops.owners import owner_hint
from kxtx.results import Result
from kxtx.timefmt import iso_ms

#: how long the coordinator gets to reach CompleteCommit / CompleteAbort after EndTxn
VERIFY_S = 10.0


@dataclass(frozen=True, slots=True)
class CompleteResult(Result):
    """What `complete` did, in the order of its output's keys. `ok`: the coordinator reached the
    Complete* state and every partition's LSO was read and moved (an unread one is never ok)."""

    transactional_id: str
    outcome: str
    before: ProducerState
    after: ProducerState
    coordinator_done: bool
    partitions: list[FencedPartition]
    ok: bool


def describe(cluster: Cluster, transactional_id: str) -> CoordinatorTxn:
    return fence.describe(cluster, transactional_id, ": no transaction to complete")


def _has(desc: CoordinatorTxn, state: bool = True) -> str:
    ids = f"producer id {desc.producer_id}, epoch {desc.producer_epoch}"
    return f"{ids}, state {desc.state}" if state else ids


def check(
    desc: CoordinatorTxn, producer_id: int | None, epoch: int | None, commit: bool | None = None
) -> None:
    """Refuse (exit 2, nothing sent) unless the coordinator holds an Ongoing transaction of this
    producer id and epoch (None: whatever the coordinator has, which the plan shows). `commit`: the
    outcome asked for, to say so when the transaction already ended that way (a rerun after exit 75
    whose EndTxn was served after all)."""
    tid = desc.transactional_id
    if desc.state != "Ongoing":
        started = iso_ms(desc.start_time_ms) if desc.start_time_ms >= 0 else None
        when = f" (its last transaction started {started})" if started else ""
        raise Refused(
            f"transactional id {tid!r} has no open transaction: the coordinator says {desc.state}{when}, "
            f"{_has(desc, state=False)}{_already(desc, producer_id, commit)}; nothing was changed"
        )
    given = [
        (n, v, h)
        for n, v, h in (("producer id", producer_id, desc.producer_id), ("epoch", epoch, desc.producer_epoch))
        if v is not None
    ]
    wrong = [f"{n} {v}" for n, v, h in given if v != h]
    if wrong:
        raise Refused(
            f"transactional id {tid!r}: {' and '.join(wrong)} given, but the coordinator's open transaction "
            f"is {_has(desc)}: the producer moved on, and completing would end another transaction; "
            "nothing was changed"
        )


def _already(desc: CoordinatorTxn, producer_id: int | None, commit: bool | None) -> str:
    """`, the outcome asked for` when the last transaction of this producer ended as asked."""
    if commit is None or desc.state != ("CompleteCommit" if commit else "CompleteAbort"):
        return ""
    if producer_id is not None and producer_id != desc.producer_id:
        return ""
    return f", the outcome asked for: its last transaction is {'committed' if commit else 'aborted'}"


def plan(cluster: Cluster, desc: CoordinatorTxn, commit: bool) -> dict:
    """What completing will do, for the preview."""
    tps = sorted(desc.partitions)
    offsets = cluster.offsets(tps)
    return {
        "transactional_id": desc.transactional_id,
        "outcome": "commit" if commit else "abort",
        "owner_hint": owner_hint(desc.transactional_id),
        "coordinator": desc.coordinator_id,
        "state": desc.state,
        "producer_id": desc.producer_id,
        "producer_epoch": desc.producer_epoch,
        "timeout_ms": desc.timeout_ms,
        "txn_start_time": iso_ms(desc.start_time_ms) if desc.start_time_ms >= 0 else None,
        "verdict": decide.txn_verdict(desc, int(time.time() * 1000), []),
        "partitions": [offsets_row(tp, offsets[tp]) for tp in tps],
    }


def complete(cluster: Cluster, desc: CoordinatorTxn, commit: bool) -> CompleteResult:
    """EndTxn for the transaction in `desc` (checked by `check`), then verify."""
    tps = sorted(desc.partitions)
    before = cluster.offsets(tps)
    answered = end_txn(cluster, desc, commit)
    after, done = _wait_for_state(cluster, desc, "CompleteCommit" if commit else "CompleteAbort", answered)
    rows = wait_for_lso(cluster, tps, before, marker="COMMIT" if commit else "ABORT")
    return CompleteResult(
        desc.transactional_id,
        "commit" if commit else "abort",
        ProducerState(desc.state, desc.producer_id, desc.producer_epoch),
        ProducerState(after.state, after.producer_id, after.producer_epoch),
        done,
        rows,
        done and all(r.lso_moved is True for r in rows),
    )


def end_txn(cluster: Cluster, desc: CoordinatorTxn, commit: bool) -> tuple[int, int] | None:
    """EndTxn(committed=commit) with the transaction's producer id and epoch, to the id's current
    coordinator (found again on each try: it may move), asked again while the coordinator moves,
    loads or still writes the previous markers (CONCURRENT_TRANSACTIONS). Returns the producer id
    and epoch the coordinator answered (EndTxn v5, transactions v2: the bumped epoch, or a new
    producer id at epoch 0 when the epoch was exhausted), None from an older coordinator."""
    from kafka.protocol.metadata import CoordinatorType
    from kafka.protocol.producer.transaction import EndTxnRequest

    tid = desc.transactional_id
    request = EndTxnRequest(
        transactional_id=tid,
        producer_id=desc.producer_id,
        producer_epoch=desc.producer_epoch,
        committed=commit,
    )

    def send() -> Any:  # kafka-python's responses are untyped
        admin = cluster.txn

        async def go() -> Any:
            node = await kafka_internals.coordinator(admin, tid, CoordinatorType.TRANSACTION)
            return await kafka_internals.send(admin, request, node)

        response = kafka_internals.run(admin, go)
        if response.error_code:
            import kafka.errors as errors

            raise errors.for_code(response.error_code)()
        return response

    doing = f"EndTxn {'COMMIT' if commit else 'ABORT'} for transactional id {tid!r}"
    need = Need("WRITE", "TransactionalId", tid)
    try:
        response = ride_out(send, doing, cluster.settings.timeout, need=need, renew=cluster.close)
    except Exception as exc:
        err = translate(exc, doing, need=need)
        if "fenced" in str(err):
            # the epoch moved between the check and EndTxn (the producer came back, or timed out)
            raise KxtxError(
                f"{doing}: the coordinator refused producer id {desc.producer_id}, epoch "
                f"{desc.producer_epoch} (no longer current); run `kxtx inspect txn {tid}` to see what it has"
            ) from exc
        raise err from exc
    pid, epoch = getattr(response, "producer_id", None), getattr(response, "producer_epoch", None)
    return (pid, epoch) if isinstance(pid, int) and isinstance(epoch, int) and pid >= 0 else None


def _wait_for_state(
    cluster: Cluster, desc: CoordinatorTxn, want: str, answered: tuple[int, int] | None = None
) -> tuple[CoordinatorTxn, bool]:
    """The coordinator's answer once it reached `want` with this producer, or its last answer.
    Transactions v2 (KIP-890) bump the epoch at every end: epoch + 1 is the same producer, and so
    is what EndTxn `answered`: at an exhausted epoch (32766) the coordinator ends the transaction
    and gives the producer a new producer id at epoch 0."""
    deadline = time.monotonic() + min(VERIFY_S, cluster.settings.timeout)
    while True:
        now = describe(cluster, desc.transactional_id)
        same = (
            now.producer_id == desc.producer_id
            and now.producer_epoch in (desc.producer_epoch, desc.producer_epoch + 1)
        ) or (now.producer_id, now.producer_epoch) == answered
        if (now.state == want and same) or time.monotonic() >= deadline:
            return now, now.state == want and same
        time.sleep(0.2)
