"""The decoded form of one internal-topic record, and the shared key/value framing (spec section 2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kxtx.records.wire import DecodeError, Layouts, Struct, decode_exact, read_int16
from kxtx.wording import plural

UNKNOWN = "Unknown"


@dataclass
class Record:
    """One decoded record. `value is None` with `tombstone=True` is an explicit deletion of `key`.

    When something cannot be decoded the row still exists: `raw_key` / `raw_value` carry the bytes as
    hex and `notes` say why; `problem` names the kind of problem (used to warn once per kind)."""

    type_id: int | None
    type: str
    key: dict[str, Any] | None
    version: int | None = None
    value: dict[str, Any] | None = None
    tombstone: bool = False
    notes: list[str] = field(default_factory=list)
    raw_key: str | None = None
    raw_value: str | None = None
    problem: str | None = None

    def flag(self, problem: str, note: str) -> None:
        self.notes.append(note)
        self.problem = self.problem or problem


def key_type(key: bytes | None) -> int | None:
    """The int16 key prefix (the record type; "key version" before Kafka 4.1), or None if absent."""
    if key is None or len(key) < 2:
        return None
    return read_int16(key, 0)[0]


def unknown_record(topic: str, key: bytes | None, value: bytes | None) -> Record:
    t = key_type(key)
    rec = Record(
        t,
        UNKNOWN,
        None,
        raw_key=key.hex() if key is not None else None,
        raw_value=value.hex() if value is not None else None,
        tombstone=value is None,
    )
    if t is None:
        size = plural(0 if key is None else len(key), "byte")
        rec.flag(f"{topic}:short-key", f"key of {size} has no type prefix")
    else:
        rec.flag(f"{topic}:type:{t}", f"unknown record type {t} in {topic}")
    return rec


def decode_key(
    rec_type: int, name: str, key_struct: Struct, key: bytes, value: bytes | None, topic: str
) -> Record:
    """Decode the non-flexible key body after the 2-byte prefix (a bad key keeps both raw)."""
    try:
        fields = decode_exact(key_struct, False, key, 2)
    except DecodeError as exc:
        rec = Record(
            rec_type,
            name,
            None,
            raw_key=key.hex(),
            tombstone=value is None,
            raw_value=None if value is None else value.hex(),
        )
        rec.flag(f"{topic}:{name}:bad-key", f"cannot decode {name} key: {exc}")
        return rec
    return Record(rec_type, name, fields)


def decode_value(rec: Record, layouts: Layouts, value: bytes | None, topic: str) -> Record:
    """Fill `rec` from the value bytes: tombstone, known version (trying layouts newest first), or raw."""
    if value is None:
        rec.tombstone = True
        return rec
    if len(value) < 2:
        rec.raw_value = value.hex()
        rec.flag(f"{topic}:{rec.type}:short-value", f"value of {plural(len(value), 'byte')} has no version")
        return rec
    version = read_int16(value, 0)[0]
    rec.version = version
    candidates = layouts.versions.get(version)
    if not candidates:
        rec.raw_value = value.hex()
        rec.flag(f"{topic}:{rec.type}:v{version}", f"unknown {rec.type} value version {version}")
        return rec
    flexible = version >= layouts.flexible_from
    first_error: DecodeError | None = None
    for layout, era in candidates:
        try:
            rec.value = decode_exact(layout, flexible, value, 2)
        except DecodeError as exc:
            first_error = first_error or exc
            continue
        if era:
            rec.notes.append(f"decoded with the {era} layout")
        return rec
    rec.raw_value = value.hex()
    rec.flag(
        f"{topic}:{rec.type}:v{version}:bad", f"cannot decode {rec.type} value v{version}: {first_error}"
    )
    return rec
