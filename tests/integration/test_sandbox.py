"""The sandbox is a real broker: transactions commit and abort as Kafka defines."""

import time
import uuid

import pytest


def _read_committed(bootstrap: str, topic: str, expect: int, timeout: float = 20) -> list[bytes]:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(seen) < expect + 1:
            msg = c.poll(0.5)
            if msg is not None and not msg.error():
                seen.append(msg.value())
            elif seen and len(seen) >= expect and msg is None:
                break
    finally:
        c.close()
    return seen


def _transactions_round_trip(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, f"committed-{i}".encode())
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"aborted")
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"after-abort")
    p.commit_transaction(30)
    assert _read_committed(bootstrap, topic, expect=4) == [
        b"committed-0",
        b"committed-1",
        b"committed-2",
        b"after-abort",
    ]


def test_sandbox_runs_real_transactions(kafka, topic):
    _transactions_round_trip(kafka.bootstrap, topic)


@pytest.mark.versioned
def test_sandbox_kafka_39(brokers):
    """3.9's transaction protocol and record formats differ; the sandbox must run it too."""
    k = brokers(version="3.9")  # in the Kafka 3.9 stage: the session broker
    assert k.version.startswith("3.9.")
    _transactions_round_trip(k.bootstrap, k.create_topic())


def test_cli_sandbox_lifecycle(run_kxtx, tmp_path):
    import json

    state = tmp_path / "sb"
    started = run_kxtx("sandbox", "start", "--port", "0", "--state-dir", str(state), "-o", "json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["running"] is True and info["bootstrap"].startswith("127.0.0.1:")
    # a line a shell can take as it is (README: eval it, or copy it)
    assert f"export KXTX_BOOTSTRAP_SERVERS={info['bootstrap']}" in started.stderr.splitlines()
    status = run_kxtx("sandbox", "status", "--state-dir", str(state), "-o", "jsonl")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == info["pid"]
    stopped = run_kxtx("sandbox", "stop", "--state-dir", str(state))
    assert stopped.returncode == 0
    assert not state.exists()
    after = run_kxtx("sandbox", "status", "--state-dir", str(state))
    assert after.returncode == 3
