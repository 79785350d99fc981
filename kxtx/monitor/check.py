"""`kxtx monitor check`: thresholds in the monitoring-plugin range syntax, a verdict, perfdata. Pure.

Range syntax (Nagios plugin guidelines): `[@]start:end`; `start` defaults to 0 and may be `~`
(minus infinity), an empty end is plus infinity; `10` means 0:10. A value alerts when it lies
outside the range, or, with `@`, inside it (both ends inclusive).
The check's exit codes are the plugin API's (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN), not kxtx's.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from kxtx.errors import UsageError


class PluginStatus(enum.IntEnum):
    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3


@dataclass(frozen=True)
class Range:
    start: float
    end: float
    inside: bool
    text: str

    def alerts(self, value: float) -> bool:
        within = self.start <= value <= self.end
        return within if self.inside else not within


def parse_range(text: str) -> Range:
    raw = text.strip()
    body = raw[1:] if raw.startswith("@") else raw
    if not body:
        raise UsageError(f"threshold {text!r}: empty range; e.g. 10, 10:, ~:10, 10:20, @10:20")
    start_s, sep, end_s = body.partition(":")
    if not sep:
        start_s, end_s = "0", body
    try:
        start = -math.inf if start_s == "~" else float(start_s or 0)
        end = math.inf if end_s == "" else float(end_s)
    except ValueError:
        raise UsageError(f"threshold {text!r}: not a range; e.g. 10, 10:, ~:10, 10:20, @10:20") from None
    if start > end:
        raise UsageError(f"threshold {text!r}: start {start_s} is above end {end_s}")
    return Range(start, end, raw.startswith("@"), raw)


@dataclass(frozen=True)
class Metric:
    label: str  # the perfdata label
    uom: str  # the perfdata unit: s, or empty for a count
    words: str  # in the status line


#: What thresholds apply to: option key -> metric, in the status line's order.
METRICS = {
    "hanging": Metric("hanging", "", "hanging transactions"),
    "open-age": Metric("open_age", "s", "oldest open transaction age"),
    "lso-gap": Metric("lso_gap", "", "largest LSO gap in records"),
    # per group and topic, summed over its partitions: kxtx_consumergroup_lag_records, the figure the
    # alert rules compare (a largest single-partition lag made `--crit lag=14` OK while `> 14` fired)
    "lag": Metric("lag", "", "largest read_committed lag of a group on a topic in records"),
    # with --audit-markers only: lost markers that need an operator (audit-markers exit 3's kinds)
    "lost-markers": Metric("lost_markers", "", "lost transaction markers needing action"),
}


def values_of(summary: dict) -> dict[str, float | None]:
    """The metrics' values from a monitor snapshot's `summary()` (None: could not be computed)."""
    return {
        "hanging": summary["hanging_transactions"],
        "open-age": summary["oldest_open_age_seconds"],
        "lso-gap": summary["max_lso_gap_records"],
        "lag": summary["max_group_lag_records"],
        **({"lost-markers": summary["lost_markers"]} if "lost_markers" in summary else {}),
    }


#: Without any threshold on `hanging`, a hanging transaction is CRITICAL; likewise a lost marker
#: that needs action, when markers are audited.
DEFAULT_CRIT = {"hanging": "0", "lost-markers": "0"}


def parse_thresholds(items: list[str] | None, option: str) -> dict[str, Range]:
    """`--warn/--crit METRIC=RANGE` (repeatable, or comma-separated)."""
    out: dict[str, Range] = {}
    for item in items or []:
        for part in filter(None, (p.strip() for p in item.split(","))):
            key, sep, rng = part.partition("=")
            if not sep or key not in METRICS:
                raise UsageError(
                    f"{option} {part!r}: give METRIC=RANGE with METRIC one of {', '.join(METRICS)}"
                )
            out[key] = parse_range(rng)
    return out


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}".rstrip("0")


def perfdata(values: dict[str, float | None], warn: dict[str, Range], crit: dict[str, Range]) -> str:
    """`'label'=value[UOM];[warn];[crit];[min];[max]` for each metric, space-separated; a value
    not known is `U` (the guidelines' "could not be determined")."""
    parts = []
    for key, m in METRICS.items():
        if key not in values:
            continue  # not measured (lost-markers without --audit-markers)
        w = warn[key].text if key in warn else ""
        c = crit[key].text if key in crit else ""
        v = values[key]
        parts.append(f"{m.label}={'U' if v is None else _fmt(v) + m.uom};{w};{c};0;")
    return " ".join(parts)


def _alerts(rng: Range, value: float | None, floor: float | None) -> tuple[bool, str]:
    """(whether the range alerts, the value's words). A value not known alerts only when the part
    seen (`floor`, a lower bound of it) already lies above the range's end."""
    if value is not None:
        return rng.alerts(value), _fmt(value)
    sure = floor is not None and not rng.inside and floor > rng.end
    return sure, f"at least {_fmt(floor or 0)}"


def verdict(
    values: dict[str, float | None],
    warn: dict[str, Range],
    crit: dict[str, Range],
    incomplete: str = "",
    floors: dict[str, float | None] | None = None,
) -> tuple[PluginStatus, str]:
    """(status, the one status line). A value None could not be computed (part of what it counts
    was not read): a threshold on it is UNKNOWN unless `floors` (the part seen) already alerts, or
    another metric does. `incomplete`: what the collection could not see; it makes an OK at least
    a WARNING (a check that saw part of the cluster cannot say all is well)."""
    crit = {**{k: parse_range(v) for k, v in DEFAULT_CRIT.items() if k not in warn}, **crit}
    floors = floors or {}
    status = PluginStatus.OK
    why = []
    unknown = []
    for key, m in METRICS.items():
        if key not in values:
            continue
        v = values[key]
        alerted = False
        for level, ranges in ((PluginStatus.CRITICAL, crit), (PluginStatus.WARNING, warn)):
            if key not in ranges:
                continue
            alerts, shown = _alerts(ranges[key], v, floors.get(key))
            if alerts:
                status = max(status, level)
                why.append(f"{m.words} {shown}{m.uom} ({level.name.lower()} {ranges[key].text})")
                alerted = True
                break
        if v is None and not alerted and (key in crit or key in warn):
            unknown.append(m.words)
    if unknown:
        why.append(f"{', '.join(unknown)} not known")
        if status is PluginStatus.OK:
            status = PluginStatus.UNKNOWN
    if incomplete:
        if status is PluginStatus.OK:
            status = PluginStatus.WARNING
        why.append(incomplete)
    if not why:
        why.append(
            ", ".join(f"{m.words} {_fmt(values[k] or 0)}{m.uom}" for k, m in METRICS.items() if k in values)
        )
    line = f"KXTX {status.name} - {'; '.join(why)} | {perfdata(values, warn, crit)}"
    return PluginStatus(status), line


def unknown(message: str) -> str:
    return f"KXTX UNKNOWN - {' '.join(message.split())}"
