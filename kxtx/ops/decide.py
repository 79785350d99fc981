"""Pure decisions of the transaction tools: candidate filter, hanging rule, abort re-check and verdicts.

Kafka's find-hanging rules (`FindHangingTransactionsCommand`) are reproduced exactly: a candidate is a
producer with an open transaction whose last append is *strictly* older than the max transaction
timeout (no slack); it hangs when its producer id maps to no transactional id, the id is unknown to its
coordinator, or the coordinator's partitions for it do not include this partition. No epoch checks.
"""

from __future__ import annotations

from kxtx.client.model import ACTIVE_STATES, IDLE_STATES, NOT_FOUND, TP, CoordinatorTxn, OpenTxn
from kxtx.timefmt import iso_ms

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


# --- why an LSO is stuck ---------------------------------------------------------------------------
#: The classes of an open transaction that holds a partition's LSO (`hold_class`).
HOLD_HANGING = "hanging"  # Kafka's definition: no coordinator will end it
HOLD_LOST_MARKER = "lost-marker"  # its coordinator ended it without this partition's marker
HOLD_UNTRACKED = "untracked"  # no coordinator tracks it; hangs by Kafka's rule once idle long enough
HOLD_ABANDONED = "abandoned"  # tracked, its producer silent: the coordinator aborts it at its timeout
HOLD_ENDING = "ending"  # the coordinator decided (Prepare*) and is writing its markers
HOLD_IN_PROGRESS = "in-progress"  # a live producer's transaction: normal

#: A tracked transaction whose producer appended nothing for this long is called abandoned: longer
#: than any commit interval of the common writers (Kafka Streams 100 ms, kxtx 10 s; a Flink
#: checkpoint interval can be longer: the class is a hint, the coordinator's deadline the fact).
ABANDONED_IDLE_MS = 60_000

#: Classes for which kxtx names a command to run (the others end by themselves).
NEEDS_ACTION_HOLDS = frozenset({HOLD_HANGING, HOLD_LOST_MARKER, HOLD_UNTRACKED, HOLD_ABANDONED})


def hold_class(
    p: OpenTxn,
    txn_id: str | None,
    desc: CoordinatorTxn | str | None,
    now_ms: int,
    max_timeout_ms: int,
    idle_ms: int = ABANDONED_IDLE_MS,
) -> tuple[str, int | None]:
    """(class, when it ends by itself in epoch ms or None) of the open transaction `p`: hanging by
    Kafka's rule first, then why it is not. A tracked transaction ends at its coordinator's start
    time plus its timeout (the coordinator aborts it then); an untracked one becomes hanging by
    Kafka's rule once idle past `max_timeout_ms` (that time is given: the partition stays stuck)."""
    reason = hanging_reason(p.tp, txn_id, desc)
    if reason is not None:
        if is_candidate(p, now_ms, max_timeout_ms):
            return HOLD_HANGING, None
        if isinstance(desc, CoordinatorTxn) and _ended_without(desc, p):
            return HOLD_LOST_MARKER, None
        # no id, an unknown one, or a running transaction that never added this partition (a
        # write outside it): no marker will come, and Kafka calls it hanging once idle long enough
        return HOLD_UNTRACKED, p.last_timestamp + max_timeout_ms + 1
    if not isinstance(desc, CoordinatorTxn):  # hanging_reason tracks only described ids
        return HOLD_UNTRACKED, p.last_timestamp + max_timeout_ms + 1
    ends = desc.start_time_ms + desc.timeout_ms if desc.start_time_ms >= 0 else None
    if desc.state in ("PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
        return HOLD_ENDING, None
    if now_ms - p.last_timestamp >= idle_ms:
        return HOLD_ABANDONED, ends
    return HOLD_IN_PROGRESS, ends


def _ended_without(desc: CoordinatorTxn, p: OpenTxn) -> bool:
    """Did the coordinator end `p`'s transaction (without its marker on `p`'s partition)? Complete*
    says so; Empty only once the producer moved past `p`'s epoch (a fence, transactions v2's bump):
    at the same epoch the coordinator never began that transaction (a write outside it)."""
    if desc.state in ("CompleteCommit", "CompleteAbort"):
        return True
    moved_on = desc.producer_id != p.producer_id or desc.producer_epoch > p.producer_epoch
    return desc.state == "Empty" and moved_on


def hold_action(kind: str, tp: TP, txn_id: str | None) -> str | None:
    """The command that ends a held LSO of class `kind` now, or None when it ends by itself."""
    where = f"--topic {tp[0]} --partition {tp[1]}"
    if kind == HOLD_HANGING:
        return f"kxtx abort-hanging {where}"
    if kind == HOLD_LOST_MARKER:
        return f"kxtx audit-markers {where}, then kxtx repair-markers {where}"
    if kind == HOLD_UNTRACKED:
        return f"kxtx abort-hanging {where} --max-transaction-timeout 0"
    if kind == HOLD_ABANDONED and txn_id:
        return f"kxtx fence {txn_id}"
    return None


def hold_detail(kind: str, ends_ms: int | None, desc: CoordinatorTxn | str | None) -> str:
    """One sentence: why this transaction holds the LSO, and when that stops by itself."""
    if kind == HOLD_HANGING:
        return "hanging: no coordinator will end it"
    if kind == HOLD_LOST_MARKER:
        state = desc.state if isinstance(desc, CoordinatorTxn) else "?"
        return (
            f"its coordinator ended the transaction ({state}) without this partition's marker: "
            "a lost marker, stuck until one is written"
        )
    if kind == HOLD_UNTRACKED:
        whose = (
            f"its coordinator's transaction ({desc.state}) does not include this partition"
            if isinstance(desc, CoordinatorTxn)
            else "no coordinator tracks it"
        )
        return f"{whose}: no marker will come; it counts as hanging from {iso_ms(ends_ms)} (Kafka's rule)"
    if kind == HOLD_ENDING:
        return "its coordinator decided and is writing the markers"
    if kind == HOLD_ABANDONED:
        when = f" at {iso_ms(ends_ms)}" if ends_ms is not None else ""
        return (
            f"its producer has written nothing for over {fmt_age(ABANDONED_IDLE_MS)}: likely abandoned; "
            f"the coordinator aborts it{when} (transaction.timeout.ms)"
        )
    when = f" (the coordinator aborts it at {iso_ms(ends_ms)} unless it ends first)" if ends_ms else ""
    return f"a live producer's transaction in progress{when}"
