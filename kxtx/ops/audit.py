"""audit-markers / repair-markers: every ended transaction held against its partitions' markers.

Reads the coordinators' decisions from `__transaction_state` (the dump library, from `since`), then
each data partition those decisions name (or the scope's) over the wire from the first offset the
decisions can concern to the high watermark, batch headers only (`dump partition`'s reader), and
judges each partition with `kxtx.ops.markers`. Open records that no decision read explains are held
against the coordinator itself (ListTransactions / DescribeTransactions, as find-hanging): a live
transaction is left alone, anything else is `undetermined`.

Repair plans one marker per (partition, producer id) whose open records all belong to lost decisions
of one outcome, and writes it with `kxtx.ops.abort`'s checks (`Target.commit`, `same_writes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kxtx.client.admin import Cluster
from kxtx.client.model import TP, CoordinatorTxn, OpenTxn
from kxtx.client.settings import Settings
from kxtx.errors import KafkaOperationError, KxtxError, NoSuchTopic, UsageError
from kxtx.log import logger
from kxtx.ops import markers
from kxtx.ops.abort import Target
from kxtx.ops.markers import BatchLike, Decision, Finding
from kxtx.ops.model import HangingTxn
from kxtx.wording import plural

if TYPE_CHECKING:
    from multiprocessing.connection import Connection


@dataclass(frozen=True)
class Window:
    #: decisions prepared at or after this time (epoch ms); None: the whole retained history
    since_ms: int | None = None
    #: with a topic scope: read its partitions from this offset instead of from the decisions' start
    from_offset: int | None = None


@dataclass(frozen=True)
class Scope:
    topic: str | None = None
    partition: int | None = None

    def __post_init__(self) -> None:
        if self.partition is not None and self.topic is None:
            raise UsageError("--partition needs --topic")

    def covers(self, tp: TP) -> bool:
        return (self.topic is None or tp[0] == self.topic) and (
            self.partition is None or tp[1] == self.partition
        )


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    #: transactions the coordinators ended in the window, on the partitions in scope
    decisions: int = 0
    partitions_checked: int = 0
    #: (topic, partition) -> LSO and high watermark when read
    offsets: dict[TP, tuple[int, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: partitions not read, with why (no leader): their markers are unchecked, never "fine"
    unseen: dict[TP, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Findings per class, every class present (0 included): what monitoring exports."""
        out = dict.fromkeys(markers.MEANING, 0)
        for f in self.findings:
            out[f.kind] += 1
        return out


Progress = Callable[[str], None]


def read_decisions(
    settings: Settings,
    since_ms: int | None,
    ids: list[str] | None = None,
    shard: tuple[int, int] | None = None,
) -> list[Decision]:
    """The transactions in `__transaction_state` from `since_ms` (all of it when None), or only
    those of `ids` (only their partitions are read); `shard` (index, count): only its partitions p
    with p % count == index (a transactional id lives in one partition: its history stays whole)."""
    from kxtx.dump.runner import TXN_TOPIC, DumpRequest, Start, run_batches

    start = Start("time", since_ms) if since_ms is not None else Start()
    req = DumpRequest(topic=TXN_TOPIC, ids=list(ids or []), start=start, shard=shard)
    return markers.decisions(row for batch in run_batches(settings, req) for row in batch)


#: One partition judged: (partition, (LSO, high watermark), findings, {producer id: open batches no
#: decision explains}).
Judged = tuple[TP, tuple[int, int], list[Finding], dict[int, list[BatchLike]]]
#: What one process reads and judges: {topic: {partition: where to start}}.
Job = dict[str, dict[int, int | str]]


def audit(
    cluster: Cluster, scope: Scope, window: Window, progress: Progress | None = None, workers: int = 1
) -> Report:
    """`workers` > 1: that many processes (forked before any Kafka client exists, as `kxtx dump`'s
    shards) read a share of `__transaction_state` each, then a share of the data partitions each."""
    settings = cluster.settings
    if scope.topic is not None:
        _check_scope(settings, scope)
    pool = _Workers.fork(workers, settings, window.since_ms) if workers > 1 else None
    try:
        if progress:
            progress("reading __transaction_state")
        history = read_decisions(settings, window.since_ms, shard=pool.shard if pool else None)
        if pool:
            history += pool.decisions()
        report = _judge_all(cluster, scope, window, history, pool, progress)
    except BaseException:
        if pool:
            pool.close(stop=True)
        raise
    if pool:
        pool.close()
    return report


def _check_scope(settings: Settings, scope: Scope) -> None:
    """An unknown topic or partition, before anything is read (and before workers are forked: this
    client is gone by then)."""
    assert scope.topic is not None
    with Cluster(settings) as probe:
        parts = _topic_partitions(probe, scope.topic)
    if scope.partition is not None and scope.partition not in parts:
        raise UsageError(f"{scope.topic} has no partition {scope.partition} (it has {len(parts)})")


def _judge_all(
    cluster: Cluster,
    scope: Scope,
    window: Window,
    history: list[Decision],
    pool: _Workers | None,
    progress: Progress | None,
) -> Report:
    report = Report()
    since = window.since_ms
    ended = [d for d in history if d.ended and (since is None or (d.prepare_ms or 0) >= since)]
    wanted = _wanted(cluster, scope, ended)
    report.decisions = sum(1 for d in ended if any(scope.covers(tp) for tp in d.partitions))
    by_tp: dict[TP, list[Decision]] = {}
    for d in history:
        for tp in d.partitions:
            by_tp.setdefault(tp, []).append(d)
    job = _job(cluster, wanted, ended, window, report)
    if progress:
        progress(f"reading {plural(sum(map(len, job.values())), 'partition')} of {plural(len(job), 'topic')}")
    jobs = _split(job, pool.count if pool else 1)
    if pool:
        pool.send(jobs[1:], by_tp)
    judged = judge(cluster.settings, jobs[0], by_tp) + (pool.judged() if pool else [])
    orphans = _take(report, judged, window)
    if orphans:
        report.findings.extend(_undetermined(cluster, orphans, window, report.warnings))
    report.findings.sort(key=lambda f: (f.topic, f.partition, f.first_offset or -1, f.producer_id))
    return report


def _wanted(cluster: Cluster, scope: Scope, ended: list[Decision]) -> dict[str, set[int]]:
    """Topic -> the partitions to read: those the ended decisions name, or the whole --topic."""
    wanted: dict[str, set[int]] = {}
    for d in ended:
        for tp in d.partitions:
            if scope.covers(tp):
                wanted.setdefault(tp[0], set()).add(tp[1])
    if scope.topic is not None:
        parts = sorted(cluster.topics(scope.topic).get(scope.topic, {}))
        wanted[scope.topic] = set(parts if scope.partition is None else [scope.partition])
    return wanted


def _job(
    cluster: Cluster, wanted: dict[str, set[int]], ended: list[Decision], window: Window, report: Report
) -> Job:
    """Where to start reading each wanted partition; a topic gone since is a warning, a partition
    without a leader is `unseen` (a read would wait out three --timeouts, then fail every other)."""
    from kxtx.dump.partition_run import no_leader

    existing = cluster.topics()
    job: Job = {}
    for topic in sorted(wanted):
        if topic not in existing:
            n = sum(1 for d in ended if any(tp[0] == topic for tp in d.partitions))
            report.warnings.append(f"topic {topic} no longer exists: {n} transactions on it not checked")
            continue
        meta = existing[topic]
        for p in sorted(wanted[topic]):
            if p in meta and meta[p][0] < 0:
                report.unseen[(topic, p)] = no_leader(meta[p][1])
        tps = [(topic, p) for p in sorted(wanted[topic]) if (topic, p) not in report.unseen]
        if not tps:
            continue
        job[topic] = {tp[1]: start for tp, start in _starts(cluster, tps, ended, window).items()}
    return job


def _take(report: Report, judged: list[Judged], window: Window) -> dict[TP, dict[int, list[BatchLike]]]:
    """Add the judged partitions to `report`; return their batches no decision explains."""
    orphans: dict[TP, dict[int, list[BatchLike]]] = {}
    for tp, offsets, found, unexplained in judged:
        report.partitions_checked += 1
        report.offsets[tp] = offsets
        report.findings.extend(found)
        if unexplained:
            orphans[tp] = unexplained
    if window.from_offset is not None:
        for f in report.findings:
            if f.kind == markers.NO_RECORDS:  # its records, if any, may be before the window
                f.kind = markers.UNDETERMINED
                f.detail = f"no record of it at or after --from {window.from_offset}: any it wrote are before"
    return orphans


def _split(job: Job, count: int) -> list[Job]:
    """Every count-th partition of each topic to each process (neighbouring partitions are alike)."""
    jobs: list[Job] = [{} for _ in range(count)]
    for topic, starts in job.items():
        for i, (p, start) in enumerate(sorted(starts.items())):
            jobs[i % count].setdefault(topic, {})[p] = start
    return jobs


def judge(settings: Settings, job: Job, by_tp: dict[TP, list[Decision]]) -> list[Judged]:
    """Read each partition of `job` (batch headers, from its start to the high watermark) and
    judge it against the decisions naming it."""
    from kxtx.dump.partition import read_headers

    out: list[Judged] = []
    for topic, starts in job.items():
        for p, (bounds, batches) in zip(starts, read_headers(settings, topic, starts)):
            found, unexplained = markers.audit_partition((topic, p), batches, by_tp.get((topic, p), []))
            out.append(((topic, p), (bounds.lso, bounds.hw), found, unexplained))
    return out


class _Workers:
    """Worker processes of one audit, each with a pipe: it sends its share of the decisions, gets
    its share of the partitions (and the decisions naming them) back, and sends their judgement."""

    def __init__(self, count: int, procs: list, conns: list) -> None:
        self.count, self.procs, self.conns = count, procs, conns
        self.shard = (0, count)

    @classmethod
    def fork(cls, count: int, settings: Settings, since_ms: int | None) -> _Workers:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        procs, conns = [], []
        for index in range(1, count):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_work, args=(theirs, settings, since_ms, (index, count)), daemon=True)
            proc.start()
            theirs.close()
            procs.append(proc)
            conns.append(ours)
        return cls(count, procs, conns)

    def decisions(self) -> list[Decision]:
        return [d for conn in self.conns for d in _receive(conn)]

    def send(self, jobs: list[Job], by_tp: dict[TP, list[Decision]]) -> None:
        for conn, job in zip(self.conns, jobs):
            mine = {(t, p): by_tp.get((t, p), []) for t, starts in job.items() for p in starts}
            conn.send((job, mine))

    def judged(self) -> list[Judged]:
        return [j for conn in self.conns for j in _receive(conn)]

    def close(self, stop: bool = False) -> None:
        """Wait for the workers to end (they end after their answer); `stop`: end them now."""
        for conn in self.conns:
            conn.close()
        for proc in self.procs:
            if stop:
                proc.terminate()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)


def _receive(conn: Connection) -> list:
    try:
        kind, payload = conn.recv()
    except (EOFError, OSError):
        raise KafkaOperationError("an audit worker process ended without an answer") from None
    if kind == "error":
        raise payload
    return payload


def _work(conn: Connection, settings: Settings, since_ms: int | None, shard: tuple[int, int]) -> None:
    """A worker: leave Ctrl-C to the parent (it stops the workers), end at once on SIGTERM."""
    import signal

    from kxtx.client.clients import translate

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        conn.send(("decisions", read_decisions(settings, since_ms, shard=shard)))
        job, by_tp = conn.recv()
        conn.send(("judged", judge(settings, job, by_tp)))
    except (EOFError, OSError):
        pass  # the parent is gone (it failed or was stopped): nothing to answer
    except Exception as exc:  # noqa: BLE001 - the parent reports it, once
        conn.send(("error", translate(exc)))
    finally:
        conn.close()


def _topic_partitions(cluster: Cluster, topic: str) -> list[int]:
    parts = sorted(cluster.topics(topic).get(topic, {}))
    if not parts:
        raise NoSuchTopic(topic)
    return parts


def _starts(cluster: Cluster, tps: list[TP], ended: list[Decision], window: Window) -> dict[TP, int | str]:
    """Where to read each partition from: the first offset written at or after the earliest start of
    a decision on it (less the producers' clock slack), and never after the last stable offset (the
    first open record: what a lost marker left open, whatever its timestamp says)."""
    if window.from_offset is not None:
        return dict.fromkeys(tps, window.from_offset)
    first: dict[TP, int] = {}
    for d in ended:
        for tp in d.partitions:
            first[tp] = min(first.get(tp, d.start_ms), d.start_ms)
    by_time = cluster.offsets_for_times(
        {tp: ms - markers.START_SLACK_MS for tp, ms in first.items() if tp in tps}
    )
    stable = cluster.offsets(tps)
    out: dict[TP, int | str] = {}
    for tp in tps:
        o = stable[tp]
        if (tp in first and tp not in by_time) or o.lso is None:
            out[tp] = "earliest"  # a lookup failed: read it all rather than miss a marker
            continue
        candidates = [x for x in (by_time.get(tp),) if x is not None and x >= 0]
        if o.high_watermark is None or o.lso < o.high_watermark:
            candidates.append(o.lso)
        # No decision and nothing open: nothing before the end can concern the audit.
        out[tp] = min(candidates) if candidates else "hw"
    return out


def _undetermined(
    cluster: Cluster, orphans: dict[TP, dict[int, list[BatchLike]]], window: Window, warnings: list[str]
) -> list[Finding]:
    """Open records no decision read explains: a transaction its coordinator still runs is left
    alone; the rest are undetermined (compacted or expired history, or before the window)."""
    from kxtx.dump.txnlog import transactional_ids

    pids = {pid for by_pid in orphans.values() for pid in by_pid}
    ids = transactional_ids(cluster, pids, warnings)
    descs = cluster.describe_txns([tid for tid, _src in ids.values()])
    where = "before --since" if window.since_ms is not None else "compacted or expired"
    out = []
    for tp, by_pid in sorted(orphans.items()):
        for pid, batches in sorted(by_pid.items()):
            tid = ids.get(pid, (None, ""))[0]
            desc = descs.get(tid) if tid else None
            if isinstance(desc, CoordinatorTxn) and desc.producer_id == pid and tp in desc.partitions:
                continue  # its coordinator's transaction still includes the partition: live
            state = desc.state if isinstance(desc, CoordinatorTxn) else "does not know it"
            f = Finding(
                tp[0], tp[1], markers.UNDETERMINED, pid, batches[0].producer_epoch, tid, None, None, None
            )
            f.first_offset, f.last_offset = batches[0].base_offset, batches[-1].last_offset
            f.records, f.fate = sum(b.records_count for b in batches), markers.OPEN
            f.detail = (
                f"open records with no coordinator decision in the history read ({where}); "
                f"the coordinator {'is in ' + state if tid and isinstance(desc, CoordinatorTxn) else state}"
            )
            out.append(f)
    return out


# --- repair --------------------------------------------------------------------------------------------
def plan_repairs(
    cluster: Cluster, report: Report, explicit: str | None = None, scope: Scope | None = None
) -> list[Target]:
    """One marker per (partition, producer id) with repairable findings: the decided outcome, or
    `explicit` ("COMMIT" / "ABORT", the operator's word) for undetermined open records in `scope`.
    Each target is the producer's open transaction as its partition's leader states it now."""
    chosen: dict[tuple[TP, int], Finding] = {}
    for f in report.findings:
        decided = f.kind in markers.REPAIRABLE and f.repairable
        named = bool(explicit) and f.kind == markers.UNDETERMINED and scope is not None and scope.covers(f.tp)
        if decided or named:
            chosen.setdefault((f.tp, f.producer_id), f)
    if not chosen:
        return []
    states, errors = cluster.describe_producers(sorted({tp for tp, _pid in chosen}))
    for tp, why in sorted(errors.items()):
        logger.warning(f"{tp[0]}:{tp[1]}: producer state not read ({why}); not repaired")
    targets = []
    for (tp, pid), f in sorted(chosen.items()):
        state = next((p for p in states.get(tp, []) if p.producer_id == pid and p.is_open), None)
        if state is None:
            if tp not in errors:
                logger.warning(
                    f"{tp[0]}:{tp[1]} producer {pid}: no open transaction in its producer state; skipped"
                )
            continue
        outcome = f.decided if f.kind != markers.UNDETERMINED else explicit
        # The marker carries the partition's producer epoch (Target's default): the broker takes any
        # epoch at or above the one it holds.
        targets.append(
            Target(
                state, transactional_id=f.transactional_id, commit=outcome == markers.COMMIT, same_writes=True
            )
        )
    return targets


# --- the abort guard -----------------------------------------------------------------------------------
def committed_by_coordinator(cluster: Cluster, rows: list[HangingTxn]) -> dict[TP, str]:
    """{partition: why} for the hanging rows whose open records a coordinator committed: aborting
    them would drop committed data. Established from the transactional id's history (a lost COMMIT
    still open), else from the coordinator's state now (CompleteCommit by that producer id and
    epoch, or the one after it: transactions v2 bumps it at the end)."""
    out: dict[TP, str] = {}
    named = [r for r in rows if r.transactional_id]
    if not named:
        return out
    try:
        history = read_decisions(
            cluster.settings, None, sorted({r.transactional_id for r in named if r.transactional_id})
        )
    except KxtxError as exc:
        logger.warning(f"cannot read __transaction_state to check the coordinators' decisions: {exc}")
        history = []
    for r in named:
        why = _committed(cluster, r, history)
        if why:
            out[r.tp] = why
    return out


def committed_open(cluster: Cluster, t: OpenTxn) -> str | None:
    """`committed_by_coordinator` for one open transaction found by `kxtx abort`: why aborting it
    would drop committed records, or None."""
    from kxtx.dump.txnlog import transactional_ids

    warnings: list[str] = []
    tid = transactional_ids(cluster, {t.producer_id}, warnings).get(t.producer_id, (None, ""))[0]
    for w in warnings:
        logger.warning(w)
    if tid is None:
        return None
    row = HangingTxn(
        t.topic,
        t.partition,
        t.producer_id,
        t.producer_epoch,
        t.coordinator_epoch,
        t.start_offset,
        t.last_timestamp,
        0,
        "",
        transactional_id=tid,
    )
    desc = cluster.describe_txns([tid]).get(tid)
    if isinstance(desc, CoordinatorTxn):
        row.coordinator_state = desc.state
        row.coordinator_producer_id, row.coordinator_producer_epoch = desc.producer_id, desc.producer_epoch
    return committed_by_coordinator(cluster, [row]).get(t.tp)


def _committed(cluster: Cluster, r: HangingTxn, history: list[Decision]) -> str | None:
    from kxtx.dump.partition import read_headers

    mine = [d for d in history if d.transactional_id == r.transactional_id]
    if mine:
        # The id's history is readable: it says whether a decision covering these records was a
        # commit. Nothing found means no decision of it names this partition (Kafka's classic
        # hanging transaction, which an abort ends rightly), whatever its last decision was.
        ((_bounds, batches),) = read_headers(cluster.settings, r.topic, {r.partition: r.start_offset})
        found, _ = markers.audit_partition(r.tp, batches, mine)
        lost = [f for f in found if f.producer_id == r.producer_id and f.kind == markers.LOST_COMMIT_OPEN]
        if not lost:
            return None
        return (
            f"the coordinator committed this transaction ({r.transactional_id}, prepared at "
            f"{_iso(lost[0].decided_ms)}) but its COMMIT marker was lost"
        )
    # No history (compacted to its last record, or unreadable): the coordinator's state now.
    state, pid, epoch = r.coordinator_state, r.coordinator_producer_id, r.coordinator_producer_epoch
    if (
        state in ("CompleteCommit", "PrepareCommit")
        and pid == r.producer_id
        and epoch
        in (
            r.producer_epoch,
            r.producer_epoch + 1,
        )
    ):
        return (
            f"the coordinator's last decision for producer {pid} epoch {r.producer_epoch} "
            f"({r.transactional_id}) was a commit ({state})"
        )
    return None


def _iso(ms: int | None) -> str:
    from kxtx.timefmt import iso_ms

    return iso_ms(ms) or "?"
