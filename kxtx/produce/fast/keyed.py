"""The fast path of `kxtx produce` for mapped records: keys from a JSON field (dotted paths too) or
a CSV column, values as they are, from a field or a CSV row as JSON (`--value-as-json`), timestamps
and headers from fields, `--partition-field`; to topics of any partition count. Same records,
checks, transactions and checkpoints as the general path (`loop`); the transaction loop is the
plain fast path's (`plain`), only reading and producing differ.

Why it is faster (CPU per record in-process, 200k JSON lines of ~100 bytes keyed to 6 partitions,
a shared 2-core machine: a hand-written `produce(topic, line, orjson.loads(line)["user"])` loop
~1.4 us, these columns plus the loop in C ~0.9-1.0 us, a bare produce() loop ~0.6 us):
- a block's lines become columns in a few passes in C (`columns`): msgspec decodes each line to
  just the mapped fields, keys are encoded by map(str.encode), partitions hashed for the whole
  block at once (`murmur`);
- the records of a segment are produced by a loop in C (`plain.call_until_error`) with the partition given
  explicitly;
- no delivery report per record: kxtx chose each record's partition, so it counts them; only the
  first and the last record of each partition in a segment ask for a report, which gives the
  partition's offset range (a transactional producer is idempotent: offsets follow produce order).
  A record that fails delivery still fails the transaction: librdkafka refuses to commit it, the
  engine aborts and reports the error.

Lines the column passes cannot decide with certainty (bad JSON, missing or null fields, lenient
JSON, an empty key, records near the size limit) are mapped one by one by the general `Mapper`. A
CSV row that spans lines (a quoted line break) hands the rest of that file to the general path.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any

from kxtx.fast import gcpause
from kxtx.produce import inputs
from kxtx.produce.checkpoint import Resume
from kxtx.produce.dryrun import set_header
from kxtx.produce.fast import columns as colmod
from kxtx.produce.fast import plain
from kxtx.produce.fast.murmur import Partitioner
from kxtx.produce.fast.plain import PlainFile, call_until_error
from kxtx.produce.mapping import BadRecord, Record

if TYPE_CHECKING:
    from kxtx.client.settings import Settings
    from kxtx.produce.checkpoint import Checkpoint, FilePosition
    from kxtx.produce.inputs import Source
    from kxtx.produce.mapping import Mapper


def fast_file(settings: Settings, src: Source, mapper: Mapper) -> Callable[..., PlainFile] | None:
    """The fast path class for this input under a run's settings, or None for the general path."""
    if mapper.encodes:
        return None  # records encoded with a registry schema take the general path
    if settings.props.get("partitioner", "murmur2_random") != "murmur2_random":
        return None  # a user's partitioner decides alone: only librdkafka knows it
    if plain.usable(settings, src, mapper):
        return PlainFile
    if src.fmt == "lines" or (src.fmt == "csv" and src.is_stdin):
        return None  # a CSV header cannot be read again from stdin
    if src.fmt == "jsonl":
        try:
            mapper.fast_fields = colmod.JsonFields(mapper.spec)
        except (ValueError, TypeError):  # e.g. a field that is also a path: `a` and `a.b`
            return None
    return partial(KeyedFile, mapper=mapper)


#: blocks between two collections of the young generations while the collector is paused
COLLECT_BLOCKS = 64


class _Mapped:
    """A block with its columns; values None: hand the rest of the input to the general path."""

    __slots__ = ("block", "cols", "values")
    #: the block's Columns, with the `records` of its odd lines attached (`_map_odd`)
    cols: Any
    #: the values of cols (None without them): a list whenever a record of the block is produced
    values: Any

    def __init__(self, block: inputs.Block, cols: colmod.Columns | None) -> None:
        self.block, self.cols = block, cols
        self.values = None if cols is None else cols.values

    @property
    def span(self) -> int:
        """The block's input bytes (inputs.ReadAhead)."""
        return self.block.span

    def line(self, i: int) -> inputs.Line:
        line = self.block.line(i)
        if self.cols.rows is not None:
            line = line._replace(row=self.cols.rows[i])
        return line


class KeyedFile(PlainFile):
    def __init__(
        self, run: Any, src: Source, pos: FilePosition | None, state: Checkpoint, mapper: Mapper
    ) -> None:
        super().__init__(run, src, pos, state)
        self.mapper, self.spec = mapper, mapper.spec
        self.delivered = run.stats.delivered
        self.counts: Counter = Counter()
        self.blocks, self.collect = 0, False

    def produce_all(self, plan: Resume) -> None:
        """With the cyclic garbage collector paused: a block's columns are ~10k containers that
        live for one block, which made it run several times a block (~30 % of the time with it,
        measured on CSV). Nothing here makes cycles; it collects once every COLLECT_BLOCKS."""
        with gcpause.paused() as self.collect:
            super().produce_all(plan)

    # --- reading ----------------------------------------------------------------------------------
    def _blocks(self, plan: Resume) -> Iterator[_Mapped]:
        mapper, spec, parts = self.mapper, self.spec, Partitioner(self.partitions)
        limit = self.simple_max
        if self.src.fmt == "jsonl":
            for block in inputs.read_blocks(self.src, plan.offset, plan.line, self.run.idle_s):
                cols = colmod.json_columns(
                    mapper.fast_fields, spec, mapper.const_headers, block, parts, self.partition, limit
                )
                yield self._map_odd(_Mapped(block, cols))
            return
        header, start, lineno = self._csv_header(plan)
        if header is None:
            return
        for block in inputs.read_blocks(self.src, start, lineno):
            if colmod.csv_splits(block, spec):
                cols = colmod.csv_split_columns(
                    header, spec, mapper.const_headers, block, parts, self.partition, limit
                )
                yield self._map_odd(_Mapped(block, cols))
                continue
            rows = colmod.csv_rows(block)
            if rows is None:
                yield _Mapped(block, None)
                return
            cols = colmod.csv_columns(
                header, spec, mapper.const_headers, block, rows, parts, self.partition, limit
            )
            yield self._map_odd(_Mapped(block, cols))

    def _csv_header(self, plan: Resume) -> tuple[list[str] | None, int, int]:
        """The header row (the mapper learns it), and where the rows to produce start."""
        stream = inputs._open(self.src)
        try:
            header, end, lines = inputs.read_csv_header(self.src, stream)
        finally:
            stream.close()
        if not header:
            return None, 0, 0
        set_header(self.mapper, self.src, inputs.Line(0, 0, end, b"", header))
        if plan.offset > end:
            return header, plan.offset, plan.line
        return header, end, lines

    def _map_odd(self, mapped: _Mapped) -> _Mapped:
        """Odd lines through the general mapper now, so that their values' sizes are known when
        the transaction's byte limit is reckoned (their bad-line reports come in order later)."""
        self.blocks += 1
        if self.blocks % COLLECT_BLOCKS == 0 and self.collect:
            gc.collect(1)
        cols = mapped.cols
        cols.records = {}
        for i in cols.odd:  # produced one by one, counted by their delivery reports
            cols.parts[i] = -1
        todo = cols.odd - cols.blanks
        if todo and cols.values is mapped.block.values:
            cols.values = mapped.values = list(cols.values)
        for i in todo:
            try:
                rec = self.mapper.map(mapped.line(i))
            except BadRecord as exc:
                cols.records[i] = str(exc)
                continue
            cols.records[i] = rec
            cols.values[i] = rec.value
        return mapped

    def _hand_over(self, mapped: _Mapped) -> None:
        if self.collect:  # the general path's garbage is its own business
            gc.enable()
        block = mapped.block
        self.run.produce_file(self.src, self.mapper, Resume(block.offset, block.lineno), self.pos, self.state)

    # --- the transaction loop's hooks -------------------------------------------------------------
    def _blank(self, mapped: _Mapped, i: int) -> bool:
        return i in mapped.cols.blanks

    def _count(self, records: int) -> None:  # noqa: ARG002 - the base class passes the block's count
        counted = self.run.stats.txn_counted
        for p, n in self.counts.items():
            counted[p] = counted.get(p, 0) + n
        self.counts.clear()

    # --- one segment ------------------------------------------------------------------------------
    def _segment(self, mapped: _Mapped, i: int, j: int) -> None:
        """Lines [i, j): odd lines and the first and last record of each partition one by one
        (those two with a delivery report), the records between in loops in C."""
        cols = mapped.cols
        odd = sorted(x for x in cols.odd if i <= x < j) if cols.odd else []
        # odd lines have partition -1 (see _map_odd); a whole block needs no copy
        parts = cols.parts if i == 0 and j == len(cols.parts) else cols.parts[i:j]
        ends = self._spread(parts, i)
        k = i
        for s in sorted({*odd, *ends}):
            if k < s:
                self._tight(mapped, k, s)
            if s in cols.records or s in cols.blanks:
                self._odd(mapped, s)
            else:
                self._one(mapped, s)
            k = s + 1
        if k < j:
            self._tight(mapped, k, j)

    def _spread(self, parts: list, i: int) -> list[int]:
        """Counts the records of each partition among parts (the lines from i on; -1: not counted here);
        returns the lines of the first and the last record of each partition."""
        seq: bytes | list
        last: Callable[[int], int]  # where partition p's last record is in seq
        if self.partitions < 255:
            # as bytes (-1 as 255): counting and finding a byte are memchr-like passes, several
            # times faster than list.count and list.index over ints (bench/README.md, "Against kcat")
            try:
                seq = bytes(parts)
            except ValueError:  # odd lines (-1)
                seq = bytes([p if p >= 0 else 255 for p in parts])
            counts = {p: c for p in range(self.partitions) if (c := seq.count(p))}
            last = seq.rindex
        else:
            seq, counts = parts, Counter(parts)
            counts.pop(-1, None)
            backwards = parts[::-1]
            last = lambda p: len(parts) - 1 - backwards.index(p)  # noqa: E731 - list has no rindex
        self.counts.update(counts)
        return [i + seq.index(p) for p in counts] + [i + last(p) for p in counts]

    def _tight(self, mapped: _Mapped, k: int, end: int) -> None:
        """Regular records [k, end) with no report: one loop in C, left only for a full queue
        (wait for delivery reports) or a record librdkafka refuses (handled alone)."""
        from confluent_kafka import KafkaException

        cols = mapped.cols
        # in batches where librdkafka can take them (kxtx.client.fast.batch): its batch call sets no
        # timestamp and no headers of a record's own
        if self.batcher is not None and cols.stamps is None and cols.headers is None:
            keys = cols.keys if isinstance(cols.keys, list) else None
            return self._batches(mapped, k, end, cols.parts, cols.values, keys)
        args = [repeat(self.topic), cols.values, cols.keys, cols.parts]
        if cols.stamps is not None or cols.headers is not None:  # fewer arguments parse faster
            args += [repeat(None), repeat(None), _column(cols.stamps, 0), _column(cols.headers)]
        while k < end:
            k, exc = call_until_error(self.produce, (BufferError, KafkaException), k, end, *args)
            if isinstance(exc, BufferError):
                self.run.producer.poll(0.05)
            elif exc is not None:
                self._refused(mapped, k, exc)
                k += 1

    def _one(self, mapped: _Mapped, s: int) -> None:
        """A regular record with a delivery report (its partition's first or last here)."""
        from confluent_kafka import KafkaException

        cols = mapped.cols
        row = (
            cols.values[s],
            _get(cols.keys, s),
            cols.parts[s],
            self.sampled,
            None,
            _get(cols.stamps, s, 0),
            _get(cols.headers, s),
        )
        while True:
            try:
                self.produce(self.topic, *row)
                return
            except BufferError:
                self.run.producer.poll(0.05)
            except KafkaException as exc:
                self._refused(mapped, s, exc)
                return

    def _refused(self, mapped: _Mapped, s: int, exc: BaseException) -> None:
        """librdkafka refused a counted record: uncount it, report it as the general path does."""
        self.counts[mapped.cols.parts[s]] -= 1
        self._lose(mapped.values[s])
        self.run.produce_error(exc, self.src, mapped.line(s))

    def _odd(self, mapped: _Mapped, s: int) -> None:
        """A blank line, a bad one, or a record the general mapper made."""
        from confluent_kafka import KafkaException

        cols = mapped.cols
        if s in cols.blanks:
            self.blanks += 1
            self._lose(cols.values[s])
            return
        rec = cols.records[s]
        try:
            if not isinstance(rec, Record):
                raise BadRecord(rec)
            self.run.produce_record(*rec)
            return
        except BadRecord as exc:
            self.run.bad(self.src, mapped.line(s), str(exc))
        except KafkaException as exc:
            self.run.produce_error(exc, self.src, mapped.line(s))
        self._lose(cols.values[s])


def _get(column: list | repeat | None, s: int, default: object = None) -> Any:
    if column is None:
        return default
    return column[s] if isinstance(column, list) else next(iter(column))


def _column(column: list | repeat | None, default: object = None) -> Iterable[Any]:
    return repeat(default) if column is None else column
