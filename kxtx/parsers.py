"""Small pure parsers for command-line values and properties files. No I/O beyond reading text given."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from kxtx.errors import ConfigError, UsageError


def parse_kv(text: str, what: str = "-X") -> tuple[str, str]:
    """`key=value` (the value may contain '='); whitespace around the key is ignored."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"{what} {text!r}: expected key=value")
    return key, value


def parse_kv_list(items: list[str] | None, what: str = "-X") -> dict[str, str]:
    """Repeated `key=value` options; a later one wins, as on kcat's command line."""
    return dict(parse_kv(i, what) for i in (items or []))


def split_csv(values: list[str] | None) -> list[str]:
    """Repeatable options that also accept comma lists: `-b a:9092,b:9092 -b c:9092`."""
    out: list[str] = []
    for v in values or []:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2 : i + 6]):
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (first physical line number, logical line), joining backslash continuations."""
    buf, start = "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip() if buf else raw.strip()
        if not buf:
            if not line or line[0] in "#!":
                continue
            start = no
        # An odd number of trailing backslashes continues the line (an even number is escaped '\').
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            buf += line[:-1]
            continue
        yield start, buf + line
        buf = ""
    if buf:
        yield start, buf


def parse_properties(
    text: str, source: str = "<properties>", lines: dict[str, int] | None = None
) -> dict[str, str]:
    """Java `.properties` syntax: `k=v`, `k: v`, `k v`, comments, continuations, escapes. `lines`,
    when given, gets each key's line number (the last one's, as the value is), for messages."""
    props: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        m = re.match(r"((?:\\.|[^=:\s\\])+)\s*[=:\s]\s*(.*)$", line, re.S)
        if m:
            key, value = m.group(1), m.group(2)
        elif re.fullmatch(r"(?:\\.|[^=:\s\\])+", line):
            key, value = line, ""
        else:
            raise ConfigError(f"{source}:{lineno}: cannot parse {line!r}")
        props[_unescape(key)] = _unescape(value).rstrip()
        if lines is not None:
            lines[_unescape(key)] = lineno
    return props


@dataclass(frozen=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...] | None  # None means every partition


def parse_topic_partitions(text: str) -> TopicPartitions:
    """`topic`, `topic:3`, `topic:0,1,4-6`. Topic names cannot contain ':' so the last ':' splits."""
    topic, sep, parts = text.rpartition(":") if ":" in text else (text, "", "")
    if not topic:
        raise UsageError(f"{text!r}: expected TOPIC or TOPIC:PARTITIONS (e.g. orders:0,1,4-6)")
    if not sep:
        return TopicPartitions(topic, None)
    found: list[int] = []
    for piece in parts.split(","):
        piece = piece.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
        if not m:
            raise UsageError(f"{text!r}: bad partition {piece!r} (use numbers, ranges like 4-6)")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise UsageError(f"{text!r}: empty range {piece!r}")
        found.extend(range(lo, hi + 1))
    return TopicPartitions(topic, tuple(sorted(set(found))))


_UNITS = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """`1500ms`, `30s`, `15m`, `2h`, `1d`, or a plain number of seconds. Returns seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)?\s*", text)
    if not m:
        raise UsageError(f"{text!r}: expected a duration like 500ms, 30s, 15m, 2h, 1d")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def parse_minutes(text: str | None) -> float | None:
    """A plain number of minutes, or a duration (`parse_duration`) in minutes; None stays None."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return parse_duration(text) / 60


def parse_time(text: str, now: datetime | None = None) -> int:
    """`--since` values: ISO-8601 (naive = UTC), epoch milliseconds, or an age like `15m` (ago).

    Returns epoch milliseconds."""
    now = now or datetime.now(timezone.utc)
    t = text.strip()
    if re.fullmatch(r"\d{10,}", t):
        return int(t)
    try:
        ago = parse_duration(t)
    except UsageError:
        pass
    else:
        return int((now - timedelta(seconds=ago)).timestamp() * 1000)
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{text!r}: expected an ISO time (2026-01-31T12:00:00Z), epoch ms, or an age like 15m"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)
