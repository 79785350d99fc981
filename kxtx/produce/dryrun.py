"""`kxtx produce --dry-run`: parse and map every record, connect to nothing; and the record checks
the engine shares with it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kxtx.errors import UsageError
from kxtx.produce import brokerside, inputs
from kxtx.produce.counters import Stats
from kxtx.produce.mapping import BadRecord, Mapper
from kxtx.produce.options import ProduceOptions, checked_sources, error_policy, seconds_limit
from kxtx.results import OMIT_EMPTY, Result

if TYPE_CHECKING:
    from kxtx.produce.counters import ProgressFn


@dataclass(frozen=True, slots=True)
class DryRunFile(Result):
    file: str
    format: str
    records: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DryRunSummary(Result):
    """What `kxtx produce --dry-run` found, in the order of its output's keys."""

    result: str
    topic: str
    records: int
    bytes: int
    bad_lines: int
    elapsed_s: float
    files: list[DryRunFile]
    #: the first bad lines (MAX_REPORTED_ERRORS of them)
    errors: list[str] = field(default_factory=list, metadata=OMIT_EMPTY)


def dry_run(
    opts: ProduceOptions, progress: ProgressFn | None = None, props: dict | None = None
) -> DryRunSummary:
    """Parse and map every record from the beginning of each input; connect to nothing. `props`:
    the client settings (-X, --command-config), checked against the options as a run checks them."""
    policy, dlq = error_policy(opts.on_error)
    # what a run would do with a bad line: a dry run skips nothing, it only counts
    outcome = {"fail": "a run would fail here", "skip": "a run would skip it"}.get(
        policy, f"a run would dead-letter it to {dlq}"
    )
    seconds_limit(opts, props or {})
    stats = Stats(opts.topic, "", progress)
    limit = brokerside.CLIENT_MAX_BYTES
    files = []
    value_writer = key_writer = None
    if opts.schemas.given:
        from kxtx.produce.schemas import writers

        value_writer, key_writer = writers(opts.schemas, opts.topic, None)
    for src in checked_sources(opts):
        mapper, before = Mapper(opts.mapping, src.fmt), stats.pending_records
        mapper.use_schemas(value_writer, key_writer)
        for line in inputs.read(src):
            if line.lineno == 0:
                set_header(mapper, src, line)
                continue
            try:
                rec = mapper.map(line)
                check_size(rec.key, rec.value, rec.headers, limit)
            except BadRecord as exc:
                stats.bad(f"{src.name}:{line.lineno}", str(exc), outcome=outcome)
                continue
            stats.pending_records += 1
            stats.pending_bytes += len(rec.value)
        files.append(DryRunFile(src.name, src.fmt, stats.pending_records - before))
    elapsed = time.monotonic() - stats.started
    return DryRunSummary(
        result="dry run: nothing written",
        topic=opts.topic,
        records=stats.pending_records,
        bytes=stats.pending_bytes,
        bad_lines=stats.pending_skipped,
        elapsed_s=round(elapsed, 3),
        files=files,
        errors=stats.errors,
    )


def set_header(mapper: Mapper, src: inputs.Source, line: inputs.Line) -> None:
    try:
        mapper.set_header(line.row)  # type: ignore[arg-type]  # a CSV line has its row
    except UsageError as exc:
        raise UsageError(f"{src.name}: {exc}") from None


def check_size(key: bytes | None, value: bytes, headers: list[tuple[str, bytes]] | None, limit: int) -> None:
    size = len(value) + (len(key) if key else 0)
    if headers:
        size += sum(len(k) + len(v) for k, v in headers)
    if size > limit:
        raise BadRecord(f"record of {size} bytes is over the limit of {limit} bytes (max.message.bytes)")
