"""The code that runs on Spark's Python workers: decode input, call the UDF, apply the contract.

Every UDF flavour runs inside one mapper over Arrow record batches, so each batch is one Spark job
with Arrow data both ways, errors are caught per input record (the poison record is named, not just
the job), and the output contract is applied on the executors, not the driver. The mapper runs in
a Spark task (`make_ipc_task`) that takes and returns Arrow IPC streams, as bytes or (local mode) as
files: the JVM never converts a row (see `spark._run_job`). An executors-mode task, which reads its
records in the worker itself, hands the same mapper their values as a list (`Mapper.map_values`):
the same decoding, UDF calls and contract, without Arrow copies of records that never leave the
process.

Output rows (OUTPUT_FIELDS): the input row index they came from, the record parts, and `error` (set,
with no record parts, when the UDF raised or returned something the contract rejects).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any

from kxtx.fast import gcpause
from kxtx.pipe.worker import arrays, jsontext
from kxtx.pipe.worker.contract import ContractError, any_spec, to_outputs
from kxtx.pipe.worker.kinds import ARROW, PANDAS, PANDAS_ITER

if TYPE_CHECKING:
    import pyarrow as pa

RAW, STRING, JSON = "raw", "string", "json"
RECORD_FIELDS = ("key", "value", "headers", "topic", "partition", "offset", "timestamp")


def input_schema(record_mode: bool) -> pa.Schema:
    import pyarrow as pa

    fields = [("idx", pa.int64()), ("value", pa.binary())]
    if record_mode:
        fields += [
            ("key", pa.binary()),
            ("headers", _headers_type()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.int64()),
        ]
    return pa.schema(fields)


def output_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("idx", pa.int64()),
            ("key_set", pa.bool_()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("headers_set", pa.bool_()),
            ("headers", _headers_type()),
            ("topic", pa.string()),
            ("error", pa.string()),
        ]
    )


def _headers_type() -> pa.DataType:
    import pyarrow as pa

    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def make_mapper(
    func: Callable, kind: str, value_format: str, record_mode: bool, reader: Any = None, encoder: Any = None
) -> Mapper:
    """The UDF over batches of input (run by `make_ipc_task` on the workers, with `func`).
    `reader` (kxtx.schemas.serde.Reader) decodes values framed for a schema registry; `encoder`
    (kxtx.schemas.serde.Encoder) encodes the results with `--out-schema`."""
    return Mapper(func, kind, value_format, record_mode, reader, encoder)


class Mapper:
    """The UDF with the output contract. Called with Arrow batches (a Spark task's IPC stream),
    it yields output batches; an executors-mode task, which holds its records in the worker
    itself, gives it their values with `map_values` and gets the same outputs without the Arrow
    copies both ways (no input table, no values column to read back)."""

    def __init__(
        self,
        func: Callable,
        kind: str,
        value_format: str,
        record_mode: bool,
        reader: Any = None,
        encoder: Any = None,
    ) -> None:
        self.func, self.kind, self.value_format, self.record_mode = func, kind, value_format, record_mode
        self.json_values = value_format == JSON
        self.reader, self.encoder = reader, encoder
        #: how inputs are decoded: the value format, or the registry reader in its place
        self.decoding: Any = reader if reader is not None else value_format
        self.encode = encoder.encode if encoder is not None else None

    def __call__(self, batches: Iterator) -> Iterator:
        for batch in batches:
            inputs = _inputs(batch, self.decoding, self.record_mode)
            plain, results = _map(
                self.func, self.kind, inputs, self.record_mode, self.json_values, self.encoder
            )
            yield _output_batch(batch.column("idx"), plain, inputs, results, self.json_values, self.encode)

    def map_values(
        self,
        values: list,
        chunk: int,
        fail_fast: bool = False,
        stopped: Callable[[], bool] | None = None,
    ) -> list[bytes] | pa.Table:
        """The outputs for input `values` (bytes, None for a tombstone; not with --input record),
        the UDF called on `chunk` of them at a time as `__call__` calls it per batch: one bytes
        value per input if each record gave one plain value (`_plain_values`), else the output
        Table (`output_schema()`, what `__call__` yields, row indices into `values`).

        `fail_fast` (no dead-letter topic: one failing record fails the whole batch): after a
        chunk in which a record failed, no more chunks; `FailedEarly` carries the outputs so far.
        `stopped`, asked before each chunk after the first: True raises `Stopped`."""
        parts: list = []
        for start in range(0, len(values), chunk):
            if start and stopped is not None and stopped():
                raise Stopped()
            inputs = _decode_values(values[start : start + chunk], self.decoding)
            plain, results = _map(self.func, self.kind, inputs, False, self.json_values, self.encoder)
            failed = plain is None and fail_fast and _any_failed(inputs, results)
            if plain is None:  # the contract, record by record, while the inputs are at hand
                idx = arrays.indices(len(inputs), start)
                plain = _output_batch(idx, None, inputs, results, self.json_values, self.encode)
            parts.append((start, plain))
            if failed and start + chunk < len(values):
                raise FailedEarly(self._joined(parts), start + len(inputs))
        return self._joined(parts)

    def _joined(self, parts: list) -> list[bytes] | pa.Table:
        """map_values' outputs from its chunks' (start, plain values or output batch)."""
        import pyarrow as pa

        if all(type(p) is list for _, p in parts):
            return list(chain.from_iterable(p for _, p in parts))
        batches = [
            p
            if type(p) is not list
            else _output_batch(arrays.indices(len(p), s), p, [], [], self.json_values)
            for s, p in parts
        ]
        return pa.Table.from_batches(batches, schema=output_schema())


class Stopped(Exception):
    """map_values was told to stop before its next chunk."""


class FailedEarly(Exception):
    """map_values(fail_fast=True) stopped after a chunk with a failing record: `outputs` are those
    of the first `mapped` values (the rest were not given to the UDF)."""

    def __init__(self, outputs: list[bytes] | pa.Table, mapped: int) -> None:
        super().__init__(f"a record failed within the first {mapped}")
        self.outputs, self.mapped = outputs, mapped


def _any_failed(inputs: list, results: list) -> bool:
    """Whether a chunk had a record that did not decode or that the UDF failed on."""
    return any(type(v) is _Failed for v in inputs) or any(type(r) is _Failed for r in results)


def make_ipc_task(mapper: Mapper) -> Callable:
    """The function each Spark task runs (`RDD.mapPartitions`): Arrow IPC streams in, one out each.

    An item is the stream itself (bytes), or in local mode the path of a file holding it (str);
    the answer comes the same way (the output file is the input's path + `.out`). The driver
    writes the stream in chunks of the size the UDF should see per call; they are mapped one by
    one, so a vectorised UDF gets the same batches it would under mapInArrow."""

    def task(items: Iterator) -> Iterator:
        import pyarrow as pa

        for item in items:
            with gcpause.paused():  # a batch's decoded values and results: see kxtx.fast.gcpause
                if isinstance(item, str):
                    with pa.OSFile(item) as source:
                        batches = pa.ipc.open_stream(source).read_all().to_batches()
                    write_ipc(item + ".out", mapper(iter(batches)), output_schema())
                    out: str | bytes | None = item + ".out"
                else:
                    out = write_ipc(None, mapper(iter(pa.ipc.open_stream(item))), output_schema())
            yield out

    return task


def write_ipc(
    path: str | None,
    batches: Iterable[pa.RecordBatch] | pa.Table,
    schema: pa.Schema,
    max_chunk: int | None = None,
) -> bytes | None:
    """Record batches (or a Table, cut into `max_chunk` rows) as one Arrow IPC stream: into the
    file `path`, or returned as bytes when `path` is None."""
    import pyarrow as pa

    sink = pa.BufferOutputStream() if path is None else pa.OSFile(path, "wb")
    with pa.ipc.new_stream(sink, schema) as writer:
        if isinstance(batches, pa.Table):
            writer.write_table(batches, max_chunksize=max_chunk)
        else:
            for batch in batches:
                writer.write_batch(batch)
    if path is not None:
        sink.close()
        return None
    return sink.getvalue().to_pybytes()


def read_ipc(items: list, schema: pa.Schema) -> pa.Table:
    """The tasks' outputs (streams, or paths of files holding them) as one Table, in order."""
    import pyarrow as pa

    batches = []
    for item in items:
        if isinstance(item, str):
            with pa.OSFile(item) as source:
                batches += pa.ipc.open_stream(source).read_all().to_batches()
        else:
            batches += pa.ipc.open_stream(item)
    return pa.Table.from_batches(batches, schema=schema)


class _Failed:
    """Stands in a list of inputs or results for a record whose decoding or UDF call raised (a
    marker, not a pair per record: the common all-good case then costs nothing extra)."""

    __slots__ = ("doing", "exc")

    def __init__(self, exc: BaseException, doing: str = "") -> None:
        self.exc, self.doing = exc, doing


def _inputs(batch: pa.RecordBatch, value_format: Any, record_mode: bool) -> list:
    """The UDF's input per record of an Arrow batch (a `_Failed` for one that does not decode)."""
    if record_mode:
        rows = batch.to_pydict()
        return [_guard(_input, rows, i, value_format) for i in range(batch.num_rows)]
    return _decode_values(batch.column("value").to_pylist(), value_format)


def _decode_values(values: list, value_format: Any) -> list:
    """The UDF's input per value (a `_Failed` for one that does not decode), decoded in one
    C-level pass where every value decodes; record by record otherwise, so each failure is its
    own. `value_format` is a format name, or a schema registry reader (`Mapper.decoding`)."""
    if value_format == RAW:
        return values
    if type(value_format) is not str:  # a registry reader: each record by its own schema
        try:  # all in one pass (one Avro schema: the usual batch)
            return value_format.decode_values(values)
        except Exception as exc:
            if getattr(exc, "retriable", False):
                raise
        return [_guard(_registry_value, value_format, v) for v in values]
    if value_format == JSON and _decode_utf8 is not None:
        try:  # straight from the bytes: no str per record (msgspec checks the UTF-8 as it reads)
            return list(map(_decode_utf8, values))
        except Exception:  # noqa: BLE001 - a None, bad UTF-8, or JSON only json.loads reads: below
            pass
    try:
        texts = list(map(bytes.decode, values))  # strict UTF-8; a None (tombstone) raises
        if value_format == STRING:
            return texts
        return _loads_all(texts)
    except Exception:  # noqa: BLE001 - some record does not decode: find which, one by one
        return [_guard(decode, v, value_format) for v in values]


try:
    # Module-level functions and classes only: on a cluster this module is pickled by value,
    # and a msgspec.json.Decoder object cannot be pickled.
    from msgspec import DecodeError as _REFUSED  # noqa: N814 - the error class the fallback refuses
    from msgspec.json import decode as _decode

    def _loads(text: str) -> Any:
        """json.loads, ~3x faster on 100-byte documents: msgspec builds the same objects from
        the JSON it accepts (integers of any size included, which orjson turns into floats);
        what it refuses (NaN, Infinity, numbers out of float range, lone surrogates, bad JSON)
        goes to json.loads, which reads it or raises its usual error."""
        try:
            return _decode(text)
        except _REFUSED:
            return json.loads(text)

    #: decodes UTF-8 bytes as `_decode` decodes their text, and refuses bytes that are not UTF-8
    #: (json.loads would guess UTF-16 or UTF-32 from the first bytes)
    _decode_utf8: Callable | None = _decode
except ImportError:  # executors without msgspec
    _loads = _decode = json.loads  # type: ignore[assignment]  # takes str, as the msgspec one does
    _decode_utf8 = None


def _loads_all(texts: list) -> list:
    """`_loads` of each text, None staying None: in one C-level pass when every text decodes (no
    Python frame per record), else record by record."""
    try:
        return list(map(_decode, texts))
    except Exception:  # noqa: BLE001 - a None, or a text only json.loads reads (or none does)
        return [None if t is None else _loads(t) for t in texts]


def _registry_value(reader: Any, value: bytes | None) -> Any:
    return None if value is None else reader.decode(value).value


def _guard(fn: Callable[..., Any], *args: Any) -> Any:  # fn's result, or a _Failed
    try:
        return fn(*args)
    except Exception as exc:
        if getattr(exc, "retriable", False):  # a schema registry that did not answer: no record's fault
            raise
        return _Failed(exc, "decoding the input")


def _map(
    func: Callable[..., Any],
    kind: str,
    inputs: list,
    record_mode: bool,
    json_values: bool,
    encoder: Any = None,
) -> tuple[list | None, list]:
    """The UDF over `inputs`: (one bytes value per record, results) when every record decoded and
    gave one plain value (`_plain_values`), else (None, the results of the records that decoded)
    for `_assemble`."""
    good = [v for v in inputs if type(v) is not _Failed]
    if kind in (PANDAS, PANDAS_ITER, ARROW):
        results = _vectorised(func, kind, good, record_mode)
    else:
        results = _call_each(func, good)
    if len(good) == len(inputs):
        if encoder is not None:
            return _encoded_values(results, encoder), results
        return _plain_values(results, json_values), results
    return None, results


def _output_batch(
    idx: pa.Array,
    plain: list | None,
    inputs: list,
    results: list,
    json_values: bool,
    encode: Callable[[Any], bytes] | None = None,
) -> pa.RecordBatch:
    """One chunk's output batch, rows `idx` (an int64 array): its plain values (`_map`), else the
    contract's rows for its inputs and results."""
    if plain is not None:
        return _plain_batch(idx, arrays.binary(plain))
    return _to_batch(_assemble(idx.to_pylist(), inputs, results, json_values, encode))


def _assemble(
    idxs: list, inputs: list, results: list, json_values: bool, encode: Callable[[Any], bytes] | None = None
) -> list:
    """OUTPUT_FIELDS tuples, in input order, with each record's error in place of its outputs."""
    results_iter = iter(results)
    out = []
    for idx, value in zip(idxs, inputs):
        if type(value) is _Failed:
            out.append(_error(idx, value.exc, value.doing))
            continue
        result = next(results_iter)
        if type(result) is _Failed:
            out.append(_error(idx, result.exc))
            continue
        try:
            outs = to_outputs(result, json_values, encode)
        except Exception as exc:  # noqa: BLE001 - e.g. a str that is not UTF-8-encodable
            out.append(_error(idx, exc, "the UDF result"))
            continue
        out.extend((idx,) + tuple(o) + (None,) for o in outs)
    return out


def _encoded_values(results: list, encoder: Any) -> list | None:
    """`_plain_values` under --out-schema: each result a dict that is no record spec, encoded; None
    (the contract path, which names each record that does not fit) otherwise."""
    if set(map(type, results)) != {dict} or any_spec(results):
        return None
    try:  # all in one pass (kxtx.schemas.serde.Encoder.encode_many)
        return encoder.encode_many(results)
    except Exception:  # noqa: BLE001 - one does not fit the schema: the contract path names it
        return None


def _plain_values(results: list, json_values: bool) -> list | None:
    """The results as the bytes to produce if each is bytes (or, without JSON values, str:
    UTF-8, the bytes `encode_value` makes) or a dict that is no record spec (with JSON values:
    its JSON); None otherwise (None = drop, lists, record specs...: the contract path)."""
    types = set(map(type, results))
    if types == {bytes}:
        return results
    if types == {str} and not json_values:
        try:
            return list(map(str.encode, results))
        except UnicodeEncodeError:  # a lone surrogate: the contract path names the record
            return None
    if types == {dict} and not any_spec(results):
        # Each dict is one JSON value (no record spec among them): the bytes `encode_value`
        # makes, without an Out per record.
        try:
            return jsontext.json_values(results)
        except Exception:  # noqa: BLE001 - not JSON-serialisable: the contract path names it
            return None
    return None


def _call_each(func: Callable[..., Any], inputs: list) -> list:
    """The UDF on each input, once: a record it raises on gets a `_Failed` and the calls go on
    with the next one. (list.extend keeps what `map` gave before an exception, and `rest` is past
    the failing record: no record is called twice, which a slow UDF or a model call would pay for.)"""
    results: list = []
    rest = iter(inputs)
    while True:
        try:
            results.extend(map(func, rest))
            return results
        except Exception as exc:  # noqa: BLE001 - a UDF error belongs to its record
            results.append(_Failed(exc))


def _vectorised(func: Callable[..., Any], kind: str, values: list, record_mode: bool) -> list:
    """Call once for the whole batch; if that raises, once per record to find the failing one(s)."""
    if not values:
        return []
    try:
        results = _call_batch(func, kind, values, record_mode)
    except Exception:  # noqa: BLE001 - retried record by record below to name the poison record
        results = None
    if results is not None and len(results) == len(values):
        return results
    single = []
    for v in values:
        try:
            got = _call_batch(func, kind, [v], record_mode)
            if len(got) != 1:
                raise ContractError(f"returned {len(got)} results for 1 input")
            single.append(got[0])
        except Exception as exc:  # noqa: BLE001
            single.append(_Failed(exc))
    return single


def _call_batch(func: Callable[..., Any], kind: str, values: list, record_mode: bool) -> list:
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


def _input(rows: dict, i: int, value_format: Any) -> dict:
    """The record dict given to the UDF with --input record."""
    if type(value_format) is str:
        value = decode(rows["value"][i], value_format)
    else:  # a registry reader
        value = _registry_value(value_format, rows["value"][i])
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


def _plain_batch(idx: pa.Array, values: pa.Array) -> pa.RecordBatch:
    """One value per input, with the input's key and headers, to the default topic."""
    import pyarrow as pa

    schema = output_schema()
    n = len(values)
    false = arrays.all_false(n)
    columns = [
        idx,
        false,
        pa.nulls(n, pa.binary()),
        values,
        false,
        pa.nulls(n, schema.field("headers").type),
        pa.nulls(n, pa.string()),
        pa.nulls(n, pa.string()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _to_batch(rows: list) -> pa.RecordBatch:
    import pyarrow as pa

    schema = output_schema()
    cols: list = list(zip(*rows)) if rows else [[] for _ in schema]
    headers = [None if h is None else [{"key": k, "value": v} for k, v in h] for h in cols[5]]
    columns = [pa.array(list(c), type=f.type) for c, f in zip(cols[:5], list(schema)[:5])]
    columns += [
        pa.array(headers, type=schema.field("headers").type),
        pa.array(list(cols[6]), pa.string()),
        pa.array(list(cols[7]), pa.string()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def plain_output(out: pa.Table, n: int) -> pa.Array | None:
    """Driver side: the values column (pyarrow) if the output is one value per input record, in
    input order, keeping the input's key and headers, to the default topic, no error (what
    `_plain_batch` makes: the producer can then walk the batch and the values side by side)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if out.num_rows != n or out.column("error").null_count != n or out.column("topic").null_count != n:
        return None
    if pc.any(out.column("key_set")).as_py() or pc.any(out.column("headers_set")).as_py():
        return None
    # compared in Arrow: to_numpy() would import pandas (see kxtx.pipe.worker.arrays)
    if not out.column("idx").equals(pa.chunked_array([arrays.indices(n)])):
        return None
    return out.column("value")


def input_table(batch: list, record_mode: bool) -> pa.Table:
    """Driver side: a batch of confluent-kafka Messages as the Arrow table the mapper reads."""
    import pyarrow as pa

    schema = input_schema(record_mode)
    cols = [arrays.indices(len(batch)), arrays.binary([m.value() for m in batch])]
    if record_mode:
        cols += [
            pa.array([m.key() for m in batch], pa.binary()),
            pa.array(
                [[{"key": k, "value": v} for k, v in (m.headers() or [])] for m in batch],
                schema.field("headers").type,
            ),
            pa.array([m.topic() for m in batch], pa.string()),
            pa.array([m.partition() for m in batch], pa.int32()),
            pa.array([m.offset() for m in batch], pa.int64()),
            pa.array([m.timestamp()[1] for m in batch], pa.int64()),
        ]
    return pa.Table.from_arrays(cols, schema=schema)
