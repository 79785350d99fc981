"""The worker-side fast paths and the Arrow IPC task of kxtx.pipe.worker.transform (no Spark needed)."""

import pytest

from kxtx.pipe import udf
from kxtx.pipe.worker import transform as tf

pa = pytest.importorskip("pyarrow")


def batch_of(values, start=0):
    idx = list(range(start, start + len(values)))
    return pa.RecordBatch.from_pydict({"idx": idx, "value": values}, schema=tf.input_schema(False))


def mapped(func, values, value_format="raw", kind=udf.ROW):
    (out,) = list(tf.make_mapper(func, kind, value_format, False)(iter([batch_of(values)])))
    assert out.schema == tf.output_schema()
    return out.to_pylist()


def plain(idx, value):
    return {
        "idx": idx,
        "key_set": False,
        "key": None,
        "value": value,
        "headers_set": False,
        "headers": None,
        "topic": None,
        "error": None,
    }


@pytest.mark.parametrize(
    "func, value_format, values, expected",
    [
        (lambda v: v, "raw", [b"a", b"b"], [b"a", b"b"]),
        (lambda v: v.upper(), "string", [b"a", "é".encode()], [b"A", "É".encode()]),
        (lambda d: d["x"], "json", [b'{"x":"s"}', b'{"x":"t"}'], [b'"s"', b'"t"']),  # str -> JSON
        (lambda v: v + b"!", "raw", [b"a"], [b"a!"]),
    ],
)
def test_one_value_per_record(func, value_format, values, expected):
    assert mapped(func, values, value_format) == [plain(i, v) for i, v in enumerate(expected)]


def test_str_results_equal_the_contracts_encoding():
    # the column-wise str -> bytes path must give the bytes encode_value gives
    from kxtx.pipe.worker.contract import encode_value

    texts = ["plain", "ünï", "\u2028", "😀", ""]
    out = mapped(lambda v: texts[int(v)], [str(i).encode() for i in range(len(texts))])
    assert [r["value"] for r in out] == [encode_value(t) for t in texts]


def test_unencodable_str_result_is_that_records_error_only():
    out = mapped(lambda v: "\ud800" if v == b"bad" else v.decode(), [b"a", b"bad"])
    assert [(r["idx"], r["value"]) for r in out if r["error"] is None] == [(0, b"a")]
    assert out[1]["error"].startswith("the UDF result: UnicodeEncodeError")


def test_one_bad_utf8_value_is_that_records_error_only():
    out = mapped(lambda v: v, [b"ok", b"\xff\xfe", b"fine", None], "string")
    assert [(r["idx"], r["value"]) for r in out if r["error"] is None] == [(0, b"ok"), (2, b"fine")]
    (bad,) = [r for r in out if r["error"]]
    assert bad["idx"] == 1 and bad["error"].startswith("decoding the input: UnicodeDecodeError")


def test_udf_called_once_per_record_when_all_succeed():
    calls = []
    out = mapped(lambda v: calls.append(v) or {"value": v}, [b"a", b"b"])
    assert calls == [b"a", b"b"]
    assert [r["value"] for r in out] == [b"a", b"b"]


def test_none_drops_and_mixed_results_go_through_the_contract():
    out = mapped(lambda v: None if v == b"drop" else v, [b"a", b"drop", b"c"])
    assert [(r["idx"], r["value"]) for r in out] == [(0, b"a"), (2, b"c")]


@pytest.mark.parametrize("via_files", [False, True])
def test_task_maps_ipc_streams_chunk_by_chunk(tmp_path, via_files):
    seen = []

    def f(s):
        seen.append(len(s))
        return s

    table = pa.Table.from_batches([batch_of([b"%d" % i for i in range(25)])])
    task = tf.make_ipc_task(tf.make_mapper(f, udf.PANDAS, "raw", False))
    parts = [table.slice(0, 12), table.slice(12)]
    if via_files:  # local mode: the driver writes files, the task answers with files
        items = [str(tmp_path / f"in-{i}") for i in range(2)]
        for path, part in zip(items, parts):
            tf.write_ipc(path, part, table.schema, 5)
    else:
        items = [tf.write_ipc(None, part, table.schema, 5) for part in parts]
    answers = list(task(iter(items)))
    assert answers == ([p + ".out" for p in items] if via_files else answers)
    out = tf.read_ipc(answers, tf.output_schema())
    assert seen == [5, 5, 2, 5, 5, 3]  # the UDF sees the driver's chunks
    assert out.column("idx").to_pylist() == list(range(25))
    assert out.column("value").to_pylist() == table.column("value").to_pylist()
    assert tf.plain_output(out, 25) is not None


def test_task_on_an_empty_partition():
    task = tf.make_ipc_task(tf.make_mapper(lambda v: v, udf.ROW, "raw", False))
    empty = tf.write_ipc(None, pa.Table.from_batches([], tf.input_schema(False)), tf.input_schema(False))
    out = tf.read_ipc(list(task(iter([empty]))), tf.output_schema())
    assert out.num_rows == 0


@pytest.mark.parametrize(
    "func, values, is_plain",
    [
        (lambda v: v, [b"a", b"b"], True),
        (lambda v: None if v == b"a" else v, [b"a", b"b"], False),  # a drop
        (lambda v: [v, v] if v == b"a" else None, [b"a", b"b"], False),  # same count, other records
        (lambda v: {"value": v, "key": b"k"}, [b"a"], False),
        (lambda v: {"value": v, "headers": {}}, [b"a"], False),
        (lambda v: {"value": v, "topic": "t"}, [b"a"], False),
        (lambda v: 1 / 0, [b"a"], False),
        (lambda v: {"value": None}, [b"a"], True),  # a tombstone with the input's key
    ],
)
def test_plain_output(func, values, is_plain):
    out = pa.Table.from_pylist(mapped(func, values), schema=tf.output_schema())
    assert (tf.plain_output(out, len(values)) is not None) == is_plain


DICTS = [
    {"a": 1},
    {},
    {"é": "ü\u2028😀"},
    {"n": [1, 2.5, None, True]},
    {"f": 1e16},
    {"f": 1.5e-7},
    {"nan": float("nan")},
    {"big": 2**70},
    {"nested": {"x": {"y": []}}},
    {1: "int key"},
    {"key": "k", "other": 1},
]


@pytest.mark.parametrize("fmt", ["raw", "json"])
def test_dict_results_equal_the_contracts_encoding(fmt):
    # the column-wise dict -> JSON path must give the bytes encode_value gives, record for record
    from kxtx.pipe.worker.contract import encode_value

    values = [str(i).encode() for i in range(len(DICTS))]
    if fmt == "json":
        values = [b'"%d"' % i for i in range(len(DICTS))]
    out = mapped(lambda v: DICTS[int(v)], values, fmt)
    assert [r["value"] for r in out] == [encode_value(d, fmt == "json") for d in DICTS]
    assert all(r["error"] is None and not r["key_set"] for r in out)


def test_a_record_spec_among_dicts_keeps_its_meaning():
    specs = [{"x": 1}, {"key": "k", "value": {"y": 2}}, {"topic": "elsewhere", "value": "v"}]
    out = mapped(lambda v: specs[int(v)], [b"0", b"1", b"2"])
    assert [(r["key_set"], r["key"], r["value"], r["topic"]) for r in out] == [
        (False, None, b'{"x":1}', None),
        (True, b"k", b'{"y":2}', None),
        (False, None, b"v", "elsewhere"),
    ]


def test_an_unencodable_dict_is_that_records_error_only():
    bad = [{"ok": 1}, {"s": {1, 2}}, {"t": "\ud800"}, {"ok": 2}]
    out = mapped(lambda v: bad[int(v)], [b"0", b"1", b"2", b"3"])
    assert [(r["idx"], r["value"]) for r in out if r["error"] is None] == [(0, b'{"ok":1}'), (3, b'{"ok":2}')]
    errors = [r["error"] for r in out if r["error"]]
    assert "cannot encode a dict" in errors[0] and "set is not JSON serializable" in errors[0]
    assert "surrogates not allowed" in errors[1]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '[1, 2.5, "x"]',
        '"\\u00e9\\ud83d\\ude00"',
        "1e400",
        "-0",
        "NaN",
        '{"big": 123456789012345678901234567890}',
        '"\\ud800"',
        '{"a": 1, "a": 2}',
        "1.0",
        "[" * 600 + "]" * 600,
        "1.7976931348623157e309",
        "-0.0",
        '"\\u0000"',
        " 7 ",
        "12345678901234567890123",
        "-12345678901234567890123.5e-3",
    ],
)
def test_json_input_decodes_as_json_loads_does(text):
    import json
    import math

    got = tf._loads(text)
    want = json.loads(text)
    if isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize(
    "text", ['{"a": ', "tru", "{'a': 1}", "", '"a\x01b"', "\ufeff1", "[1,]", '{"a":1,}', "01", "1 2"]
)
def test_bad_json_input_fails_with_json_loads_error(text):
    import json

    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        tf._loads(text)
    assert str(got.value) == str(want.value)


def test_the_worker_code_pickles_by_value():
    # On a cluster, Spark ships this module by value (executors need not have kxtx): everything
    # a mapper reaches must pickle, and work after unpickling.
    import pickle

    from pyspark import cloudpickle

    from kxtx.pipe.worker import contract

    for mod in (tf, contract):
        try:
            cloudpickle.register_pickle_by_value(mod)
        except ValueError:
            pass
    try:
        mapper = tf.make_mapper(lambda d: {**d, "n": 1}, udf.ROW, "json", False)
        (out,) = list(pickle.loads(cloudpickle.dumps(mapper))(iter([batch_of([b'{"a":1}'])])))
    finally:
        for mod in (tf, contract):
            cloudpickle.unregister_pickle_by_value(mod)
    assert out.to_pylist() == [plain(0, b'{"a":1,"n":1}')]


@pytest.mark.parametrize(
    "results, json_values, column",
    [
        ([b"a", b"b"], False, True),
        (["a", "b"], False, True),
        (["a", "b"], True, False),  # JSON strings: the contract path quotes them
        ([{"a": 1, "p": 1.5}, {"a": 2}], True, True),  # plain dicts: one column of JSON bytes
        ([{"a": 1}, {"a": 2}], False, True),
        ([{"value": b"v"}, {"a": 2}], True, False),  # a record spec among them
        ([{"a": object()}], True, False),  # not JSON: the contract path names the record
        ([{"a": 1}, None], True, False),  # a drop
        (["ok", "\ud800"], False, False),  # not UTF-8-encodable: the contract path names it
    ],
)
def test_plain_values_take_the_column_path_only_when_each_gives_one_value(results, json_values, column):
    values = tf._plain_values(results, json_values)
    assert (values is not None) == column
    if column:
        expected = [tf.to_outputs(r, json_values)[0].value for r in results]
        assert values == expected


@pytest.mark.parametrize(
    "texts, expected",
    [
        (['{"a":1}', "[1,2.5]", '"s"'], [{"a": 1}, [1, 2.5], "s"]),
        (['{"a":1}', None], [{"a": 1}, None]),  # a tombstone stays None
        (['{"n":NaN}', "1e999"], "json"),  # msgspec refuses these; json.loads reads them
        (["12345678901234567890123"], [12345678901234567890123]),
    ],
)
def test_loads_all_reads_what_json_loads_reads(texts, expected):
    import json

    if expected == "json":
        out = tf._loads_all(texts)
        assert repr(out) == repr([json.loads(t) for t in texts])
    else:
        assert tf._loads_all(texts) == expected


def test_loads_all_raises_for_bad_json():
    with pytest.raises(ValueError):
        tf._loads_all(['{"a":1}', "{bad"])


def _decoded_one_by_one(values):
    """What `_inputs` gives record by record (the reference): a value, or the error's type and text."""
    out = []
    for v in values:
        got = tf._guard(tf.decode, v, tf.JSON)
        out.append((type(got.exc), str(got.exc)) if isinstance(got, tf._Failed) else got)
    return out


JSON_BATCHES = {
    "plain documents": [b'{"a":1,"p":1.5}', b'[1,"x"]', b'"s"', b"12345678901234567890123"],
    "non-ASCII text": ['{"n":"ünï😀"}'.encode(), '"\u2028"'.encode()],
    "escaped surrogates": [b'"\\ud83d\\ude00"', b'"\\ud800"'],
    "a tombstone": [b'{"a":1}', None],
    "NaN and a huge number (json.loads reads them)": [b'{"a":1}', b'{"n":NaN}', b"1e999"],
    "bad UTF-8 in a string": [b'{"a":1}', b'{"a":"\xff"}'],
    "an encoded surrogate": [b'{"a":"\xed\xa0\x80"}', b"1"],
    "a BOM": [b"\xef\xbb\xbf{}", b"2"],
    "UTF-16 (json.loads of bytes would read it)": ['{"a":1}'.encode("utf-16"), b"3"],
    "bad JSON": [b'{"a":1}', b"{bad", b"[1,]"],
}


@pytest.mark.parametrize("values", JSON_BATCHES.values(), ids=JSON_BATCHES.keys())
def test_json_input_from_bytes_is_each_text_decoded(values):
    got = tf._inputs(batch_of(values), tf.JSON, False)
    got = [(type(g.exc), str(g.exc)) if isinstance(g, tf._Failed) else g for g in got]
    assert repr(got) == repr(_decoded_one_by_one(values))  # repr: NaN equals NaN


def test_json_input_is_read_from_the_bytes(monkeypatch):
    seen = []
    decode = tf._decode_utf8
    monkeypatch.setattr(tf, "_decode_utf8", lambda b: seen.append(type(b)) or decode(b))
    assert tf._inputs(batch_of([b'{"a":1}', b"[2]"]), tf.JSON, False) == [{"a": 1}, [2]]
    assert seen == [bytes, bytes]


def test_each_record_is_given_to_the_udf_once_failures_included():
    """A plain UDF that raises on some records: each record is called once (the records before a
    failure are not called again), the failures sit at their records' places."""
    calls = []

    def udf(v):
        calls.append(v)
        if v % 4 == 1:
            raise ValueError(f"bad {v}")
        return v * 10

    got = tf._call_each(udf, list(range(10)))
    assert calls == list(range(10))
    assert [g if not isinstance(g, tf._Failed) else "F" for g in got] == [
        0,
        "F",
        20,
        30,
        40,
        "F",
        60,
        70,
        80,
        "F",
    ]
    assert tf._call_each(udf, []) == []
