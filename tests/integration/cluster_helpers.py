"""Helpers for the `multibroker` tests: who leads what on the 3-node sandbox, node outages, running
the CLI against it. Every wait is bounded."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid

from tests import cli
from tests.integration.kafka_io import wait_until

#: While nodes come and go, a metadata or offset request can fail: `wait_until(..., tolerate=MOVING)`
#: asks again.
MOVING = (Exception,)

#: Kafka fences a SIGKILLed broker after broker.session.timeout.ms (9 s); leaders move after that.
FENCE_WAIT_S = 60


def cli_env(kafka, env: dict | None = None) -> dict:
    return {"KXTX_BOOTSTRAP_SERVERS": kafka.bootstrap, **(env or {})}


def run(kafka, *args: str, expect: cli.Expect = 0, **kw) -> cli.Result:
    """`cli.run` against `kafka`: fails unless the exit code is `expect` (`None`: not checked)."""
    __tracebackhide__ = True
    return cli.run(*args, expect=expect, env=cli_env(kafka, kw.pop("env", None)), **kw)


def popen(kafka, *args: str, env: dict | None = None) -> subprocess.Popen:
    """The CLI in the background; its stderr goes to a file (a pipe nobody reads could fill and
    block it): read it with `stderr_text(proc)`."""
    import tempfile

    err = tempfile.NamedTemporaryFile("w+", prefix="kxtx-stderr-", suffix=".txt", delete=False)
    proc = cli.start(*args, env=cli_env(kafka, env), stdout=subprocess.DEVNULL, stderr=err, text=True)
    proc.stderr_path = err.name  # type: ignore[attr-defined]
    err.close()
    return proc


def stderr_text(proc) -> str:
    with open(proc.stderr_path) as f:
        return f.read()[-3000:]


def _admin(kafka):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 2})


def leaders(kafka, topic: str) -> dict[int, int]:
    md = _admin(kafka).list_topics(topic, timeout=10).topics[topic]
    return {p.id: p.leader for p in md.partitions.values()}


def isr_full(kafka, topic: str, replicas: int = 3) -> bool:
    md = _admin(kafka).list_topics(topic, timeout=10).topics[topic]
    return all(len(p.isrs) == replicas and p.leader >= 0 for p in md.partitions.values())


def coordinator(kafka, key: str, internal_topic: str = "__transaction_state") -> int:
    """The broker leading `key`'s partition of __transaction_state (or __consumer_offsets): the
    transaction (or group) coordinator of that transactional id (or group)."""
    from kxtx.records.partitioner import partition_for

    md = _admin(kafka).list_topics(internal_topic, timeout=10).topics[internal_topic]
    return md.partitions[partition_for(key, len(md.partitions))].leader


def high_watermarks(kafka, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"hw-{uuid.uuid4().hex}"})
    try:
        parts = leaders(kafka, topic)
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
    finally:
        c.close()


def wait_healthy(kafka, topics: list[str], timeout: float = 120) -> None:
    """Every node back and every partition of `topics` fully replicated again."""
    wait_until(
        lambda: kafka.sandbox.brokers_in_metadata(kafka.sandbox.info()) == {1, 2, 3},
        timeout,
        "all 3 brokers in the metadata",
        every=0.5,
        tolerate=MOVING,
    )
    for t in topics:
        wait_until(lambda t=t: isr_full(kafka, t), timeout, f"{t} fully in sync", every=0.5, tolerate=MOVING)


def outage(kafka, node: int, how: str, down_s: float, holder=None) -> None:
    """Take `node` out (kill: SIGKILL, stop: SIGTERM, pause: SIGSTOP) for `down_s` (the fault's
    length is what a test names, not a wait for something), then bring it back and wait until it
    is a broker again. `holder()` names the node holding the role the fault is aimed at (a
    partition's leader, a coordinator): the outage then asserts its effect, that the role moved
    off `node` (the controller fenced it), seen while it was out or as it came back."""
    sb = kafka.sandbox
    moved = Moved(holder, node) if holder else None
    if how == "pause":
        sb.pause_node(node)
        time.sleep(down_s)
        sb.resume_node(node)
    else:
        (sb.kill_node if how == "kill" else sb.stop_node)(node)
        time.sleep(down_s)
        sb.start_node(node)
    if moved:
        moved.wait(FENCE_WAIT_S)


class Moved:
    """Watches, in a thread, for a role to be held by another node than `node`."""

    def __init__(self, holder, node: int):
        self.node, self.seen = node, None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, args=(holder,), daemon=True)
        self.thread.start()

    def _watch(self, holder) -> None:
        while not self._stop.is_set():
            try:
                now = holder()
            except Exception:  # noqa: BLE001 - the cluster is moving: ask again
                now = None
            if now is not None and now not in (self.node, -1):
                self.seen = now
                return
            self._stop.wait(0.3)

    def wait(self, timeout: float) -> int:
        self.thread.join(timeout)
        self._stop.set()
        assert self.seen is not None, f"the fault had no effect: the role stayed on node {self.node}"
        return self.seen


class Background:
    """Run outages in a thread while the test waits for a command to end."""

    def __init__(self, fn, *args):
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn, *args), daemon=True)
        self.thread.start()

    def _run(self, fn, *args):
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in join()
            self.error = exc

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the outage thread did not finish"
        if self.error:
            raise self.error


def check_exactly_once_in_order(by_partition: dict, expected_ids: range, seq_of) -> None:
    """Every id exactly once; per key, ids in increasing order (a key stays on one partition)."""
    seen: dict[int, int] = {}
    dupes = 0
    last: dict[bytes, int] = {}
    out_of_order = 0
    for part, records in by_partition.items():
        for key, value in records:
            seq = seq_of(value)
            if seq in seen:
                dupes += 1
            seen[seq] = part
            if key in last and last[key] >= seq:
                out_of_order += 1
            last[key] = seq
    missing = len(set(expected_ids) - seen.keys())
    assert (dupes, missing, out_of_order) == (0, 0, 0), (
        f"{dupes} duplicates, {missing} missing, {out_of_order} out of order per key"
    )


class Reruns:
    """A command run the way an operator's retry loop runs it: whenever it stops with exit 75
    (the cluster stayed unavailable longer than its retries), the same command starts again.
    Any other exit before the end is a failure."""

    RETRY = 75
    TERMINATED = 143  # only from interrupt_and_restart: any other exit but 75 fails at once

    def __init__(self, start, stderr_of=None, may_finish: bool = False):
        self.start, self.stderr_of = start, stderr_of or (lambda proc: "")
        self.may_finish = may_finish  # several commands under one schedule: one may be done first
        self.codes: list[int] = []
        self.proc = start(0)

    def running(self) -> None:
        """Before an outage: the command must be mid-run (restarted if it stopped with 75), or,
        with `may_finish`, done with exit 0."""
        code = self.proc.poll()
        if code is None or (code == 0 and self.may_finish):
            return
        assert code == self.RETRY, f"exit {code} before the outage: {self.stderr_of(self.proc)}"
        # Started first, noted after: a start that fails while the cluster moves is tried again.
        self.proc = self.start(len(self.codes) + 1)
        self.codes.append(code)

    def interrupt_and_restart(self) -> None:
        """SIGTERM the command mid-run (it must stop with exit 143, its open transaction aborted)
        and start the same command again: it continues from what was committed."""
        self.running()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(120)
        assert code == self.TERMINATED, f"exit {code} on SIGTERM: {self.stderr_of(self.proc)}"
        self.proc = self.start(len(self.codes) + 1)
        self.codes.append(code)

    def finish(self, timeout: float, attempts: int = 4) -> list[int]:
        while True:
            code = self.proc.wait(timeout)
            self.codes.append(code)
            if code != self.RETRY or len(self.codes) > attempts:
                break
            self.proc = self.start(len(self.codes))
        assert self.codes[-1] == 0, f"exit codes {self.codes}: {self.stderr_of(self.proc)}"
        assert set(self.codes) <= {0, self.RETRY, self.TERMINATED}, f"exit codes {self.codes}"
        return self.codes

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
