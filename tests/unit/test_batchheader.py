"""kxtx.records.batchheader against kafka-python's batch reader, on batches built from the spec
(section 8): a data batch from kafka-python's builder, control batches (markers) by hand."""

from __future__ import annotations

import struct

import pytest

from kxtx.records.batchheader import Header, headers
from tests.unit.record_encoder import i16, i32


def _varint(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        out.append(b | (0x80 if z else 0))
        if not z:
            return bytes(out)


def data_batch(pid: int = 7, epoch: int = 3, n: int = 3, ts: int = 1_000) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, True, pid, epoch, 0, 1 << 20)
    for i in range(n):
        b.append(i, ts + i, b"k", b"v%d" % i, [])
    return bytes(b.build())


def control_batch(
    base: int,
    kind: int,
    coordinator_epoch: int,
    pid: int = 7,
    epoch: int = 3,
    ts: int = 5_000,
    ts_delta: int = 0,
) -> bytes:
    key, value = i16(0) + i16(kind), i16(0) + i32(coordinator_epoch)
    body = (
        b"\x00"
        + _varint(ts_delta)
        + _varint(0)
        + _varint(len(key))
        + key
        + _varint(len(value))
        + value
        + _varint(0)
    )
    record = _varint(len(body)) + body
    attrs = 0x10 | 0x20
    after_crc = struct.pack(">hiqqqhii", attrs, 0, ts, ts + ts_delta, pid, epoch, -1, 1) + record
    header = struct.pack(">qiibI", base, 4 + 1 + 4 + len(after_crc), 0, 2, 0)
    return header + after_crc


def kafka_python(buf: bytes) -> list[tuple]:
    from kafka.record import MemoryRecords

    out = []
    records = MemoryRecords(buf)
    batch = records.next_batch()
    while batch is not None:
        marker = None
        if batch.is_control_batch:
            r = next(iter(batch))
            marker = "ABORT" if r.abort else "COMMIT"
        out.append(
            (
                batch.base_offset,
                batch.last_offset,
                batch.records_count,
                batch.producer_id,
                batch.producer_epoch,
                batch.max_timestamp,
                bool(batch.is_transactional),
                bool(batch.is_control_batch),
                marker,
            )
        )
        batch = records.next_batch()
    return out


def ours(buf: bytes) -> list[tuple]:
    return [
        (
            h.base_offset,
            h.last_offset,
            h.records_count,
            h.producer_id,
            h.producer_epoch,
            h.max_timestamp,
            h.is_transactional,
            h.is_control_batch,
            h.control_type,
        )
        for h in headers(buf)
    ]


@pytest.mark.parametrize("ts_delta", [0, 5, 300])  # a 2-byte delta takes the field-by-field path
def test_headers_read_what_kafka_python_reads(ts_delta):
    buf = data_batch() + control_batch(3, 1, 9, ts_delta=ts_delta) + control_batch(4, 0, 11)
    assert ours(buf) == kafka_python(buf)
    marks = [(h.control_type, h.coordinator_epoch) for h in headers(buf)]
    assert marks == [(None, None), ("COMMIT", 9), ("ABORT", 11)]


def test_a_batch_cut_by_the_fetch_ends_the_iteration():
    whole = data_batch() + control_batch(3, 1, 9)
    got = list(headers(whole[:-5]))
    assert [h.base_offset for h in got] == [0]
    assert got[0].end == len(data_batch())


def test_an_older_message_format_ends_the_iteration_where_it_starts():
    v1 = bytearray(control_batch(3, 1, 9))
    v1[16] = 1  # magic
    got = list(headers(data_batch() + bytes(v1)))
    assert len(got) == 1 and isinstance(got[0], Header) and got[0].end == len(data_batch())
