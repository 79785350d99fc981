"""`inspect txn` (coordinator view + each partition's view + history + verdict) and `inspect partition`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from kxtx.client.admin import Cluster, Progress
from kxtx.client.model import NOT_FOUND, TP, CoordinatorTxn, OpenTxn
from kxtx.dump import txnlog as history
from kxtx.dump.txnlog import named_producers
from kxtx.errors import KxtxError
from kxtx.log import logger
from kxtx.ops import decide, pipeids
from kxtx.ops.hanging import resolve_max_timeout
from kxtx.ops.owners import owner_hint
from kxtx.ops.pipeids import PipeView
from kxtx.timefmt import iso_ms
from kxtx.wording import plural


def _now(now_ms: int | None) -> int:
    return now_ms if now_ms is not None else int(time.time() * 1000)


def _tp_text(tp: TP) -> str:
    return f"{tp[0]}:{tp[1]}"


def _parse_tp(text: str) -> TP:
    topic, _sep, p = text.rpartition(":")
    return (topic, int(p))


def inspect_txn(
    cluster: Cluster,
    transactional_id: str,
    with_history: bool = True,
    max_timeout_minutes: float | None = None,
    now_ms: int | None = None,
    scan: bool = True,
    progress: Progress | None = None,
) -> dict | PipeView:
    """`scan`: sweep DescribeProducers over every partition for this id's producer ids, the only way
    to see partitions the coordinator never heard of (where it hangs); `progress(done, total)`: its
    partitions, as it advances.

    An id unknown to its coordinator may be a `kxtx pipe`'s in executors mode, which uses only
    `ID.TOPIC.PARTITION`: then the view of those ids and a verdict for the pipe (`pipeids`)."""
    ask = _Ask(with_history, max_timeout_minutes, _now(now_ms), _Sweep(cluster, progress) if scan else None)
    desc = cluster.describe_txns([transactional_id]).get(transactional_id, NOT_FOUND)
    pasts, unavailable = _histories(cluster, [transactional_id], with_history)
    past = None if pasts is None else pasts[transactional_id]
    if desc == NOT_FOUND and not past:
        members, how = pipeids.find_members(cluster, transactional_id)
        if not members:
            raise KxtxError(
                f"transactional id {transactional_id!r} is unknown to its coordinator "
                "(never used, or expired after transactional.id.expiration.ms), and no pipe "
                f"uses {transactional_id}.TOPIC.PARTITION ids (kxtx pipe's executors mode)"
            )
        return _inspect_pipe(cluster, transactional_id, members, how, ask)
    view, _kind = _txn_view(cluster, transactional_id, desc, past, unavailable, ask)
    return view


@dataclass(frozen=True)
class _Ask:
    """What the command asked for, the same for every id it shows."""

    with_history: bool
    max_timeout_minutes: float | None
    now: int
    sweep: _Sweep | None


class _Sweep:
    """The DescribeProducers sweep over every partition: at most once per command, however many
    ids it serves (a pipe has one per input partition)."""

    def __init__(self, cluster: Cluster, progress: Progress | None = None) -> None:
        self._cluster, self._progress = cluster, progress
        self._by_pid: dict[int, set[TP]] | None = None

    def partitions(self, pids: set[int]) -> set[TP]:
        """Every partition that holds producer state for these producer ids: where a transaction of
        theirs is open, and where they wrote within the brokers' producer-state retention. Without
        it, `--no-history` showed no partition of a finished transaction (the coordinator lists
        only the open transaction's partitions)."""
        from kxtx.ops.hanging import Scope, partitions_in_scope

        if self._by_pid is None:
            states, _errors = self._cluster.describe_producers(
                partitions_in_scope(self._cluster, Scope()), progress=self._progress
            )
            self._by_pid = {}
            for tp, rows in states.items():
                for p in rows:
                    self._by_pid.setdefault(p.producer_id, set()).add(tp)
        return {tp for pid in pids for tp in self._by_pid.get(pid, ())}


def _histories(
    cluster: Cluster, ids: list[str], with_history: bool
) -> tuple[dict[str, list[dict]] | None, str]:
    """({id: its __transaction_state records}, "") or (None, why not) when it could not be read."""
    if not with_history:
        return None, ""
    try:
        return history.histories(cluster.settings, ids), ""
    except KxtxError as exc:  # e.g. no READ on __transaction_state: the live views still help
        unavailable = f"unavailable: {exc}"
        logger.warning(f"history of {', '.join(map(repr, ids))} {unavailable}")
        return None, unavailable


def _inspect_pipe(cluster: Cluster, pipe_id: str, members: dict[str, TP], how: str, ask: _Ask) -> PipeView:
    ids = list(members)
    descs = cluster.describe_txns(ids)
    pasts, unavailable = _histories(cluster, ids, ask.with_history)
    views, kinds = [], {}
    for tid in ids:
        past = None if pasts is None else pasts[tid]
        view, kinds[tid] = _txn_view(cluster, tid, descs.get(tid, NOT_FOUND), past, unavailable, ask)
        views.append(view)
    return pipeids.pipe_view(pipe_id, members, how, views, kinds)


def _txn_view(
    cluster: Cluster,
    transactional_id: str,
    desc: CoordinatorTxn | str,
    past: list[dict] | None,
    unavailable: str,
    ask: _Ask,
) -> tuple[dict, str]:
    """(what `inspect txn` shows of one id, its `decide.txn_kind`)."""
    coord = desc if isinstance(desc, CoordinatorTxn) else None
    pids = {coord.producer_id} if coord else set()
    tps: set[TP] = set(coord.partitions) if coord else set()
    for h in past or []:
        if h.get("producer_id") is not None:
            pids.add(h["producer_id"])
        tps.update(_parse_tp(x) for x in h.get("partitions", []))
    if ask.sweep is not None and pids:
        tps.update(ask.sweep.partitions(pids))
    now = ask.now
    parts, hanging_on = _partition_views(cluster, sorted(tps), pids, coord, ask.max_timeout_minutes, now)
    unseen = [
        f"{r['topic']}:{r['partition']}: {r['error'] or r['offsets_error']}" for r in parts if r["unseen"]
    ]
    out: dict = {
        "transactional_id": transactional_id,
        "verdict": decide.txn_verdict(coord, now, hanging_on) + _hedge(ask, hanging_on, unseen),
        # a hint from the id's shape (who wrote it, what that means for recovery), never a fact
        "owner_hint": owner_hint(transactional_id),
    }
    if coord:
        out.update(
            {
                "coordinator": coord.coordinator_id,
                "state": coord.state,
                "producer_id": coord.producer_id,
                "producer_epoch": coord.producer_epoch,
                "timeout_ms": coord.timeout_ms,
                "txn_start_timestamp_ms": coord.start_time_ms if coord.start_time_ms >= 0 else None,
                "txn_start_time": iso_ms(coord.start_time_ms),
                "age": decide.fmt_age(now - coord.start_time_ms)
                if coord.start_time_ms >= 0 and coord.state in ("Ongoing", "PrepareCommit", "PrepareAbort")
                else None,
                "coordinator_partitions": sorted(_tp_text(tp) for tp in coord.partitions),
            }
        )
    else:
        out["state"] = "unknown to the coordinator"
    out.update(_log_partition(cluster, transactional_id, coord))
    out["partitions"] = parts
    out["unseen"] = unseen or None
    if ask.with_history:
        out["history"] = past if past is not None else unavailable
    return out, decide.txn_kind(coord, now, hanging_on)


def _hedge(ask: _Ask, hanging_on: list[TP], unseen: list[str]) -> str:
    """What the verdict could not see, said in it: a verdict read as a fact must not be one."""
    out = ""
    if unseen:
        out += f"; {plural(len(unseen), 'partition')} not seen ({'; '.join(unseen)})"
    if ask.sweep is None and not hanging_on:
        out += (
            "; partitions the coordinator does not list were not scanned (--no-scan): "
            "a transaction hanging there would not show"
        )
    return out


def _log_partition(cluster: Cluster, transactional_id: str, coord: CoordinatorTxn | None) -> dict:
    """Where the id's state lives: its `__transaction_state` partition, whose leader is the
    coordinator (the broker that moves when that leader moves)."""
    from kxtx.records.partitioner import partition_for

    try:
        parts = cluster.topics("__transaction_state").get("__transaction_state", {})
    except KxtxError as exc:  # e.g. no DESCRIBE on internal topics: the coordinator's word stands
        logger.debug(f"__transaction_state metadata: {exc}")
        return {}
    if not parts:
        return {}
    p = partition_for(transactional_id, len(parts))
    out: dict[str, object] = {"transaction_log_partition": f"__transaction_state:{p}"}
    if coord is None:
        out["coordinator"] = parts[p][0]
    return out


def _partition_views(
    cluster: Cluster,
    tps: list[TP],
    pids: set[int],
    coord: CoordinatorTxn | None,
    max_timeout_minutes: float | None,
    now: int,
) -> tuple[list[dict], list[TP]]:
    if not tps:
        return [], []
    states, errors = cluster.describe_producers(tps)
    offsets = cluster.offsets(tps)
    leaders = cluster.leaders(tps)  # which broker holds each partition's producer state now
    max_ms = None
    rows, hanging_on = [], []
    for tp in tps:
        mine = [p for p in states.get(tp, []) if p.producer_id in pids and p.is_open]
        o = offsets[tp]
        row = {
            "topic": tp[0],
            "partition": tp[1],
            "leader": leaders.get(tp),
            "in_coordinator_transaction": bool(coord and tp in coord.partitions),
            "open_start_offset": mine[0].start_offset if mine else None,
            "producer_epoch": mine[0].producer_epoch if mine else None,
            "idle_for": decide.fmt_age(now - mine[0].last_timestamp) if mine else None,
            "lso": o.lso,
            "high_watermark": o.high_watermark,
            "held_back": o.held_back,
            "blocking": bool(mine) and o.lso is not None and o.lso <= mine[0].start_offset,
            "hanging": False,
            "error": errors.get(tp),
            "offsets_error": None if o.held_back is not None else f"ListOffsets: {o.why or 'no answer'}",
        }
        row["unseen"] = bool(row["error"] or row["offsets_error"])
        if mine and not row["in_coordinator_transaction"]:
            if max_ms is None:
                max_ms, _src = resolve_max_timeout(cluster, max_timeout_minutes)
            if decide.is_candidate(mine[0], now, max_ms):
                hanging_on.append(tp)
                row["hanging"] = True
        rows.append(row)
    return rows, hanging_on


def inspect_partition(
    cluster: Cluster, tp: TP, max_timeout_minutes: float | None = None, now_ms: int | None = None
) -> dict:
    """The partition in full. What could not be read (no leader, a broker down or frozen) is named
    under `unseen` with why, its fields None, never a guess: the partition an operator most wants to
    see in an incident is the one whose leader is gone."""
    now = _now(now_ms)
    meta = cluster.topics(tp[0]).get(tp[0], {})
    if tp[1] not in meta:
        raise KxtxError(f"{_tp_text(tp)}: no such partition")
    leader, replicas = meta[tp[1]]
    unseen: dict[str, str] = {}
    if leader < 0:
        unseen["leader"] = "the partition has no leader (its in-sync replicas are down)"
    states, errors = cluster.describe_producers([tp])
    if tp in errors:
        unseen["open_transactions"] = f"DescribeProducers: {errors[tp]}"
    o = cluster.offsets([tp])[tp]
    if o.held_back is None:
        unseen["offsets"] = f"ListOffsets: {o.why or 'no answer'}"
    open_ = sorted((p for p in states.get(tp, []) if p.is_open), key=lambda p: p.start_offset)
    committed = cluster.committed([tp]).get(tp, {})
    blocked = set(decide.blocked_groups(committed, o.lso, o.high_watermark))
    return {
        "topic": tp[0],
        "partition": tp[1],
        "leader": leader if leader >= 0 else None,
        "replicas": replicas,
        "lso": o.lso,
        "high_watermark": o.high_watermark,
        "held_back": o.held_back,
        "open_transactions": None
        if "open_transactions" in unseen
        else _open_rows(cluster, tp, open_, o.lso, max_timeout_minutes, now),
        "groups": [
            {"group": g, "committed": off, "blocked": g in blocked} for g, off in sorted(committed.items())
        ],
        "unseen": unseen or None,
    }


def _open_rows(
    cluster: Cluster,
    tp: TP,
    open_: list[OpenTxn],
    lso: int | None,
    max_timeout_minutes: float | None,
    now: int,
) -> list[dict]:
    if not open_:
        return []
    ids = named_producers(cluster, {p.producer_id for p in open_})
    descs = cluster.describe_txns(list(ids.values()))
    max_ms, _src = resolve_max_timeout(cluster, max_timeout_minutes)
    rows, suspects = [], []
    for p in open_:
        tid = ids.get(p.producer_id)
        desc = descs.get(tid) if tid else None
        reason = decide.hanging_reason(tp, tid, desc)
        if reason is None and isinstance(desc, CoordinatorTxn):  # the coordinator tracks it
            status = f"ongoing (coordinator: {desc.state})"
        elif decide.is_candidate(p, now, max_ms):
            status = f"hanging: {reason}"
        else:
            status = f"open, not yet past the max transaction timeout ({reason})"
        kind, ends = decide.hold_class(p, tid, desc, now, max_ms)
        rows.append(
            {
                "producer_id": p.producer_id,
                "producer_epoch": p.producer_epoch,
                "coordinator_epoch": p.coordinator_epoch,
                "start_offset": p.start_offset,
                "last_timestamp_ms": p.last_timestamp,
                "last_time": iso_ms(p.last_timestamp),
                "age": decide.fmt_age(now - p.last_timestamp),
                "transactional_id": tid,
                "coordinator_state": desc.state if isinstance(desc, CoordinatorTxn) else None,
                "blocking": lso is not None and lso <= p.start_offset,
                "status": status,
                # why it holds the LSO, when that ends by itself, and what ends it now
                "class": kind,
                "detail": decide.hold_detail(kind, ends, desc),
                "ends_time": iso_ms(ends),
                "action": decide.hold_action(kind, tp, tid),
            }
        )
        if status.startswith("hanging") and reason != decide.REASON_ID_NOT_FOUND:
            suspects.append(rows[-1])
    if suspects:
        _mark_false_positives(cluster, suspects)
    return rows


def _mark_false_positives(cluster: Cluster, suspects: list[dict]) -> None:
    """As find-hanging's acl_warning: without every Cluster operation the principal may lack DESCRIBE
    on ids or topics the broker then hides, so a live transaction can look hanging."""
    from kxtx.ops.hanging import ALL_CLUSTER_OPS

    ops = cluster.cluster_operations()
    if ops is not None and ops >= ALL_CLUSTER_OPS:
        return
    for row in suspects:
        row["maybe_false_positive"] = True
    logger.warning(
        f"the principal is not a super user: if it lacks DESCRIBE on some TransactionalId or "
        f"Topic, the broker hides them and live transactions look hanging; "
        f"{plural(len(suspects), 'open transaction')} marked maybe_false_positive; "
        "check with a principal that has DESCRIBE"
    )
