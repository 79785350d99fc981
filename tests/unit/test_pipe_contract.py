"""The UDF output contract (kxtx.pipe.worker.contract), without Spark or a broker."""

import pytest

from kxtx.pipe.worker.contract import ContractError, Out, any_spec, encode_headers, to_outputs


def value_only(v):
    return Out(False, None, v, False, None, None)


@pytest.mark.parametrize(
    "result, json_values, expected",
    [
        (None, False, []),
        (float("nan"), False, []),
        (b"raw", False, [value_only(b"raw")]),
        ("text", False, [value_only(b"text")]),
        ("text", True, [value_only(b'"text"')]),
        ({"a": 1}, False, [value_only(b'{"a":1}')]),
        ({"a": 1, "value": 2}, False, [value_only(b'{"a":1,"value":2}')]),  # not a record spec
        (42, False, [value_only(b"42")]),
        ([b"a", None, "b"], False, [value_only(b"a"), value_only(b"b")]),
        ([], False, []),
        ((b"x",), False, [value_only(b"x")]),
        ({"value": "v", "key": "k"}, False, [Out(True, b"k", b"v", False, None, None)]),
        ({"value": "v", "key": None}, False, [Out(True, None, b"v", False, None, None)]),
        ({"key": "k"}, False, [Out(True, b"k", None, False, None, None)]),  # tombstone
        ({"value": {"n": 1}, "topic": "t2"}, True, [Out(False, None, b'{"n":1}', False, None, "t2")]),
        (
            {"value": b"v", "headers": {"h": "1", "n": None}},
            False,
            [Out(False, None, b"v", True, [("h", b"1"), ("n", None)], None)],
        ),
        (
            {"value": b"v", "headers": [("h", b"\x00")]},
            False,
            [Out(False, None, b"v", True, [("h", b"\x00")], None)],
        ),
        (
            [{"value": "a", "topic": "x"}, {"value": "b", "topic": "y"}],
            False,
            [Out(False, None, b"a", False, None, "x"), Out(False, None, b"b", False, None, "y")],
        ),
        ({"value": "é"}, False, [value_only("é".encode())]),
    ],
)
def test_to_outputs(result, json_values, expected):
    assert to_outputs(result, json_values) == expected


class FakeRow:
    def __init__(self, **kw):
        self.kw = kw

    def asDict(self, recursive=False):  # noqa: N802 - pyspark's name
        return dict(self.kw)


def test_spark_row_is_a_record_spec():
    assert to_outputs(FakeRow(value="v", topic="t")) == [Out(False, None, b"v", False, None, "t")]


def test_numpy_values_become_plain():
    np = pytest.importorskip("numpy")
    assert to_outputs(np.int64(7)) == [value_only(b"7")]
    assert to_outputs(np.array([b"a", b"b"], dtype=object)) == [value_only(b"a"), value_only(b"b")]


@pytest.mark.parametrize(
    "result, message",
    [
        ([[b"a"]], "do not nest"),
        ({"value": "v", "topic": ""}, "'topic' must be a non-empty string"),
        ({"value": "v", "topic": 3}, "'topic' must be a non-empty string"),
        ({"value": "v", "headers": 5}, "'headers' must be a dict or a list"),
        ({"value": "v", "headers": {1: "x"}}, "header name 1 is not a string"),
        (object(), "cannot encode an object"),
        ({"value": {1, 2}}, "cannot encode a set"),
    ],
)
def test_contract_errors(result, message):
    with pytest.raises(ContractError, match=message):
        to_outputs(result)


def test_headers_none_is_empty():
    assert encode_headers(None) == []


@pytest.mark.parametrize(
    "dicts, expected",
    [
        ([{"a": 1}, {"value": 1, "b": 2}], False),
        ([{"a": 1}, {"value": 1}], True),
        ([{"key": "k", "topic": "t"}], True),
        ([{}], False),  # an empty dict is a value ({}), not a spec
        ([{}, {"headers": {}}], True),
        ([], False),
        ([{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}] * 3, False),  # all longer than a spec
        (
            [{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}, {"key": 1, "value": 2, "headers": {}, "topic": "t"}],
            True,
        ),
    ],
)
def test_any_spec(dicts, expected):
    assert any_spec(dicts) is expected
