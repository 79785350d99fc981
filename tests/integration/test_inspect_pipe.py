"""`kxtx inspect txn PIPE-ID` for a pipe in executors mode, whose transactional ids are
`PIPE-ID.TOPIC.PARTITION`: found with ListTransactions, filtered by the broker's
TransactionalIdPattern on Kafka 4.1+ and here on older brokers (CI runs this on 3.9 as well).

The ids are made by plain transactional producers (a pipe run costs a Spark start; the executors
test in test_pipe_executors.py checks a real run's ids): one committed, one left open, and decoys
that a pattern without escaping, or with a looser partition number, would take."""

from __future__ import annotations

import json
import uuid

import pytest

from kxtx.ops import pipeids
from kxtx.pipe.worker.task import transactional_id
from tests.conftest import json_doc

pytestmark = [pytest.mark.kafka, pytest.mark.versioned]


@pytest.fixture(scope="module")
def scene(kafka):
    from confluent_kafka import Producer

    src, out = kafka.create_topic(partitions=3), kafka.create_topic(partitions=2)
    pipe = f"pipe+(x).{uuid.uuid4().hex[:6]}"  # regex characters, and a dot
    ids = [transactional_id(pipe, src, p) for p in (0, 1)]
    decoys = [pipe.replace(".", "-", 1) + f".{src}.2", f"{pipe}.{src}.02", f"{pipe}x.{src}.0"]
    producers = {}
    for tid in [*ids, *decoys]:
        p = Producer(
            {"bootstrap.servers": kafka.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 300_000}
        )
        p.init_transactions(60)
        p.begin_transaction()
        p.produce(out, value=tid.encode(), partition=0 if tid != ids[1] else 1)
        if tid == ids[1]:
            assert p.flush(30) == 0  # left open: it holds out:1's LSO
        else:
            p.commit_transaction(60)
        producers[tid] = p
    yield {"pipe": pipe, "src": src, "out": out, "ids": ids, "decoys": decoys}
    producers[ids[1]].abort_transaction(60)


def test_the_pipe_ids_their_states_and_a_verdict(kafka, scene, run_kxtx):
    pipe, (done, open_), out = scene["pipe"], scene["ids"], scene["out"]
    r = run_kxtx("inspect", "txn", pipe, "-o", "json")
    got = json_doc(r)
    rows = {row["transactional_id"]: row for row in got["transactional_ids"]}
    assert list(rows) == [done, open_]  # the decoys are not the pipe's
    assert [rows[t]["input"] for t in (done, open_)] == [f"{scene['src']}:0", f"{scene['src']}:1"]
    assert rows[done]["state"] == "CompleteCommit" and rows[open_]["state"] == "Ongoing"
    assert rows[done]["partitions"] == [f"{out}:0"] and rows[done]["holding_lso"] == []
    assert rows[open_]["partitions"] == [f"{out}:1"] and rows[open_]["holding_lso"] == [f"{out}:1"]
    assert all(isinstance(rows[t]["producer_id"], int) for t in rows)
    assert got["verdict"] == (
        f"2 transactional ids, one per input partition: 1 ongoing, 1 idle; holding an LSO: {open_} on {out}:1"
    )
    assert got["counts"] == {"ongoing": 1, "idle": 1}
    # Kafka 4.1+ filters by the pattern; 3.9 lists every id and kxtx filters
    assert got["id_filter"] == (pipeids.BROKER_FILTER if kafka.major >= 4 else pipeids.CLIENT_FILTER)
    # each id in full, as `inspect txn ID` shows it: the same view
    details = {d["transactional_id"]: d for d in got["details"]}
    same = ("state", "producer_id", "producer_epoch", "coordinator_partitions", "history")
    for tid in (done, open_):
        alone = json.loads(run_kxtx("inspect", "txn", tid, "-o", "json").stdout)
        # the document's own keys (README "Output") aside
        assert set(alone) - {"status", "exit_code", "error"} == set(details[tid])
        assert [alone[k] for k in same] == [details[tid][k] for k in same]
    assert details[done]["history"][-1]["state"] == "CompleteCommit"
    r = run_kxtx("inspect", "txn", pipe, "-o", "json", "--no-history")
    assert not any("history" in d for d in json_doc(r)["details"])
    r = run_kxtx("inspect", "txn", pipe, "-o", "table", env={"COLUMNS": "200"}, expect=0)
    assert f"transaction {done}" in r.stdout and f"transaction {open_}" in r.stdout


def test_an_unknown_id_without_pipe_ids_is_still_exit_1(scene, run_kxtx):
    r = run_kxtx("inspect", "txn", f"{scene['pipe']}-none", "-o", "json", expect=1)
    assert "unknown to its coordinator" in r.stderr and f"{scene['pipe']}-none.TOPIC.PARTITION" in r.stderr


def test_the_brokers_pattern_is_escaped(kafka, scene):
    """The broker's own filter (Kafka 4.1+) takes the pipe's ids and no decoy, before kxtx's parse;
    3.9 refuses the pattern (None: kxtx lists all)."""
    from kxtx.client.admin import Cluster

    with Cluster(kafka.settings()) as cluster:
        listed = cluster.list_txn_ids(pipeids.member_pattern(scene["pipe"]))
        everything = cluster.list_txn_ids()
    assert everything is not None and set(scene["ids"] + scene["decoys"]) <= set(everything)
    if kafka.major < 4:
        assert listed is None
    else:
        assert listed == sorted(scene["ids"])
