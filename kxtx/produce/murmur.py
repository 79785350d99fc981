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
from operator import itemgetter

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK32 = 0xFFFFFFFF


def murmur2(key: bytes) -> int:
    """Kafka's murmur2 (Utils.murmur2) as an unsigned 32-bit int: the reference for one key."""
    n = len(key)
    h = (_SEED ^ n) & _MASK32
    for i in range(0, n - n % 4, 4):
        k = (int.from_bytes(key[i:i + 4], "little") * _M) & _MASK32
        k = ((k ^ (k >> 24)) * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    if n % 4:
        h = ((h ^ int.from_bytes(key[n - n % 4:], "little")) * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    return h ^ (h >> 15)


def partition(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def _lanes(data: bytes, m: int, stride: int, first: int, width: int) -> int:
    """Bytes [first, first + width) of each of the m keys packed in `data` (each `stride` long),
    as one int with a 64-bit lane per key (little endian, the rest of each lane zero)."""
    buf = bytearray(8 * m)
    view = memoryview(data)
    for b in range(width):
        buf[b::8] = view[first + b::stride]
    return int.from_bytes(buf, "little")


def _hash_same_length(keys: tuple, length: int, n: int) -> list[int]:
    """(murmur2(key) & 0x7fffffff) % n of keys that are all `length` bytes long."""
    m = len(keys)
    ones = int.from_bytes(b"\1\0\0\0\0\0\0\0" * m, "little")
    mask = ones * _MASK32
    data = b"".join(keys)
    h = ((_SEED ^ length) & _MASK32) * ones
    for i in range(0, length - length % 4, 4):
        k = (_lanes(data, m, length, i, 4) * _M) & mask
        k = ((k ^ ((k >> 24) & mask)) * _M) & mask
        h = ((h * _M) & mask) ^ k
    if length % 4:
        tail = _lanes(data, m, length, length - length % 4, length % 4)
        h = ((h ^ tail) * _M) & mask
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
        idx = order[start:start + size]
        start += size
        grouped = itemgetter(*idx)(keys) if size > 1 else (keys[idx[0]],)
        hashes += _partitions_same_length(grouped, length, n)
    return list(map(dict(zip(order, hashes)).__getitem__, range(len(keys))))


def _partitions_same_length(keys: tuple, length: int, n: int) -> list[int]:
    if length == 0:
        return [-1] * len(keys)
    return _hash_same_length(keys, length, n)


class Partitioner:
    """partitions_of() for one partition count. (A memory of recent keys was tried: a dict lookup
    of a bytes key costs about as much as hashing it here, measured.)"""

    def __init__(self, partitions: int):
        self.n = partitions

    def __call__(self, keys: list[bytes]) -> list[int]:
        return partitions_of(keys, self.n)
