"""Which partition of `__consumer_offsets` / `__transaction_state` holds a group or transactional id.

Kafka: `Utils.abs(id.hashCode()) % numPartitions` (spec section 6), where hashCode is Java's
String.hashCode over UTF-16 code units and Utils.abs maps Integer.MIN_VALUE to 0 (unlike Python's abs
or Java's Math.abs).
"""

from __future__ import annotations

_MIN_INT = -(2**31)


def java_string_hash(s: str) -> int:
    """Java String.hashCode: h = 31*h + c over UTF-16 code units, as a signed 32-bit int."""
    data = s.encode("utf-16-be", errors="surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """org.apache.kafka.common.utils.Utils.abs: Integer.MIN_VALUE -> 0, otherwise |n|."""
    return 0 if n == _MIN_INT else abs(n)


def partition_for(coordinator_key: str, num_partitions: int) -> int:
    if num_partitions <= 0:
        raise ValueError(f"partition count must be positive, got {num_partitions}")
    return kafka_abs(java_string_hash(coordinator_key)) % num_partitions
