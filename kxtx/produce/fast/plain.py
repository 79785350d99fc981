"""The fast path of `kxtx produce`: JSON lines or plain lines whose value is the line as it is (no
key, headers or fields) into a topic of one partition. Same records, checks, transactions and
checkpoints as the general path in `loop`, at a fraction of the Python work per record.

Why it is faster (measured with cProfile on 1M lines of 100 bytes; the general path spends about as
much time around each record as librdkafka's produce() itself):
- lines come in `inputs.Block`s split in C, not as one `Line` tuple per record from a generator;
- a transaction's records are produced in segments of a block, one tight loop per segment
  (validate, produce); positions are computed only at commits and for bad lines;
- no delivery report per record. Records go to partition 0, the only one, so counting them gives
  that partition's record count; the offset range comes from the delivery reports of the first and
  the last record produced in each segment. A transactional producer is idempotent, so a
  partition's offsets follow the produce order: those two carry the segment's smallest and
  largest offset, and the summary stays exact.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections import deque
from itertools import accumulate, islice, repeat
from operator import length_hint
from typing import TYPE_CHECKING, Any

from kxtx.client.fast.batch import Batcher, refusal
from kxtx.fast import speedups
from kxtx.produce import inputs
from kxtx.produce.dryrun import check_size
from kxtx.produce.jsondepth import accepts_too_deep, first_too_deep, too_deep
from kxtx.produce.mapping import BadRecord, parse_json

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from kxtx.client.settings import Settings
    from kxtx.produce.checkpoint import Checkpoint, FilePosition, Resume
    from kxtx.produce.inputs import Source
    from kxtx.produce.mapping import Mapper

#: a block of lines as the loop of `PlainFile` takes it: an inputs.Block here, a block with its
#: columns in keyed (`values` and `line(i)` in both)
Lines = Any

INF = float("inf")  # no limit (loop.Run.records_limit, loop.Run.bytes_limit)

#: input bytes read ahead at most while a commit waits for the broker (inputs.ReadAhead): eight
#: blocks, about one default transaction of short lines; twice that was slower (bench/README.md,
#: "Reading ahead while a commit waits")
READ_AHEAD_BYTES = 8 * inputs.BLOCK_BYTES

try:
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency
    from json import loads as _loads  # type: ignore[assignment]

try:
    import msgspec

    # Decoding to Raw checks the whole JSON syntax (numbers, escapes, control characters,
    # nesting) but builds no objects, several times faster than orjson.loads (bench/README.md,
    # "Behind produce's constants"). It does not check UTF-8, which `Block.utf8` does per block.
    # Lines it refuses go to parse_json, which decides as the general path does (json accepts a
    # little more).
    _check = msgspec.json.Decoder(msgspec.Raw).decode
except ImportError:  # pragma: no cover - msgspec is a dependency
    _check = None  # type: ignore[assignment]

#: whether a check passes lines nested past kxtx's limit (msgspec stops at the interpreter's
#: recursion limit: ~1000 levels on CPython 3.11, far more on 3.13; orjson < 3.13 went on): then
#: the lines it passed are checked for depth too (one pass over their lengths, see jsondepth)
_TAKES_TOO_DEEP = {c: accepts_too_deep(c) for c in (_check, _loads) if c is not None}

#: what the validation pass treats as "not a record as it is": msgspec's DecodeError is a
#: ValueError; it raises RecursionError where the interpreter's recursion limit ends. Such lines go
#: to parse_json, which decides as the general path does.
_NOT_JSON = (ValueError, RecursionError)
_PRODUCED, _BAD, _BLANK = 1, 2, 3  # outcomes of one irregular line


def usable(settings: Settings, src: Source, mapper: Mapper) -> bool:
    """Whether this input can take the fast path under a run's settings. Records without a key go
    to one partition a block (like the Java client's sticky partitioner), so any partition count
    will do, as long as the partitioner is kxtx's (a user's `-X partitioner=` decides alone)."""
    return (
        mapper.plain
        and src.fmt in ("jsonl", "lines")
        and settings.props.get("partitioner", "murmur2_random") == "murmur2_random"
    )


class PlainFile:
    """Produces one input through the fast path inside `run`'s transactions."""

    def __init__(self, run: Any, src: Source, pos: FilePosition | None, state: Checkpoint) -> None:
        # run: the loop.Run whose transactions these are (loop imports this module)
        self.run, self.src, self.pos, self.state = run, src, pos, state
        self.jsonl = src.fmt == "jsonl"
        self.produce, self.topic = run.producer.produce, run.opts.topic
        self.batcher = Batcher.of(run.producer, self.topic, run.settings.timeout)  # None: one by one
        self.sampled = run.stats.sampled
        # unkeyed records: one partition a block, in turn from a random one (the Java client's
        # sticky partitioner does the same a batch); every segment's report names it
        self.partitions = run.topic.partitions
        self.partition = random.randrange(self.partitions)
        self.simple_max = run.topic.max_record_bytes - 4096  # below this no size check is needed
        # per segment: lines that were not produced (bad or blank), their bytes, blank lines
        self.lost = self.lost_bytes = self.blanks = 0

    # --- the transaction loop -------------------------------------------------------------------
    def produce_all(self, plan: Resume) -> None:
        blocks = self._blocks(plan)
        if self.src.is_stdin:  # a read ahead could wait for input while the commit is done
            return self._produce(blocks)
        ahead = inputs.ReadAhead(blocks, READ_AHEAD_BYTES)
        self.run.read_ahead = ahead.step
        try:
            return self._produce(iter(ahead))
        finally:
            self.run.read_ahead = None
            ahead.close()

    def _produce(self, blocks: Iterator[Lines]) -> None:
        run, stats = self.run, self.run.stats
        n_limit, b_limit = run.records_limit, run.bytes_limit
        n, ok, nb = run.txn_lines, stats.pending_records, stats.pending_bytes
        last = None  # (block, index) of the last record consumed: where the checkpoint points
        for block in blocks:
            if block.values is None:  # the rest of the input needs the general path
                run.read_ahead = None  # its commits read nothing ahead for this loop
                run.pause(n, ok, nb)
                self._advance(last)
                return self._hand_over(block)
            values, i, m = block.values, 0, len(block.values)
            if not m:  # no input for a while (a pipe): commit what the transaction holds, if due
                if n and run.txn_due(n, nb):
                    n, ok, nb = self._next_transaction(n, ok, nb, last)
                run.progress(ok, nb)
                continue
            self._next_partition()
            while i < m:
                while i < m and self._blank(block, i):  # blank lines start no transaction
                    i += 1
                if i == m:
                    break
                if run.txn_due(n, nb):
                    n, ok, nb = self._next_transaction(n, ok, nb, last)
                j = self._segment_end(values, i, m, n, nb, n_limit, b_limit)
                self.lost = self.lost_bytes = self.blanks = 0
                self._segment(block, i, j)
                n += j - i - self.blanks
                ok += j - i - self.lost
                nb += self._bytes(block, i, j) - self.lost_bytes
                self._count(j - i - self.lost)
                last = self._last_record(block, i, j) or last
                i = j
                # once per segment (~10k records): progress, signals. Delivery reports are left
                # to commit_transaction(), which serves them while it waits for the broker's
                # acknowledgements anyway (or to a full local queue): a poll(0) here served them
                # on the per-record path (bench/README.md, "Behind produce's constants").
                run.progress(ok, nb)
        run.pause(n, ok, nb)
        self._advance(last)

    def _next_transaction(
        self, n: int, ok: int, nb: int, last: tuple[Lines, int] | None
    ) -> tuple[int, int, int]:
        """Commit the open transaction (`n` lines, `ok` records of `nb` bytes; its checkpoint at
        `last`) if it holds lines, and begin the next: the counters of the one now open."""
        if n:
            self._advance(last)
        self.run.next_transaction(self.state, n, ok, nb)
        return (0, 0, 0) if n else (n, ok, nb)

    def _blocks(self, plan: Resume) -> Iterator[Lines]:
        blocks = inputs.read_blocks(self.src, plan.offset, plan.line, self.run.idle_s)
        return self._checked(blocks) if self.jsonl else blocks

    @staticmethod
    def _checked(blocks: Iterator[inputs.Block]) -> Iterator[inputs.Block]:
        """The blocks, each checked whole as it is read (what `_tight` checks segment by segment
        otherwise): read ahead, the check is done while a commit waits, too."""
        try:
            for block in blocks:
                if block.values:
                    block.good = first_refused(block.values, 0, len(block.values), block.utf8)
                yield block
        finally:
            blocks.close()  # type: ignore[attr-defined]  # a generator

    def _hand_over(self, block: Lines) -> None:  # noqa: ARG002  # pragma: no cover - only the keyed path hands over
        raise AssertionError("the plain fast path reads every input to its end")

    @staticmethod
    def _bytes(block: Lines, i: int, j: int) -> int:
        """The bytes of lines [i, j) of a block: a whole block's are known from its span."""
        values = block.values
        if i == 0 and j == len(values) and values is getattr(block, "raws", None):
            return block.span - (0 if block.tail else j)
        return sum(map(len, values[i:j]))

    def _next_partition(self) -> None:
        self.partition = (self.partition + 1) % self.partitions

    def _blank(self, block: Lines, i: int) -> bool:
        """A JSON line with nothing on it: no record, and no line of a transaction."""
        v = block.values[i]
        return self.jsonl and (not v or v.isspace())

    def _count(self, records: int) -> None:
        """Records of a segment produced without a report of their own."""
        counted = self.run.stats.txn_counted
        counted[self.partition] = counted.get(self.partition, 0) + records

    @staticmethod
    def _segment_end(values: list[bytes], i: int, m: int, n: int, nb: int, n_limit: Any, b_limit: Any) -> int:
        """Where the transaction would end if every line were a record: after the record that
        reaches the record or byte limit (`n_limit`, `b_limit`: ints, or INF for no limit). Blank
        or bad lines make it end earlier; the loop then goes on in the same transaction, so the
        boundaries are those of the record-by-record rule."""
        j = m if n_limit == INF else min(m, i + n_limit - n)
        if b_limit != INF:
            reach = bisect_left(list(accumulate(map(len, values[i:j]))), b_limit - nb)
            j = min(j, i + reach + 1)
        return j

    def _last_record(self, block: Lines, i: int, j: int) -> tuple[Lines, int] | None:
        k = j - 1
        while k >= i and self._blank(block, k):
            k -= 1
        return (block, k) if k >= i else None

    def _advance(self, last: tuple[Lines, int] | None) -> None:
        if self.pos is not None and last is not None:
            line = last[0].line(last[1])
            self.pos.advance(line.lineno, line.start, line.end, line.raw)

    # --- one segment ------------------------------------------------------------------------------
    def _segment(self, block: Lines, i: int, j: int) -> None:
        """Lines [i, j) of `block`: the first and the last record with a delivery report, the
        ones between in the tight loop."""
        k = i
        while k < j:  # up to and including the first record produced
            k += 1
            if self._irregular(block, k - 1, self.sampled) == _PRODUCED:
                break
        last = j - 1  # the last line that will be a record: it gets the second report
        while last >= k and not self._good(block.values[last]):
            last -= 1
        if last >= k:
            self._tight(block, k, last)
            self._irregular(block, last, self.sampled)
            k = last + 1
        for b in range(k, j):  # bad or blank lines after the last record
            self._irregular(block, b, None)

    def _good(self, value: bytes) -> bool:
        """Whether `value` will be a record (checked once per segment, from its end)."""
        if len(value) >= self.simple_max:
            return False
        if not self.jsonl:
            return True
        try:
            parse_json(value)  # fails for blank lines too
        except BadRecord:
            return False
        return True

    def _tight(self, block: Lines, k: int, end: int) -> None:
        """The per-record hot path: records k..end-1 without delivery reports. Anything unusual
        (bad JSON, a blank line, a full queue) leaves the loop and is handled alone.

        Both passes are loops in C (`map` drained by a zero-length deque): a Python `for` around
        check() and produce() costs a tenth of produce() itself more (bench/README.md, "Behind
        produce's constants"). Where a pass stopped is read off the list iterator."""
        values = block.values
        simple_max = self.simple_max
        if block.span >= simple_max and max(map(len, values[k:end]), default=0) >= simple_max:
            for b in range(k, end):  # large lines: size-checked one by one (rare)
                self._irregular(block, b, None)
            return
        while k < end:
            # validate [k, end) first; a line that fails ends the run of good lines at `bad`
            bad = self._first_refused(block, k, end) if self.jsonl else end
            self._produce_run(block, k, bad)
            if bad < end:
                self._irregular(block, bad, None)
            k = bad + 1

    @staticmethod
    def _first_refused(block: inputs.Block, k: int, end: int) -> int:
        """`first_refused` of lines [k, end), from the block's own check where it covers them."""
        good = block.good
        if k <= good:  # lines [k, good) passed; good is the first that did not (or the end)
            return min(good, end)
        return first_refused(block.values, k, end, block.utf8)

    def _produce_run(self, block: Lines, k: int, end: int) -> None:
        """Produce lines [k, end) of `block`, all known good: in batches where librdkafka can take
        them (kxtx.client.fast.batch), else one by one. A full local queue waits for delivery
        reports; a line librdkafka refuses is handled (and reported) alone."""
        from confluent_kafka import KafkaException

        if self.batcher is not None:
            return self._batches(block, k, end, self.partition, block.values)
        values, produce = block.values, self.produce
        topic, part = repeat(self.topic), repeat(self.partition)
        while k < end:
            k, exc = call_until_error(
                produce, (BufferError, KafkaException), k, end, topic, values, repeat(None), part
            )
            if isinstance(exc, BufferError):  # the local queue is full: serve delivery reports
                self.run.producer.poll(0.05)
            elif exc is not None:
                self._irregular(block, k, None)
                k += 1

    def _batches(
        self,
        block: Lines,
        k: int,
        end: int,
        partition: int | list[int],
        values: list,
        keys: list | None = None,
    ) -> None:
        """Records [k, end) (`values`, `keys`, to `partition` or each to its own) through the
        batcher: a full local queue waits for delivery reports; a record librdkafka refuses is
        reported alone (`_refused`)."""
        assert self.batcher is not None
        while k < end:
            k, refused = self.batcher.produce(self.topic, partition, values, k, end, keys)
            for i, err in refused:  # not queued, and nothing was, or will be, in its place
                self._refused(block, i, refusal(err))
            if k < end:  # the local queue is full: serve delivery reports
                self.run.producer.poll(0.05)

    def _refused(self, block: Lines, k: int, exc: BaseException) -> None:
        """librdkafka refused record k of a batch: reported as the record-by-record path does."""
        self.run.produce_error(exc, self.src, block.line(k))
        self._lose(block.values[k])

    def _lose(self, value: bytes) -> None:
        """A line of the segment that is no record (bad, blank, refused)."""
        self.lost += 1
        self.lost_bytes += len(value)

    def _irregular(self, block: Lines, k: int, report: Callable[..., None] | None) -> int:
        """One line the tight loop does not handle (or one that needs a delivery report)."""
        from confluent_kafka import KafkaException

        value = block.values[k]
        if self.jsonl and (not value or value.isspace()):
            self.blanks += 1
            self._lose(value)
            return _BLANK
        try:
            if self.jsonl:
                parse_json(value)
            check_size(None, value, None, self.run.topic.max_record_bytes)
            while True:
                try:
                    self.produce(self.topic, value, None, self.partition, report)
                    return _PRODUCED
                except BufferError:
                    self.run.producer.poll(0.05)
        except BadRecord as exc:
            self.run.bad(self.src, block.line(k), str(exc))
        except KafkaException as exc:
            self.run.produce_error(exc, self.src, block.line(k))
        self._lose(value)
        return _BAD


def first_refused(values: list[bytes], k: int, end: int, utf8: bool) -> int:
    """The first of JSON lines values[k:end] the check refuses (blank ones, ones nested too deeply
    included), or `end`. `utf8`: the lines are known to be valid UTF-8 (msgspec and the C scan do
    not check it)."""
    check = _check if utf8 and _check is not None else _loads
    native = speedups.module() if utf8 else None
    if native is not None:
        # the C scan vouches for ordinary lines at a fraction of a check's cost per line; a line
        # it leaves alone (rare: escaped surrogates alone, deep nesting, a long number, bad JSON)
        # is decided by the check, then the scan goes on
        while True:
            k = native.json_vouch(values, k, end)
            if k == end or not _accepts(check, values[k]):
                return k
            k += 1
    bad = call_until_error(check, _NOT_JSON, k, end, values)[0]
    return first_too_deep(values, k, bad) if _TAKES_TOO_DEEP[check] else bad


def _accepts(check: Any, value: bytes) -> bool:
    try:
        check(value)
    except _NOT_JSON:
        return False
    return not (_TAKES_TOO_DEEP[check] and too_deep(value))


def call_until_error(
    fn: Callable[..., object],
    errors: tuple[type[BaseException], ...],
    k: int,
    end: int,
    *columns: Iterable[Any],
) -> tuple[int, BaseException | None]:
    """Call fn(*row) for the rows [k, end) of `columns` in order (lists are read from k, other
    iterables as they come; one list at least) until one raises one of `errors`: (the index of that
    row, the exception), or (end, None). A loop in C: the map is drained by a zero-length deque."""
    its, probe = [], None
    for c in columns:
        if isinstance(c, list):
            it = iter(c)
            it.__setstate__(k)  # type: ignore[attr-defined]  # a list iterator starts at k without copying the slice
            probe = probe or (c, it)
            c = islice(it, end - k)
        its.append(c)
    try:
        deque(map(fn, *its), 0)
    except errors as exc:
        # fn raised for the row read last: the list's iterator is one past it
        assert probe is not None
        return len(probe[0]) - length_hint(probe[1]) - 1, exc
    return end, None
