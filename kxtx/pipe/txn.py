"""`kxtx pipe`'s driver-side transactional producer: `kxtx.client.txwriter.TxWriter` (the retry policy,
error translation, failover watch) plus the driver's record writing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kxtx.client.txwriter import Abortable, TxWriter
from kxtx.errors import KafkaOperationError
from kxtx.log import logger

if TYPE_CHECKING:
    from kxtx.client.settings import Settings


class TxnProducer(TxWriter):
    def __init__(self, settings: Settings, transactional_id: str, timeout: float) -> None:
        super().__init__(transactional_id, timeout, failover_s=settings.failover)
        self.connect(settings)

    def init(self, doing: str = "") -> None:
        super().init(doing or f"initialising transactions (transactional id {self.transactional_id!r})")

    # group_metadata: confluent-kafka's ConsumerGroupMetadata (untyped)
    def commit(self, offsets: list, group_metadata: Any) -> None:  # type: ignore[override]
        self.send_offsets(offsets, group_metadata)
        super().commit()

    def end_for_shutdown(self) -> None:
        done = super().end_for_shutdown()
        if done is not None:
            logger.info(done)


__all__ = ["Abortable", "KafkaOperationError", "TxnProducer"]
