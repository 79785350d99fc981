"""How `kxtx pipe` writes a UDF's value as JSON: the standard library's compact text, faster.

`json_bytes(value)` is `json.dumps(value, separators=(",", ":"), ensure_ascii=False)` as UTF-8,
byte for byte, and raises what that raises (TypeError, ValueError). The output bytes are part of
the contract (README "The UDF contract"), but the standard library's encoder was 31 % of a Python
worker's time in `bench/bench_vs_streams.py` (py-spy). msgspec writes a 100-byte document in a
tenth of the time (0.3 µs against 2.6; orjson is as fast on one document, but it allocates 1 KiB
per output and takes 1.9 µs a document once a batch of outputs is kept). msgspec does not always
write the same bytes, though:

- floats: NaN and ±Infinity become `null` (the standard library writes NaN, Infinity); exponents
  are written without a sign or padding (`1e16`, `1e-5`: the standard library `1e+16`, `1e-05`)
  and below 1e-4 as plain decimals (`0.00009999`);
- float dict keys the same way, and `nan`, `inf`; bool and None keys are refused;
- types: Enum, UUID, datetimes, dataclasses, sets, bytes (base64), Decimal... which the standard
  library refuses, and subclasses of dict/list/str/int, which it may write otherwise.

So msgspec writes a value only when every part of it is an exact dict (with str or int keys), list,
tuple, str, int, bool, None, or a float that is zero or of magnitude in [1e-4, 1e16) (both write
Python's shortest repr in plain notation); every other value, and anything msgspec refuses, goes to
the standard library. tests/unit/test_pipe_jsontext.py compares the bytes (every code point, floats
of every exponent, each kind of key and type).

Pure and self-contained: it runs on Spark's Python workers (pickled by value on a cluster: only
module-level functions, no encoder object, which could not be pickled).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import chain, compress, repeat
from math import isfinite
from operator import is_
from typing import Any

_std = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

try:
    from msgspec.json import encode as _fast
except ImportError:  # an executor without msgspec: the standard library only
    _fast = None  # type: ignore[assignment]

#: types msgspec writes exactly as the standard library does, whatever their value
_EXACT = frozenset({str, int, bool, type(None)})
_SCALARS = _EXACT | {float}
#: dict keys msgspec writes as the standard library does (int keys as their digits, quoted)
_KEYS = frozenset({str, int})
#: nesting checked before leaving a value to the standard library (the check recurses)
_MAX_DEPTH = 64


def json_bytes(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8, the standard library's bytes (see the module docstring)."""
    if fast_writes(value):
        try:
            return _fast(value)  # `_same` let no Enum, set, subclass... through
        except (TypeError, ValueError):  # e.g. a lone surrogate: the standard library's error, below
            pass
    return _std(value).encode("utf-8")


def json_values(values: list) -> list[bytes]:
    """`json_bytes` of each of `values`. A batch of flat dicts (what record UDFs return most) is
    checked at once, over all their keys and values with C-level iterators."""
    if _fast is not None and _flat_plain_dicts(values):
        try:
            return list(map(_fast, values))
        except (TypeError, ValueError):  # one of them is refused: each on its own, below
            pass
    return list(map(json_bytes, values))


def _flat_plain_dicts(values: list) -> bool:
    """Whether each of `values` is a dict that `_same` accepts without recursing: str or int
    keys, values of the exact scalar types, plain floats."""
    if set(map(type, values)) != {dict}:
        return False
    items = list(chain.from_iterable(map(dict.values, values)))
    types = list(map(type, items))  # kept for `is_`, which picks the floats cheaper than isinstance
    kinds = set(types)
    if not kinds <= _SCALARS or not set(map(type, chain.from_iterable(values))) <= _KEYS:
        return False
    return float not in kinds or _plain_floats(compress(items, map(is_, types, repeat(float))))


def fast_writes(value: Any) -> bool:
    """Whether `json_bytes` hands `value` to msgspec (the tests check the fast path is taken)."""
    return _fast is not None and _same(value, 0)


def _same(value: Any, depth: int) -> bool:
    """Whether msgspec writes `value` as the standard library does: only exact plain types, str or
    int keys, and floats where both print the same digits."""
    kind = type(value)
    if kind is dict:
        if not set(map(type, value)) <= _KEYS:
            return False
        items: Any = value.values()
    elif kind is list or kind is tuple:
        items = value
    elif kind is float:
        return _plain_float(value)
    else:
        return kind in _EXACT
    # One set of types per container: one of only str/int/bool/None needs no loop in Python.
    if set(map(type, items)) <= _EXACT:
        return True
    if depth >= _MAX_DEPTH:
        return False
    for item in items:  # noqa: SIM110 - a for loop: half the cost of all() over a generator here
        if type(item) not in _EXACT and not _same(item, depth + 1):
            return False
    return True


def _plain_floats(floats: Iterable[float]) -> bool:
    """`_plain_float` of each, without a Python call per float (bench/README: the batch check
    was the largest part of a task's per-record work). The sum of the magnitudes is finite
    only when none is NaN or infinite (or so large that the sum overflows: not plain either);
    then the largest and the smallest non-zero one bound the rest (`filter` drops 0.0 and -0.0,
    which are plain)."""
    sizes = list(map(abs, floats))
    if not isfinite(sum(sizes)):
        return False
    return max(sizes, default=0.0) < 1e16 and min(filter(None, sizes), default=1.0) >= 1e-4


def _plain_float(value: float) -> bool:
    """Both print Python's shortest repr in plain notation: not NaN, ±Infinity, nor exponents."""
    return value == 0.0 or 1e-4 <= abs(value) < 1e16
