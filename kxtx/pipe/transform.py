"""The code that runs on Spark's Python workers: decode input, call the UDF, apply the contract.

Every UDF flavour runs inside one `mapInArrow` function, so each batch is one Spark job with Arrow
data both ways, errors are caught per input record (the poison record is named, not just the job),
and the output contract is applied on the executors, not the driver.

Output rows (OUTPUT_FIELDS): the input row index they came from, the record parts, and `error` (set,
with no record parts, when the UDF raised or returned something the contract rejects).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

from kxtx.pipe.contract import ContractError, to_outputs
from kxtx.pipe.udf import ARROW, PANDAS, PANDAS_ITER

RAW, STRING, JSON = "raw", "string", "json"
RECORD_FIELDS = ("key", "value", "headers", "topic", "partition", "offset", "timestamp")


def input_schema(record_mode: bool):
    import pyarrow as pa

    fields = [("idx", pa.int64()), ("value", pa.binary())]
    if record_mode:
        fields += [
            ("key", pa.binary()), ("headers", _headers_type()), ("topic", pa.string()),
            ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.int64()),
        ]
    return pa.schema(fields)


def output_schema():
    import pyarrow as pa

    return pa.schema([
        ("idx", pa.int64()), ("key_set", pa.bool_()), ("key", pa.binary()), ("value", pa.binary()),
        ("headers_set", pa.bool_()), ("headers", _headers_type()), ("topic", pa.string()),
        ("error", pa.string()),
    ])


def output_ddl() -> str:
    """The same schema as Spark DDL (mapInArrow takes a Spark schema)."""
    return ("idx bigint, key_set boolean, key binary, value binary, headers_set boolean, "
            "headers array<struct<key:string,value:binary>>, topic string, error string")


def _headers_type():
    import pyarrow as pa

    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def make_mapper(func: Callable, kind: str, value_format: str, record_mode: bool):
    """The function handed to `DataFrame.mapInArrow` (pickled to the workers with `func`)."""
    json_values = value_format == JSON

    def mapper(batches: Iterator) -> Iterator:
        for batch in batches:
            rows = batch.to_pydict()
            yield _to_batch(_run(func, kind, rows, value_format, record_mode, json_values))

    return mapper


def _run(func, kind, rows: dict, value_format: str, record_mode: bool, json_values: bool) -> list:
    """Output rows for one Arrow batch, in input order (a list of OUTPUT_FIELDS tuples, or the
    `_Plain` fast form when every result is a plain bytes value)."""
    idxs = rows["idx"]
    decoded = _decode_all(rows, value_format, record_mode)
    inputs = [v for ok, v in decoded if ok]
    if kind in (PANDAS, PANDAS_ITER, ARROW):
        results = _vectorised(func, kind, inputs, record_mode)
    else:
        results = _call_each(func, inputs)
    if len(inputs) == len(idxs) and results and all(ok for ok, _ in results):
        plain = _plain_values([r for _, r in results], json_values)
        if plain is not None:
            return _Plain(idxs, plain)
    results_iter = iter(results)
    out = []
    for idx, (ok, value) in zip(idxs, decoded):
        if not ok:
            out.append(_error(idx, value, "decoding the input"))
            continue
        called, result = next(results_iter)
        if not called:
            out.append(_error(idx, result))
            continue
        try:
            outs = to_outputs(result, json_values)
        except ContractError as exc:
            out.append(_error(idx, exc, "the UDF result"))
            continue
        out.extend((idx,) + tuple(o) + (None,) for o in outs)
    return out


class _Plain:
    """One bytes value per input, the input's key and headers, the default topic (the common case,
    built column-wise without per-record tuples)."""

    def __init__(self, idxs: list, values: list):
        self.idxs, self.values = idxs, values


def _plain_values(results: list, json_values: bool) -> list | None:
    if all(type(r) is bytes for r in results):
        return results
    if not json_values and all(type(r) is str for r in results):
        return [r.encode("utf-8") for r in results]
    return None


def _decode_all(rows: dict, value_format: str, record_mode: bool) -> list[tuple[bool, Any]]:
    if not record_mode:
        try:  # the whole batch at once; record by record only when something does not decode
            return [(True, decode(v, value_format)) for v in rows["value"]]
        except Exception:  # noqa: BLE001
            pass
    out = []
    for i in range(len(rows["idx"])):
        try:
            out.append((True, _input(rows, i, value_format, record_mode)))
        except Exception as exc:  # noqa: BLE001 - undecodable input is that record's error
            out.append((False, exc))
    return out


def _call_each(func, inputs: list) -> list[tuple[bool, Any]]:
    try:
        return [(True, func(v)) for v in inputs]
    except Exception:  # noqa: BLE001 - again one by one, to pin the error on its record
        return [_call(func, v) for v in inputs]


def _call(func, value) -> tuple[bool, Any]:
    try:
        return True, func(value)
    except Exception as exc:  # noqa: BLE001 - a UDF error belongs to its record
        return False, exc


def _vectorised(func, kind, values: list, record_mode: bool) -> list[tuple[bool, Any]]:
    """Call once for the whole batch; if that raises, once per record to find the failing one(s)."""
    if not values:
        return []
    try:
        results = _call_batch(func, kind, values, record_mode)
    except Exception:  # noqa: BLE001 - retried record by record below to name the poison record
        results = None
    if results is not None and len(results) == len(values):
        return [(True, r) for r in results]
    single = []
    for v in values:
        try:
            got = _call_batch(func, kind, [v], record_mode)
            if len(got) != 1:
                raise ContractError(f"returned {len(got)} results for 1 input")
            single.append((True, got[0]))
        except Exception as exc:  # noqa: BLE001
            single.append((False, exc))
    return single


def _call_batch(func, kind, values: list, record_mode: bool) -> list:
    if kind == ARROW:
        import pyarrow as pa

        result = func(pa.array(values))
        return result.to_pylist() if hasattr(result, "to_pylist") else list(result)
    import pandas as pd

    data = pd.DataFrame(values) if record_mode else pd.Series(values, dtype=object)
    if kind == PANDAS_ITER:
        parts = list(func(iter([data])))
        result = pd.concat(parts, ignore_index=True) if parts else pd.Series([], dtype=object)
    else:
        result = func(data)
    if isinstance(result, pd.DataFrame):  # a struct return type
        return result.to_dict("records")
    if isinstance(result, pd.Series):
        return result.tolist()
    return list(result)


def _input(rows: dict, i: int, value_format: str, record_mode: bool) -> Any:
    value = decode(rows["value"][i], value_format)
    if not record_mode:
        return value
    key = rows["key"][i]
    if key is not None and value_format != RAW:
        key = key.decode("utf-8", errors="backslashreplace")
    return {
        "key": key,
        "value": value,
        "headers": [(h["key"], h["value"]) for h in rows["headers"][i] or []],
        "topic": rows["topic"][i],
        "partition": rows["partition"][i],
        "offset": rows["offset"][i],
        "timestamp": rows["timestamp"][i],
    }


def decode(value: bytes | None, value_format: str) -> Any:
    if value is None or value_format == RAW:
        return value
    text = value.decode("utf-8")
    return json.loads(text) if value_format == JSON else text


def _error(idx: int, exc: BaseException, doing: str = "") -> tuple:
    text = f"{type(exc).__name__}: {exc}"
    if doing and not isinstance(exc, ContractError):
        text = f"{doing}: {text}"
    elif doing:
        text = f"{doing}: {exc}"
    return (idx, False, None, None, False, None, None, text[:1000])


def _to_batch(rows):
    import pyarrow as pa

    schema = output_schema()
    if isinstance(rows, _Plain):
        n = len(rows.idxs)
        false = pa.array([False] * n, pa.bool_())
        arrays = [pa.array(rows.idxs, pa.int64()), false, pa.nulls(n, pa.binary()),
                  pa.array(rows.values, pa.binary()), false, pa.nulls(n, schema.field("headers").type),
                  pa.nulls(n, pa.string()), pa.nulls(n, pa.string())]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    cols = list(zip(*rows)) if rows else [[] for _ in schema]
    headers = [None if h is None else [{"key": k, "value": v} for k, v in h] for h in cols[5]]
    arrays = [pa.array(list(c), type=f.type) for c, f in zip(cols[:5], list(schema)[:5])]
    arrays += [pa.array(headers, type=schema.field("headers").type),
               pa.array(list(cols[6]), pa.string()), pa.array(list(cols[7]), pa.string())]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def input_table(batch: list, record_mode: bool):
    """Driver side: a batch of confluent-kafka Messages as the Arrow table the mapper reads."""
    import pyarrow as pa

    schema = input_schema(record_mode)
    cols = {"idx": pa.array(range(len(batch)), pa.int64()),
            "value": pa.array([m.value() for m in batch], pa.binary())}
    if record_mode:
        cols["key"] = pa.array([m.key() for m in batch], pa.binary())
        cols["headers"] = pa.array(
            [[{"key": k, "value": v} for k, v in (m.headers() or [])] for m in batch],
            schema.field("headers").type)
        cols["topic"] = pa.array([m.topic() for m in batch], pa.string())
        cols["partition"] = pa.array([m.partition() for m in batch], pa.int32())
        cols["offset"] = pa.array([m.offset() for m in batch], pa.int64())
        cols["timestamp"] = pa.array([m.timestamp()[1] for m in batch], pa.int64())
    return pa.table(cols, schema=schema)
