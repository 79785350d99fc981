"""Build truly hanging transactions with kafka-python's low-level protocol (tests and bench only).

A hanging transaction: InitProducerId for a transactional id, then a transactional Produce to a
partition that was never added to the transaction. The broker must run with
`transaction.partition.verification.enable=false` (else it refuses the write), and Produce is capped at
v9 / EndTxn at v4 so transactions v2 (which adds partitions implicitly) stays out of the way.
The coordinator never learns about the partition, so no marker ever comes: the LSO stops there.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass

import kafka.errors as Errors
from kafka.admin import KafkaAdminClient
from kafka.protocol.metadata import CoordinatorType
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
)
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.structs import TopicPartition

from tests import cli

#: What a broker needs for `make_hanging`: verification off (it would refuse the write). A short
#: maximum keeps "ongoing" transactions from outliving the tests.
BROKER_CONFIG = {
    "transaction.partition.verification.enable": "false",
    "transaction.max.timeout.ms": "600000",
}


def hanging_broker(brokers):
    """A broker that runs with BROKER_CONFIG (one per worker, shared by the modules that need truly
    hanging transactions), or KXTX_TEST_BOOTSTRAP's, which must run with it."""
    from tests.conftest import Kafka

    external = os.environ.get("KXTX_TEST_BOOTSTRAP")
    if external:
        return Kafka(external, os.environ.get("KXTX_TEST_KAFKA_VERSION"), None)
    return brokers(BROKER_CONFIG)


def kxtx_on(broker, *args: str, expect: cli.Expect = 0, timeout: float = 120) -> cli.Result:
    """`cli.run` against `broker`: fails unless the exit code is `expect` (`None`: not checked)."""
    __tracebackhide__ = True
    return cli.run(*args, expect=expect, timeout=timeout, env={"KXTX_BOOTSTRAP_SERVERS": broker.bootstrap})


_RETRY = (
    Errors.ConcurrentTransactionsError,
    Errors.CoordinatorLoadInProgressError,
    Errors.NotCoordinatorError,
    Errors.CoordinatorNotAvailableError,
)


@dataclass
class Producer:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator: int
    sequences: dict


class LowLevel:
    def __init__(self, bootstrap: str):
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        self.m = self.admin._manager

    def close(self):
        self.admin.close()

    def _send(self, request, node_id):
        async def go():
            return await self.m.send(request, node_id=node_id)

        return self.m.run(go)

    def _leader(self, topic: str, partition: int) -> int:
        tp = TopicPartition(topic, partition)
        leaders = self.m.run(self.admin._async_get_leader_for_partitions, [tp])
        return next(iter(leaders))

    def _coordinator(self, tid: str) -> int:
        # The first FindCoordinator creates __transaction_state: retry until it has a leader.
        deadline = time.monotonic() + 60
        while True:
            try:
                return self.m.run(self.admin._find_coordinator_id, tid, CoordinatorType.TRANSACTION)
            except _RETRY:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def _retry(self, build, node, check):
        deadline = time.monotonic() + 60
        while True:
            resp = self._send(build(), node)
            err = Errors.for_code(check(resp))
            if err is Errors.NoError:
                return resp
            if not issubclass(err, _RETRY) or time.monotonic() > deadline:
                raise err(str(resp))
            time.sleep(0.2)

    def init(self, tid: str, timeout_ms: int = 300_000) -> Producer:
        coord = self._coordinator(tid)
        resp = self._retry(
            lambda: InitProducerIdRequest(
                transactional_id=tid, transaction_timeout_ms=timeout_ms, max_version=4
            ),
            coord,
            lambda r: r.error_code,
        )
        return Producer(tid, resp.producer_id, resp.producer_epoch, coord, {})

    def produce(
        self, p: Producer, topic: str, partition: int, values: list[bytes], timestamp_ms: int | None = None
    ) -> int:
        """A transactional batch; returns its base offset."""
        seq = p.sequences.get((topic, partition), 0)
        b = DefaultRecordBatchBuilder(2, 0, True, p.producer_id, p.producer_epoch, seq, 1 << 20)
        ts = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        for i, v in enumerate(values):
            b.append(i, timestamp=ts, key=None, value=v, headers=[])
        Topic = ProduceRequest.TopicProduceData
        req = ProduceRequest(
            transactional_id=p.transactional_id,
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                Topic(
                    name=topic,
                    partition_data=[Topic.PartitionProduceData(index=partition, records=bytes(b.build()))],
                )
            ],
            min_version=3,
            max_version=9,
        )
        resp = self._send(req, self._leader(topic, partition))
        part = resp.responses[0].partition_responses[0]
        err = Errors.for_code(part.error_code)
        if err is not Errors.NoError:
            raise err(f"produce to {topic}:{partition}: {part.error_message}")
        p.sequences[(topic, partition)] = seq + len(values)
        return part.base_offset

    def add_partitions(self, p: Producer, topic: str, partitions: list[int]) -> None:
        T = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic

        def check(r):
            codes = [
                x.partition_error_code
                for t in r.results_by_topic_v3_and_below
                for x in t.results_by_partition
            ]
            return next((c for c in codes if c), r.error_code)

        self._retry(
            lambda: AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=p.transactional_id,
                v3_and_below_producer_id=p.producer_id,
                v3_and_below_producer_epoch=p.producer_epoch,
                v3_and_below_topics=[T(name=topic, partitions=partitions)],
                max_version=3,
            ),
            p.coordinator,
            check,
        )

    def end(self, p: Producer, commit: bool = True) -> None:
        self._retry(
            lambda: EndTxnRequest(
                transactional_id=p.transactional_id,
                producer_id=p.producer_id,
                producer_epoch=p.producer_epoch,
                committed=commit,
                max_version=4,
            ),
            p.coordinator,
            lambda r: r.error_code,
        )


def max_txn_timeout_ms(bootstrap: str) -> int:
    """The broker's transaction.max.timeout.ms (Kafka's default, 900,000, where it cannot be read)."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        broker = next(iter(admin.list_topics(timeout=30).brokers))
        res = ConfigResource(ResourceType.BROKER, str(broker))
        entries = admin.describe_configs([res])[res].result(timeout=30)
        return int(entries["transaction.max.timeout.ms"].value)
    except (KeyError, StopIteration):
        return 900_000


def make_hanging(
    bootstrap: str,
    tid: str,
    hang_on: list[tuple[str, int]],
    commit_on: tuple[str, int] | None = None,
    age_ms: int = 3_600_000,
    records: int = 3,
    timeout_ms: int | None = None,
) -> tuple[Producer, dict]:
    """Open transactions on `hang_on` that the coordinator never hears of; optionally a normal
    committed transaction on `commit_on` by the same producer. Returns (producer, {tp: start offset}).
    `timeout_ms`: the producer's transaction timeout; by default 300,000 ms, or the broker's
    transaction.max.timeout.ms when that is less (a longer one is refused: InvalidTransactionTimeout)."""
    ll = LowLevel(bootstrap)
    try:
        p = ll.init(
            tid, timeout_ms if timeout_ms is not None else min(300_000, max_txn_timeout_ms(bootstrap))
        )
        starts = {}
        if commit_on:
            ll.add_partitions(p, commit_on[0], [commit_on[1]])
        for t, part in hang_on:
            starts[(t, part)] = ll.produce(
                p,
                t,
                part,
                [f"hanging-{i}".encode() for i in range(records)],
                timestamp_ms=int(time.time() * 1000) - age_ms,
            )
        if commit_on:
            ll.produce(p, commit_on[0], commit_on[1], [b"committed"])
            ll.end(p, commit=True)
        return p, starts
    finally:
        ll.close()


def _uvarint(n: int) -> bytes:
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _init_producer_id_v4(tid: str, correlation_id: int) -> bytes:
    """InitProducerId v4 (flexible: request header v2), size-prefixed, for a new producer (-1/-1)."""
    t = tid.encode()
    header = struct.pack(">hhih", 22, 4, correlation_id, 4) + b"kxtx" + b"\x00"
    body = _uvarint(len(t) + 1) + t + struct.pack(">iqh", 60_000, -1, -1) + b"\x00"
    return struct.pack(">i", len(header) + len(body)) + header + body


def bump_epoch(bootstrap: str, tid: str, times: int, window: int = 500) -> tuple[int, int]:
    """InitProducerId for `tid` `times` times in a row, each bumping its producer epoch by one:
    (producer id, epoch) of the last answer. Pipelined on one raw connection to the broker of a
    one-broker `bootstrap` (its coordinator): the broker serves a connection's requests one after
    another, so none is refused as concurrent, and 32,765 take seconds where kafka-python's
    request/response round trips take a minute and a half."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    answers = sock.makefile("rb")
    sent = got = 0
    last = (-1, -1)
    try:
        while got < times:
            if sent < times and sent - got < window:
                k = min(window - (sent - got), times - sent)
                sock.sendall(b"".join(_init_producer_id_v4(tid, sent + i) for i in range(k)))
                sent += k
            (size,) = struct.unpack(">i", answers.read(4))
            # response header v1 (correlation id, no tags), throttle, error, producer id, epoch
            _corr, _tags, _throttle, error, pid, epoch = struct.unpack(">ibihqh", answers.read(size)[:21])
            assert error == 0, f"InitProducerId {got + 1} of {times} for {tid!r}: error {error}"
            last, got = (pid, epoch), got + 1
    finally:
        answers.close()
        sock.close()
    return last
