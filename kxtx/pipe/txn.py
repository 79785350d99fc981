"""`kxtx pipe`'s driver-side transactional producer: `kxtx.txwriter.TxWriter` (the retry policy,
error translation, failover watch) plus the driver's record writing.
"""

from __future__ import annotations

from kxtx.errors import KafkaOperationError
from kxtx.log import logger
from kxtx.txwriter import FAILOVER_RETRY_S, Abortable, TxWriter


class TxnProducer(TxWriter):
    def __init__(self, settings, transactional_id: str, timeout: float):
        super().__init__(transactional_id, timeout)
        self.connect(settings)

    def init(self, doing: str = "") -> None:
        super().init(doing or f"initialising transactions (transactional id {self.transactional_id!r})")

    def produce_outputs(self, batch: list, rows: dict, default_topic: str) -> int:
        n = 0
        cols = (
            rows["idx"],
            rows["key_set"],
            rows["key"],
            rows["value"],
            rows["headers_set"],
            rows["headers"],
            rows["topic"],
            rows["error"],
        )
        for idx, key_set, key, value, headers_set, headers, topic, error in zip(*cols):
            if error is not None:
                continue
            m = batch[idx]
            if not key_set:
                key = m.key()
            headers = [(h["key"], h["value"]) for h in headers] if headers_set else m.headers()
            self._produce(topic or default_topic, value, key, headers)
            n += 1
        return n

    def produce_values(self, batch: list, values: list, topic: str) -> int:
        """One value per input record, with its key and headers (the common case: no per-record
        output parsing, the producer called directly; a full queue goes the slow way)."""
        from confluent_kafka import KafkaException

        produce = self.producer.produce
        for m, value in zip(batch, values):
            headers = m.headers()
            try:
                if headers:
                    produce(topic, value, m.key(), headers=headers)
                else:
                    produce(topic, value, m.key())
            except BufferError:
                self._produce(topic, value, m.key(), headers)
            except KafkaException as exc:
                self._raise(exc, f"producing to {topic}")
        return len(values)

    def produce_dlq(self, batch: list, errors: list, dlq: str, udf_name: str) -> int:
        for idx, text in errors:
            m = batch[idx]
            headers = list(m.headers() or []) + [
                ("kxtx.error", text.encode("utf-8")),
                ("kxtx.udf", udf_name.encode("utf-8")),
                ("kxtx.source.topic", m.topic().encode("utf-8")),
                ("kxtx.source.partition", str(m.partition()).encode()),
                ("kxtx.source.offset", str(m.offset()).encode()),
            ]
            self._produce(dlq, m.value(), m.key(), headers)
        return len(errors)

    #: the record-writing methods above predate TxWriter's names
    _produce = TxWriter.produce
    _raise = TxWriter.fail

    def commit(self, offsets: list, group_metadata) -> None:  # type: ignore[override]
        self.send_offsets(offsets, group_metadata)
        super().commit()

    def end_for_shutdown(self) -> None:
        done = super().end_for_shutdown()
        if done is not None:
            logger.info(done)


__all__ = ["FAILOVER_RETRY_S", "Abortable", "KafkaOperationError", "TxnProducer"]
