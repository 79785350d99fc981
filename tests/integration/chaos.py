"""Broker faults at random moments (issue 29): a seeded schedule of faults, drawn once and printed so
a failure replays (`KXTX_CHAOS_SEED`), fired at points of progress while kxtx commands run on the
3-node sandbox. Used by `test_chaos.py` (a short schedule in CI) and `bench/chaos_run.py` (long runs).

`schedule()` is pure (unit-tested); `Chaos` fires a schedule: each fault waits until the progress
function reaches its point, finds the node holding its role *then* (leaders and coordinators move
with every fault), takes that node out and brings it back, and waits for the cluster to heal before
the next one. What the commands must do through it (exit 0 or 75, exactly once) is the caller's
assertion."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from tests.integration import cluster_helpers as ch
from tests.integration.kafka_io import wait_until

#: kill: SIGKILL then start again (a crash); pause: SIGSTOP then SIGCONT (a stalled JVM, a long GC);
#: stop: SIGTERM, a controlled shutdown that moves its leaders first, then start again.
ACTIONS = ("kill", "pause", "stop")
#: How long a node stays out, per action (seconds). A pause of 5-40 s straddles the broker's
#: session timeout (9 s in the sandbox): short ones stall clients without moving a role, long ones
#: get the node fenced while it still holds its sockets open.
DOWN_S = {"kill": (3.0, 15.0), "pause": (5.0, 40.0), "stop": (3.0, 15.0)}


@dataclass(frozen=True)
class Fault:
    at: float  # fraction of the run's progress (0..1) at which it fires
    action: str
    role: str
    down_s: float

    def __str__(self) -> str:
        return f"{self.action} {self.role} for {self.down_s:.0f}s at {self.at:.0%}"


def schedule(
    seed: int, faults: int, roles: tuple[str, ...], span: tuple[float, float] = (0.1, 0.8)
) -> list[Fault]:
    """`faults` faults drawn from `seed`: points spread over `span` of the progress (one in each of
    `faults` equal slices, so they never bunch up at one moment), each a random action on a random
    role; every role is hit once before any is hit twice."""
    if faults < 1 or not roles:
        raise ValueError("a schedule needs at least one fault and one role")
    rng = random.Random(seed)
    lo, hi = span
    width = (hi - lo) / faults
    order: list[str] = []
    while len(order) < faults:
        order += rng.sample(roles, len(roles))
    out = []
    for i in range(faults):
        action = rng.choice(ACTIONS)
        low, high = DOWN_S[action]
        out.append(
            Fault(
                round(lo + width * (i + rng.random()), 3), action, order[i], round(rng.uniform(low, high), 1)
            )
        )
    return out


#: CI's schedule: a fixed seed, so that a red CI run is a regression of kxtx and not a new
#: schedule; new seeds are explored by `bench/chaos_run.py` and by local runs.
CI_SEED = 988150825


def seed_from_env() -> int:
    """`KXTX_CHAOS_SEED` to replay a run; in CI (`CI` set) `CI_SEED`; else a new one (printed by
    the caller)."""
    value = os.environ.get("KXTX_CHAOS_SEED")
    if value:
        return int(value)
    return CI_SEED if os.environ.get("CI") else random.SystemRandom().randrange(1 << 31)


def controller(kafka) -> int:
    """The active KRaft controller: the leader of the metadata quorum (DescribeQuorum)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=10_000)
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    return _leader_id(quorum)


def _leader_id(quorum: object) -> int:
    # kafka-python returns the DescribeQuorumResponse as a dict: topics[0].partitions[0].leader_id
    part = quorum["topics"][0]["partitions"][0]  # type: ignore[index]
    return int(part["leader_id"])


class Chaos:
    """Fires `faults` on `kafka` (a 3-node sandbox) as `progress()` (0..1) passes each fault's point.
    `holders[role]()` names the node holding a role. `alive()` is called while waiting: it asserts the
    commands are still right (e.g. `Reruns.running`) and may restart one that stopped with 75."""

    def __init__(self, kafka, faults: list[Fault], holders: dict[str, Callable[[], int]], topics: list[str]):
        self.kafka, self.faults, self.holders, self.topics = kafka, faults, holders, topics
        self.fired: list[str] = []

    def run(self, progress: Callable[[], float], alive: Callable[[], None], timeout: float = 600) -> None:
        for fault in self.faults:
            wait_until(
                lambda f=fault: (alive() or True) and progress() >= f.at,
                timeout,
                f"progress {fault.at:.0%} before the fault '{fault}' (fired so far: {self.fired})",
                every=0.3,
                tolerate=ch.MOVING,
            )
            alive()
            node = wait_until(
                self.holders[fault.role], 60, f"the node holding the {fault.role}", tolerate=ch.MOVING
            )
            started = time.monotonic()
            ch.outage(self.kafka, node, fault.action, fault.down_s)
            ch.wait_healthy(self.kafka, self.topics)
            self.fired.append(f"{fault} -> node {node}, healed after {time.monotonic() - started:.0f}s")
            print(f"chaos: {self.fired[-1]}", flush=True)
