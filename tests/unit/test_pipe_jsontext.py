"""kxtx.pipe.worker.jsontext writes the standard library's bytes, byte for byte, and takes msgspec where it can.

The expected bytes are always the standard library's (the contract's reference), computed here."""

import collections
import dataclasses
import datetime
import enum
import json
import math
import random
import struct
import sys
import uuid

import pytest

from kxtx.pipe.worker import jsontext
from kxtx.pipe.worker.jsontext import fast_writes, json_bytes, json_values

_std = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def reference(value) -> bytes:
    return _std(value).encode("utf-8")


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str, enum.Enum):
    ADA = "ada"


class Text(str):
    pass


class Big(int):
    def __repr__(self):  # the standard library ignores this for int subclasses
        return "big"


class Real(float):
    pass


Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Point:
    x: int


def nested(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


DOC = {"id": 12345, "user": "u02345", "price": 34.5, "qty": 4, "pad": "p" * 20, "seen": 20}

SAME = {
    "bench document": DOC,
    "nested document": {"a": {"b": [1, 2.5, {"c": None}], "d": (True, False)}, "e": []},
    "empty dict": {},
    "empty list": [],
    "tuple": (1, "a"),
    "top-level str": "text",
    "top-level int": 7,
    "top-level float": 0.1,
    "top-level None": None,
    "top-level bool": True,
    "unicode": {"ключ": "значение ✓ 😀", "ctl": "\x00\x1f\x7f\u2028\u2029", "esc": '"\\/\b\f\n\r\t'},
    "64-bit ints": [2**63 - 1, -(2**63), 2**64 - 1],
    "ints past 64 bits": [2**64, -(2**63) - 1, 10**40],
    "NaN and infinities": [math.nan, math.inf, -math.inf],
    "floats around the limits": [1e-4, math.nextafter(1e-4, 0), 1e16, math.nextafter(1e16, 0), -1e16, -1e-4],
    "tiny and huge floats": [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e-5, 1.5e-7],
    "signed zeros": [0.0, -0.0],
    "int keys": {1: "a", 2: "b"},
    "float, bool and None keys": {1.5: 1, True: 2, None: 3},
    "float keys msgspec writes otherwise": {1e16: 1, 1e-5: 2, math.nan: 3, math.inf: 4, -0.0: 5},
    "int keys past 64 bits": {2**70: 1, -1: 2},
    "IntEnum key": {Level.HIGH: 1},
    "str-subclass key": {Text("k"): 1},
    "str-Enum key": {Name.ADA: 1},
    "IntEnum": {"level": Level.HIGH},
    "str-Enum value": [Name.ADA],
    "str subclass": [Text("x")],
    "int subclass": [Big(5)],
    "float subclass": [Real(1.5)],
    "OrderedDict": collections.OrderedDict([("b", 1), ("a", 2)]),
    "defaultdict inside": {"d": collections.defaultdict(int, {"x": 1})},
    "namedtuple": {"pair": Pair(1, 2)},
    "deep nesting": nested(300),
    "nesting past kxtx's check": nested(jsontext._MAX_DEPTH + 5),
}


@pytest.mark.parametrize("value", SAME.values(), ids=SAME.keys())
def test_the_bytes_are_the_standard_librarys(value):
    assert json_bytes(value) == reference(value)


REFUSED = {
    "Enum": Color.RED,
    "UUID": uuid.UUID(int=1),
    "Enum key": {Color.RED: 1},
    "UUID key": {uuid.UUID(int=1): 1},
    "frozenset": frozenset({1}),
    "bytearray": bytearray(b"x"),
    "dataclass": Point(1),
    "datetime": datetime.datetime(2026, 1, 1),
    "date inside": {"d": datetime.date(2026, 1, 1)},
    "set": {1, 2},
    "bytes": b"x",
    "object": object(),
    "tuple key": {(1, 2): 3},
    "lone surrogate": "\ud800",
    "lone surrogate as key": {"\udfff": 1},
}


@pytest.mark.parametrize("value", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_standard_library_refuses_is_refused_alike(value):
    with pytest.raises((TypeError, ValueError)) as expected:
        reference(value)
    with pytest.raises(expected.type):
        json_bytes(value)


def test_a_circular_value_is_refused_alike():
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        json_bytes(loop)


def test_every_code_point_as_value_and_as_key():
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    assert json_bytes(chars) == reference(chars)
    keys = dict.fromkeys(chars, 0)
    assert fast_writes(keys)
    assert json_bytes(keys) == reference(keys)


def test_floats_of_every_exponent():
    rnd = random.Random(28)
    floats = [struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(200_000)]
    # and as many of the magnitudes documents hold: prices, ratios, coordinates
    floats += [rnd.uniform(-1e6, 1e6) for _ in range(100_000)]
    floats += [round(rnd.uniform(0, 1000), rnd.randint(0, 6)) for _ in range(100_000)]
    floats += [10.0**e for e in range(-30, 30)] + [math.nextafter(10.0**e, 0) for e in range(-30, 30)]
    whole = reference(floats)
    # each float's reference is its item of the list's: the standard library writes a float alone
    # and in a list alike (float.__repr__), and no float's JSON holds a comma; one encode, not 400k
    each = whole[1:-1].split(b",")
    assert len(each) == len(floats)
    mismatched = [f for f, want in zip(floats, each, strict=True) if json_bytes(f) != want]
    assert mismatched == []
    assert json_bytes(floats) == whole


FAST = {
    "bench document": (DOC, True),
    "nested plain document": ({"a": [{"b": 1.5}, (None, "x")]}, True),
    "float in range": (123456.789, True),
    "int keys": ({1: "a"}, True),
    "float key": ({1.5: "a"}, False),
    "zero": (-0.0, True),
    "NaN": ({"x": math.nan}, False),
    "exponent notation": ({"x": [1e-5]}, False),
    "1e16": ([1e16], False),
    "IntEnum": ({"x": Level.HIGH}, False),
    "str subclass": ([Text("x")], False),
    "UUID": ({"id": uuid.UUID(int=1)}, False),
    "too deep to check": (nested(jsontext._MAX_DEPTH + 5), False),
}


@pytest.mark.parametrize("value, fast", FAST.values(), ids=FAST.keys())
def test_fast_writes_exactly_the_plain_values(value, fast):
    assert fast_writes(value) is fast


def test_without_msgspec_the_standard_library_writes_everything(monkeypatch):
    monkeypatch.setattr(jsontext, "_fast", None)
    assert not fast_writes(DOC)
    for value in SAME.values():
        assert json_bytes(value) == reference(value)
    assert json_values([DOC]) == [reference(DOC)]


BATCHES = {
    "flat documents": [dict(DOC, id=i, price=i / 7) for i in range(100)],
    "one with NaN": [DOC, {"x": math.nan}],
    "one with an exponent": [DOC, {"x": 1e-7}],
    "one nested": [DOC, {"a": {"b": [1e20]}}],
    "one with an int key": [DOC, {7: "x"}],
    "one with a float key": [DOC, {1e16: "x"}],
    "one with a bool key": [DOC, {True: "x"}],
    "one with an IntEnum value": [DOC, {"x": Level.HIGH}],
    "not all dicts": [DOC, [1e16], "s", 1.0, None],
    "one with a lone surrogate": [DOC, {"x": "\ud800"}],
    "NaN after plain floats": [{"x": 1.5}, {"x": 0.0}, {"x": math.nan}, {"x": 2.5}],
    "infinity after plain floats": [{"x": 1.5}, {"x": -math.inf}],
    "zeros and a small float": [{"x": 0.0}, {"x": -0.0}, {"x": 5e-5}],
    "zeros and plain floats": [{"x": 0.0}, {"x": -0.0}, {"x": 1e-4}, {"x": -9.9e15}],
    "a float subclass": [DOC, {"x": Real(1.5)}],
    "empty": [],
}

#: the batch check of floats against the check of each (the bytes follow from it: above)
FLOAT_BATCHES = {
    "none": [],
    "zeros": [0.0, -0.0],
    "plain": [1e-4, 1.5, -2.25, math.nextafter(1e16, 0)],
    "NaN first": [math.nan, 1.5],
    "NaN last": [1.5, 0.0, math.nan],
    "infinity": [1.5, math.inf],
    "minus infinity": [-math.inf],
    "both infinities": [math.inf, -math.inf],
    "1e16": [1.5, 1e16],
    "-1e16": [-1e16],
    "just under 1e-4": [0.0, math.nextafter(1e-4, 0)],
    "subnormal": [5e-324],
    "largest finite twice (the sum overflows)": [sys.float_info.max, sys.float_info.max],
}


@pytest.mark.parametrize("floats", FLOAT_BATCHES.values(), ids=FLOAT_BATCHES.keys())
def test_the_batch_float_check_is_the_check_of_each(floats):
    assert jsontext._plain_floats(iter(floats)) is all(map(jsontext._plain_float, floats))


def test_the_batch_float_check_on_random_floats():
    rnd = random.Random(39)
    pool = [struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(2_000)]
    pool += [rnd.uniform(-1e6, 1e6) for _ in range(2_000)] + [0.0, -0.0, 1e-4, 1e16, math.inf, math.nan]
    for _ in range(5_000):
        floats = rnd.sample(pool, rnd.randint(1, 4))
        assert jsontext._plain_floats(floats) is all(map(jsontext._plain_float, floats)), floats


@pytest.mark.parametrize("values", BATCHES.values(), ids=BATCHES.keys())
def test_a_batch_is_each_value_as_json_bytes_writes_it(values):
    expected = []
    for value in values:
        try:
            expected.append(reference(value))
        except ValueError as exc:
            expected = exc  # type: ignore[assignment]
            break
    if isinstance(expected, Exception):
        with pytest.raises(type(expected)):
            json_values(values)
    else:
        assert json_values(values) == expected
