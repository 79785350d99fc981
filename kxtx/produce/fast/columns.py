"""The keyed fast path's reading: a block of JSON lines or CSV rows into columns (key, value,
partition, timestamp, headers) in a few passes in C, instead of one mapping call per record.

A line is *regular* when these passes decide it with certainty; every other line (bad JSON, a
missing or null field, a lenient-JSON line, a key of the empty string, a record near the size limit,
a timestamp that is not an integer, ...) is marked *odd* and the engine maps it alone with the
general `Mapper`, which so decides it exactly as the general path does. What the columns hold for a
regular line is what `Mapper.map` returns for it (tests compare the two on a table of inputs).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, itemgetter, methodcaller
from typing import TYPE_CHECKING, Any

from kxtx.fast import speedups
from kxtx.produce.jsondepth import DEEP_MIN_BYTES, too_deep
from kxtx.produce.mapping import BadRecord, MappingSpec, parse_partition, parse_timestamp, value_bytes

if TYPE_CHECKING:
    from collections.abc import Callable

    from kxtx.produce.fast.murmur import Partitioner
    from kxtx.produce.inputs import Block

    #: a column of the block by field name (`raw`: CSV fields as bytes, when they are cut from lines)
    _Get = Callable[..., list]

try:
    from orjson import dumps as _dumps
except ImportError:  # pragma: no cover - orjson is a dependency
    _dumps = None  # type: ignore[assignment]


@dataclass
class Columns:
    """One block, mapped. values[i] is what a line's record carries (for odd lines: the raw line,
    only its length counts); parts[i] is the partition of a regular line."""

    values: list
    keys: list | repeat
    parts: list
    stamps: list | None  # None: no timestamps (librdkafka's: now)
    headers: list | repeat | None  # None: no headers
    #: lines the engine maps alone (bad, irregular) and blank ones (no record, no line of a
    #: transaction)
    odd: set = field(default_factory=set)
    blanks: set = field(default_factory=set)
    #: CSV: the parsed row of each line (the general mapper needs it for odd lines)
    rows: list | None = None


# --- JSON: one msgspec Struct type for the fields the mapping reads --------------------------------
class JsonFields:
    """Decodes JSON lines to just the fields a mapping reads (msgspec skips, but checks, the rest).

    A dotted field `a.b` reads the top-level key "a.b" if a line has one (null included), else the
    path a -> b, as `Mapper` does: the Struct has one attribute for each."""

    def __init__(self, spec: MappingSpec) -> None:
        import msgspec

        self.unset = msgspec.UNSET
        tree: dict = {}
        self.getters: dict[str, tuple] = {}
        counter = iter(range(1 << 30))

        def attr(node: dict, name: str, leaf: bool) -> Any:
            """The attribute for JSON key `name` in `node`: ('leaf', attr) or (subtree, attr)."""
            if name in node:
                kind, a = node[name]
                if (kind == "leaf") != leaf:
                    raise ValueError(f"{name!r} is both a field and a path")
                return a if leaf else node[name]
            a = f"f{next(counter)}"
            node[name] = ("leaf", a) if leaf else ({}, a)
            return a if leaf else node[name]

        for _, f in spec.fields():
            top = attr(tree, f, True)
            nested = None
            if "." in f:
                parts, node, names = f.split("."), tree, []
                for p in parts[:-1]:
                    node, a = attr(node, p, False)
                    names.append(a)
                names.append(attr(node, parts[-1], True))
                nested = ".".join(names)
            self.getters[f] = (top, nested)
        self.decode = msgspec.json.Decoder(self._struct(msgspec, tree, "Line")).decode
        self.empty = self.decode(b"{}")
        #: the key field's name, where the mapping reads nothing else and it is a top-level name:
        #: the C scan (kxtx.fast.native.json_keys) then reads it
        key, fields = spec.key_field, [f for _, f in spec.fields()]
        self.key_only = key.encode() if key and fields == [key] and "." not in key else None

    def _struct(self, msgspec: Any, node: dict, name: str) -> Any:  # a msgspec Struct type
        fields, rename = [], {}
        for key, (kind, a) in node.items():
            if kind == "leaf":
                fields.append((a, Any, msgspec.UNSET))
            else:
                sub = self._struct(msgspec, kind, name + "_" + a)
                fields.append((a, sub, msgspec.field(default_factory=sub)))
            rename[a] = key
        # gc=False: decoded JSON is a tree, never a cycle; untracked structs spare the collector
        return msgspec.defstruct(name, fields, rename=rename, gc=False)

    def column(self, structs: list, f: str) -> list:
        """The field's values; UNSET where a line lacks it."""
        top, nested = self.getters[f]
        col = list(map(attrgetter(top), structs))
        if nested is None:
            return col
        inner = list(map(attrgetter(nested), structs))
        if col.count(self.unset) == len(col):  # no line has the dotted name as a key
            return inner
        unset = self.unset
        return [t if t is not unset else n for t, n in zip(col, inner)]


def json_columns(
    fields: JsonFields,
    spec: MappingSpec,
    const_headers: list[tuple[str, bytes]] | None,
    block: Block,
    partitioner: Partitioner,
    sticky: int,
    size_limit: int,
) -> Columns:
    values = block.values
    n = len(values)
    odd: set = set()
    native = speedups.module() if block.utf8 and fields.key_only is not None else None
    if native is not None:
        keys = _scanned_keys(native, fields, values, odd)
    elif block.utf8:
        structs = _decode_all(fields.decode, values, odd)
    else:  # bad UTF-8 somewhere: msgspec does not check it in skipped strings
        odd.update(range(n))
        structs = [fields.empty] * n
    # blank lines are among those msgspec refused
    blanks = {i for i in odd if not values[i] or values[i].isspace()}
    longest = max(map(len, values), default=0)
    if longest >= DEEP_MIN_BYTES:  # kxtx's own nesting limit
        odd.update(i for i, v in enumerate(values) if too_deep(v))
    if native is None:
        for i in odd:
            structs[i] = fields.empty

    def get(f: str, raw: bool = False) -> list:  # noqa: ARG001 - raw: see csv_split_columns
        return keys if native is not None else fields.column(structs, f)

    return _columns(
        spec,
        get,
        values,
        values,
        longest,
        odd,
        blanks,
        const_headers,
        partitioner,
        sticky,
        fields.unset,
        size_limit,
    )


def _scanned_keys(native: Any, fields: JsonFields, values: list, odd: set) -> list:
    """The key column (bytes) of a mapping that reads a top-level key field only: the C scan reads
    the keys of ordinary lines (a string without escapes, or an integer: the bytes the general
    mapper makes of them are those written in the line); msgspec decodes the lines it is not sure
    of, as for any other mapping. Lines with a key that is not text (a float, an object...) are
    left to the general mapper (odd), so that no key is longer than its line (see _columns)."""
    assert fields.key_only is not None
    keys, undecided = native.json_keys(values, fields.key_only)
    if not undecided:
        return keys
    lines = [values[i] for i in undecided]
    sub_odd: set = set()
    structs = _decode_all(fields.decode, lines, sub_odd)
    for j in sub_odd:
        structs[j] = fields.empty
    col = fields.column(structs, fields.key_only.decode())
    sub_odd.update(j for j, v in enumerate(col) if type(v) is not str)
    got, _ = _as_bytes(col, sub_odd, fields.unset)
    for j, i in enumerate(undecided):
        keys[i] = got[j]
        if j in sub_odd:
            odd.add(i)
    return keys


def _decode_all(decode: Callable[[bytes], Any], values: list, odd: set) -> list:
    """decode() of every value, in C; a value it refuses is marked odd (the general mapper decides
    about it), and gets None."""
    out: list = []
    k, n = 0, len(values)
    while k < n:
        it = iter(values)
        it.__setstate__(k)  # type: ignore[attr-defined]
        try:
            out.extend(map(decode, it))  # extend keeps what was decoded before an error
        except (ValueError, RecursionError):
            odd.add(len(out))
            out.append(None)
        k = len(out)
    return out


# --- CSV ------------------------------------------------------------------------------------------
def csv_rows(block: Block) -> list | None:
    """The rows of a block of CSV lines, one a line; None when a row spans lines (a quoted line
    break) or the block is not plain UTF-8 CSV: then the rest of the input takes the general path."""
    if not block.utf8:
        return None
    text = list(map(bytes.decode, block.values))
    text.append("")  # a row left open at the block's end would swallow it
    try:
        rows = list(csv.reader(text))
    except csv.Error:
        return None
    if len(rows) != len(text) or rows[-1] != []:
        return None
    rows.pop()
    return rows


def csv_splits(block: Block, spec: MappingSpec) -> bool:
    """Can the block's fields be cut at its commas (no quote, no carriage return, no empty line,
    plain UTF-8)? Then only the fields the mapping reads are taken out of each line, and no row is
    built, which is cheaper than csv.reader's rows (bench/README.md, "Behind produce's constants").
    --value-as-json needs every field: csv.reader then."""
    if not block.utf8 or spec.value_as_json or b"" in block.values:
        return False
    joined = b"\n".join(block.values)
    return b'"' not in joined and b"\r" not in joined


class _RowsOnDemand:
    """The csv.reader row of a line, parsed when the general mapper asks (odd lines only)."""

    def __init__(self, values: list) -> None:
        self.values = values

    def __getitem__(self, i: int) -> list:
        return next(csv.reader([self.values[i].decode()]))


def csv_split_columns(
    columns_of_header: list[str],
    spec: MappingSpec,
    const_headers: list[tuple[str, bytes]] | None,
    block: Block,
    partitioner: Partitioner,
    sticky: int,
    size_limit: int,
) -> Columns:
    """`csv_columns` for a block that `csv_splits`: same columns, fields cut in C."""
    width = len(columns_of_header)
    index = {c: i for i, c in enumerate(columns_of_header)}
    values = block.values
    commas = list(map(methodcaller("count", b","), values))
    odd: set = set()
    lines = values
    if commas.count(width - 1) != len(values):  # a row of another width: the general mapper says so
        odd = {i for i, c in enumerate(commas) if c != width - 1}
        filler = b"," * (width - 1)
        lines = [filler if i in odd else v for i, v in enumerate(values)]

    def get(f: str, raw: bool = False) -> list:
        k = index[f]
        col = list(map(itemgetter(k), map(methodcaller("split", b",", k + 1), lines)))
        return col if raw else list(map(bytes.decode, col))

    longest = max(map(len, values), default=0)
    out = _columns(
        spec, get, values, values, longest, odd, set(), const_headers, partitioner, sticky, None, size_limit
    )
    out.rows = _RowsOnDemand(values)  # type: ignore[assignment]  # a list to its readers
    return out


def csv_columns(
    columns_of_header: list[str],
    spec: MappingSpec,
    const_headers: list[tuple[str, bytes]] | None,
    block: Block,
    rows: list,
    partitioner: Partitioner,
    sticky: int,
    size_limit: int,
) -> Columns:
    width = len(columns_of_header)
    index = {c: i for i, c in enumerate(columns_of_header)}
    odd: set = set()
    blanks: set = set()
    lens = list(map(len, rows))
    original = rows
    if lens.count(width) != len(rows):
        filler = [""] * width
        rows = list(rows)
        for i, w in enumerate(lens):
            if w != width:
                (blanks if w == 0 else odd).add(i)
                rows[i] = filler
    odd |= blanks

    def get(f: str, raw: bool = False) -> list:  # noqa: ARG001 - raw: see csv_split_columns
        return list(map(itemgetter(index[f]), rows))

    if spec.value_as_json:
        values = list(map(_dumps, map(dict, map(zip, repeat(columns_of_header), rows))))
    else:
        values = block.values
    longest = max(map(len, block.values), default=0)
    out = _columns(
        spec,
        get,
        values,
        block.values,
        longest,
        odd,
        blanks,
        const_headers,
        partitioner,
        sticky,
        None,
        size_limit,
    )
    out.rows = original
    return out


# --- both -----------------------------------------------------------------------------------------
def _columns(
    spec: MappingSpec,
    get: _Get,
    values: list,
    raws: list,
    longest: int,
    odd: set,
    blanks: set,
    const_headers: list[tuple[str, bytes]] | None,
    partitioner: Partitioner,
    sticky: int,
    unset: object,
    size_limit: int,
) -> Columns:
    """`longest`: the longest raw line. A text field's UTF-8 is never longer than the line it is
    in, so with keys and values from text fields no record needs its size checked below the
    limit minus twice that (the size check then costs nothing on ordinary blocks)."""
    n = len(values)
    vmax = longest if values is raws else None
    if spec.value_field:
        values, text = _as_bytes(get(spec.value_field, raw=True), odd, unset)
        values = [raws[i] if i in odd else v for i, v in enumerate(values)] if odd else values
        vmax = longest if text else None
    keys: list | repeat = repeat(None)
    kmax: int | None = 0
    if spec.partition_field:
        parts = _partition_column(get(spec.partition_field), odd, unset, partitioner.n)
    else:
        parts = [sticky] * n
    if spec.key_field:
        keys, text = _as_bytes(get(spec.key_field, raw=True), odd, unset)
        kmax = longest if text else None
        if not spec.partition_field:
            parts = partitioner(keys)
            if -1 in parts:  # an empty key: librdkafka partitions it
                odd.update(i for i, p in enumerate(parts) if p < 0)
    stamps: list | None = None
    if spec.timestamp_field:
        stamps = _timestamp_column(get(spec.timestamp_field), odd, unset)
    headers: list | repeat | None = repeat(const_headers) if const_headers else None
    hmax: int | None = sum(len(k) + len(v) for k, v in const_headers or ())
    if spec.header_fields:
        headers, hmax = _header_column(spec, get, const_headers, odd, unset, longest)
    _mark_large(values, keys, headers, odd, size_limit, vmax, kmax, hmax)
    return Columns(values, keys, parts, stamps, headers, odd, blanks)


def _mark_large(
    values: list,
    keys: Any,  # a list, or repeat(None) when unkeyed (then never indexed)
    headers: Any,  # a list, repeat(constant headers) or None (then hmax is known)
    odd: set,
    limit: int,
    vmax: int | None,
    kmax: int | None,
    hmax: int | None,
) -> None:
    """Records that may be near the size limit are odd: the general path checks their size.
    vmax, kmax, hmax: bounds on the sizes of values, keys and headers (None: unknown)."""
    if vmax is None:
        vmax = max(map(len, values), default=0)
    if kmax is None:
        kmax = max(map(len, keys), default=0)
    hsizes = None
    if hmax is None:
        hsizes = [sum(len(k) + len(v) for k, v in h) if h else 0 for h in headers]
        hmax = max(hsizes, default=0)
    if vmax + kmax + hmax < limit:
        return
    if isinstance(headers, list) and hsizes is None:
        hsizes = [sum(len(k) + len(v) for k, v in h) if h else 0 for h in headers]
    keyed = isinstance(keys, list)
    for i, v in enumerate(values):  # constant headers or none: hmax is their size
        size = len(v) + (len(keys[i]) if keyed else 0) + (hsizes[i] if hsizes else hmax)
        if size >= limit:
            odd.add(i)


def _missing(col: list, odd: set, unset: object) -> None:
    """Marks lines where the field is missing or null (the general mapper says which it is)."""
    if None in col or (unset is not None and unset in col):
        for i, v in enumerate(col):
            if v is None or v is unset:
                odd.add(i)
                col[i] = ""


def _as_bytes(col: list, odd: set, unset: object) -> tuple[list, bool]:
    """The field's values as the general mapper encodes them, and whether all were text. A column
    of bytes is CSV fields cut from lines already checked to be UTF-8 (csv_split_columns)."""
    if col and type(col[0]) is bytes:
        for i in odd:
            col[i] = b""
        return col, True
    for i in odd:
        col[i] = ""
    try:
        return list(map(str.encode, col)), True  # TypeError for anything but text
    except (TypeError, UnicodeEncodeError):  # a lone surrogate: the general mapper decides
        pass
    _missing(col, odd, unset)
    out = []
    for i, v in enumerate(col):
        try:
            out.append(value_bytes(v))
        except (BadRecord, ValueError, TypeError):  # the general mapper decides
            odd.add(i)
            out.append(b"")
    return out, False


def _partition_column(col: list, odd: set, unset: object, partitions: int) -> list:
    _missing(col, odd, unset)
    out = []
    for i, v in enumerate(col):
        try:
            p = parse_partition(v)
        except BadRecord:
            p = -1
        if not 0 <= p < partitions:
            odd.add(i)
        out.append(p)
    return out


def _timestamp_column(col: list, odd: set, unset: object) -> list:
    _missing(col, odd, unset)
    if set(map(type, col)) == {int}:
        return col
    out = []
    for i, v in enumerate(col):
        try:
            out.append(parse_timestamp(v) if i not in odd else 0)
        except BadRecord:
            odd.add(i)
            out.append(0)
    return out


def _header_column(
    spec: MappingSpec,
    get: _Get,
    const_headers: list[tuple[str, bytes]] | None,
    odd: set,
    unset: object,
    longest: int,
) -> tuple[list, int | None]:
    """Each record's headers (constant ones first), and a bound on their size (None: unknown).
    When every header field holds text, in C: a text field is never longer than its line."""
    names = [name for name, _ in spec.header_fields]
    cols = [get(f) for _, f in spec.header_fields]
    const = list(const_headers or ())
    encoded = []
    for col in cols:
        try:  # TypeError for anything but text: missing, null, numbers (slow path below)
            encoded.append(
                list(map(str.encode, [("" if i in odd else v) for i, v in enumerate(col)] if odd else col))
            )
        except (TypeError, UnicodeEncodeError):
            break
    else:
        pairs = [repeat(h) for h in const] + [zip(repeat(n), e) for n, e in zip(names, encoded)]
        bound = sum(len(k) + len(v) for k, v in const) + sum(len(n) + longest for n in names)
        return list(map(list, zip(*pairs))), bound
    out = []
    for i, row in enumerate(zip(*cols)):
        try:
            hs = const + [
                (name, value_bytes(v)) for name, v in zip(names, row) if v is not None and v is not unset
            ]
        except (BadRecord, ValueError, TypeError):  # the general mapper decides
            odd.add(i)
            hs = []
        out.append(hs or None)
    return out, None
