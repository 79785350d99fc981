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

from kxtx.client.kafkaerrors import FAILING_OVER, FENCE_WINDOW_S, classify
from kxtx.errors import FencedError, KxtxError, Unavailable

if TYPE_CHECKING:
    from confluent_kafka import KafkaError


class Watch:
    """When this producer last saw the cluster failing over."""

    def __init__(self) -> None:
        self.last = float("-inf")

    def note(self, err: KafkaError | None) -> None:
        """Record `err` (a confluent_kafka KafkaError, or None) if it is a failover error
        (`kafkaerrors.FAILING_OVER`: leaders or coordinators moving, brokers down or not
        answering, too few in-sync replicas). Feed it
        the error callback's errors and the transactional calls' own: a stalled broker never
        closes its connections, so the error callback may stay silent."""
        if err is not None and classify(err) in FAILING_OVER:
            self.last = time.monotonic()

    def failed_transaction(self) -> None:
        """The open transaction failed because the cluster failed over (an abortable error whose
        cause is a FAILING_OVER error; the writer decides): a fence while aborting it, or right after,
        is the coordinator having ended it first. A transaction that failed otherwise does not
        count: then a fence is a takeover (exit 1), not a reason to run again."""
        self.last = time.monotonic()

    def explain(self, error: KxtxError) -> KxtxError:
        """`error`, or for a fence shortly after a failover, the exit-75 error saying so."""
        if isinstance(error, FencedError) and time.monotonic() - self.last < FENCE_WINDOW_S:
            return Unavailable(
                f"{error}, shortly after the cluster failed over or a transaction "
                "failed (the coordinator may have ended it and bumped the epoch); if "
                "no other instance runs with this transactional id, run the same "
                "command again to continue"
            )
        return error
