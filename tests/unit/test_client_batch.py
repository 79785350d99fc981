"""kxtx.client.fast.batch without a broker: the message array points at the records' bytes, a full
local queue stops a batch at the first record it refuses, and where batches cannot be relied on
there is no Batcher (the caller produces record by record)."""

from __future__ import annotations

import ctypes
from array import array

import pytest
from confluent_kafka import Producer

from kxtx.client.fast import batch
from tests.conftest import fast_only


def _messages(msgs: array, n: int):
    return (batch._Message * n).from_buffer(msgs)


@pytest.mark.parametrize(
    "parts",
    [
        [b"a"],
        [b"", b"x", b""],  # empty values: a zero length, still a pointer into the buffer
        [b"{}", b'{"k":1}', "é".encode() * 40, b"\x00\xff"],
    ],
)
def test_fill_points_each_message_at_its_record(parts):
    n = len(parts)
    msgs = array("q", bytes(ctypes.sizeof(batch._Message) * n))
    keep = batch._fill(msgs, parts, batch._PAYLOAD, batch._LEN)
    keys = batch._fill(msgs, [b"k%d" % i for i in range(n)], batch._KEY, batch._KEY_LEN)
    view = _messages(msgs, n)
    assert [ctypes.string_at(m.payload, m.len) for m in view] == parts
    assert [ctypes.string_at(m.key, m.key_len) for m in view] == [b"k%d" % i for i in range(n)]
    assert all(m.err == 0 and m.rkt is None and m._private is None for m in view)
    del keep, keys


def test_fill_takes_nothing_but_bytes():
    msgs = array("q", bytes(ctypes.sizeof(batch._Message) * 2))
    with pytest.raises(TypeError):
        batch._fill(msgs, [b"a", "text"], batch._PAYLOAD, batch._LEN)  # type: ignore[list-item]


def _unconnected(**conf: object) -> Producer:
    # nothing listens on port 1: records stay in the local queue
    return Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0, **conf})


@fast_only
def test_a_full_queue_stops_the_batch_where_it_refused():
    p = _unconnected(**{"queue.buffering.max.messages": 10})
    try:
        lib = batch._library()
        assert lib, "batches are usable with the confluent-kafka this suite installs"
        rk = batch.handle(p)
        b = batch.Batcher(lib, rk)
        values = [b"r%d" % i for i in range(30)]
        assert b.produce("t", 0, values, 5, 30) == (15, [])  # 10 taken, the 11th refused
        assert b.produce("t", 0, values, 15, 30) == (15, [])  # still full: nothing taken
    finally:
        p.purge()


@fast_only
def test_a_refused_record_is_named_with_its_error():
    p = _unconnected(**{"message.max.bytes": 1000})
    try:
        b = batch.Batcher(batch._library(), batch.handle(p))
        # one record over librdkafka's size limit is refused alone; the records around it are taken
        values = [b"a", b"b", b"c" * 2000, b"d"]
        k, refused = b.produce("t", [0, 1, 0, 1], values, 0, 4)
        assert k == 4 and [i for i, _ in refused] == [2]
        exc = batch.refusal(refused[0][1])
        assert exc.args[0].name() == "MSG_SIZE_TOO_LARGE"
    finally:
        p.purge()


def test_no_batcher_where_batches_are_not_relied_on(monkeypatch):
    assert batch.Batcher.of(object(), "t", 1) is None  # not a confluent-kafka Producer
    monkeypatch.setattr(batch, "_lib", None)
    monkeypatch.setenv("KXTX_PRODUCE_BATCH", "0")
    p = _unconnected()
    assert batch.Batcher.of(p, "t", 0.1) is None
    monkeypatch.setattr(batch, "_lib", None)
    monkeypatch.delenv("KXTX_PRODUCE_BATCH")
    # usable here, but the topic's partitions are not known (no broker answers): no batches
    assert batch.Batcher.of(p, "t", 0.1) is None
