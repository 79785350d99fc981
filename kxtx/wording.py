"""Counts and articles in messages: "1 transaction", "2 transactions", "an int", "a str"; and the
install line a message about a missing extra gives."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

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


def install_hint(extra: str, package_dir: Path | None = None) -> str:
    """How to add kxtx's `extra` to this installation. kxtx is not on PyPI, so `pip install
    'kxtx[spark]'` finds nothing: an editable install (kxtx imported from its clone, as
    scripts/quickstart.sh installs it) gets the one line that works, naming the clone; any other
    the clone's and the wheel's forms (README, Install). `-e` because, run on an editable install,
    the line without it would turn it into a copy."""
    try:  # (on a Spark executor without kxtx, this module is shipped alone)
        from kxtx import __version__ as version
    except ImportError:
        version = "VERSION"
    clone = (package_dir or Path(__file__).resolve().parent).parent
    if (clone / "pyproject.toml").is_file() and (clone / "setup.py").is_file():
        return f"pip install -e '{clone}[{extra}]'"
    return (
        f"pip install -e '.[{extra}]' in kxtx's clone, or pip install 'kxtx-{version}-….whl[{extra}]'"
        " with its wheel"
    )
