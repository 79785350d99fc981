"""Telling a cluster's failover from a takeover, for the transactional producers of produce and pipe.

A producer is fenced (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) when its epoch was bumped. Another
instance starting with the same transactional id does that, and then the run must stop (exit 1). But
so does the transaction coordinator itself, when it aborts a transaction that outlived
transaction.timeout.ms while a broker was down or stalled, or when a coordinator that moved
recovers it (seen on a 3-node cluster: coordinator SIGSTOPped for 30 s). Then nothing is wrong
with the run but this producer: the committed work is safe and the same command run again
continues exactly once (exit 75). A fence shortly after the producer saw the cluster fail over is
taken to be the second kind; the message still names the first.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kxtx.client import clients
from kxtx.errors import FencedError, KxtxError, Unavailable

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

#: librdkafka errors of a cluster failing over: leaders or coordinators moving, brokers down or not
#: answering, too few in-sync replicas.
FAILOVER = clients.UNAVAILABLE | {"_TIMED_OUT", "REQUEST_TIMED_OUT", "_TRANSPORT"}


def failing_over(err: KafkaError) -> bool:
    """`err` (a confluent_kafka KafkaError) is one of a cluster failing over: a name above, or a
    code of Kafka's table of retriable and stale-metadata errors (kxtx.client.kafkaerrors)."""
    return err.name() in FAILOVER or clients.failing_over_code(err.code())


#: A fence within this many seconds of a failover error counts as part of the failover.
WINDOW_S = 120.0


class Watch:
    """When this producer last saw the cluster failing over."""

    def __init__(self) -> None:
        self.last = float("-inf")

    def note(self, err: KafkaError | None) -> None:
        """Record `err` (a confluent_kafka KafkaError, or None) if it is a failover error. Feed it
        the error callback's errors and the transactional calls' own: a stalled broker never
        closes its connections, so the error callback may stay silent."""
        if err is not None and failing_over(err):
            self.last = time.monotonic()

    def failed_transaction(self) -> None:
        """The open transaction failed because the cluster failed over (an abortable error whose
        cause is a FAILOVER error; the writer decides): a fence while aborting it, or right after,
        is the coordinator having ended it first. A transaction that failed otherwise does not
        count: then a fence is a takeover (exit 1), not a reason to run again."""
        self.last = time.monotonic()

    def explain(self, error: KxtxError) -> KxtxError:
        """`error`, or for a fence shortly after a failover, the exit-75 error saying so."""
        if isinstance(error, FencedError) and time.monotonic() - self.last < WINDOW_S:
            return Unavailable(
                f"{error}, shortly after the cluster failed over or a transaction "
                "failed (the coordinator may have ended it and bumped the epoch); if "
                "no other instance runs with this transactional id, run the same "
                "command again to continue"
            )
        return error
