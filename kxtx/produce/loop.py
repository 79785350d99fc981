"""The transactional loop of `kxtx produce`.

init_transactions() (fences a zombie with the same transactional id and aborts its open transaction)
-> read the last committed checkpoint -> verify and seek each input -> repeat: begin, produce records
plus one checkpoint record, commit. A crash at any point leaves the checkpoint and the records of the
same transaction both visible or both invisible, so the next run continues exactly after the last
committed record.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time
from typing import TYPE_CHECKING, Any

from kxtx import fast
from kxtx.client import clients, txwriter
from kxtx.client.settings import Settings
from kxtx.errors import FencedError, InputError, Interrupted, KafkaOperationError, Unavailable, carry
from kxtx.log import logger, warn_once
from kxtx.produce import brokerside, inputs
from kxtx.produce import checkpoint as cpmod
from kxtx.produce.counters import FileResult, ProgressFn, Stats, Summary
from kxtx.produce.dryrun import check_size, set_header
from kxtx.produce.fast import keyed
from kxtx.produce.mapping import BadRecord, Mapper, parse_json
from kxtx.produce.options import (
    ProduceOptions,
    bad_lines_message,
    checked_sources,
    error_policy,
    seconds_limit,
)
from kxtx.signals import WORDS, Guard, Stopped, signal_number
from kxtx.wording import plural

if TYPE_CHECKING:
    from collections.abc import Callable

    from confluent_kafka import KafkaError, KafkaException

#: skipped lines a checkpoint keeps per file (each ~60 bytes of it, a record that must stay small)
MAX_KEPT_SKIPS = 1000
MAX_RETRIES = 5  # consecutive aborted attempts of the same batch before giving up
POLL_EVERY = 2048
#: The open transaction must be aborted and the batch retried from the last checkpoint.
_Abortable = txwriter.Abortable


class Run:
    """One `kxtx produce` invocation against a cluster."""

    def __init__(self, settings: Settings, opts: ProduceOptions, progress: ProgressFn | None = None) -> None:
        self.settings, self.opts = settings, opts
        self.policy, self.dlq = error_policy(opts.on_error)
        self.sources = checked_sources(opts)
        self.mappers = [Mapper(opts.mapping, s.fmt) for s in self.sources]
        self.txid = opts.transactional_id or cpmod.default_transactional_id(opts.topic, opts.paths)
        self.stats = Stats(opts.topic, self.txid, progress)
        self.resumable = any(not s.is_stdin for s in self.sources)
        self.producer: Any = None
        self.value_writer: Any = None
        self.key_writer: Any = None
        self.txn_lines = 0  # input records (bad ones included) in the open transaction
        #: lines of files skipped in the open transaction (absolute path, line): its commit records
        #: them in the checkpoint, so that a later run can load them once fixed
        self.skips: list[tuple[str, cpmod.SkippedLine]] = []
        #: the fast path's step reading its input ahead while a commit waits (kxtx.produce.fast.plain)
        self.read_ahead: Callable[[], bool] | None = None
        self.signals = Guard()
        self._restarted: set[str] = set()
        #: absolute path -> its committed part's hash, extended at each commit
        self.prefixes: dict[str, cpmod.CommittedPrefix] = {}
        self.committed = cpmod.Checkpoint(self.txid, opts.topic)
        #: where each input starts, once the checkpoint is read (the summary's files)
        self.plans: list[cpmod.Resume] | None = None
        self.files: list[dict] = []
        self._admin: Any = None  # a confluent-kafka AdminClient, from _connect() on
        self.writer = txwriter.TxWriter(
            self.txid,
            settings.timeout,
            failover_s=settings.failover,
            translate=self._fatal,
            check=self._stop_if_denied,
            cause=self._delivery_error,
        )
        self.failover = self.writer.watch  # a fence right after one is not a takeover
        # a transaction's size (`txn_due`); inf: no limit
        unlimited = float("inf")
        self.records_limit = unlimited if opts.all_or_nothing else opts.records_per_txn
        self.bytes_limit = unlimited if opts.all_or_nothing else (opts.bytes_per_txn or unlimited)
        self.seconds_limit = seconds_limit(opts, settings.props)
        self._txn_t0 = time.monotonic()  # when the open transaction began

    # --- setup ----------------------------------------------------------------------------------
    def _connect(self) -> None:
        s, o = self.settings, self.opts
        if o.schemas.given:  # before Kafka: a schema problem stops the run before anything is written
            from kxtx.produce.schemas import writers

            self.value_writer, self.key_writer = writers(o.schemas, o.topic, s)
            for mapper in self.mappers:
                mapper.use_schemas(self.value_writer, self.key_writer)
        # The admin client that finds the cluster reachable checks the topics too, connected by
        # then. (Like every kxtx client it never lets its metadata requests create a missing
        # topic: a missing topic must be an error, and the checkpoint topic ours to create.)
        admin = self._admin = clients.probing_admin(s)
        # A new client waits a while for its first answer, so the producer comes before the topic
        # checks: it connects while they run and init_transactions() finds it connected
        # (bench/README.md, "Behind produce's constants").
        self.producer = self.writer.connect(
            s, self._producer_conf(), {"delivery.report.only.error": False}
        ).producer
        self.topic = brokerside.describe_topic(admin, s, o.topic, keyed=o.mapping.key_field is not None)
        if self.dlq:
            brokerside.describe_topic(admin, s, self.dlq, "dead-letter topic")
        if self.resumable:
            brokerside.ensure_checkpoint_topic(admin, s, o.checkpoint_topic)
        # Fences an older instance with this id and completes or aborts its open transaction.
        self.writer.init()

    def _producer_conf(self) -> dict:
        """produce's own producer defaults (a user's -X wins; kxtx.client.txwriter adds the common ones)."""
        # (murmur2_random, as the Java client partitions, comes with kxtx.client.txwriter's common ones)
        # batch.num.messages: librdkafka's 10,000 a batch held a keyed run's records (a
        # transaction's 50,000 spread over the partitions) until linger.ms or the commit's flush,
        # which then waited for all of them at once; 2,000 sends them as they come (bench/README.md,
        # "Smaller batches for keyed runs").
        defaults: dict = {"linger.ms": 20, "batch.num.messages": 2000}
        if self.opts.all_or_nothing:
            defaults["transaction.timeout.ms"] = 900_000  # the broker's default maximum
        # No default delivery callback: each produce() names its own, and the fast path (plain)
        # asks for reports on a few records only. (The summary's per-partition counts and offset
        # ranges come from delivery reports of successful records: `_connect` keeps them on.)
        return defaults

    @property
    def in_txn(self) -> bool:
        """A transaction is open."""
        return self.writer.open

    def _delivery_error(self) -> KafkaError | None:
        return self.stats.delivery_error

    def _stop_if_denied(self, err: KafkaError | None, doing: str) -> None:
        """A missing ACL does not heal by retrying: abort the open transaction (nothing of it becomes
        visible) and stop, naming the permission (WRITE on the topic or on the transactional id)."""
        from confluent_kafka import KafkaException

        from kxtx.client.authz import AUTHZ_ERRORS, Need

        why = self.stats.delivery_error
        denied = next((e for e in (err, why) if e is not None and e.name() in AUTHZ_ERRORS), None)
        if denied is None:
            return
        self._abort()
        raise clients.translate(
            KafkaException(denied),
            f"{doing} (transactional id {self.txid})",
            need=[Need("WRITE", "Topic", self.opts.topic), Need("WRITE", "TransactionalId", self.txid)],
        )

    def _fatal(self, exc: BaseException, doing: str) -> BaseException:
        if clients.error_name(exc) == "_STATE":
            # A checkpoint or dead-letter record produced after the broker refused one of the
            # batch's records: as in `produce_error`, the cause is in that record's report.
            refused = self._refusal()
            if refused is not None:
                return _Abortable(f"{doing}: {refused.str()}", refused)
        err = clients.translate(exc, f"{doing} (transactional id {self.txid})")
        if isinstance(err, FencedError):
            err = self.failover.explain(
                FencedError(
                    f"transactional id {self.txid!r} was taken over by another producer (fenced); this "
                    f"run stopped after committing {plural(self.stats.records, 'record')}; its open "
                    "transaction is aborted"
                )
            )
        return err

    # --- the run --------------------------------------------------------------------------------
    def execute(self) -> Summary:
        """The summary; a failure or stop carries the summary of what was committed before it
        (`carry`), once the inputs were planned."""
        with self.signals:
            try:
                return self._execute()
            except BaseException as exc:
                if self.plans is not None:
                    carry(exc, self._summary(self.plans))
                raise
            finally:
                self._close_prefixes()

    def _execute(self) -> Summary:
        from confluent_kafka import KafkaException

        try:
            self._connect()
            self.committed = self._load_checkpoint()
            self.signals.check()
            if self.opts.restart:  # forget the inputs' positions; retries then start over too
                self._restarted = {os.path.abspath(x.path) for x in self.sources if not x.is_stdin}
                for path in self._restarted:
                    self.committed.files.pop(path, None)
            plans = self.plans = self._plans()
            if all(p.done for p in plans):
                self.stats.nothing_to_do = True
                self._say_skipped()
                return self._summary(plans)
            for attempt in range(MAX_RETRIES + 1):
                try:
                    try:
                        self._produce_all(plans)
                    except KafkaException as exc:
                        # poll() raises the producer's fatal error itself (fenced: another instance
                        # took over) where the loops serve delivery reports: what it means, as for
                        # any other call (an abortable one is retried below)
                        self.writer.fail(exc, "producing")
                    self._say_skipped()
                    return self._summary(plans)
                except _Abortable as exc:
                    self._abort(exc)
                    if attempt == MAX_RETRIES:
                        error = Unavailable if exc.unavailable else KafkaOperationError
                        raise error(
                            f"giving up after {MAX_RETRIES + 1} aborted attempts "
                            f"({MAX_RETRIES} retries): {exc}"
                        ) from None
                    logger.warning(f"{exc}: aborted the transaction; retrying from the checkpoint")
                    plans = self.plans = self._plans()
            raise AssertionError("unreachable")
        except (KeyboardInterrupt, Stopped) as exc:
            self._abort()
            signum = signal_number(exc)
            raise Interrupted(
                f"{WORDS[signum]}: aborted the open transaction; "
                f"{plural(self.stats.records, 'record')} in "
                f"{plural(self.stats.transactions, 'transaction')} committed before (transactional "
                f"id {self.txid}); run the same command again to continue",
                signum,
            ) from None
        except InputError as exc:
            if self.in_txn:
                self._abort()
                raise InputError(
                    f"{exc}; nothing of the open transaction was written "
                    f"({plural(self.stats.records, 'record')} committed before)"
                ) from None
            raise

    def _abort(self, cause: BaseException | None = None) -> None:
        self.txn_lines = 0
        self.skips.clear()
        if not self.in_txn:
            return
        # best effort: the next run fences and aborts it
        exc = self.writer.abort_quietly(min(10.0, self.settings.timeout), cause)
        if exc is not None and clients.error_name(exc) != "_STATE":  # e.g. the commit completed just before
            logger.warning(f"could not abort the open transaction: {clients.translate(exc)}")
        self.stats.aborted()

    def _load_checkpoint(self) -> cpmod.Checkpoint:
        cp = None
        if self.resumable:
            cp = brokerside.read_checkpoint(self.settings, self.opts.checkpoint_topic, self.txid, self._admin)
        if cp is None:
            cp = cpmod.Checkpoint(self.txid, self.opts.topic)
        cpmod.check_topic(cp, self.opts.topic)
        m = self.opts.mapping
        now = cpmod.mapping_of(
            {os.path.abspath(x.path): x.fmt for x in self.sources if not x.is_stdin},
            m.key_field,
            m.value_field,
            m.value_as_json,
        )
        if not self.opts.restart:  # --restart produces the files again, with this mapping
            cpmod.check_mapping(cp, now)
        cpmod.with_mapping(cp, now)
        return cp

    def _plans(self) -> list[cpmod.Resume]:
        self._close_prefixes()
        plans = []
        for src in self.sources:
            if src.is_stdin:
                plans.append(cpmod.Resume(note="stdin (not resumable)"))
                continue
            path = os.path.abspath(src.path)
            prev = self.committed.files.get(path)
            if prev is None and path in self._restarted:
                plan = cpmod.Resume(note="restarted", prefix=cpmod.CommittedPrefix(src.path, src.gz))
            else:
                plan = cpmod.plan(prev, src.path, src.gz, inputs.read_range)
            assert plan.prefix is not None  # every file's plan has one
            self.prefixes[path] = plan.prefix
            plans.append(plan)
        return plans

    def _close_prefixes(self) -> None:
        for prefix in self.prefixes.values():
            prefix.close()
        self.prefixes.clear()

    def _hash_committed_parts(self, state: cpmod.Checkpoint) -> None:
        """Before a commit: each input's hash of its committed part, extended to its new offset.
        The bytes are read again on a handle of their own, so the last record's are checked against
        what the producer read: a file rewritten under the run must not leave a hash of bytes whose
        records were never produced."""
        for path, pos in state.files.items():
            prefix = self.prefixes.get(path)
            if prefix is None:
                continue  # not an input of this run
            skip = tuple((s.start, s.end) for s in pos.skipped)
            if tuple(r for r in skip if r[0] < prefix.offset) != prefix.excluded:
                prefix.restart()  # a line skipped earlier was loaded: its bytes are hashed now
            elif prefix.offset == pos.offset and pos.committed_sha256 is not None:
                continue  # not moved since the last commit
            moved = prefix.offset != pos.offset
            reached = prefix.advance(pos.offset, keep=pos.last_len if moved else 0, skip=skip)
            if reached < pos.offset or (
                moved and pos.last_len and cpmod.sha256(prefix.window) != pos.last_sha256
            ):
                raise InputError(
                    f"{path}: changed while it was being produced (line {pos.line} is no longer what "
                    "was read); run the same command again to check it against the last commit"
                )
            pos.committed_sha256 = prefix.hexdigest()
            if pos.eof:  # read to its end: it moves no more in this run
                prefix.close()

    def _summary(self, plans: list[cpmod.Resume]) -> Summary:
        files = []
        for src, plan in zip(self.sources, plans):
            pos = None if src.is_stdin else self.committed.files.get(os.path.abspath(src.path))
            files.append(
                FileResult(src.name, src.fmt, plan.note, plan.line + 1, None if pos is None else pos.line)
            )
        message = ""
        if self.stats.nothing_to_do:
            message = f"nothing to do: every input was already produced under transactional id {self.txid}"
        summary = self.stats.summary(files, message)
        if self.value_writer is not None or self.key_writer is not None:
            from kxtx.produce.schemas import described

            summary = dataclasses.replace(summary, schemas=described(self.value_writer, self.key_writer))
        return summary

    # --- transactions: the API of the fast paths (plain.py, keyed.py) too ------------------------
    def begin(self) -> None:
        self.writer.begin()

    def commit(self, state: cpmod.Checkpoint) -> None:
        """Commit the open transaction together with `state`, which becomes the new checkpoint."""
        if not self.in_txn:
            self.begin()
        self._record_skips(state)
        if self.resumable:
            self._hash_committed_parts(state)
        state.records += self.stats.pending_records
        state.transactions += 1
        state.updated_ms = int(time.time() * 1000)
        if self.resumable:
            self._produce_other(self.opts.checkpoint_topic, state.to_bytes(), self.txid.encode("utf-8"), None)
        self._read_ahead_while_flushing()
        self.writer.commit("committing")
        self.txn_lines = 0
        self.skips = [x for x in self.skips if x[1].start >= state.files[x[0]].offset]
        self.committed = copy.deepcopy(state)
        self.stats.committed()

    def _record_skips(self, state: cpmod.Checkpoint) -> None:
        """The lines skipped in the open transaction that the commit's positions have passed go
        into its checkpoint (the others into the next one)."""
        for path, line in self.skips:
            pos = state.files.get(path)
            if pos is None or line.start >= pos.offset or line in pos.skipped:
                continue
            if len(pos.skipped) >= MAX_KEPT_SKIPS:  # its bytes become part of the committed part
                warn_once(
                    f"skips:{path}",
                    f"{path}: more than {MAX_KEPT_SKIPS} lines skipped: the checkpoint keeps the first "
                    f"{MAX_KEPT_SKIPS} for a later run to load once fixed, not the others (--on-error "
                    "dlq:TOPIC keeps every bad line)",
                )
                continue
            pos.skipped.append(line)
            pos.skipped.sort(key=lambda s: s.start)

    def _say_skipped(self) -> None:
        """After a run that leaves lines skipped (this run or an earlier one): how to load them."""
        skipped = [
            (src.name, s)
            for src in self.sources
            if not src.is_stdin
            for s in getattr(self.committed.files.get(os.path.abspath(src.path)), "skipped", ())
        ]
        if not skipped:
            return
        name, first = skipped[0]
        one = len(skipped) == 1
        again = (
            "run the command again without --restart" if self.opts.restart else "run the same command again"
        )
        logger.warning(
            f"{plural(len(skipped), 'line')} skipped and not loaded (first: {name}:{first.line}); "
            f"fix {'it' if one else 'them'} in place and {again}: it loads just "
            f"{'that line' if one else 'those lines'}, exactly once"
        )

    def _reload(
        self,
        src: inputs.Source,
        mapper: Mapper,
        plan: cpmod.Resume,
        pos: cpmod.FilePosition,
        state: cpmod.Checkpoint,
    ) -> None:
        """The lines of `src` an earlier run skipped (`plan.retry`, where they are now), before the
        rest of the file, in the open transaction: each one now valid becomes a record, and its
        commit takes it off the checkpoint's skipped lines; one still bad stays skipped (whatever
        --on-error says: no record was written for it), and is said again."""
        from confluent_kafka import KafkaException

        pos.offset, pos.skipped = plan.offset, []
        path = os.path.abspath(src.path)
        n, ok, nb = self.txn_lines, self.stats.pending_records, self.stats.pending_bytes
        if not self.in_txn:
            self.next_transaction(state, 0, 0, 0)  # begins one
        loaded, emptied = [], []
        for s in plan.retry:
            lines = inputs.read(src, s.start, s.line - 1)
            try:
                if src.fmt == "csv":
                    set_header(mapper, src, next(lines))
                line = next(lines, None)
            finally:
                lines.close()  # type: ignore[attr-defined]  # a generator
            if s.end == pos.offset:  # the last line of the committed part: the one to check
                last = inputs.read_range(src.path, src.gz, s.start, s.end)
                pos.last_len, pos.last_sha256 = len(last), cpmod.sha256(last)
            if line is None or line.start >= s.end:  # emptied (JSON, CSV): no record, none skipped
                emptied.append(s.line)
                continue
            if (line.lineno, line.start, line.end) != (s.line, s.start, s.end):
                raise InputError(
                    f"{src.name}:{s.line}: this line, skipped earlier, now reads as another record "
                    f"(lines {line.lineno}, bytes {line.start}-{line.end}); restore its line breaks "
                    "and quotes, or re-run with --restart (duplicates)"
                )
            n += 1
            try:
                key, value, headers, partition, timestamp = mapper.map(line)
                self.produce_record(key, value, headers, partition, timestamp)
            except BadRecord as exc:
                self.skips.append((path, s))
                self.stats.bad(
                    f"{src.name}:{s.line}", str(exc), outcome="skipped earlier, still bad: skipped"
                )
                continue
            except KafkaException as exc:
                self.produce_error(exc, src, line)
                continue
            ok += 1
            nb += len(value)
            loaded.append(s.line)
        self.pause(n, ok, nb)
        if loaded:
            logger.warning(
                f"loading {plural(len(loaded), 'line')} skipped earlier ({src.name}:{_some(loaded)}), now valid"
            )
        if emptied:
            logger.warning(
                f"{src.name}:{_some(emptied)}: skipped earlier, now blank: no record, and no longer skipped"
            )

    def _read_ahead_while_flushing(self) -> None:
        """Until the transaction's records are acknowledged (commit_transaction() would begin by
        waiting for that), let the fast path read its next blocks (`read_ahead`) in the wait."""
        step, flush = self.read_ahead, self.producer.flush
        if step is None:
            return
        # flush(0): serves delivery reports, sends what lingers now, and counts what is left
        while flush(0) and step():
            pass

    def txn_due(self, n: int, nb: int) -> bool:
        """The open transaction holds `n` input lines (bad ones included) and `nb` bytes of records:
        time to commit it and begin the next (n == 0: none begun yet)."""
        return (
            n == 0
            or n >= self.records_limit
            or nb >= self.bytes_limit
            or time.monotonic() - self._txn_t0 >= self.seconds_limit
        )

    @property
    def idle_s(self) -> float:
        """How long a loop may wait for input before it checks `txn_due` (and stop signals) again."""
        return min(1.0, self.seconds_limit / 2)

    def next_transaction(self, state: cpmod.Checkpoint, n: int, ok: int, nb: int) -> None:
        """Once `txn_due`: commit the open transaction, if it holds lines (`ok` records of `nb`
        bytes), with `state` (its input positions already advanced), then begin the next."""
        if n:
            self.stats.pending_records, self.stats.pending_bytes = ok, nb
            self.commit(state)
        self.signals.check()
        if not self.in_txn:
            self.begin()
        self._txn_t0 = time.monotonic()

    def progress(self, ok: int, nb: int) -> None:
        """Now and then inside a transaction (`ok` records of `nb` bytes so far): show progress,
        stop on a signal."""
        self.stats.pending_records, self.stats.pending_bytes = ok, nb
        self.stats.tick()
        self.signals.check()

    def pause(self, n: int, ok: int, nb: int) -> None:
        """A loop leaves the open transaction (`n` input lines, `ok` records of `nb` bytes) to the
        next input or path."""
        self.stats.pending_records, self.stats.pending_bytes = ok, nb
        self.txn_lines = n

    def _produce_other(
        self, topic: str, value: bytes, key: bytes | None, headers: list[tuple[str, bytes]] | None
    ) -> None:
        """A checkpoint or dead-letter record in the open transaction."""
        self.writer.produce(topic, value, key, headers, self.stats.other_delivered)

    def _produce_all(self, plans: list[cpmod.Resume]) -> None:
        state = copy.deepcopy(self.committed)
        for i, (src, plan) in enumerate(zip(self.sources, plans)):
            if plan.done:
                continue
            pos = None
            if not src.is_stdin:
                ident = cpmod.identify(src.path)
                pos = state.files.get(ident.path)
                if pos is None or plan.offset == 0:
                    pos = state.files[ident.path] = cpmod.FilePosition(ident)
                pos.identity, pos.eof = ident, False
                if plan.retry:
                    self._reload(src, self.mappers[i], plan, pos, state)
            # the switch point of produce's fast paths (kxtx.produce.fast; KXTX_FAST=0: never)
            quick = keyed.fast_file(self.settings, src, self.mappers[i]) if fast.enabled("produce") else None
            if quick is not None:
                quick(self, src, pos, state).produce_all(plan)
            else:
                self.produce_file(src, self.mappers[i], plan, pos, state)
            if pos is not None:
                pos.eof = True
                if not src.gz:
                    # The size read, not the size now: lines appended meanwhile are for the next run.
                    now = cpmod.identify(src.path, min(cpmod.PREFIX_BYTES, pos.offset))
                    pos.identity = dataclasses.replace(now, size=pos.offset)
        if self.in_txn or state != self.committed:
            self.commit(state)

    # Per-record hot path: a helper per case would put a call on every record.
    def produce_file(  # noqa: C901
        self,
        src: inputs.Source,
        mapper: Mapper,
        plan: cpmod.Resume,
        pos: cpmod.FilePosition | None,
        state: cpmod.Checkpoint,
    ) -> None:
        """The per-record hot path: keep attribute lookups and calls out of the common case."""
        from confluent_kafka import KafkaException

        produce, poll, stats, topic = self.producer.produce, self.producer.poll, self.stats, self.opts.topic
        delivered = stats.delivered
        simple_max = self.topic.max_record_bytes - 4096  # below this no size check is needed
        due = self.txn_due
        map_record = mapper.map
        # value = the line as it is, no key/headers/fields: skip the mapping call and the Record
        as_is = mapper.plain
        validate = parse_json if src.fmt == "jsonl" else None
        n, ok, nb, last = self.txn_lines, stats.pending_records, stats.pending_bytes, None
        lines = inputs.read(src, plan.offset, plan.line)
        if src.fmt == "csv":
            header = next(lines, None)  # the reader yields the header row first, as line 0
            if header is not None:
                set_header(mapper, src, header)
        for line in lines:
            if due(n, nb):
                if n and pos is not None and last is not None:
                    pos.advance(last.lineno, last.start, last.end, last.raw)
                self.next_transaction(state, n, ok, nb)
                if n:
                    n = ok = nb = 0
            n += 1
            last = line
            try:
                if as_is:
                    value = line[3]
                    if validate is not None:
                        validate(value)
                    if len(value) < simple_max:
                        try:
                            produce(topic, value, None, -1, delivered)
                        except BufferError:
                            self.produce_record(None, value, None, None, None)
                    else:
                        self.produce_record(None, value, None, None, None)
                else:
                    key, value, headers, partition, timestamp = map_record(line)
                    if (
                        headers is None
                        and partition is None
                        and timestamp is None
                        and len(value) < simple_max
                    ):
                        try:
                            produce(topic, value, key, -1, delivered)
                        except BufferError:
                            self.produce_record(key, value, None, None, None)
                    else:
                        self.produce_record(key, value, headers, partition, timestamp)
            except BadRecord as exc:
                self.bad(src, line, str(exc))
                continue
            except KafkaException as exc:
                self.produce_error(exc, src, line)
                continue
            nb += len(value)
            ok += 1
            if not n % POLL_EVERY:
                poll(0)
                self.progress(ok, nb)
        self.pause(n, ok, nb)
        if pos is not None and last is not None:
            pos.advance(last.lineno, last.start, last.end, last.raw)

    def produce_record(
        self,
        key: bytes | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None,
        partition: int | None,
        timestamp: int | None,
    ) -> None:
        """Checks and produce for records with headers, partition, timestamp or a large size."""
        check_size(key, value, headers, self.topic.max_record_bytes)
        if partition is not None and partition >= self.topic.partitions:
            raise BadRecord(f"partition {partition} does not exist (topic has {self.topic.partitions})")
        while True:
            try:
                self.producer.produce(
                    self.opts.topic,
                    value,
                    key,
                    partition=-1 if partition is None else partition,
                    timestamp=timestamp or 0,
                    headers=headers,
                    on_delivery=self.stats.delivered,
                )
                return
            except BufferError:  # the local queue is full: serve delivery reports, then retry
                self.producer.poll(0.05)

    def produce_error(self, exc: KafkaException, src: inputs.Source, line: inputs.Line) -> None:
        err = exc.args[0]
        if err.name() in ("MSG_SIZE_TOO_LARGE", "_UNKNOWN_PARTITION", "_INVALID_ARG"):
            self.bad(src, line, err.str())
            return
        refused = self._refusal() if err.name() == "_STATE" else None
        if refused is not None:
            # A record the broker refused left the transaction abortable, and produce() now says
            # only "Erroneous state": the cause is in that record's delivery report, and the
            # transaction is aborted and retried as when the commit says so.
            raise _Abortable(f"producing: {refused.str()}", refused) from exc
        elif err.txn_requires_abort():
            self._stop_if_denied(err, "producing")
            raise _Abortable(f"producing: {err.str()}", err) from exc
        else:
            raise self._fatal(exc, "producing") from exc

    def _refusal(self, wait_s: float = 10.0) -> Any:
        """The delivery error behind produce()'s "Erroneous state". librdkafka sets the state when
        the broker refuses a batch, but the report naming why reaches stats only when the producer
        is polled, which the fast paths may not have done yet: serve reports until it comes (a
        producer gone fatal, e.g. fenced, has no such report: the fatal error is the cause)."""
        deadline = time.monotonic() + wait_s
        while (
            self.stats.delivery_error is None
            and self.writer.fatal_error is None
            and time.monotonic() < deadline
        ):
            self.producer.poll(0.1)
        return self.stats.delivery_error

    def bad(self, src: inputs.Source, line: inputs.Line, reason: str) -> None:
        where = f"{src.name}:{line.lineno}"
        if self.policy == "fail":
            # a file whose bad line is fixed continues after the last commit (never a --restart)
            rerun = not src.is_stdin and not self.opts.restart
            raise InputError(bad_lines_message(f"{where}: {reason}", rerun=rerun))
        if self.policy == "skip" and not src.is_stdin:
            line_ = cpmod.skipped_line(line.lineno, line.start, line.end, line.raw)
            self.skips.append((os.path.abspath(src.path), line_))
        if self.dlq is not None:  # the policy is "dlq"
            self._produce_other(
                self.dlq,
                line.raw,
                None,
                [
                    ("kxtx.error", reason.encode("utf-8")),
                    ("kxtx.source", where.encode("utf-8")),
                    ("kxtx.topic", self.opts.topic.encode("utf-8")),
                ],
            )
        self.stats.bad(where, reason, dlq=self.policy == "dlq")


def _some(lines: list[int]) -> str:
    """Line numbers for a message: the first ten."""
    return ", ".join(map(str, lines[:10])) + (", ..." if len(lines) > 10 else "")
