"""kxtx.native (kxtx/native.c), the optional C loops, against the Python loops they replace: the
same message arrays (kxtx.client.batch._fill) and the same partitions (Kafka's murmur2,
kxtx.produce.murmur). Where the module was not built the tests skip; under CI (which installs a C
compiler and Python's headers, .ci/run) they fail instead: CI must run them."""

from __future__ import annotations

import ctypes
import importlib.util
import random
from array import array

import pytest

from kxtx import speedups
from kxtx.client import batch
from kxtx.produce import murmur
from tests.binaries import need_native


@pytest.fixture
def native():
    return need_native()


def _messages(n: int) -> array:
    return array("q", [0]) * (ctypes.sizeof(batch._Message) // 8 * n)


def _fields(msgs: array, n: int, at: str, length: str) -> list[bytes]:
    view = (batch._Message * n).from_buffer(msgs)
    return [ctypes.string_at(getattr(m, at), getattr(m, length)) for m in view]


RECORDS = [
    [b"a"],
    [b"", b"x", b""],
    [b"{}", b'{"k":1}', "é".encode() * 40, b"\x00\xff"],
    [bytes([i % 256]) * (i % 300) for i in range(1000)],
]


# from the first record and from the second (a batch of no record never gets here: Batcher.produce
# returns first)
@pytest.mark.parametrize("parts, k", [(parts, k) for parts in RECORDS for k in (0, 1) if k < len(parts)])
def test_fill_points_the_messages_where_the_python_fill_does(native, parts, k):
    """Payloads and keys of records [k, end): the same bytes through either loop (the C loop points
    at each record's own bytes, the Python one into a joined copy)."""
    end = len(parts)
    n = end - k
    keys = [b"k%d" % i for i in range(end)]
    by_c, by_py = _messages(n), _messages(n)
    assert native.fill(by_c, parts, k, end, batch._PAYLOAD, batch._LEN, batch._STRIDE) is True
    assert native.fill(by_c, keys, k, end, batch._KEY, batch._KEY_LEN, batch._STRIDE) is True
    keep = [batch._fill(by_py, parts[k:end], batch._PAYLOAD, batch._LEN)]
    keep.append(batch._fill(by_py, keys[k:end], batch._KEY, batch._KEY_LEN))
    assert _fields(by_c, n, "payload", "len") == _fields(by_py, n, "payload", "len") == parts[k:end]
    assert _fields(by_c, n, "key", "key_len") == _fields(by_py, n, "key", "key_len") == keys[k:end]
    # nothing but the two fields written: the rest of each message stays zero
    other = [
        i for i in range(batch._STRIDE) if i not in (batch._PAYLOAD, batch._LEN, batch._KEY, batch._KEY_LEN)
    ]
    assert all(by_c[m * batch._STRIDE + i] == 0 for m in range(n) for i in other)
    del keep


def test_fill_leaves_anything_but_bytes_to_the_caller(native):
    msgs = _messages(3)
    for odd in ("text", bytearray(b"b"), memoryview(b"m"), None):
        assert native.fill(msgs, [b"a", odd, b"c"], 0, 3, batch._PAYLOAD, batch._LEN, batch._STRIDE) is False
        assert not any(msgs), "nothing written"
    # and batch's own caller then joins them as before (bytes-like objects only)
    keep = batch._point(msgs, [b"a", bytearray(b"b"), b"c"], 0, 3, batch._PAYLOAD, batch._LEN)
    assert _fields(msgs, 3, "payload", "len") == [b"a", b"b", b"c"]
    del keep


@pytest.mark.parametrize(
    "k, end, at, short",
    [(-1, 2, 3, False), (0, 5, 3, False), (2, 1, 3, False), (0, 2, 99, False), (0, 2, 3, True)],
    ids=["negative-k", "past-the-list", "end-before-k", "field-outside-a-message", "array-too-short"],
)
def test_fill_refuses_what_would_write_outside_the_array(native, k, end, at, short):
    msgs = _messages(1 if short else 4)
    with pytest.raises(ValueError):
        native.fill(msgs, [b"a", b"b", b"c"], k, end, at, batch._LEN, batch._STRIDE)


def test_fill_needs_a_writable_array(native):
    with pytest.raises((TypeError, BufferError)):
        native.fill(bytes(72), [b"a"], 0, 1, batch._PAYLOAD, batch._LEN, batch._STRIDE)


@pytest.mark.parametrize("n", [1, 2, 6, 7, 100, 65537, 2**31 - 1])
def test_partitions_are_kafkas_murmur2(native, n):
    """Every key length 0-40 (each tail of 0-3 bytes after whole words), random bytes, against
    the Python reference of Kafka's Utils.murmur2; an empty key is -1 (left to librdkafka)."""
    rnd = random.Random(n)
    keys = [rnd.randbytes(length) for length in range(41) for _ in range(50)]
    want = [-1 if not key else murmur.partition(key, n) for key in keys]
    assert native.partitions(keys, n) == want


#: Kafka's own test vectors of Utils.murmur2 (clients/src/test/.../utils/UtilsTest.java, testMurmur2)
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("n", [1, 3, 2**31 - 1])
def test_partitions_of_kafkas_test_vectors(native, n):
    keys = list(KAFKA_MURMUR2)
    assert native.partitions(keys, n) == [(KAFKA_MURMUR2[k] & 0x7FFFFFFF) % n for k in keys]


def test_partitions_leave_anything_but_bytes_to_the_caller(native):
    assert native.partitions([b"a", "text"], 6) is None
    with pytest.raises(ValueError):
        native.partitions([b"a"], 0)


def test_kxtx_speedups_0_turns_them_off(monkeypatch):
    monkeypatch.setattr(speedups, "_module", None)
    monkeypatch.setenv("KXTX_SPEEDUPS", "0")
    assert speedups.module() is None
    assert murmur.Partitioner(6)._loop is None
    monkeypatch.setattr(speedups, "_module", None)
    monkeypatch.delenv("KXTX_SPEEDUPS")
    assert (speedups.module() is not None) == (importlib.util.find_spec("kxtx.native") is not None)
