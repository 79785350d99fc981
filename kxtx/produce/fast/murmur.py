"""Kafka's default partitioner for keyed records (the Java client's and librdkafka's
`murmur2_random`): partition = (murmur2(key) & 0x7fffffff) % partitions.

The fast path computes the partitions of a whole block at once and gives them to librdkafka
explicitly: that lets it count the records of each partition itself instead of asking librdkafka for
a delivery report per record. A pure-Python murmur2 costs ~2-4 us a key; here the keys of one length
are hashed together, each 32-bit lane of the hash in its own 64-bit slot of one big Python int (SIMD
within a register): every step of the hash is then one multiplication, shift, xor or mask over all
keys, done in C. Lanes never carry into each other: a lane holds < 2**32 before each step, the
product with the 32-bit constant < 2**64, and the masks cut each lane back to 32 bits.
"""

from __future__ import annotations

from collections import Counter
from itertools import repeat
from operator import itemgetter
from typing import Any

from kxtx.fast import speedups

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK32 = 0xFFFFFFFF


def murmur2(key: bytes) -> int:
    """Kafka's murmur2 (Utils.murmur2) as an unsigned 32-bit int: the reference for one key."""
    n = len(key)
    h = (_SEED ^ n) & _MASK32
    for i in range(0, n - n % 4, 4):
        k = (int.from_bytes(key[i : i + 4], "little") * _M) & _MASK32
        k = ((k ^ (k >> 24)) * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    if n % 4:
        h = ((h ^ int.from_bytes(key[n - n % 4 :], "little")) * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    return h ^ (h >> 15)


def partition(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def _hash_same_length(keys: tuple, length: int, n: int) -> list[int]:
    """(murmur2(key) & 0x7fffffff) % n of keys that are all `length` bytes long.

    The keys are padded with zero bytes to a multiple of 8 and joined: 8 bytes of every key, one
    strided copy, are then one int whose 64-bit lanes hold two 4-byte words of the hash each (a
    tail of 1-3 bytes, zero-padded, is the little-endian int murmur2 mixes in)."""
    m = len(keys)
    ones = int.from_bytes(b"\1\0\0\0\0\0\0\0" * m, "little")
    mask = ones * _MASK32
    padded = (length + 7) & ~7
    data = b"".join(keys if padded == length else map(bytes.ljust, keys, repeat(padded), repeat(b"\0")))
    slots = padded // 8
    view = memoryview(data).cast("Q")
    words, tail = divmod(length, 4)
    h = ((_SEED ^ length) & _MASK32) * ones
    for c in range(slots):
        if slots == 1:
            chunk = int.from_bytes(data, "little")
        else:
            buf = bytearray(8 * m)
            memoryview(buf).cast("Q")[:] = view[c::slots]
            chunk = int.from_bytes(buf, "little")
        for w, lane in ((2 * c, chunk & mask), (2 * c + 1, (chunk >> 32) & mask)):
            if w < words:
                k = (lane * _M) & mask
                k = ((k ^ ((k >> 24) & mask)) * _M) & mask
                h = ((h * _M) & mask) ^ k
            elif w == words and tail:
                h = ((h ^ lane) * _M) & mask
    h ^= (h >> 13) & mask
    h = (h * _M) & mask
    h ^= (h >> 15) & mask
    h &= ones * 0x7FFFFFFF
    if n > 1:
        # h % n in every lane at once: q = h // n as (h * magic) >> shift, exact for h < 2**31
        # (Granlund & Montgomery 1994, theorem 4.2; magic < 2**32, so h * magic < 2**63 stays in
        # its lane); the shift brings the next lane's low bits into this lane's top 'shift' bits,
        # which the mask clears (q itself is below 2**(64 - shift)); then h - q * n, never below
        # zero, so no lane borrows from the next
        shift = 31 + (n - 1).bit_length()
        magic = -(-(1 << shift) // n)
        q = ((h * magic) >> shift) & (ones * ((1 << (64 - shift)) - 1))
        h -= q * n
    else:
        h = 0
    return memoryview(h.to_bytes(8 * m, "little")).cast("Q").tolist()


def partitions_of(keys: list[bytes], n: int) -> list[int]:
    """The partition of each key among n, as librdkafka's murmur2_random chooses it; -1 for an
    empty key (left to librdkafka: whether it hashes or randomises an empty key is its business)."""
    if not keys:
        return []
    lens = list(map(len, keys))
    if lens.count(lens[0]) == len(lens):  # one length (fixed-width ids): no grouping
        return _partitions_same_length(tuple(keys), lens[0], n)
    order = sorted(range(len(keys)), key=lens.__getitem__)  # indices grouped by key length
    hashes: list[int] = []
    start = 0
    for length, size in sorted(Counter(lens).items()):
        idx = order[start : start + size]
        start += size
        grouped = itemgetter(*idx)(keys) if size > 1 else (keys[idx[0]],)
        hashes += _partitions_same_length(grouped, length, n)
    return list(map(dict(zip(order, hashes)).__getitem__, range(len(keys))))


def _partitions_same_length(keys: tuple, length: int, n: int) -> list[int]:
    if length == 0:
        return [-1] * len(keys)
    return _hash_same_length(keys, length, n)


class Partitioner:
    """partitions_of() for one partition count: by kxtx's C loop where it was built (one call for
    all keys, kxtx.fast.speedups), else by confluent-kafka's murmur2 where it has one (2.13 and later,
    in C, a call per key: a quarter of the time of partitions_of, bench/README.md "Against kcat"),
    else by partitions_of. (A memory of recent keys was tried: a dict lookup of a bytes key costs
    about as much as hashing it here, measured.)"""

    def __init__(self, partitions: int, native: bool = True) -> None:
        self.n = partitions
        self._loop = speedups.module() if native else None
        self._murmur2 = _native_murmur2() if native else None

    def __call__(self, keys: list[bytes]) -> list[int]:
        if self._loop is not None and type(keys) is list:
            parts: list[int] | None = self._loop.partitions(keys, self.n)
            if parts is not None:
                return parts
        if self._murmur2 is None:
            return partitions_of(keys, self.n)
        parts = list(map(self._murmur2, keys, repeat(self.n)))
        if not all(keys):  # an empty key: librdkafka partitions it (see partitions_of)
            parts = [p if k else -1 for k, p in zip(keys, parts)]
        return parts


def _native_murmur2() -> Any:
    """confluent-kafka's murmur2(key, partitions), the Java client's partition, or None."""
    try:
        from confluent_kafka import murmur2
    except ImportError:  # confluent-kafka before 2.13
        return None
    return murmur2
