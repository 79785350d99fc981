"""`inspect group GROUP`: one consumer group's view, right on transactional topics.

`kafka-consumer-groups.sh --describe` reports high watermark - committed offset as lag: markers and
aborted records count as lag a read_committed consumer never receives, and it cannot say why a
read_committed consumer waits. Per partition the group committed, this gives the committed offset,
the LSO and the high watermark, the read_committed lag (the records such a consumer still receives,
counted from the log as `monitor` does), the part of the naive lag that is only markers and aborted
records, and where the LSO holds the group back, the open transaction that holds it, with why and
the command that ends it (find-hanging's rule and classes).
"""

from __future__ import annotations

import time

from kxtx.client.admin import Cluster
from kxtx.client.model import TP
from kxtx.errors import KafkaOperationError, KxtxError
from kxtx.monitor.snapshot import LAG_SCAN_MAX, GroupLag, Snapshot, lags, unseen_item
from kxtx.ops.hanging import Report, judge, resolve_max_timeout
from kxtx.timefmt import iso_ms


def inspect_group(
    cluster: Cluster,
    group: str,
    topic: str | None = None,
    max_timeout_minutes: float | None = None,
    lag_scan_max: int = LAG_SCAN_MAX,
    now_ms: int | None = None,
) -> dict:
    """The group's partitions (of `topic` only, when given), each with its lags and what holds its
    LSO. What could not be read is named under `unseen`, its figures None, never 0."""
    cluster.broker_ids()  # an unreachable cluster is exit 69 here, not a group that "cannot be read"
    by_group, failed = cluster.group_offsets([group])
    if group in failed:
        raise KafkaOperationError(f"group {group!r}: cannot read its committed offsets: {failed[group]}")
    committed = {tp: off for tp, off in by_group.get(group, {}).items() if topic in (None, tp[0])}
    if not committed:
        where = f" on topic {topic!r}" if topic else ""
        raise KxtxError(
            f"group {group!r} has no committed offset{where} (unknown group, or it never committed)"
        )
    tps = sorted(committed)
    snap = Snapshot()
    offsets = cluster.offsets(tps)
    for tp, o in offsets.items():
        if o.held_back is None:
            snap.unseen.append(unseen_item("offsets", f"{tp[0]}:{tp[1]}", o.why or "not answered"))
    rows = lags(cluster, snap, {group: committed}, offsets, lag_scan_max)
    holders = _holders(
        cluster, snap, [tp for tp in tps if offsets[tp].held_back], max_timeout_minutes, now_ms
    )
    return {
        "group": group,
        "partitions": [_row(r, holders.get((r.topic, r.partition))) for r in rows],
        "unseen": snap.unseen or None,
    }


def _holders(
    cluster: Cluster, snap: Snapshot, held: list[TP], max_timeout_minutes: float | None, now_ms: int | None
) -> dict[TP, dict]:
    """{partition: the open transaction at its LSO (the first open one), classified} for the
    partitions whose LSO holds records back."""
    if not held:
        return {}
    report = Report()
    report.max_timeout_ms, report.timeout_source = resolve_max_timeout(cluster, max_timeout_minutes)
    states, report.errors = cluster.describe_producers(held)
    snap.unseen += [
        unseen_item("partitions", f"{t}:{p}", why) for (t, p), why in sorted(report.errors.items())
    ]
    judge(cluster, report, states, now_ms if now_ms is not None else int(time.time() * 1000), extras=False)
    found: dict[TP, tuple[int, dict]] = {}
    for h in report.hanging:
        one = {"transactional_id": h.transactional_id, "producer_id": h.producer_id, "class": "hanging"}
        one.update(
            start_offset=h.start_offset,
            action=f"kxtx abort-hanging --topic {h.topic} --partition {h.partition}",
        )
        one["ends_time"] = None
        _keep_first(found, h.tp, h.start_offset, one)
    for x in report.held:
        one = {"transactional_id": x.transactional_id, "producer_id": x.producer_id, "class": x.kind}
        one.update(start_offset=x.start_offset, action=x.action, ends_time=iso_ms(x.ends_ms))
        _keep_first(found, x.tp, x.start_offset, one)
    return {tp: one for tp, (_start, one) in found.items()}


def _keep_first(found: dict[TP, tuple[int, dict]], tp: TP, start: int, one: dict) -> None:
    """The open transaction that starts first is the one at the LSO."""
    if tp not in found or start < found[tp][0]:
        found[tp] = (start, one)


def _row(r: GroupLag, holder: dict | None) -> dict:
    blocked = r.lso is not None and r.high_watermark is not None and r.high_watermark > r.lso == r.committed
    return {
        "topic": r.topic,
        "partition": r.partition,
        "committed": r.committed,
        "lso": r.lso,
        "high_watermark": r.high_watermark,
        # what a read_committed consumer still receives (counted, or an offset bound: lag_exact)
        "lag": r.lag_records,
        "lag_exact": r.exact,
        "naive_lag": r.hw_lag_records,
        "markers_and_aborted": r.invisible_records,
        "blocked_at_lso": blocked,
        "held_by": holder,
    }
