"""Times as kxtx shows them: every point in time as epoch milliseconds (`..._ms`, `timestamp...`)
and, next to it, ISO-8601 UTC with milliseconds (`..._time`), in every command and format."""

from __future__ import annotations

import time

#: ISO text by epoch ms, and "YYYY-MM-DDTHH:MM:SS" by epoch second: a log's records come in time
#: order, and a record's time, its commit or update time and its transaction's start repeat across
#: neighbouring records, so a dump formats each millisecond once (a datetime per field would cost
#: about as much as decoding the record). Hot loops call `ISO.get(ms) or iso_ms(ms)`.
ISO: dict[int | None, str] = {}  # looked up with None too (a miss): no test first
_SECONDS: dict[int, str] = {}
_CACHE = 8192
#: ISO-8601 has four-digit years: a later "time" is a corrupt or sentinel value, not a date.
_YEAR_10000_MS = 253402300800000


def iso_ms(ms: int | None) -> str | None:
    """2026-11-23T18:43:25.123+00:00 for epoch ms; None for None and for Kafka's "no time" values
    (-1, and 0 for fields whose default is 0)."""
    found = ISO.get(ms)
    if found is not None:
        return found
    if ms is None or ms <= 0 or ms >= _YEAR_10000_MS:
        return None
    seconds, millis = divmod(ms, 1000)
    head = _SECONDS.get(seconds)
    if head is None:
        if len(_SECONDS) >= _CACHE:  # bounded
            _SECONDS.clear()
        head = _SECONDS[seconds] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    if len(ISO) >= _CACHE:  # bounded: memory stays flat on any log
        ISO.clear()
    found = ISO[ms] = f"{head}.{millis:03d}+00:00"
    return found


def time_name(ms_name: str) -> str:
    """The name of the ISO sibling of a field in ms: `txn_start_timestamp_ms` -> `txn_start_time`,
    `commit_timestamp` -> `commit_time`, `timestamp_ms` -> `time`."""
    base = ms_name
    for suffix in ("_ms", "timestamp"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    base = base.rstrip("_")
    return f"{base}_time" if base else "time"
