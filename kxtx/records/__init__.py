"""Pure decoders for Kafka's internal topics (`__transaction_state`, `__consumer_offsets`), and of
record batches as Fetch returns them (`batchheader`: the headers; `batchrecords`: a batch's records).

No I/O: bytes in, `Record` out. Written from `../shared/spec/internal-records.md`.
"""

from __future__ import annotations

from kxtx.records import group_log, txn_log
from kxtx.records.record import Record

TXN_TOPIC = txn_log.TOPIC
OFFSETS_TOPIC = group_log.TOPIC
_DECODERS = {TXN_TOPIC: txn_log.decode, OFFSETS_TOPIC: group_log.decode}


def decode(topic: str, key: bytes | None, value: bytes | None) -> Record:
    """Decode one record of an internal topic (the schema set is chosen by topic name)."""
    try:
        return _DECODERS[topic](key, value)
    except KeyError:
        raise ValueError(f"no decoder for topic {topic!r}") from None


__all__ = ["OFFSETS_TOPIC", "TXN_TOPIC", "Record", "decode"]
