"""The UDF output contract: what a UDF may return and how it becomes Kafka records.

Pure Python (no Spark, no pandas import): it runs on Spark's Python workers and in unit tests.

- ``None`` drops the input record; a list (or tuple) fans out, one output per item (``None`` items
  are skipped; lists do not nest).
- A dict whose keys are all among ``key``, ``value``, ``headers``, ``topic`` (a *record spec*), or a
  Spark ``Row``/struct with those fields, sets those parts; parts it leaves out keep the input
  record's key and headers and go to ``--out``. ``{"key": None}`` clears the key.
- Anything else is the value, with the input's key and headers, to ``--out``.

Values: bytes are written as they are; ``str`` as UTF-8 (with ``--value-format json`` every value,
str included, is JSON-encoded so identity round-trips); other objects (dict, list, numbers) as
compact JSON. Keys: bytes as they are, str as UTF-8, others as JSON. Headers: a dict or a list of
``(name, value)`` pairs; values bytes, str (UTF-8) or None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from kxtx.pipe.worker.jsontext import json_bytes
from kxtx.wording import article

SPEC_KEYS = frozenset({"key", "value", "headers", "topic"})

#: a value's encoder (`--out-schema`): object -> framed bytes, ValueError when it does not fit
Encode = Callable[[Any], bytes]


class ContractError(ValueError):
    """A UDF result that the contract cannot turn into records (reported against the input record)."""


class Out(NamedTuple):
    """One output record. ``key_set``/``headers_set`` False means: keep the input record's."""

    key_set: bool
    key: bytes | None
    value: bytes | None
    headers_set: bool
    headers: list[tuple[str, bytes | None]] | None
    topic: str | None


def to_outputs(result: Any, json_values: bool = False, encode: Encode | None = None) -> list[Out]:
    """Normalise one UDF result into the output records it stands for. `encode`: the values'
    encoder under `--out-schema` (kxtx.schemas.serde.Encoder.encode), bytes passing as they are."""
    result = _plain(result)
    if _missing(result):
        return []
    if isinstance(result, (list, tuple)):
        outs = []
        for item in result:
            item = _plain(item)
            if _missing(item):
                continue
            if isinstance(item, (list, tuple)):
                raise ContractError("a list item is itself a list (fan-out lists do not nest)")
            outs.append(_one(item, json_values, encode))
        return outs
    return [_one(result, json_values, encode)]


def is_spec(item: Any) -> bool:
    """Is this result a record spec (a non-empty dict of only key/value/headers/topic)?"""
    return isinstance(item, dict) and bool(item) and SPEC_KEYS.issuperset(item)


def any_spec(dicts: list[dict]) -> bool:
    """Whether any of `dicts` is a record spec: one C-level pass over all of them, and `is_spec`
    only when some dict has no key but spec keys (or none at all)."""
    if min(map(len, dicts), default=0) > len(SPEC_KEYS):  # documents: more keys than a spec has
        return False
    return any(map(SPEC_KEYS.issuperset, dicts)) and any(map(is_spec, dicts))


def _one(item: Any, json_values: bool, encode: Encode | None = None) -> Out:
    if is_spec(item):
        return _from_spec(item, json_values, encode)
    return Out(False, None, encode_value(item, json_values, encode), False, None, None)


def _from_spec(spec: dict, json_values: bool, encode: Encode | None = None) -> Out:
    topic = spec.get("topic")
    if topic is not None and (not isinstance(topic, str) or not topic):
        raise ContractError(f"'topic' must be a non-empty string, got {topic!r}")
    key_set = "key" in spec
    headers_set = "headers" in spec
    return Out(
        key_set,
        encode_key(spec["key"]) if key_set else None,
        encode_value(_plain(spec.get("value")), json_values, encode),
        headers_set,
        encode_headers(spec["headers"]) if headers_set else None,
        topic,
    )


def _plain(obj: Any) -> Any:
    """Spark Rows, numpy scalars and arrays into plain Python (they reach us from pandas/Arrow UDFs)."""
    if hasattr(obj, "asDict") and callable(obj.asDict):
        return obj.asDict(recursive=True)
    if type(obj).__module__ == "numpy":
        return obj.tolist() if hasattr(obj, "tolist") else obj.item()
    return obj


def _missing(obj: Any) -> bool:
    # pandas represents a missing string as None or NaN.
    return obj is None or (isinstance(obj, float) and math.isnan(obj))


def encode_value(value: Any, json_values: bool = False, encode: Encode | None = None) -> bytes | None:
    value = _plain(value)
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if encode is not None:
        try:
            return encode(value)
        except ValueError as exc:  # kxtx.schemas.codecs.Mismatch: the field and what it expected
            raise ContractError(f"does not fit the output schema: {exc}") from None
    if isinstance(value, str) and not json_values:
        return value.encode("utf-8")
    return _json(value)


def encode_key(key: Any) -> bytes | None:
    key = _plain(key)
    if key is None:
        return None
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    return _json(key)


def encode_headers(headers: Any) -> list[tuple[str, bytes | None]]:
    headers = _plain(headers)
    if headers is None:
        return []
    pairs = headers.items() if isinstance(headers, dict) else headers
    out = []
    try:
        for name, value in pairs:
            if not isinstance(name, str):
                raise ContractError(f"header name {name!r} is not a string")
            out.append((name, encode_key(value)))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ContractError):
            raise
        raise ContractError(
            f"'headers' must be a dict or a list of (name, value) pairs, got {headers!r:.80}"
        ) from None
    return out


def _json(value: Any) -> bytes:
    try:
        return json_bytes(value)
    except (TypeError, ValueError) as exc:
        raise ContractError(
            f"cannot encode {article(type(value).__name__)} as a value ({exc}); return bytes, str, "
            "a JSON-serialisable object, None, a list, or a record dict"
        ) from None
