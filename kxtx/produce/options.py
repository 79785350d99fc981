"""Options of `kxtx produce` and their checks (no Kafka, no CLI)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kxtx.errors import InputError, UsageError
from kxtx.log import logger
from kxtx.produce import DEFAULT_RECORDS_PER_TXN, DEFAULT_SECONDS_PER_TXN, inputs
from kxtx.produce import checkpoint as cpmod
from kxtx.produce.mapping import MappingSpec
from kxtx.produce.schemas import SchemaOptions
from kxtx.wording import plural


@dataclass
class ProduceOptions:
    topic: str
    paths: list[str]
    input_format: str | None = None
    mapping: MappingSpec = field(default_factory=MappingSpec)
    transactional_id: str | None = None
    records_per_txn: int = DEFAULT_RECORDS_PER_TXN
    bytes_per_txn: int | None = None
    seconds_per_txn: float | None = None  # None: DEFAULT_SECONDS_PER_TXN, within the transaction timeout
    all_or_nothing: bool = False
    checkpoint_topic: str = cpmod.DEFAULT_TOPIC
    on_error: str = "fail"  # fail | skip | dlq:TOPIC
    restart: bool = False
    schemas: SchemaOptions = field(default_factory=SchemaOptions)
    allow_binary: bool = False  # lines or CSV with a NUL byte in its first block (HEAD_BYTES)


def seconds_limit(opts: ProduceOptions, props: dict) -> float:
    """How long a transaction may stay open (`--seconds-per-txn`): the option, or the default, at
    most half the producer's transaction.timeout.ms; inf with --all-or-nothing."""
    given = opts.seconds_per_txn
    if opts.all_or_nothing:
        if given is not None:
            raise UsageError("--seconds-per-txn and --all-or-nothing exclude each other")
        return float("inf")
    raw = props.get("transaction.timeout.ms", 60_000)  # librdkafka's default
    try:
        timeout_s = int(raw) / 1000
    except ValueError:
        raise UsageError(f"transaction.timeout.ms={raw!r}: expected milliseconds") from None
    if given is None:
        return min(DEFAULT_SECONDS_PER_TXN, timeout_s / 2)
    if not 0 < given < timeout_s:
        raise UsageError(
            f"--seconds-per-txn {given:g}: must be more than 0 and less than transaction.timeout.ms "
            f"({timeout_s:g} s), after which the coordinator aborts the transaction"
        )
    return given


def error_policy(text: str) -> tuple[str, str | None]:
    if text in ("fail", "skip"):
        return text, None
    if text.startswith("dlq:") and len(text) > 4:
        return "dlq", text[4:]
    raise UsageError(f"--on-error {text!r}: expected fail, skip or dlq:TOPIC")


def bad_lines_message(first: str, count: int | None = None, rerun: bool = False) -> str:
    """The error of a run with `--on-error fail` that met a bad line, real or dry: `first` is the
    first bad line's `file:line: reason`; `count`, when known, how many there were. `rerun`: a real
    run of a file, which nothing past the bad line was committed of: fixed, the same command
    continues there, exactly once."""
    head = first if count is None else f"{plural(count, 'bad line')} (first: {first})"
    if rerun:
        return (
            f"{head}; fix the line and run the same command again (it continues from there, no "
            "duplicates), or use --on-error skip or dlq:TOPIC to load the others"
        )
    return f"{head}; use --on-error skip or dlq:TOPIC to load the others"


def sources_of(paths: list[str], explicit: str | None) -> list[inputs.Source]:
    if not paths:
        raise UsageError("no input: give one or more files, or - for stdin")
    if paths.count("-") > 1:
        raise UsageError("stdin (-) can be given only once")
    return [inputs.detect(p, explicit) for p in paths]


#: How much of each input file is looked at before a run: a NUL byte there is a binary file given
#: by mistake (an executable, an image: its "lines" loaded without a word, rc 0). Text has none.
HEAD_BYTES = 1 << 16


def checked_sources(opts: ProduceOptions) -> list[inputs.Source]:
    """The inputs, each file looked at first: an empty one is warned about (a run that produces
    nothing from it is seldom what was meant); lines or CSV that are not text are refused unless
    --allow-binary (JSON lines have their per-line errors, `bad JSON`, naming file:line)."""
    sources = sources_of(opts.paths, opts.input_format)
    for src in sources:
        first = inputs.head(src, HEAD_BYTES)
        if first is None:
            continue
        if not first:
            logger.warning(f"{src.name}: empty file: no records in it")
            continue
        nul = first.find(b"\0")
        if nul >= 0 and src.fmt != "jsonl" and not opts.allow_binary:
            line = first.count(b"\n", 0, nul) + 1
            raise InputError(
                f"{src.name}:{line}: a NUL byte: this is not a text file; "
                f"--allow-binary loads it as {src.fmt} all the same"
            )
    return sources
