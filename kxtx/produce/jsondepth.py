"""kxtx's own limit on JSON nesting, so that whether a deeply nested line is a record does not
depend on which version of a JSON library pip installed.

Why: the libraries disagree and change. orjson < 3.13 parsed 1200 levels, 3.13 refuses more than
1024; msgspec and the standard library stop where the interpreter's recursion limit does (about 1000
on CPython 3.11, far more on 3.13). A line that one release took and the next refused would make the
same input produce on one machine and fail on another. So: a JSON line nested deeper than
MAX_JSON_DEPTH levels of arrays/objects is a bad line, always, with the same message.

The check costs nothing on ordinary lines: nesting deeper than the limit needs at least
2 * (MAX_JSON_DEPTH + 1) bytes and as many brackets, so shorter lines are never scanned.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import accumulate

#: the limit (orjson's since 3.13; also a common limit of JSON parsers in other languages)
MAX_JSON_DEPTH = 1024
#: the shortest text nested deeper than the limit: MAX_JSON_DEPTH + 1 opening and closing brackets
DEEP_MIN_BYTES = 2 * (MAX_JSON_DEPTH + 1)
TOO_DEEP = f"bad JSON: nested deeper than {MAX_JSON_DEPTH} levels"

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')  # brackets inside strings do not nest
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (0 for a scalar)."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def too_deep(raw: bytes) -> bool:
    """Whether `raw` nests deeper than MAX_JSON_DEPTH; cheap for short lines and bracket-poor ones."""
    return (
        len(raw) >= DEEP_MIN_BYTES
        and raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH
        and json_depth(raw) > MAX_JSON_DEPTH
    )


def accepts_too_deep(loads: Callable[[bytes], object]) -> bool:
    """Whether the parser `loads` accepts a text nested one level past the limit (then kxtx must
    check depth itself after it). Asked once per parser at import: versions differ."""
    try:
        loads(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    except (ValueError, RecursionError):
        return False
    return True


def first_too_deep(values: list, k: int, end: int) -> int:
    """The index of the first of values[k:end] nested too deeply, or `end`. One C-level pass over
    the lengths when no line is long enough to matter (the common case)."""
    if max(map(len, values[k:end]), default=0) < DEEP_MIN_BYTES:
        return end
    for i in range(k, end):
        if too_deep(values[i]):
            return i
    return end
