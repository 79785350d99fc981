"""Records handed to librdkafka a batch at a time: `rd_kafka_produce_batch`, called through ctypes
on the very librdkafka client behind a confluent-kafka `Producer`.

Why. On the fast paths of `kxtx produce`, one `Producer.produce()` call per record was most of the
process's own CPU work (argument parsing, a call into the extension, a message of its own for each
record), and the gap to kcat (bench/README.md, "Against kcat"). confluent-kafka's `produce_batch`
takes a dict per record and costs what `produce()` does, or more with keys (bench/README.md, "The
speed annex, path by path"). `rd_kafka_produce_batch` takes an array of `rd_kafka_message_t`, built
here for a whole run of records with loops in C.

How. The client is the producer's own: `rd_kafka_t *` is the first field of confluent-kafka's
`Handle` after the object header (src/confluent_kafka/src/confluent_kafka.h, the same in every
release since 0.9), and the functions are looked up through confluent-kafka's extension module, so
they are those of the librdkafka it was built with (its own copy in a wheel, or the system's). Its
transactions, retries and errors stay the producer's: records of a batch join the open
transaction as `produce()` would put them there. They get no delivery report of their own
(confluent-kafka's report callback skips a message it did not create); a record that fails after
it was queued still fails the transaction's commit, as with `produce()`.

`Batcher.of` gives None wherever that cannot be relied on (another Python, a confluent-kafka outside
the versions kxtx is tested with, a librdkafka other than the extension's, KXTX_PRODUCE_BATCH=0);
the caller then produces record by record.
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from itertools import accumulate
from typing import Any

from kxtx import fast
from kxtx.fast import speedups

#: librdkafka's flag: copy the payload and key (the caller's buffer is gone after the call)
_MSG_F_COPY = 0x2
#: librdkafka's flag: each message goes to the partition in its own `partition` field
_MSG_F_PARTITION = 0x8
#: librdkafka's error code for a full local queue (RD_KAFKA_RESP_ERR__QUEUE_FULL)
QUEUE_FULL = -184


class _Message(ctypes.Structure):
    """rd_kafka_message_t (rdkafka.h), part of librdkafka's stable ABI."""

    _fields_ = [
        ("err", ctypes.c_int),
        ("rkt", ctypes.c_void_p),
        ("partition", ctypes.c_int32),
        ("payload", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
        ("key", ctypes.c_void_p),
        ("key_len", ctypes.c_size_t),
        ("offset", ctypes.c_int64),
        ("_private", ctypes.c_void_p),
    ]


_WORD = ctypes.sizeof(ctypes.c_int64)
_STRIDE = ctypes.sizeof(_Message) // _WORD  # the message array is built as 64-bit words
_PARTITION, _PAYLOAD, _LEN, _KEY, _KEY_LEN = (
    getattr(_Message, f).offset // _WORD for f in ("partition", "payload", "len", "key", "key_len")
)

_ZERO = [0]

_lib: Any = None  # the functions, once looked up; False: not usable here


def _library() -> Any:
    global _lib
    if _lib is None:
        _lib = _load() or False
    return _lib


def _load() -> Any:
    if not fast.enabled("produce-batch"):
        return None
    # Where object layouts are CPython's own and ctypes hands a bytes object's buffer to C
    # and the message array's words are as laid out here (partition: the low half of a word)
    if sys.implementation.name != "cpython" or sys.byteorder != "little" or ctypes.sizeof(_Message) % _WORD:
        return None
    try:
        import confluent_kafka
        from confluent_kafka import cimpl

        version = confluent_kafka.version()  # "2.16.1"; ("2.6.0", 0x2060000) before 2.13
        major, minor = (
            int(x) for x in (version[0] if isinstance(version, tuple) else version).split(".")[:2]
        )
        if not (2, 6) <= (major, minor) < (3, 0):  # the range pyproject.toml allows, and tested
            return None
        lib = ctypes.CDLL(cimpl.__file__)  # already loaded: its symbols, then its librdkafka's
        lib.rd_kafka_version.restype = ctypes.c_int
        if lib.rd_kafka_version() != confluent_kafka.libversion()[1]:
            return None
        lib.rd_kafka_topic_new.restype = ctypes.c_void_p
        lib.rd_kafka_topic_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        lib.rd_kafka_topic_destroy.restype = None
        lib.rd_kafka_topic_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_produce_batch.restype = ctypes.c_int
        lib.rd_kafka_produce_batch.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int32,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_int,
        ]
        lib.rd_kafka_name.restype = ctypes.c_char_p
        lib.rd_kafka_name.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_type.restype = ctypes.c_int
        lib.rd_kafka_type.argtypes = [ctypes.c_void_p]
    except (ImportError, OSError, AttributeError, ValueError):
        return None
    return lib


def _address(data: bytes) -> int:
    """Where a bytes object's contents are (ctypes passes the same pointer to C for a bytes
    argument); valid while `data` lives."""
    return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0


class Batcher:
    """Hands runs of records to one producer's librdkafka client."""

    def __init__(self, lib: Any, rk: int) -> None:
        self._lib, self._rk = lib, rk

    @classmethod
    def of(cls, producer: Any, topic: str, timeout: float) -> Batcher | None:
        """A Batcher for a confluent-kafka Producer writing to `topic`, or None where batches
        cannot be used."""
        from confluent_kafka import KafkaException, Producer

        lib = _library()
        if not lib or not isinstance(producer, Producer):
            return None
        rk = handle(producer)
        # rd_kafka_type: 0 for a producer; the name librdkafka gives a producer client
        if not rk or lib.rd_kafka_type(rk) != 0 or b"#producer-" not in (lib.rd_kafka_name(rk) or b""):
            return None
        # The topic's partitions in the client's metadata first. A batch of records each with its
        # own partition, queued before librdkafka knows the topic, adds the "unassigned" partition
        # (-1) to the transaction, which the coordinator refuses (UNKNOWN_TOPIC_OR_PARTITION) and
        # the transaction is lost; produce() waits for the metadata instead.
        try:
            if not producer.list_topics(topic, timeout).topics[topic].partitions:
                return None
        except (KafkaException, KeyError):
            return None
        return cls(lib, rk)

    def produce(
        self,
        topic: str,
        partition: int | list[int],
        values: list[bytes],
        k: int,
        end: int,
        keys: list[bytes] | None = None,
    ) -> tuple[int, list[tuple[int, int]]]:
        """Queue values[k:end] (with keys[k:end], if given) to `topic`, in order, copied: all to
        `partition`, or each to its own (partition[k:end]). Returns (where to go on, failures):
        every record before where to go on was queued but the failures, (index, librdkafka error
        code) each, in order; where to go on is `end`, or the first record refused because the
        local queue is full (the caller serves delivery reports and goes on from there)."""
        n = end - k
        if n <= 0:
            return end, []
        # zeroed words: repeating an array is ~25x faster than an array made from zeroed bytes
        msgs = array("q", _ZERO) * (_STRIDE * n)
        keep = [_point(msgs, values, k, end, _PAYLOAD, _LEN)]
        if keys is not None:
            keep.append(_point(msgs, keys, k, end, _KEY, _KEY_LEN))
        flags = _MSG_F_COPY
        if isinstance(partition, list):  # int32 fields: the low half of their word (little-endian)
            msgs[_PARTITION::_STRIDE] = array("q", partition[k:end])
            partition, flags = 0, flags | _MSG_F_PARTITION
        rkt = self._lib.rd_kafka_topic_new(self._rk, topic.encode(), None)
        if not rkt:
            raise OSError(f"librdkafka refused a handle for topic {topic!r}")
        try:
            taken = self._lib.rd_kafka_produce_batch(rkt, partition, flags, msgs.buffer_info()[0], n)
        finally:
            self._lib.rd_kafka_topic_destroy(rkt)
        del keep
        if taken == n:
            return end, []
        failed: list[tuple[int, int]] = []
        view = (_Message * n).from_buffer(msgs)
        for i in range(n):
            err = view[i].err
            if err == QUEUE_FULL:  # the queue only fills up within a call: nothing after it was taken
                return k + i, failed
            if err:
                failed.append((k + i, err))
        return end, failed


def handle(producer: Any) -> int:
    """The `rd_kafka_t *` behind a confluent-kafka Producer: the first field after the object
    header (see the module docstring)."""
    return ctypes.c_void_p.from_address(id(producer) + object.__basicsize__).value or 0


def refusal(err: int) -> Exception:
    """The exception `produce()` raises for a record librdkafka refuses with error code `err`."""
    from confluent_kafka import KafkaError, KafkaException

    return KafkaException(KafkaError(err))


def _point(msgs: array, parts: list[bytes], k: int, end: int, at: int, len_at: int) -> object:
    """Point the messages' field `at` (its length: `len_at`) at parts[k:end]: at each part's own
    bytes by the C loop (kxtx.fast.speedups), else into one buffer `_fill` joins them into. Returns
    what must outlive the call that reads the messages."""
    native = speedups.module()
    if native is not None and type(parts) is list and native.fill(msgs, parts, k, end, at, len_at, _STRIDE):
        return parts
    return _fill(msgs, parts[k:end], at, len_at)


def _fill(msgs: array, parts: list[bytes], at: int, len_at: int) -> bytes:
    """Point the messages' field `at` (its length: `len_at`) into one buffer holding `parts` end to
    end. Returns the buffer, which must outlive the call. (b"".join takes nothing but bytes-like
    objects: no pointer here can point anywhere else.)"""
    lengths, data = list(map(len, parts)), b"".join(parts)
    # (an array from a list is built faster than from the iterator itself)
    msgs[at::_STRIDE] = array("q", list(accumulate(lengths[:-1], initial=_address(data))))
    msgs[len_at::_STRIDE] = array("q", lengths)
    return data
