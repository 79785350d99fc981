"""find-hanging: Kafka's algorithm exactly, plus the evidence Kafka's tool leaves out.

Steps (as `FindHangingTransactionsCommand`): scope -> DescribeProducers in batches -> candidates
(open transaction, last append strictly older than the max transaction timeout) -> ListTransactions
filtered by producer id on all brokers -> DescribeTransactions -> hanging decision. kxtx adds, per
hanging partition: the transactional id and coordinator state, LSO / high watermark / records held
back, the age, blocked consumer groups, and a `__transaction_state` lookup for producer ids that
ListTransactions cannot map (ids rotate under transactions v2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kxtx.client.admin import Cluster, Progress
from kxtx.client.model import TP, CoordinatorTxn, OpenTxn
from kxtx.dump.txnlog import transactional_ids
from kxtx.errors import KxtxError, UsageError
from kxtx.log import logger
from kxtx.ops import decide
from kxtx.ops.model import HangingTxn, HeldLso
from kxtx.ops.owners import owner_hint
from kxtx.wording import plural

#: Operations on the Cluster a principal has when there is no authorizer or it is a super user.
ALL_CLUSTER_OPS = {"ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"}


@dataclass(frozen=True)
class Scope:
    topic: str | None = None
    partition: int | None = None
    broker_id: int | None = None

    def __post_init__(self) -> None:
        if self.partition is not None and self.topic is None:
            raise UsageError("--partition needs --topic")


@dataclass
class Report:
    hanging: list[HangingTxn] = field(default_factory=list)
    partitions_checked: int = 0
    candidates: int = 0
    max_timeout_ms: int = decide.DEFAULT_MAX_TIMEOUT_MS
    timeout_source: str = "default"
    errors: dict[TP, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: the open transactions that hold an LSO and are not hanging, each with why and what ends it
    held: list[HeldLso] = field(default_factory=list)


def partitions_in_scope(cluster: Cluster, scope: Scope) -> list[TP]:
    """Kafka's `collectTopicPartitionsToSearch`, extended: no option means every partition."""
    if scope.topic is not None and scope.partition is not None:
        return [(scope.topic, scope.partition)]
    topics = cluster.topics(scope.topic)
    out = []
    for name in sorted(topics):
        for p, (_leader, replicas) in sorted(topics[name].items()):
            if scope.broker_id is None or scope.broker_id in replicas:
                out.append((name, p))
    return out


def resolve_max_timeout(cluster: Cluster, minutes: float | None) -> tuple[int, str]:
    if minutes is not None:
        return int(minutes * 60_000), "--max-transaction-timeout"
    ms = cluster.max_txn_timeout_ms()
    if ms is not None:
        return ms, "broker transaction.max.timeout.ms"
    return decide.DEFAULT_MAX_TIMEOUT_MS, "default 15 minutes (broker config not readable)"


def find_hanging(
    cluster: Cluster,
    scope: Scope,
    max_timeout_minutes: float | None = None,
    extras: bool = True,
    now_ms: int | None = None,
    progress: Progress | None = None,
) -> Report:
    report = Report()
    report.max_timeout_ms, report.timeout_source = resolve_max_timeout(cluster, max_timeout_minutes)
    tps = partitions_in_scope(cluster, scope)
    report.partitions_checked = len(tps)
    states, report.errors = cluster.describe_producers(tps, scope.broker_id, progress)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    judge(cluster, report, states, now, extras)
    return report


def judge(
    cluster: Cluster,
    report: Report,
    states: dict[TP, list[OpenTxn]],
    now_ms: int,
    extras: bool = True,
    held: bool = True,
) -> None:
    """Kafka's rule over producer states already read (DescribeProducers): fills `report.hanging`
    (with leaders, evidence when `extras`) and its warnings, and with `held` `report.held`: why
    every other open transaction holds its LSO. `kxtx monitor` reads the states once for its own
    figures and judges them here, so both commands apply the same rule."""
    candidates = [
        p for rows in states.values() for p in rows if decide.is_candidate(p, now_ms, report.max_timeout_ms)
    ]
    report.candidates = len(candidates)
    if candidates:
        report.hanging = classify(cluster, candidates, now_ms, report.warnings)
    if report.hanging:
        add_leaders(cluster, report.hanging)
    if report.hanging and extras:
        add_evidence(cluster, report.hanging)
    if report.hanging:
        acl_warning(cluster, report)
    if held:
        report.held = lso_holders(
            cluster, states, report.hanging, now_ms, report.max_timeout_ms, report.warnings
        )


def lso_holders(
    cluster: Cluster,
    states: dict[TP, list[OpenTxn]],
    hanging: list[HangingTxn],
    now_ms: int,
    max_timeout_ms: int,
    warnings: list[str],
    listed: dict[str, tuple[int, str]] | None = None,
    known: dict[str, CoordinatorTxn | str] | None = None,
) -> list[HeldLso]:
    """Every open transaction in `states` that is not one of `hanging`, classified
    (`decide.hold_class`): a stuck LSO that Kafka's definition does not call hanging still gets
    its reason, its end and its command. Its producer id is mapped by ListTransactions only (an
    id it cannot map is `untracked`; the log search is find-hanging's, for what hangs). A
    coordinator that cannot be read makes its rows `unseen`, with the reason, never a guess.

    `listed` ({id: (producer id, state)}, `Cluster.transactions`) and `known` (descriptions) are
    what a caller already read (`kxtx monitor`): they are not asked again."""
    hung = {(h.tp, h.producer_id) for h in hanging}
    open_ = sorted(
        (p for rows in states.values() for p in rows if p.is_open and (p.tp, p.producer_id) not in hung),
        key=lambda p: (p.topic, p.partition, p.start_offset),
    )
    if not open_:
        return []
    pids = {p.producer_id for p in open_}
    try:
        if listed is None:
            ids = transactional_ids(cluster, pids, warnings, in_log=set())
        else:
            ids = {pid: (tid, "ListTransactions") for tid, (pid, _state) in listed.items() if pid in pids}
        wanted = sorted({tid for tid, _src in ids.values()})
        known = known or {}
        descs = {tid: known[tid] for tid in wanted if tid in known}
        descs.update(cluster.describe_txns([tid for tid in wanted if tid not in known]))
    except KxtxError as exc:
        warnings.append(f"cannot tell why {plural(len(open_), 'open transaction')} hold their LSO: {exc}")
        return [_held(p, now_ms, "unseen", f"its coordinator was not read: {exc}") for p in open_]
    out = []
    for p in open_:
        tid = ids.get(p.producer_id, (None, None))[0]
        desc = descs.get(tid) if tid else None
        kind, ends = decide.hold_class(p, tid, desc, now_ms, max_timeout_ms)
        if kind == decide.HOLD_HANGING:  # classify judged it already (a row of `hanging`)
            continue
        row = _held(
            p, now_ms, kind, decide.hold_detail(kind, ends, desc), decide.hold_action(kind, p.tp, tid)
        )
        row.transactional_id, row.ends_ms = tid, ends
        row.owner_hint = owner_hint(tid) if tid else None
        row.coordinator_state = desc.state if isinstance(desc, CoordinatorTxn) else None
        out.append(row)
    return out


def _held(p: OpenTxn, now_ms: int, kind: str, detail: str, action: str | None = None) -> HeldLso:
    return HeldLso(
        p.topic, p.partition, p.producer_id, p.producer_epoch, p.start_offset,
        now_ms - p.last_timestamp, kind, detail, action,
    )  # fmt: skip


def classify(
    cluster: Cluster, candidates: list[OpenTxn], now_ms: int, warnings: list[str]
) -> list[HangingTxn]:
    """Map producer ids to transactional ids, describe them, and keep what hangs."""
    ids = transactional_ids(cluster, {c.producer_id for c in candidates}, warnings)
    descs = cluster.describe_txns([tid for tid, _src in ids.values()])
    out = []
    for c in sorted(candidates, key=lambda c: (c.topic, c.partition, c.producer_id)):
        tid, src = ids.get(c.producer_id, (None, None))
        desc = descs.get(tid) if tid else None
        reason = decide.hanging_reason(c.tp, tid, desc)
        if reason is None:
            continue
        row = HangingTxn(
            c.topic,
            c.partition,
            c.producer_id,
            c.producer_epoch,
            c.coordinator_epoch,
            c.start_offset,
            c.last_timestamp,
            now_ms - c.last_timestamp,
            reason,
            transactional_id=tid,
            id_source=src,
        )
        if isinstance(desc, CoordinatorTxn):
            row.coordinator_state = desc.state
            row.coordinator_producer_id = desc.producer_id
            row.coordinator_producer_epoch = desc.producer_epoch
        elif tid is not None:
            row.coordinator_state = "unknown id"
        out.append(row)
    return out


def add_leaders(cluster: Cluster, rows: list[HangingTxn]) -> None:
    """Each hanging partition's leader now: the broker abort-hanging will write the marker to (it
    checks again before writing: leaders move)."""
    leaders = cluster.leaders({r.tp for r in rows})
    for r in rows:
        r.leader = leaders.get(r.tp)


def add_evidence(cluster: Cluster, rows: list[HangingTxn]) -> None:
    """LSO, high watermark, records held back and blocked groups for each hanging partition."""
    tps = sorted({r.tp for r in rows})
    offsets = cluster.offsets(tps)
    committed = cluster.committed(tps)
    for r in rows:
        o = offsets.get(r.tp)
        if o is None:
            continue
        r.lso, r.high_watermark, r.held_back = o.lso, o.high_watermark, o.held_back
        r.blocked_groups = decide.blocked_groups(committed.get(r.tp, {}), o.lso, o.high_watermark)


def acl_warning(cluster: Cluster, report: Report) -> None:
    """The broker silently hides transactional ids and topics the principal may not DESCRIBE, which
    turns live transactions into "hanging" ones. Warn unless the principal can do everything."""
    ops = cluster.cluster_operations()
    if ops is not None and ops >= ALL_CLUSTER_OPS:
        return
    suspect = [r for r in report.hanging if r.reason != decide.REASON_ID_NOT_FOUND]
    if not suspect:
        return
    for r in suspect:
        r.maybe_false_positive = True
    why = "cannot read the principal's permissions" if ops is None else "the principal is not a super user"
    report.warnings.append(
        f"{why}: if it lacks DESCRIBE on some TransactionalId or Topic resources, the broker hides "
        f"them from ListTransactions/DescribeTransactions and live transactions look hanging; "
        f"{plural(len(suspect), 'row')} may be false positives; check with a principal that has DESCRIBE"
    )


def held_lsos(cluster: Cluster, topic: str, partitions: list[int]) -> list[HeldLso]:
    """Why each open transaction on these partitions of `topic` holds its LSO, the hanging ones
    included (as `decide.HOLD_HANGING`, with abort-hanging's line): what `topic count` adds to its
    open records. find-hanging's scan over the topic, its warnings logged."""
    report = find_hanging(cluster, Scope(topic), extras=False)
    for w in report.warnings:
        logger.warning(w)
    wanted = {(topic, p) for p in partitions}
    hung = [
        HeldLso(
            h.topic,
            h.partition,
            h.producer_id,
            h.producer_epoch,
            h.start_offset,
            h.age_ms,
            decide.HOLD_HANGING,
            f"hanging: {h.reason}",
            decide.hold_action(decide.HOLD_HANGING, h.tp, None),
            h.transactional_id,
            h.coordinator_state,
        )
        for h in report.hanging
    ]
    return sorted(
        (h for h in hung + report.held if h.tp in wanted), key=lambda h: (h.partition, h.start_offset)
    )
