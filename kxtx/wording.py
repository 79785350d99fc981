"""Counts and articles in messages: "1 transaction", "2 transactions", "an int", "a str"."""

from __future__ import annotations

from collections.abc import Iterable

_IRREGULAR = {"process": "processes", "is": "are", "was": "were", "entry": "entries"}


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, the noun in the plural unless count is 1: plural(3, "row") = "3 rows"."""
    if count == 1:
        return f"1 {noun}"
    return f"{count:,} {many or _IRREGULAR.get(noun) or noun + 's'}"


def article(word: str) -> str:
    """`word` with "a" or "an" before it, by its first letter: article("int") = "an int"."""
    return f"{'an' if word[:1].lower() in 'aeiou' and word[:1] else 'a'} {word}"


def partitions(numbers: Iterable[int]) -> str:
    """ "partition 3" or "partitions [1, 4]" for a message."""
    ordered = sorted(numbers)
    return f"partition {ordered[0]}" if len(ordered) == 1 else f"partitions {ordered}"
