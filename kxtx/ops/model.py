"""Plain data for the transaction tools' results: a hanging partition, an abort's outcome, a held LSO.

No I/O and no client-library types here (what the cluster says is in `kxtx.client.model`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kxtx.client.model import TP


@dataclass
class HangingTxn:
    """One hanging partition: everything `abort-hanging` needs, plus the evidence around it."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int
    age_ms: int
    reason: str
    transactional_id: str | None = None
    coordinator_state: str | None = None
    coordinator_producer_id: int | None = None
    coordinator_producer_epoch: int | None = None
    #: how the transactional id was found: "ListTransactions" or "__transaction_state"
    id_source: str | None = None
    lso: int | None = None
    high_watermark: int | None = None
    held_back: int | None = None
    blocked_groups: list[str] = field(default_factory=list)
    #: the principal may lack DESCRIBE on the transactional id or topic, so the broker may have hidden
    #: the live transaction that owns this (set by hanging.acl_warning)
    maybe_false_positive: bool = False
    #: the partition's leader when find-hanging read the metadata (the broker that holds the
    #: transaction open and that abort-hanging writes the marker to)
    leader: int | None = None

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)


@dataclass
class AbortOutcome:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    start_offset: int
    #: "aborted" | "committed" | "already resolved" | "failed" | "leader moved" (nothing written: the partition's
    #: leader moved or was unreachable at the moment of the write; run the command again)
    outcome: str
    detail: str = ""
    coordinator_epoch: int | None = None
    lso_before: int | None = None
    lso_after: int | None = None
    high_watermark: int | None = None
    #: the leader in the plan, and the one the marker went to (they differ when it moved between)
    planned_leader: int | None = None
    leader: int | None = None
    #: the marker written: ABORT, or COMMIT (repair-markers)
    marker: str = "ABORT"

    @property
    def resolved(self) -> bool:
        return self.outcome in ("aborted", "committed", "already resolved")


@dataclass
class HeldLso:
    """An open transaction that holds a partition's LSO and is not hanging by Kafka's definition:
    why (`kind`, one of `decide.HOLD_*`), when it ends by itself, and the command that ends it now."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    start_offset: int
    #: since the producer last wrote to the partition
    idle_ms: int
    kind: str
    detail: str
    #: the command that ends it now; None when it ends by itself (in progress, markers on their way)
    action: str | None = None
    transactional_id: str | None = None
    coordinator_state: str | None = None
    #: when it ends by itself (the coordinator's abort at its timeout), or when it starts to count
    #: as hanging (untracked); epoch ms
    ends_ms: int | None = None
    #: who writes with this transactional id, from its shape: a hint, never a fact (`ops.owners`)
    owner_hint: str | None = None

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)
