"""Plain data for the transaction tools: what a partition says, what the coordinator says.

No I/O and no client-library types here, so the decision logic (`kxtx.ops.decide`) and its tests work
without a broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: (topic, partition)
TP = tuple[str, int]

#: Coordinator states in which DescribeTransactions lists partitions (Kafka's comment: an ongoing
#: transaction lists all of them, Prepare* those still waiting for markers; the rest list none).
ACTIVE_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
IDLE_STATES = frozenset({"Empty", "CompleteCommit", "CompleteAbort"})


@dataclass(frozen=True)
class OpenTxn:
    """One DescribeProducers row: a producer's state on one partition (start_offset < 0: none open)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_timestamp: int
    start_offset: int
    last_sequence: int = -1

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)

    @property
    def is_open(self) -> bool:
        return self.start_offset >= 0


@dataclass(frozen=True)
class CoordinatorTxn:
    """DescribeTransactions for one transactional id."""

    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: frozenset[TP] = field(default_factory=frozenset)


#: Marker for "DescribeTransactions answered TRANSACTIONAL_ID_NOT_FOUND".
NOT_FOUND = "not-found"


@dataclass
class Offsets:
    """ListOffsets read_committed (LSO) and read_uncommitted (high watermark) for one partition."""

    lso: int | None = None
    high_watermark: int | None = None
    #: why a value is None: the ListOffsets error (None while both were read)
    why: str | None = None

    @property
    def held_back(self) -> int | None:
        if self.lso is None or self.high_watermark is None:
            return None
        return max(0, self.high_watermark - self.lso)


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
