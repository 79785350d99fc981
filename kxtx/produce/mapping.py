"""Record mapping for `kxtx produce`: which part of an input line becomes key, value, headers,
partition and timestamp.

JSON fields are top-level names or dotted paths (`customer.id`; a top-level key that itself contains
dots wins). CSV fields are column names from the header row. Plain lines have no fields.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from kxtx.errors import UsageError
from kxtx.produce.inputs import Line
from kxtx.produce.jsondepth import MAX_JSON_DEPTH, TOO_DEEP, accepts_too_deep, too_deep

try:  # about 5x faster than json.loads; every JSON line is parsed at least to validate it
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson is a dependency, but the stdlib is enough
    _fast_loads = json.loads  # type: ignore[assignment]

#: whether the installed orjson takes lines nested past kxtx's limit (before 3.13 it did)
_FAST_TAKES_TOO_DEEP = accepts_too_deep(_fast_loads)


def parse_json(raw: bytes) -> Any:
    """The parsed line, or BadRecord. Nesting is limited by kxtx (see jsondepth), not the library."""
    if _FAST_TAKES_TOO_DEEP and too_deep(raw):
        raise BadRecord(TOO_DEEP)
    try:
        return _fast_loads(raw)
    except ValueError:
        if too_deep(raw):
            raise BadRecord(TOO_DEEP) from None
        # orjson is stricter than JSON readers in general (64-bit integers, NaN): ask json, whose
        # message is also the one users see.
        try:
            return _lenient_loads(raw)
        except ValueError as exc:
            raise BadRecord(f"bad JSON: {exc}") from None


def _lenient_loads(raw: bytes) -> Any:
    """json.loads for a line within the nesting limit: json's C scanner counts each level against
    the recursion limit (about 1000 frames), so a line of 1000-1024 levels needs a little more."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, MAX_JSON_DEPTH + 500))
    try:
        return json.loads(raw)
    except RecursionError:  # pragma: no cover - only where the interpreter's C stack is smaller
        raise BadRecord(TOO_DEEP) from None
    finally:
        sys.setrecursionlimit(limit)


class BadRecord(Exception):
    """A line that cannot become a record; the message is the reason (the caller adds file:line)."""


class Record(NamedTuple):
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]] | None
    partition: int | None
    timestamp: int | None  # epoch milliseconds


@dataclass(frozen=True)
class MappingSpec:
    key_field: str | None = None
    value_field: str | None = None
    #: CSV only: the value is the row as a JSON object {column: text}
    value_as_json: bool = False
    #: constant headers (`--header k=v`)
    headers: tuple[tuple[str, str], ...] = ()
    #: (header name, field) pairs (`--header-field name=field` or `--header-field field`)
    header_fields: tuple[tuple[str, str], ...] = ()
    partition_field: str | None = None
    timestamp_field: str | None = None

    def fields(self) -> list[tuple[str, str]]:
        """(option, field) for every field the mapping reads."""
        out = [
            ("--key-field", self.key_field),
            ("--value-field", self.value_field),
            ("--partition-field", self.partition_field),
            ("--timestamp-field", self.timestamp_field),
        ]
        out += [("--header-field", f) for _, f in self.header_fields]
        return [(opt, f) for opt, f in out if f]


def parse_header_options(
    constants: list[str] | None, fields: list[str] | None
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """`--header k=v` and `--header-field name=field|field` into MappingSpec tuples."""
    consts = []
    for item in constants or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--header {item!r}: expected NAME=VALUE")
        consts.append((name, value))
    from_fields = []
    for item in fields or []:
        name, sep, field = item.partition("=")
        if not name or (sep and not field):
            raise UsageError(f"--header-field {item!r}: expected FIELD or NAME=FIELD")
        from_fields.append((name, field if sep else name))
    return tuple(consts), tuple(from_fields)


def value_bytes(value: Any, field: str = "") -> bytes:
    """A field's value as record bytes: text as UTF-8, anything else as JSON. BadRecord for text
    that is not Unicode: JSON can escape a lone surrogate ("\\ud800"), UTF-8 cannot hold it."""
    try:
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (dict, list)):
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadRecord(f"field {field!r}: a lone surrogate escape (\\ud800-\\udfff) is not text") from None
    return json.dumps(value).encode("ascii")  # numbers and booleans as JSON text


def parse_timestamp(value: Any) -> int:
    """Epoch milliseconds from an integer (or digit string) or an ISO-8601 string (naive = UTC)."""
    if isinstance(value, bool):
        raise BadRecord(f"timestamp {value!r} is not a time")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        return int(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise BadRecord(f"timestamp {value!r} is neither epoch ms nor ISO-8601") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return int(dt.timestamp() * 1000)
    raise BadRecord(f"timestamp {value!r} is neither epoch ms nor ISO-8601")


def parse_partition(value: Any) -> int:
    if isinstance(value, bool):
        raise BadRecord(f"partition {value!r} is not a number")
    try:
        p = int(value)
    except (TypeError, ValueError):
        raise BadRecord(f"partition {value!r} is not a number") from None
    if p < 0:
        raise BadRecord(f"partition {p} is negative")
    return p


class Mapper:
    """Turns `Line`s of one input format into `Record`s. Raises BadRecord for a bad line."""

    #: a kxtx.produce.fast.columns.JsonFields, set by kxtx.produce.fast.keyed.fast_file when a keyed JSON lines
    #: input takes the column path (Any: columns imports this module, and no import goes back)
    fast_fields: Any

    def __init__(self, spec: MappingSpec, fmt: str) -> None:
        if fmt == "lines" and spec.fields():
            opt, _ = spec.fields()[0]
            raise UsageError(f"{opt} needs JSON or CSV input; plain lines have no fields")
        if spec.value_as_json and fmt != "csv":
            raise UsageError("--value-as-json needs CSV input (JSON lines are JSON already)")
        if spec.value_as_json and spec.value_field:
            raise UsageError("--value-field and --value-as-json exclude each other")
        self.spec, self.fmt = spec, fmt
        self.const_headers = [(k, v.encode("utf-8")) for k, v in spec.headers] or None
        self.columns: list[str] = []
        self._index: dict[str, int] = {}
        self._paths = {f: f.split(".") for _, f in spec.fields()}
        #: value = the line as it is, no key, headers or fields: only validation remains (the
        #: engine then skips map() on its hot path)
        self.plain = not spec.fields() and not spec.value_as_json and not spec.headers
        #: kxtx.schemas.serde Writers (or their dry-run stand-ins): encode keys / values with a schema
        self.value_writer: Any = None
        self.key_writer: Any = None
        self._value_fields: dict[str, Any] | None = None

    def use_schemas(self, value: Any, key: Any) -> None:
        """Encode values and/or keys with these writers (`encode(obj) -> bytes`, raising
        kxtx.schemas.codecs.Mismatch): every record then takes the general path."""
        self.value_writer, self.key_writer = value, key
        if value is not None or key is not None:
            self.plain = False
        if value is not None and self.fmt == "csv":
            self._value_fields = value.fields()

    @property
    def encodes(self) -> bool:
        return self.value_writer is not None or self.key_writer is not None

    def _encode(self, writer: Any, obj: Any, what: str) -> bytes:
        from kxtx.schemas.codecs import Mismatch

        try:
            return writer.encode(obj)
        except Mismatch as exc:
            raise BadRecord(f"{what}: {exc}" if what else str(exc)) from None

    def _csv_typed(self, writer: Any, text: Any, what: str) -> Any:
        """A CSV column (text) as the type a primitive schema wants (a long key, say)."""
        from kxtx.schemas.codecs import Mismatch, typed_scalar

        try:
            return typed_scalar(writer.codec, text)
        except Mismatch as exc:
            raise BadRecord(f"{what}: {exc}") from None

    # --- CSV ------------------------------------------------------------------------------------
    def set_header(self, columns: list[str]) -> None:
        """CSV: learn the column names; every field the mapping reads must be one of them."""
        self.columns = columns
        self._index = {c: i for i, c in enumerate(columns)}
        for opt, field in self.spec.fields():
            if field not in self._index:
                raise UsageError(f"{opt} {field!r}: no such CSV column (columns: {', '.join(columns)})")

    def _csv_get(self, row: list, field: str) -> Any:
        return row[self._index[field]]

    # --- JSON -----------------------------------------------------------------------------------
    def _json_get(self, obj: Any, field: str) -> Any:
        if isinstance(obj, dict) and field in obj:
            return obj[field]
        for part in self._paths[field]:
            if not isinstance(obj, dict) or part not in obj:
                return None
            obj = obj[part]
        return obj

    # --- the mapping ----------------------------------------------------------------------------
    def map(self, line: Line) -> Record:
        if line.error:
            raise BadRecord(line.error)
        if self.fmt == "lines":
            if self.value_writer is not None:
                text = line.raw.decode("utf-8", "replace")
                return Record(None, self._encode(self.value_writer, text, ""), self.const_headers, None, None)
            return Record(None, line.raw, self.const_headers, None, None)
        doc: Any
        if self.fmt == "jsonl":
            doc = parse_json(line.raw)
            if self.plain:
                return Record(None, line.raw, self.const_headers, None, None)
            get: Callable[[Any, str], Any] = self._json_get
        else:
            doc = line.row
            if len(doc) != len(self.columns):
                raise BadRecord(f"expected {len(self.columns)} CSV columns, got {len(doc)}")
            get = self._csv_get
        return self._record(line, doc, get)

    # Called once per record on the general path: one function, no call per field.
    def _record(self, line: Line, doc: Any, get: Callable[[Any, str], Any]) -> Record:  # noqa: C901
        spec = self.spec
        key = value = None
        vw, kw, csv = self.value_writer, self.key_writer, self.fmt == "csv"
        if spec.key_field:
            k = get(doc, spec.key_field)
            if k is None:
                raise BadRecord(f"missing key field {spec.key_field!r}")
            if kw is None:
                key = value_bytes(k, spec.key_field)
            else:
                key = self._encode(kw, self._csv_typed(kw, k, "key") if csv else k, "key")
        if spec.value_field:
            v = get(doc, spec.value_field)
            if v is None:
                raise BadRecord(f"missing value field {spec.value_field!r}")
            if vw is None:
                value = value_bytes(v, spec.value_field)
            else:
                value = self._encode(vw, self._csv_typed(vw, v, "value") if csv else v, "")
        elif csv and vw is not None:
            from kxtx.schemas.codecs import Mismatch, typed_row

            try:
                row = typed_row(self._value_fields, dict(zip(self.columns, doc)))
            except Mismatch as exc:
                raise BadRecord(str(exc)) from None
            value = self._encode(vw, row, "")
        elif spec.value_as_json:
            value = value_bytes(dict(zip(self.columns, doc)))
        elif vw is not None:
            value = self._encode(vw, doc, "")
        else:
            value = line.raw
        headers = self.const_headers
        if spec.header_fields:
            headers = list(headers or [])
            for name, field in spec.header_fields:
                h = get(doc, field)
                if h is not None:  # a missing header field leaves the header out
                    headers.append((name, value_bytes(h, field)))
            headers = headers or None
        partition = timestamp = None
        if spec.partition_field:
            p = get(doc, spec.partition_field)
            if p is None or p == "":
                raise BadRecord(f"missing partition field {spec.partition_field!r}")
            partition = parse_partition(p)
        if spec.timestamp_field:
            t = get(doc, spec.timestamp_field)
            if t is None or t == "":
                raise BadRecord(f"missing timestamp field {spec.timestamp_field!r}")
            timestamp = parse_timestamp(t)
        return Record(key, value, headers, partition, timestamp)
