"""kxtx's JSON nesting limit: the same verdict whatever the JSON libraries' versions."""

from __future__ import annotations

import pytest

from kxtx.produce import jsondepth, mapping
from kxtx.produce.jsondepth import MAX_JSON_DEPTH, first_too_deep, json_depth, too_deep
from kxtx.produce.mapping import BadRecord, parse_json


def nest(n: int, inner: bytes = b"1", opener: bytes = b"[", closer: bytes = b"]") -> bytes:
    return opener * n + inner + closer * n


@pytest.mark.parametrize(
    "raw, depth",
    [
        (b"1", 0),
        (b'"[[["', 0),
        (b"[]", 1),
        (b"{}", 1),
        (b'{"a":[1,{"b":[]}]}', 4),
        (b'["]", "\\"[", "\\\\", [2]]', 2),  # brackets in strings, escaped quotes and backslashes
        (b"[[],[[]],[]]", 3),
        (nest(1024), 1024),
        (nest(3000, opener=b'{"k":', closer=b"}"), 3000),
    ],
)
def test_json_depth(raw, depth):
    assert json_depth(raw) == depth


@pytest.mark.parametrize(
    "raw, deep",
    [
        (nest(MAX_JSON_DEPTH), False),
        (nest(MAX_JSON_DEPTH + 1), True),
        (b'["' + b"[" * 5000 + b'"]', False),  # long and bracket-rich, but in a string
        (b"[" + b"1," * 5000 + b"1]", False),  # long, few brackets
        (nest(MAX_JSON_DEPTH + 1, opener=b'{"a":', closer=b"}"), True),
    ],
)
def test_too_deep(raw, deep):
    assert too_deep(raw) is deep


def test_first_too_deep():
    values = [b"[1]", nest(1024), nest(1100), nest(1200)]
    assert first_too_deep(values, 0, 4) == 2
    assert first_too_deep(values, 0, 2) == 2  # none in range: the end
    assert first_too_deep(values, 3, 4) == 3


@pytest.mark.parametrize("takes_deep", [False, True])
@pytest.mark.parametrize(
    "raw, ok",
    [
        (nest(MAX_JSON_DEPTH), True),
        (nest(MAX_JSON_DEPTH, b"NaN"), True),  # orjson refuses NaN: json decides, within the limit
        (nest(MAX_JSON_DEPTH + 1), False),
        (nest(MAX_JSON_DEPTH + 1, b"NaN"), False),
    ],
)
def test_parse_json_limit_independent_of_the_library(monkeypatch, takes_deep, raw, ok):
    monkeypatch.setattr(mapping, "_FAST_TAKES_TOO_DEEP", takes_deep)
    if takes_deep:  # a parser that goes on past the limit (as orjson < 3.13 did) and takes NaN
        monkeypatch.setattr(mapping, "_fast_loads", lambda b: [])
    if ok:
        parse_json(raw)
    else:
        with pytest.raises(BadRecord, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
            parse_json(raw)


def test_accepts_too_deep_asks_the_parser():
    assert jsondepth.accepts_too_deep(lambda b: None) is True

    def refuses(b):
        raise ValueError("too deep")

    assert jsondepth.accepts_too_deep(refuses) is False
