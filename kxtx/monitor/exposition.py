"""A monitor snapshot in Prometheus's text exposition format (0.0.4), and the atomic textfile write.

Names: prefix `kxtx_`, base units in the name (`_seconds`, `_records`), `_info` for metadata (value
1), no `_total`: every family is a gauge (a one-shot collection counts nothing over time). No
sample carries a timestamp: Prometheus stamps the scrape. Labels are bounded: `topic`,`partition`
only for partitions with an open transaction; `group`,`topic` per group and topic it committed on
(summed over partitions); `state` from a fixed list; `what` from a fixed list. Never a producer id,
transactional id or offset as a label. A value the collection could not read is absent (and counted
in `kxtx_collect_unseen`), never 0 or the part it read.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field

from kxtx.monitor.snapshot import STATES, Snapshot, group_topic_lags

PREFIX = "kxtx_"
#: the content type Prometheus expects for this format
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: node_exporter's textfile collector reads only files ending in .prom
DEFAULT_TEXTFILE = "kxtx.prom"


@dataclass
class Family:
    name: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)
    kind: str = "gauge"

    def add(self, value: float | None, **labels: object) -> None:
        if value is not None:
            self.samples.append(({k: str(v) for k, v in labels.items()}, value))


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(families: Iterable[Family]) -> str:
    lines = []
    for f in families:
        name = PREFIX + f.name
        lines.append(f"# HELP {name} {_escape_help(f.help)}")
        lines.append(f"# TYPE {name} {f.kind}")
        for labels, value in f.samples:
            text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
            lines.append(f"{name}{{{text}}} {_number(value)}" if text else f"{name} {_number(value)}")
    return "\n".join(lines) + "\n"


def _g(name: str, help_: str) -> Family:
    return Family(name, help_)


def base_families(version: str, up: bool, duration_s: float) -> list[Family]:
    """The families every exposition has, also when the collection failed (`up` False)."""
    info = _g("info", "kxtx's version (metadata; the value is always 1).")
    info.add(1, version=version)
    up_ = _g("up", "1 when the last collection reached the cluster and finished, 0 when it failed.")
    up_.add(1 if up else 0)
    dur = _g("collect_duration_seconds", "Wall time of the last collection.")
    dur.add(round(duration_s, 6))
    return [info, up_, dur]


def failure(version: str, duration_s: float) -> str:
    """The exposition of a collection that failed: kxtx_up 0 and its duration, nothing else (old
    figures would look current)."""
    return render(base_families(version, False, duration_s))


def families(snap: Snapshot, version: str) -> list[Family]:
    out = base_families(version, True, snap.duration_s)
    out += _collection(snap) + _partitions(snap) + _states(snap) + _groups(snap) + _markers(snap)
    return out


def exposition(snap: Snapshot, version: str) -> str:
    return render(families(snap, version))


def _collection(snap: Snapshot) -> list[Family]:
    done = _g("collect_timestamp_seconds", "Unix time the last collection finished (for staleness alerts).")
    done.add(snap.collected_at_ms / 1000)
    unseen = _g(
        "collect_unseen",
        "Things the last collection could not read (no DESCRIBE, a broker down), by kind: "
        "partitions, transactional_ids, groups, offsets, lag, markers; the values they feed are absent.",
    )
    for what, n in snap.unseen_counts().items():
        unseen.add(n, what=what)
    checked = _g("partitions_checked", "Partitions whose producer state was asked for.")
    checked.add(snap.partitions_checked)
    maxt = _g(
        "transaction_max_timeout_seconds",
        "The max transaction timeout find-hanging's rule used (the broker's transaction.max.timeout.ms).",
    )
    maxt.add(snap.max_timeout_ms / 1000)
    s = snap.summary()
    hanging = _g(
        "hanging_transactions",
        "Hanging transactions (Kafka's find-hanging rule), all partitions; absent when a partition's "
        "producers could not be read.",
    )
    hanging.add(s["hanging_transactions"])
    held = _g(
        "lso_held_transactions",
        "Open transactions that hold an LSO without hanging, by why (kind: lost-marker, untracked, "
        "abandoned, ending, in-progress, unseen; find-hanging's stderr names each); absent when a "
        "partition's producers could not be read.",
    )
    if s["hanging_transactions"] is not None:
        for kind, n in held_counts(snap.held).items():
            held.add(n, kind=kind)
    return [done, unseen, checked, maxt, hanging, held]


def held_counts(held: list) -> dict[str, int]:
    """Held LSOs per class, every class present (0 included): an alert can watch one."""
    from kxtx.ops import decide

    kinds = (decide.HOLD_LOST_MARKER, decide.HOLD_UNTRACKED, decide.HOLD_ABANDONED, decide.HOLD_ENDING)
    out = dict.fromkeys((*kinds, decide.HOLD_IN_PROGRESS, "unseen"), 0)
    for h in held:
        out[h.kind] = out.get(h.kind, 0) + 1
    return out


def _markers(snap: Snapshot) -> list[Family]:
    """With --audit-markers: lost markers per kind (absent when the audit could not be made)."""
    if not snap.markers_audited:
        return []
    lost = _g(
        "lost_markers",
        "Ended transactions whose marker a partition never got, in the --audit-markers window, by "
        "what became of their records (kind: audit-markers' classes).",
    )
    for kind, n in (snap.lost_markers or {}).items():
        lost.add(n, kind=kind)
    return [lost]


def _partitions(snap: Snapshot) -> list[Family]:
    hw = _g("partition_high_watermark", "High watermark (offset) of a partition with an open transaction.")
    lso = _g("partition_last_stable_offset", "Last stable offset of a partition with an open transaction.")
    gap = _g(
        "partition_lso_gap_records", "High watermark - LSO: records held back from read_committed consumers."
    )
    n = _g("partition_open_transactions", "Open transactions on the partition (DescribeProducers).")
    start = _g(
        "partition_oldest_open_start_offset", "First offset of the partition's oldest open transaction."
    )
    began = _g(
        "partition_oldest_open_age_seconds",
        "Since the coordinator began the oldest open transaction (DescribeTransactions start time); "
        "absent when the coordinator has no transaction covering the partition.",
    )
    idle = _g(
        "partition_oldest_open_last_write_age_seconds",
        "Since the oldest open transaction's producer last wrote to the partition (DescribeProducers; "
        "what find-hanging compares with the max transaction timeout).",
    )
    hang = _g("partition_hanging_transactions", "Hanging transactions on the partition.")
    for p in snap.partitions:
        labels = {"topic": p.topic, "partition": p.partition}
        hw.add(p.high_watermark, **labels)
        lso.add(p.lso, **labels)
        gap.add(p.lso_gap_records, **labels)
        n.add(p.open_transactions, **labels)
        start.add(p.oldest_start_offset, **labels)
        began.add(p.oldest_age_since_start_s, **labels)
        idle.add(p.oldest_age_since_last_write_s, **labels)
        hang.add(p.hanging_transactions, **labels)
    return [hw, lso, gap, n, start, began, idle, hang]


def _states(snap: Snapshot) -> list[Family]:
    ids = _g("transactional_ids", "Transactional ids per coordinator state (ListTransactions).")
    for state in STATES:
        ids.add(snap.states.get(state, 0), state=state)
    oldest = _g(
        "transactional_id_oldest_age_seconds",
        "Age of the oldest transaction per non-final coordinator state (stuck in Prepare*: waiting for markers).",
    )
    for state, age in sorted(snap.oldest_in_state_s.items()):
        oldest.add(age, state=state)
    return [ids, oldest]


def _groups(snap: Snapshot) -> list[Family]:
    lag = _g(
        "consumergroup_lag_records",
        "Records a read_committed consumer of the group still receives up to the LSO (markers and "
        "aborted records excluded), summed over the topic's partitions; absent when one was not read. "
        "`monitor check`'s lag.",
    )
    hw = _g("consumergroup_hw_lag_records", "High watermark - committed offset (naive lag), summed.")
    inv = _g(
        "consumergroup_invisible_records",
        "Markers and aborted records between the committed offset and the LSO: the part of the naive "
        "lag a read_committed consumer never receives, summed (where counted).",
    )
    for (group, topic), (a, b, c) in sorted(group_topic_lags(snap).items()):
        lag.add(a, group=group, topic=topic)
        hw.add(b, group=group, topic=topic)
        inv.add(c, group=group, topic=topic)
    return [lag, hw, inv]


def textfile_path(directory: str, name: str) -> str:
    """DIRECTORY/NAME, or a UsageError saying which option is wrong (checked before collecting too:
    a typo must not cost a whole collection)."""
    from kxtx.errors import UsageError

    if not name or "/" in name:
        raise UsageError(f"--textfile-name {name!r}: a file name, without a directory")
    if not os.path.isdir(directory):
        raise UsageError(f"--textfile {directory!r}: not a directory")
    return os.path.join(directory, name)


def write_textfile(directory: str, name: str, text: str) -> str:
    """Write `text` to DIRECTORY/NAME atomically for node_exporter's textfile collector: a temporary
    file in the same directory (same file system: the rename is atomic), flushed to disk, then
    renamed over the old one. A reader sees the old file or the new one, never a part. The temporary
    name does not end in .prom, so the collector never reads it. Returns the path."""
    path = textfile_path(directory, name)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600: node_exporter often runs as another user
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
