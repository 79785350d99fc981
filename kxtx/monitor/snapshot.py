"""`kxtx monitor`: one pass over the cluster gathering what transactional health monitoring needs.

One DescribeProducers sweep feeds both the per-partition figures and find-hanging's rule
(`hanging.judge`, with the broker's real `transaction.max.timeout.ms`); ListTransactions gives every
transactional id's coordinator state, DescribeTransactions the start time of the ones in a
non-final state; ListOffsets the LSO and high watermark; the groups' committed offsets the lag. The
lag a read_committed consumer still has is counted in records it would receive (markers and
aborted records are never delivered), read from the log between the committed offset and the LSO
(`dump.partition.read_ranges`) when that range is short enough. What could not be read is listed,
not guessed: a principal without DESCRIBE sees less.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kxtx.client.admin import Cluster, Progress
from kxtx.client.model import ACTIVE_STATES, TP, CoordinatorTxn, Offsets, OpenTxn
from kxtx.errors import KxtxError
from kxtx.log import logger
from kxtx.ops.hanging import Report, Scope, judge, lso_holders, partitions_in_scope, resolve_max_timeout
from kxtx.timefmt import iso_ms

#: Every coordinator state a transactional id can be listed in, counted even when zero so a series
#: does not vanish. PrepareEpochFence is a transient state of Kafka's own; Dead ids are not listed.
STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Empty", "Dead")
#: Default: a group partition whose committed offset is more offsets than this below the LSO has its
#: lag counted by offsets (an upper bound) instead of reading the range.
LAG_SCAN_MAX = 1000


@dataclass
class PartitionHealth:
    """A partition with an open transaction."""

    topic: str
    partition: int
    high_watermark: int | None
    lso: int | None
    #: records between the LSO and the high watermark (held back from read_committed consumers)
    lso_gap_records: int | None
    open_transactions: int
    oldest_start_offset: int
    oldest_producer_id: int
    oldest_transactional_id: str | None
    #: since the coordinator began the oldest open transaction (None: the coordinator has no
    #: transaction covering this partition, e.g. it hangs)
    oldest_age_since_start_s: float | None
    #: since the oldest open transaction's producer last wrote here (what find-hanging and the
    #: broker's PartitionsWithLateTransactionsCount compare with the max timeout)
    oldest_age_since_last_write_s: float
    hanging_transactions: int

    @property
    def oldest_open_age_s(self) -> float:
        """The oldest open transaction's age: since it began when known, else since its last write
        (never more than since it began)."""
        return max(self.oldest_age_since_start_s or 0.0, self.oldest_age_since_last_write_s)


@dataclass
class GroupLag:
    group: str
    topic: str
    partition: int
    committed: int
    high_watermark: int | None
    lso: int | None
    #: naive lag: high watermark - committed (None: not read)
    hw_lag_records: int | None
    #: what a read_committed consumer still receives: data records below the LSO, not aborted
    #: (None: not read; never guessed)
    lag_records: int | None
    #: markers and aborted records between the committed offset and the LSO: the part of the
    #: naive lag that never reaches a read_committed consumer
    invisible_records: int | None
    #: lag_records was counted record by record (False: offsets, an upper bound)
    exact: bool


@dataclass
class Snapshot:
    collected_at_ms: int = 0
    duration_s: float = 0.0
    max_timeout_ms: int = 0
    timeout_source: str = ""
    partitions_checked: int = 0
    partitions: list[PartitionHealth] = field(default_factory=list)
    #: find-hanging's rows (kxtx.ops.model.HangingTxn)
    hanging: list = field(default_factory=list)
    #: the other open transactions that hold an LSO, with why (kxtx.ops.model.HeldLso)
    held: list = field(default_factory=list)
    #: {state: transactional ids in it}
    states: dict[str, int] = field(default_factory=dict)
    #: {non-final state: age in seconds of its oldest transaction}
    oldest_in_state_s: dict[str, float] = field(default_factory=dict)
    groups: list[GroupLag] = field(default_factory=list)
    #: what could not be seen: {"what": partitions|transactional_ids|groups|offsets|lag, "name", "why"}
    unseen: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: with `markers_since_ms`: lost transaction markers by kind (audit-markers'); None when not
    #: asked for, or when the audit could not be made (then it is in `unseen`)
    lost_markers: dict[str, int] | None = None
    markers_audited: bool = False

    @property
    def complete(self) -> bool:
        return not self.unseen

    def unseen_counts(self) -> dict[str, int]:
        out = dict.fromkeys(UNSEEN_KINDS, 0)
        for u in self.unseen:
            out[u["what"]] += 1
        return out

    def _unseen_any(self, *kinds: str) -> bool:
        return any(u["what"] in kinds for u in self.unseen)

    def summary(self, floor: bool = False) -> dict[str, float | int | None]:
        """The headline figures (check mode's metrics). A figure that depends on something the
        collection could not read is None, never the part it saw; `floor`: the part it saw instead
        (a lower bound of the true figure: every one is a count or a maximum)."""
        lags = group_topic_lags(self)
        producers = floor or not self._unseen_any("partitions")
        ages = producers and (floor or not self._unseen_any("transactional_ids"))
        gaps = [p.lso_gap_records for p in self.partitions]
        rows = [g.lag_records for g in self.groups]
        sums = [lag for lag, _hw, _inv in lags.values()]
        groups = floor or not self._unseen_any("groups")
        return {
            "hanging_transactions": len(self.hanging) if producers else None,
            "hanging_partitions": len({h.tp for h in self.hanging}) if producers else None,
            "open_transactions": sum(p.open_transactions for p in self.partitions) if producers else None,
            "oldest_open_age_seconds": (
                max((p.oldest_open_age_s for p in self.partitions), default=0.0) if ages else None
            ),
            "max_lso_gap_records": _max(gaps, floor) if producers else None,
            "max_read_committed_lag_records": _max(rows, floor) if groups else None,
            "max_group_lag_records": _max(sums, floor) if groups else None,
            **({"lost_markers": self.lost_markers_needing_action()} if self.markers_audited else {}),
        }

    def lost_markers_needing_action(self) -> int | None:
        """Lost markers of the kinds that need an operator (held back, exposed, dropped, unknown)."""
        from kxtx.ops.markers import NEEDS_ACTION

        if self.lost_markers is None:
            return None
        return sum(n for kind, n in self.lost_markers.items() if kind in NEEDS_ACTION)


def _max(values: list[int | None], floor: bool) -> int | None:
    """The largest value; None when one is unknown, unless `floor` (then of the known ones)."""
    if not floor and any(v is None for v in values):
        return None
    return max((v for v in values if v is not None), default=0)


def group_topic_lags(snap: Snapshot) -> dict[tuple[str, str], tuple[int | None, int | None, int | None]]:
    """{(group, topic): (read_committed lag, naive lag, invisible records)}, each summed over the
    topic's partitions the group committed on: what `kxtx_consumergroup_*_records` export and
    `check`'s `lag` thresholds. A sum with a partition not read is None (the part read would look
    like the whole); the invisible records are summed where counted (a lag not read record by
    record has none counted) and None when a partition's lag was not read."""
    out: dict[tuple[str, str], tuple[int | None, int | None, int | None]] = {}
    for g in snap.groups:
        lag, hw, inv = out.get((g.group, g.topic), (0, 0, 0))
        out[(g.group, g.topic)] = (
            None if lag is None or g.lag_records is None else lag + g.lag_records,
            None if hw is None or g.hw_lag_records is None else hw + g.hw_lag_records,
            None if inv is None or g.lag_records is None else inv + (g.invisible_records or 0),
        )
    return out


UNSEEN_KINDS = ("partitions", "transactional_ids", "groups", "offsets", "lag", "markers")


def collect(
    cluster: Cluster,
    topic: str | None = None,
    groups: list[str] | None = None,
    max_timeout_minutes: float | None = None,
    lag_scan_max: int = LAG_SCAN_MAX,
    now_ms: int | None = None,
    markers_since_ms: int | None = None,
    progress: Progress | None = None,
) -> Snapshot:
    """One pass. `topic`: only its partitions (transactional id states stay cluster-wide: an id is
    not bound to a topic). `groups`: only these groups (default every group). `markers_since_ms`:
    also audit the transactions prepared since then for lost markers (audit-markers, in this
    process). `progress(done, total)`: the DescribeProducers sweep's partitions, as it advances."""
    started = time.monotonic()
    snap = Snapshot()
    report = Report()
    report.max_timeout_ms, report.timeout_source = resolve_max_timeout(cluster, max_timeout_minutes)
    snap.max_timeout_ms, snap.timeout_source = report.max_timeout_ms, report.timeout_source
    tps = partitions_in_scope(cluster, Scope(topic))
    snap.partitions_checked = len(tps)
    states, report.errors = cluster.describe_producers(tps, progress=progress)
    snap.unseen += [
        unseen_item("partitions", f"{t}:{p}", why) for (t, p), why in sorted(report.errors.items())
    ]
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    judge(cluster, report, states, now, extras=False, held=False)
    listed, descs = _coordinators(cluster, snap, now)
    # why the other open transactions hold their LSO, from the listing and descriptions just read
    # (asked again only when the listing failed: then the same failure makes the rows unseen)
    failed = any(u["what"] == "transactional_ids" and u["name"] == "*" for u in snap.unseen)
    report.held = lso_holders(
        cluster, states, report.hanging, now, report.max_timeout_ms, report.warnings,
        listed=None if failed else listed, known=descs,
    )  # fmt: skip
    snap.hanging, snap.held, snap.warnings = report.hanging, report.held, report.warnings
    open_by_tp = {
        tp: sorted((p for p in rows if p.is_open), key=lambda p: p.start_offset)
        for tp, rows in states.items()
    }
    open_by_tp = {tp: rows for tp, rows in open_by_tp.items() if rows}
    committed = _committed(cluster, snap, groups, set(tps))
    wanted = sorted(set(open_by_tp) | {tp for offsets in committed.values() for tp in offsets})
    offsets = cluster.offsets(wanted)
    snap.unseen += [
        unseen_item("offsets", f"{t}:{p}", o.why or "not answered")
        for (t, p), o in sorted(offsets.items())
        if o.lso is None or o.high_watermark is None
    ]
    pid_ids = {pid: tid for tid, (pid, _state) in listed.items()}
    hanging_on: dict[TP, int] = {}
    for h in snap.hanging:
        hanging_on[h.tp] = hanging_on.get(h.tp, 0) + 1
    for tp, rows in sorted(open_by_tp.items()):
        snap.partitions.append(_partition(tp, rows, offsets[tp], pid_ids, descs, hanging_on.get(tp, 0), now))
    snap.groups = lags(cluster, snap, committed, offsets, lag_scan_max)
    if markers_since_ms is not None:
        _lost_markers(cluster, snap, topic, markers_since_ms)
    snap.collected_at_ms = int(time.time() * 1000)
    snap.duration_s = time.monotonic() - started
    return snap


def _lost_markers(cluster: Cluster, snap: Snapshot, topic: str | None, since_ms: int) -> None:
    """audit-markers over the window; a failure leaves the counts unseen, never 0."""
    from kxtx.ops.audit import Scope as AuditScope
    from kxtx.ops.audit import Window, audit

    snap.markers_audited = True
    try:
        report = audit(cluster, AuditScope(topic), Window(since_ms))
    except KxtxError as exc:
        snap.unseen.append(unseen_item("markers", "lost markers", str(exc)))
        return
    snap.lost_markers = report.counts()
    snap.warnings += report.warnings


def unseen_item(what: str, name: str, why: str) -> dict:
    return {"what": what, "name": name, "why": why}


def _coordinators(
    cluster: Cluster, snap: Snapshot, now: int
) -> tuple[dict[str, tuple[int, str]], dict[str, CoordinatorTxn | str]]:
    """Counts per coordinator state and the oldest age in each non-final one; returns the listing
    ({id: (producer id, state)}) and the descriptions of the ids in a non-final state."""
    snap.states = dict.fromkeys(STATES, 0)
    try:
        listed = cluster.transactions()
    except KxtxError as exc:  # e.g. no DESCRIBE on the Cluster in older brokers: the rest still helps
        snap.unseen.append(unseen_item("transactional_ids", "*", f"ListTransactions: {exc}"))
        return {}, {}
    for _pid, state in listed.values():
        snap.states[state] = snap.states.get(state, 0) + 1
    active = [tid for tid, (_pid, state) in listed.items() if state in ACTIVE_STATES]
    try:
        descs = cluster.describe_txns(active)
    except KxtxError as exc:
        snap.unseen.append(unseen_item("transactional_ids", f"{len(active)} active", f"{exc}"))
        return listed, {}
    for d in descs.values():
        if isinstance(d, CoordinatorTxn) and d.state in ACTIVE_STATES and d.start_time_ms >= 0:
            age = max(0, now - d.start_time_ms) / 1000
            snap.oldest_in_state_s[d.state] = max(age, snap.oldest_in_state_s.get(d.state, 0.0))
    return listed, descs


def _partition(
    tp: TP,
    rows: list[OpenTxn],
    o: Offsets,
    pid_ids: dict[int, str],
    descs: dict[str, CoordinatorTxn | str],
    hanging: int,
    now: int,
) -> PartitionHealth:
    oldest = rows[0]
    tid = pid_ids.get(oldest.producer_id)
    desc = descs.get(tid) if tid else None
    since_start = None
    # the coordinator's start time belongs to this transaction only when its transaction covers tp
    if isinstance(desc, CoordinatorTxn) and tp in desc.partitions and desc.start_time_ms >= 0:
        since_start = max(0, now - desc.start_time_ms) / 1000
    return PartitionHealth(
        tp[0],
        tp[1],
        o.high_watermark,
        o.lso,
        o.held_back,
        len(rows),
        oldest.start_offset,
        oldest.producer_id,
        tid,
        since_start,
        max(0, now - oldest.last_timestamp) / 1000,
        hanging,
    )


def _committed(
    cluster: Cluster, snap: Snapshot, groups: list[str] | None, in_scope: set[TP]
) -> dict[str, dict[TP, int]]:
    """{group: {partition in scope: committed offset}}; groups not readable are listed as unseen."""
    if groups is None:
        try:
            groups, errors = cluster.group_listing()
        except Exception as exc:  # noqa: BLE001 - groups add to the picture; the rest still stands
            snap.unseen.append(unseen_item("groups", "*", f"ListGroups: {exc}"))
            return {}
        # a broker that did not answer ListGroups hides the groups it coordinates
        snap.unseen += [unseen_item("groups", "*", f"ListGroups: {why}") for why in errors]
    by_group, failed = cluster.group_offsets(groups)
    snap.unseen += [unseen_item("groups", g, why) for g, why in sorted(failed.items())]
    return {g: {tp: off for tp, off in offs.items() if tp in in_scope} for g, offs in by_group.items()}


def lags(
    cluster: Cluster,
    snap: Snapshot,
    committed: dict[str, dict[TP, int]],
    offsets: dict[TP, Offsets],
    lag_scan_max: int,
) -> list[GroupLag]:
    rows = []
    for group, offs in sorted(committed.items()):
        for tp, c in sorted(offs.items()):
            o = offsets.get(tp, Offsets())
            # an offset not read leaves its lag None (unseen, listed as such), never 0
            hw_lag = None if o.high_watermark is None else max(0, o.high_watermark - c)
            lag = None if o.lso is None else max(0, o.lso - c)
            # nothing between the committed offset and the LSO: nothing to read, nothing invisible
            invisible = 0 if lag == 0 else None
            rows.append(
                GroupLag(group, tp[0], tp[1], c, o.high_watermark, o.lso, hw_lag, lag, invisible, lag == 0)
            )
    _count_visible(cluster, snap, [r for r in rows if not r.exact and r.lag_records], lag_scan_max)
    return rows


def _count_visible(cluster: Cluster, snap: Snapshot, rows: list[GroupLag], lag_scan_max: int) -> None:
    """Replace each row's offset lag by the records a read_committed consumer would still receive,
    read from the log (the same reading as `kxtx dump partition`), where the range is short."""
    by_topic: dict[str, list[GroupLag]] = {}
    for r in rows:
        if r.lag_records is not None and r.lag_records <= lag_scan_max:
            by_topic.setdefault(r.topic, []).append(r)
    # every log start in one request, and one admin client (the cluster's) for every topic's reads
    lows = cluster.log_starts(sorted({(r.topic, r.partition) for mine in by_topic.values() for r in mine}))
    for topic, mine in sorted(by_topic.items()):
        while mine:  # one fetch client per topic and round; a partition once per round
            batch: dict[int, GroupLag] = {}
            rest = []
            for r in mine:
                if r.partition in batch:
                    rest.append(r)
                else:
                    batch[r.partition] = r
            _read_batch(cluster, snap, topic, batch, lows)
            mine = rest


def _read_batch(
    cluster: Cluster, snap: Snapshot, topic: str, batch: dict[int, GroupLag], lows: dict[TP, int]
) -> None:
    from kxtx.dump.partition import read_ranges

    starts: dict[int, int | str] = {p: r.committed for p, r in batch.items()}
    mine = {p: lows[(topic, p)] for p in batch if (topic, p) in lows}
    try:
        dumps = read_ranges(cluster.settings, topic, starts, "lso", log_starts=mine, admin=cluster.txn)
    except KxtxError as exc:  # the rows' lag is not known: unseen, not the offset lag (which is
        # not the figure a row within --lag-scan-max claims to be)
        logger.info(f"{topic}: reading from the committed offsets: {exc}")
        snap.unseen += [unseen_item("lag", f"{r.group} {topic}:{p}", str(exc)) for p, r in batch.items()]
        for r in batch.values():
            r.lag_records = r.invisible_records = None
        return
    for r, dump in zip(batch.values(), dumps):
        s = dump.summary
        r.lag_records = s.read_committed
        r.invisible_records = s.markers + s.aborted_records
        r.exact = True


# --- plain data for the output layer ------------------------------------------------------------------
def document(snap: Snapshot) -> dict:
    """What `monitor collect -o json|jsonl|table` shows."""
    from dataclasses import asdict

    from kxtx.ops.decide import fmt_age

    return {
        "collected_at": iso_ms(snap.collected_at_ms),
        "duration_seconds": round(snap.duration_s, 3),
        "complete": snap.complete,
        "max_transaction_timeout_ms": snap.max_timeout_ms,
        "timeout_source": snap.timeout_source,
        "partitions_checked": snap.partitions_checked,
        **snap.summary(),
        "partitions": [
            {**asdict(p), "oldest_age": fmt_age(int(p.oldest_open_age_s * 1000))} for p in snap.partitions
        ],
        "hanging": [
            {
                "topic": h.topic,
                "partition": h.partition,
                "producer_id": h.producer_id,
                "start_offset": h.start_offset,
                "transactional_id": h.transactional_id,
                "reason": h.reason,
            }
            for h in snap.hanging
        ],
        "lso_held": [
            {
                "topic": h.topic,
                "partition": h.partition,
                "producer_id": h.producer_id,
                "start_offset": h.start_offset,
                "transactional_id": h.transactional_id,
                "class": h.kind,
                "action": h.action,
            }
            for h in snap.held
        ],
        "transactional_id_states": [
            {"state": s, "transactional_ids": n, "oldest_age_seconds": snap.oldest_in_state_s.get(s)}
            for s, n in snap.states.items()
        ],
        "groups": [asdict(g) for g in snap.groups],
        "unseen": snap.unseen,
        "warnings": snap.warnings,
        **({"lost_markers": snap.lost_markers} if snap.markers_audited else {}),
    }
