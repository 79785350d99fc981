"""Plain data the admin façade (`kxtx.client.admin.Cluster`) returns: what a partition says, what
the coordinator says.

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
