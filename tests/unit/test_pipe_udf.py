"""Loading and validating `--udf` targets (kxtx.pipe.udf), and the worker-side mapper logic."""

import textwrap

import pytest

from kxtx.errors import UsageError
from kxtx.pipe import udf
from kxtx.pipe.runconfig import PipeConfig, default_transactional_id, parse_on_udf_error
from kxtx.pipe.worker import transform as tf


@pytest.fixture
def udf_file(tmp_path):
    def write(body: str, name: str = "myudf.py"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(body))
        return path

    return write


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nocolon", "expected MODULE:FUNCTION"),
        (":fn", "expected MODULE:FUNCTION"),
        ("mod:", "expected MODULE:FUNCTION"),
        ("mod:1fn", "is not a Python function name"),
        ("mod:fn-x", "is not a Python function name"),
    ],
)
def test_parse_spec_errors(spec, message):
    with pytest.raises(UsageError, match=message):
        udf.parse_spec(spec)


@pytest.mark.parametrize(
    "spec, module, path, function",
    [
        ("pkg.mod:fn", "pkg.mod", None, "fn"),
        ("udfs.py:fn", None, "udfs.py", "fn"),
        ("./a/b.py:Cls.method", None, "a/b.py", "Cls.method"),
    ],
)
def test_parse_spec(spec, module, path, function):
    t = udf.parse_spec(spec)
    assert (t.module, str(t.path) if t.path else None, t.function) == (module, path, function)


def test_locate_missing_file_and_module():
    with pytest.raises(UsageError, match="file 'nope/x.py' not found"):
        udf.locate("nope/x.py:fn")
    with pytest.raises(UsageError, match="no module named 'kxtx_no_such_module'"):
        udf.locate("kxtx_no_such_module:fn")


def test_load_plain_function(udf_file):
    path = udf_file("def f(v):\n    return v\n")
    loaded = udf.load(udf.locate(f"{path}:f"))
    assert loaded.kind == udf.ROW and loaded.func(b"x") == b"x" and loaded.source == path


@pytest.mark.parametrize(
    "body, spec_fn, message",
    [
        ("def f(v):\n    return v\n", "g", "has no attribute 'g'"),
        ("x = 3\n", "x", "is an int, not a function"),
        (
            "def f():\n    return 1\n",
            "f",
            r"f\(\) cannot be called with one argument; kxtx calls it with the value",
        ),
        ("def f(a, b):\n    return 1\n", "f", r"f\(a, b\) cannot be called with one argument"),
        ("def f(v:\n", "f", "syntax error in .*myudf.py:1"),
        ("import kxtx_not_installed_mod\n", "f", "importing .* failed: ModuleNotFoundError"),
        ("raise RuntimeError('boom')\n", "f", r"RuntimeError: boom \(at .*myudf.py:1\)"),
    ],
)
def test_load_errors(udf_file, body, spec_fn, message):
    path = udf_file(body)
    with pytest.raises(UsageError, match=message):
        udf.load(udf.locate(f"{path}:{spec_fn}"))


def test_record_mode_message(udf_file):
    path = udf_file("def f():\n    return 1\n")
    with pytest.raises(UsageError, match="with the record dict"):
        udf.load(udf.locate(f"{path}:f"), "record")


def test_extra_defaulted_args_are_fine(udf_file):
    path = udf_file("def f(v, suffix=b'!'):\n    return v + suffix\n")
    assert udf.load(udf.locate(f"{path}:f")).func(b"a") == b"a!"


def test_pandas_annotation_means_vectorised(udf_file):
    path = udf_file("import pandas as pd\ndef f(s: pd.Series) -> pd.Series:\n    return s\n")
    assert udf.load(udf.locate(f"{path}:f")).kind == udf.PANDAS


class FakeSparkUdf:
    def __init__(self, eval_type, func=lambda v: v):
        self.evalType, self.func, self.returnType = eval_type, func, "string"

    def __call__(self, *cols):
        raise AssertionError("kxtx calls .func, not the column wrapper")


@pytest.mark.parametrize(
    "eval_type, kind",
    [(100, udf.ROW), (101, udf.ROW), (200, udf.PANDAS), (204, udf.PANDAS_ITER), (250, udf.ARROW)],
)
def test_classify_spark_udfs(eval_type, kind):
    func, got = udf.classify(FakeSparkUdf(eval_type))
    assert got == kind and func(1) == 1


@pytest.mark.parametrize(
    "eval_type, name", [(201, "grouped-map pandas UDF"), (207, "mapInArrow"), (999, "eval type 999")]
)
def test_classify_rejects_other_udfs(eval_type, name):
    with pytest.raises(UsageError, match=name):
        udf.classify(FakeSparkUdf(eval_type), "m:f")


def test_eval_types_match_pyspark():
    util = pytest.importorskip("pyspark.util")
    P = util.PythonEvalType
    assert (
        P.SQL_BATCHED_UDF,
        P.SQL_ARROW_BATCHED_UDF,
        P.SQL_SCALAR_PANDAS_UDF,
        P.SQL_SCALAR_PANDAS_ITER_UDF,
    ) == (100, 101, 200, 204)
    assert getattr(P, "SQL_SCALAR_ARROW_UDF", 250) == 250


# --- the worker-side logic, run directly (no Spark) ---------------------------------------------
def map_rows(func, kind, rows, value_format="raw", record_mode=False):
    """The mapper on one Arrow batch made of `rows` (columns); output rows as OUTPUT_FIELDS tuples."""
    pa = pytest.importorskip("pyarrow")
    batch = pa.RecordBatch.from_pydict(rows, schema=tf.input_schema(record_mode))
    (out,) = list(tf.make_mapper(func, kind, value_format, record_mode)(iter([batch])))
    assert out.schema == tf.output_schema()
    return [tuple(r.values()) for r in out.to_pylist()]


def run_rows(func, kind, values, value_format="raw"):
    return map_rows(func, kind, {"idx": list(range(len(values))), "value": values}, value_format)


def test_run_row_function_errors_are_per_record():
    def f(v):
        if v == b"bad":
            raise ValueError("poison")
        return [v, v] if v == b"fan" else (None if v == b"drop" else v)

    out = run_rows(f, udf.ROW, [b"a", b"bad", b"fan", b"drop"])
    assert [(r[0], r[3], r[7]) for r in out] == [
        (0, b"a", None),
        (1, None, "ValueError: poison"),
        (2, b"fan", None),
        (2, b"fan", None),
    ]


def test_run_json_decoding_error_names_the_input():
    out = run_rows(lambda v: v, udf.ROW, [b'{"a":1}', b"{nope"], "json")
    assert out[0][3] == b'{"a":1}'
    assert out[1][7].startswith("decoding the input: JSONDecodeError")


def test_run_contract_error_is_the_records_error():
    out = run_rows(lambda v: {"value": "x", "topic": 5}, udf.ROW, [b"a"])
    assert out[0][7].startswith("the UDF result: 'topic' must be")


def test_run_pandas_finds_the_poison_record():
    pd = pytest.importorskip("pandas")

    def f(s: pd.Series) -> pd.Series:
        if (s == b"bad").any():
            raise ValueError("poison in batch")
        return s.map(lambda v: v.upper())

    out = run_rows(f, udf.PANDAS, [b"a", b"bad", b"c"])
    assert [(r[0], r[3], r[7]) for r in out] == [
        (0, b"A", None),
        (1, None, "ValueError: poison in batch"),
        (2, b"C", None),
    ]


def test_mapper_builds_arrow_batches():
    pa = pytest.importorskip("pyarrow")
    mapper = tf.make_mapper(lambda v: {"value": v, "key": "k", "headers": {"h": "1"}}, udf.ROW, "raw", False)
    batch = pa.RecordBatch.from_pydict({"idx": [0], "value": [b"v"]}, schema=tf.input_schema(False))
    (out,) = list(mapper(iter([batch])))
    assert out.schema == tf.output_schema()
    assert out.to_pylist() == [
        {
            "idx": 0,
            "key_set": True,
            "key": b"k",
            "value": b"v",
            "headers_set": True,
            "headers": [{"key": "h", "value": b"1"}],
            "topic": None,
            "error": None,
        }
    ]


# --- config --------------------------------------------------------------------------------------
def test_on_udf_error():
    assert parse_on_udf_error("fail") is None
    assert parse_on_udf_error("dlq:dead") == "dead"
    for bad in ("dlq:", "dlq", "skip", "dlq: "):
        with pytest.raises(UsageError):
            parse_on_udf_error(bad)


def test_default_transactional_id_is_stable():
    a = default_transactional_id("g", ["b", "a"], "out")
    assert a == default_transactional_id("g", ["a", "b"], "out")
    assert a != default_transactional_id("g", ["a", "b"], "out2")
    assert a.startswith("kxtx-pipe-g-")


@pytest.mark.parametrize(
    "group, prefix",
    [
        ("enricher", "kxtx-pipe-enricher-"),  # a --group: as before
        ("kxtx-pipe-mine", "kxtx-pipe-kxtx-pipe-mine-"),  # a --group that looks like a default one: as before
        (None, "kxtx-pipe-o-"),  # the default group: its prefix once, not kxtx-pipe-kxtx-pipe-o-...
    ],
)
def test_default_transactional_id_says_its_prefix_once(group, prefix):
    cfg = PipeConfig(inputs=["a"], out="o", group=group, udf="mod:fn").resolve()
    assert cfg.transactional_id.startswith(prefix) and cfg.transactional_id.count(
        "kxtx-pipe-"
    ) == prefix.count("kxtx-pipe-")
    if group is None:
        assert cfg.transactional_id.startswith(f"{cfg.group}-")


def _group(**kwargs) -> str:
    """The group a run of these options works under (PipeConfig's own defaults otherwise)."""
    given = {"inputs": ["a", "b"], "out": "o", "group": None, "udf": "mod:fn", **kwargs}
    return PipeConfig(**given).resolve().group


@pytest.mark.parametrize(
    "other",
    [
        {"inputs": ["b", "a"]},
        {"inputs": ["a", "b", "a"]},
        {"batch_max_records": 7},
        {"batch_max_ms": 1},
        {"max_records": 5, "until_idle": 3.0},
        {"mode": "driver"},
        {"master": "spark://elsewhere:7077", "spark_conf": {"spark.x": "1"}},
        {"value_format": "json", "record_input": True},
        {"dlq": "dead"},
        {"start": "latest"},
        {"transactional_id": "mine"},
        {"udf": " mod:fn "},
    ],
)
def test_default_group_is_the_same_pipe_whatever_the_other_options(other):
    """A rerun that changes how, not what, resumes: the same group (and so its committed offsets)."""
    assert _group(**other) == _group()


@pytest.mark.parametrize(
    "other",
    [
        {"inputs": ["a"]},
        {"inputs": ["a", "c"]},
        {"inputs": ["^a"]},
        {"out": "o2"},
        {"udf": "mod:fn2"},
        {"udf": "other:fn"},
        {"udf": "mod.py:fn"},
    ],
)
def test_default_group_is_another_pipe_for_other_topics_or_udf(other):
    assert _group(**other) != _group()


def test_default_group_names_the_output_and_is_shown_as_given():
    assert _group().startswith("kxtx-pipe-o-")
    assert _group(group="mine") == "mine"
    resolved = PipeConfig(inputs=["a"], out="o", group=None, udf="mod:fn").resolve()
    assert resolved.transactional_id == default_transactional_id(
        resolved.group, ["a"], "o", derived_group=True
    )


def test_default_group_of_a_udf_file_is_its_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    relative = _group(udf="sub/u.py:fn")
    assert _group(udf=f"{tmp_path}/sub/u.py:fn") == relative
    monkeypatch.chdir(tmp_path / "sub")
    assert _group(udf="u.py:fn") == relative
    assert _group(udf="sub/u.py:fn") != relative  # another file: tmp_path/sub/sub/u.py


def test_pipe_help_names_the_default_group():
    from typer.testing import CliRunner

    from kxtx.cli.app import app

    r = CliRunner().invoke(app, ["pipe", "--help"], env={"COLUMNS": "200"}, prog_name="kxtx")
    assert r.exit_code == 0
    assert "Default: kxtx-pipe-OUT-HASH of the input topics, the output topic and the UDF" in r.output


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"out": "a"}, "--out cannot be one of the --in topics"),
        ({"batch_max_records": 0}, "--batch-max-records"),
        ({"dlq": "a"}, "dead-letter topic cannot be an input"),
        ({"value_format": "xml"}, "--value-format"),
        ({"until_idle": 0}, "--until-idle"),
        ({"out_schema": "enriched.txt"}, "--out-schema 'enriched.txt': expected latest"),
    ],
)
def test_config_validation(kwargs, message):
    cfg = PipeConfig(**{"inputs": ["a"], "out": "b", "group": "g", "udf": "m:f", **kwargs})
    with pytest.raises(UsageError, match=message):
        cfg.validate()


def test_record_mode_gives_the_whole_record():
    rows = {
        "idx": [0],
        "value": [b'{"a":1}'],
        "key": [b"k1"],
        "headers": [[{"key": "h", "value": b"v"}]],
        "topic": ["in"],
        "partition": [3],
        "offset": [42],
        "timestamp": [1700000000000],
    }
    seen = []

    def f(rec):
        seen.append(rec)
        return {
            "value": rec["value"],
            "key": rec["key"] + "-out",
            "topic": f"{rec['topic']}-{rec['partition']}",
        }

    out = map_rows(f, udf.ROW, rows, "json", record_mode=True)
    assert seen == [
        {
            "key": "k1",
            "value": {"a": 1},
            "headers": [("h", b"v")],
            "topic": "in",
            "partition": 3,
            "offset": 42,
            "timestamp": 1700000000000,
        }
    ]
    assert out == [(0, True, b"k1-out", b'{"a":1}', False, None, "in-3", None)]


def test_tombstone_is_dropped_unless_returned_as_a_record():
    out = run_rows(lambda v: v, udf.ROW, [None, b"x"])
    assert [r[3] for r in out] == [b"x"]
    out = run_rows(lambda v: {"value": v}, udf.ROW, [None])
    assert out == [(0, False, None, None, False, None, None, None)]
