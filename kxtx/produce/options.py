"""Options of `kxtx produce` and their checks (no Kafka, no CLI)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kxtx.errors import UsageError
from kxtx.produce import DEFAULT_RECORDS_PER_TXN, inputs
from kxtx.produce import checkpoint as cpmod
from kxtx.produce.mapping import MappingSpec
from kxtx.produce.schemas import SchemaOptions


@dataclass
class ProduceOptions:
    topic: str
    paths: list[str]
    input_format: str | None = None
    mapping: MappingSpec = field(default_factory=MappingSpec)
    transactional_id: str | None = None
    records_per_txn: int = DEFAULT_RECORDS_PER_TXN
    bytes_per_txn: int | None = None
    all_or_nothing: bool = False
    checkpoint_topic: str = cpmod.DEFAULT_TOPIC
    on_error: str = "fail"  # fail | skip | dlq:TOPIC
    restart: bool = False
    schemas: SchemaOptions = field(default_factory=SchemaOptions)


def error_policy(text: str) -> tuple[str, str | None]:
    if text in ("fail", "skip"):
        return text, None
    if text.startswith("dlq:") and len(text) > 4:
        return "dlq", text[4:]
    raise UsageError(f"--on-error {text!r}: expected fail, skip or dlq:TOPIC")


def bad_lines_message(first: str, count: int | None = None) -> str:
    """The error of a run with `--on-error fail` that met a bad line, real or dry: `first` is the
    first bad line's `file:line: reason`; `count`, when known, how many there were."""
    head = first if count is None else f"{count} bad lines (first: {first})"
    return f"{head}; use --on-error skip or dlq:TOPIC to load the others"


def sources_of(paths: list[str], explicit: str | None) -> list[inputs.Source]:
    if not paths:
        raise UsageError("no input: give one or more files, or - for stdin")
    if paths.count("-") > 1:
        raise UsageError("stdin (-) can be given only once")
    return [inputs.detect(p, explicit) for p in paths]
