"""Pure decisions of the transaction tools: candidate filter, hanging rule, abort re-check and verdicts.

Kafka's find-hanging rules (`FindHangingTransactionsCommand`) are reproduced exactly: a candidate is a
producer with an open transaction whose last append is *strictly* older than the max transaction
timeout (no slack); it hangs when its producer id maps to no transactional id, the id is unknown to its
coordinator, or the coordinator's partitions for it do not include this partition. No epoch checks.
"""

from __future__ import annotations

from kxtx.ops.model import ACTIVE_STATES, IDLE_STATES, NOT_FOUND, TP, CoordinatorTxn, OpenTxn

DEFAULT_MAX_TIMEOUT_MS = 15 * 60 * 1000

REASON_NO_ID = "no transactional id for this producer id"
REASON_ID_NOT_FOUND = "transactional id unknown to its coordinator"
REASON_NOT_IN_TXN = "coordinator's transaction does not include this partition"


def is_candidate(p: OpenTxn, now_ms: int, max_timeout_ms: int) -> bool:
    """Kafka: `currentTransactionStartOffset` present and `now - lastTimestamp > max` (strict)."""
    return p.is_open and now_ms - p.last_timestamp > max_timeout_ms


def hanging_reason(tp: TP, txn_id: str | None, desc: CoordinatorTxn | str | None) -> str | None:
    """Why the open transaction on `tp` hangs, or None when the coordinator still tracks it.

    `desc` is the DescribeTransactions answer for `txn_id`: a CoordinatorTxn, NOT_FOUND, or None
    when no id was found."""
    if txn_id is None:
        return REASON_NO_ID
    if desc is None or desc == NOT_FOUND:
        return REASON_ID_NOT_FOUND
    if isinstance(desc, CoordinatorTxn) and tp not in desc.partitions:
        return REASON_NOT_IN_TXN
    return None


def abort_coordinator_epoch(value: int | None) -> int:
    """Kafka's rule: a pid that hung before its first marker has coordinator epoch -1; use 0 then.

    Never -1 (kafka-python's default): the leader rejects a marker whose coordinator epoch is below
    the one it stored with TRANSACTION_COORDINATOR_FENCED."""
    return 0 if value is None or value < 0 else value


def recheck(expected: OpenTxn, current: list[OpenTxn]) -> tuple[OpenTxn | None, str]:
    """Before aborting: is the same producer (id, epoch) still open at the same start offset?

    Returns (the current row to abort, "") or (None, why it is already resolved)."""
    for p in current:
        if p.producer_id != expected.producer_id:
            continue
        if not p.is_open:
            return None, "the producer has no open transaction on the partition any more"
        if p.producer_epoch != expected.producer_epoch or p.start_offset != expected.start_offset:
            return None, (
                f"the producer moved on (epoch {p.producer_epoch}, open transaction at "
                f"offset {p.start_offset}); the transaction at {expected.start_offset} ended"
            )
        return p, ""
    return None, "the producer is no longer active on the partition"


def lso_moved(start_offset: int, lso: int | None) -> bool:
    """After an abort marker the LSO must be past the transaction's first offset."""
    return lso is not None and lso > start_offset


def blocked_groups(committed: dict[str, int], lso: int | None, hw: int | None) -> list[str]:
    """Groups whose committed offset sits at the LSO while records wait behind it.

    A read_committed consumer cannot fetch past the LSO, so it commits exactly the LSO and stays
    there; a group below the LSO is only lagging, one above it reads uncommitted."""
    if lso is None or hw is None or hw <= lso:
        return []
    return sorted(g for g, off in committed.items() if off == lso)


#: What a transactional id's verdict says, in short (`txn_kind`): the words a pipe's verdict counts.
HANGING, STUCK, ONGOING, IDLE, EXPIRED = "hanging", "stuck past its timeout", "ongoing", "idle", "expired"


def txn_kind(desc: CoordinatorTxn | None, now_ms: int, hanging_on: list[TP]) -> str:
    """HANGING / STUCK / ONGOING / IDLE / EXPIRED, or the coordinator's state when none fits."""
    if hanging_on:
        return HANGING
    if desc is None or desc.state == "Dead":
        return EXPIRED
    if desc.state in IDLE_STATES:
        return IDLE
    if desc.state in ACTIVE_STATES:
        started = desc.start_time_ms >= 0
        return STUCK if started and now_ms - desc.start_time_ms > desc.timeout_ms else ONGOING
    return desc.state


def txn_verdict(desc: CoordinatorTxn | None, now_ms: int, hanging_on: list[TP]) -> str:
    """One line: idle / ongoing for X / stuck past its timeout / hanging on P / expired."""
    kind = txn_kind(desc, now_ms, hanging_on)
    if kind == HANGING:
        where = ", ".join(f"{t}:{p}" for t, p in sorted(hanging_on))
        return f"hanging on {where}"
    if desc is None or kind == EXPIRED:
        return "expired (the coordinator no longer knows this transactional id)"
    if kind == IDLE:
        return f"idle (last transaction: {desc.state})"
    if kind not in (STUCK, ONGOING):
        return desc.state
    if desc.start_time_ms < 0:
        return f"{desc.state.lower()}"
    age = max(0, now_ms - desc.start_time_ms)
    if kind == STUCK:
        return f"stuck past its timeout: {desc.state} for {fmt_age(age)} (timeout {fmt_age(desc.timeout_ms)})"
    return f"ongoing for {fmt_age(age)} (timeout {fmt_age(desc.timeout_ms)})"


def fmt_age(ms: int | None) -> str:
    """Compact age: 850ms, 42s, 3m12s, 5h03m, 2d04h."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    s = ms // 1000
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"
