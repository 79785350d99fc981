"""How `kxtx pipe` writes a UDF's value as JSON: the standard library's compact text, faster.

`json_bytes(value)` is `json.dumps(value, separators=(",", ":"), ensure_ascii=False)` as UTF-8,
byte for byte, and raises what that raises (TypeError, ValueError). The output bytes are part of
the contract (README "The UDF contract"); the standard library's encoder was 31 % of a Python
worker's time in `bench/bench_vs_streams.py` (py-spy), orjson writes a 100-byte document ~10x
faster. But orjson does not always write the same bytes:

- floats: NaN and ±Infinity become `null` (the standard library writes NaN, Infinity); below
  1e-4 it writes plain decimals (`0.00009999999999999999`, the standard library `9.999...e-05`);
- types: subclasses of str/int/dict/list (IntEnum, StrEnum, OrderedDict), Enum, UUID, dataclasses
  and datetimes, some of which the standard library refuses and some it writes otherwise;
- integers past 64 bits, non-str keys, nesting past 255 levels: orjson refuses them.

So orjson writes a value only when every part of it is an exact dict, list, tuple, str, int, bool,
None, or a float of magnitude in [1e-4, 1e16) or zero (where both write Python's shortest repr in
plain notation); every other value, and anything orjson refuses, goes to the standard library.
tests/unit/test_pipe_jsontext.py compares the bytes (every code point, floats of every exponent).

Pure and self-contained: it runs on Spark's Python workers (pickled by value on a cluster).
"""

from __future__ import annotations

import json
from typing import Any

_std = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

try:
    import orjson as _orjson
except ImportError:  # an executor without orjson: the standard library only
    _orjson = None  # type: ignore[assignment]

#: types orjson writes exactly as the standard library does, whatever their value
_EXACT = frozenset({str, int, bool, type(None)})
#: nesting checked before giving up on orjson (its own limit is 255; the check recurses)
_MAX_DEPTH = 64


def json_bytes(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8, the standard library's bytes (see the module docstring)."""
    if orjson_writes(value):
        try:
            return _orjson.dumps(value)  # `_same` let no subclass, Enum, UUID... through
        except TypeError:  # orjson.JSONEncodeError: e.g. an int past 64 bits, a non-str key
            pass
    return _std(value).encode("utf-8")


def orjson_writes(value: Any) -> bool:
    """Whether `json_bytes` hands `value` to orjson (the tests check the fast path is taken)."""
    if _orjson is None:
        return False
    # A dict is what UDFs return most: its values are checked without a level around them.
    return _same(value.values(), 1) if type(value) is dict else _same((value,), 0)


def _same(items: Any, depth: int) -> bool:
    """Whether orjson writes each of `items` as the standard library does: only exact plain types,
    and floats where both print the same digits (not NaN, ±Infinity, nor exponent notation). Dict
    keys are left to orjson: it refuses any but exact str, and `json_bytes` then falls back."""
    # One set of types per container: a container of str/int/bool/None needs no loop in Python.
    if set(map(type, items)) <= _EXACT:
        return True
    if depth >= _MAX_DEPTH:
        return False
    for item in items:  # a for loop: half the cost of all() over a generator here
        kind = type(item)
        if kind is float:
            if not (item == 0.0 or 1e-4 <= abs(item) < 1e16):
                return False
        elif kind is dict:
            if not _same(item.values(), depth + 1):
                return False
        elif kind is list or kind is tuple:
            if not _same(item, depth + 1):
                return False
        elif kind not in _EXACT:
            return False
    return True
