"""`kxtx pipe` settings: the options of a run, their defaults and their checks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from kxtx.derived import derived_name
from kxtx.errors import UsageError
from kxtx.pipe.udf import parse_spec
from kxtx.schemas.codecs import REGISTRY_FORMATS

#: Driver mode's records per batch: the smallest size at which Spark's fixed cost per job and the
#: commit's are both a small share of a batch, with memory still bounded (see bench/README.md,
#: "Batch sizes"). The time bound keeps Spark's fixed cost small when input is slow.
DEFAULT_BATCH_RECORDS = 200_000
#: --mode executors: records per partition and round. A task holds its partition's whole round in
#: its Python worker (input messages, Arrow tables, outputs), so this bounds a task's memory.
#: Chosen where the round's fixed cost is a small share of a round; larger rounds gain little rate
#: for memory that grows with the record size and the tasks an executor runs at once (see
#: bench/README.md, "Batch sizes").
EXECUTOR_BATCH_RECORDS = 100_000
DEFAULT_BATCH_MS = 5_000
VALUE_FORMATS = ("raw", "string", "json", *REGISTRY_FORMATS)
MODES = ("auto", "driver", "executors")
#: Kafka's own topics. librdkafka's pattern subscription matches them too (Java's consumer leaves
#: them out, exclude.internal.topics): `--in '^.*'` would read offsets and transaction state.
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def matches(spec: str, topic: str) -> bool:
    """Whether the --in entry `spec` takes `topic`: a name equals it; a ^pattern matches it as
    librdkafka does (a search, so '^orders' also takes 'orders-eu'; only ^ anchors)."""
    return re.search(spec, topic) is not None if spec.startswith("^") else spec == topic


def subscription_conf(props: dict, inputs: list[str]) -> dict:
    """Consumer settings for subscribing to `inputs`: with a ^pattern among them, Kafka's internal
    topics are hidden from it (librdkafka's topic.blacklist, added to the user's own), unless
    one is named as an input."""
    if not any(t.startswith("^") for t in inputs):
        return {}
    hidden = [t for t in INTERNAL_TOPICS if t not in inputs]
    if not hidden:
        return {}
    ours = "^(" + "|".join(re.escape(t) for t in hidden) + ")$"
    theirs = str(props.get("topic.blacklist") or "").strip()
    return {"topic.blacklist": f"{theirs},{ours}" if theirs else ours}


def default_transactional_id(group: str, inputs: list[str], out: str, derived_group: bool = False) -> str:
    """Stable across restarts and hosts, so a restarted pipe fences the one it replaces:
    `kxtx-pipe-GROUP-HASH`, or `GROUP-HASH` when the group is kxtx's default (`default_group`),
    whose name has the prefix already (`kxtx-pipe-kxtx-pipe-OUT-...` said it twice)."""
    prefix = group if derived_group else f"kxtx-pipe-{group}"
    return derived_name(prefix, sorted(inputs) + ["->", out], digits=10)


def default_group(inputs: list[str], out: str, udf: str) -> str:
    """`kxtx-pipe-OUT-HASH` of what the pipe is: its input topics (or patterns; their order and
    repeats do not matter), its output topic and its UDF (a file by its absolute path, so the line
    run from another directory is the same pipe). Nothing else: a rerun with other batch sizes,
    -X settings, mode, value format or --on-udf-error (e.g. adding a dead-letter topic to get past
    a bad record) is the same pipe and must resume from its committed offsets, not read its inputs
    again from the start into the same output."""
    target = parse_spec(udf)
    where = str(target.path.resolve()) if target.path is not None else target.module
    return derived_name(
        f"kxtx-pipe-{out}", [*sorted(set(inputs)), "->", out, "udf", f"{where}:{target.function}"]
    )


def parse_on_udf_error(text: str) -> str | None:
    """`fail` -> None; `dlq:TOPIC` -> TOPIC."""
    if text == "fail":
        return None
    kind, sep, topic = text.partition(":")
    if kind == "dlq" and sep and topic.strip():
        return topic.strip()
    raise UsageError(f"--on-udf-error {text!r}: expected fail or dlq:TOPIC")


@dataclass(frozen=True)
class PipeConfig:
    """The options of a run as given; `resolve()` checks them and fills in the defaults."""

    inputs: list[str]
    out: str
    #: None: `default_group` of the inputs, output and UDF
    group: str | None
    udf: str
    transactional_id: str | None = None
    start: str = "earliest"
    #: None: DEFAULT_BATCH_RECORDS per transaction in driver mode, EXECUTOR_BATCH_RECORDS per
    #: partition and round in executors mode
    batch_max_records: int | None = None
    batch_max_ms: int = DEFAULT_BATCH_MS
    until_idle: float | None = None
    max_records: int | None = None
    dlq: str | None = None
    value_format: str = "raw"
    #: encode the UDF's results with this schema (kxtx.schemas.serde.parse_choice), registered
    #: under the output's subject with `register`
    out_schema: str | None = None
    register: bool = False
    subject_strategy: str = "topic"
    record_input: bool = False
    master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    spark_ui: bool = False
    debug: bool = False
    #: driver: the driver consumes and produces, Spark runs the UDF; executors: Spark tasks do the
    #: Kafka work (kxtx.pipe.executors); auto: see `resolved_mode`. kxtx.pipe.modes.run dispatches.
    mode: str = "auto"

    def resolved_mode(self) -> str:
        """auto: executors mode, on a cluster and on local[...] alike. bench/bench_pipe_modes.py
        (1M JSON records, 4 partitions, JSON enrichment, one 2-core machine): on a cluster only
        executors mode grows with the machines (1.54x driver mode already on two 1-core workers;
        the bench docstring has the figures and the model); on local[2] it is faster too (median
        1.27x over 5 rounds), and with a single input partition it still keeps up (94-105k vs
        96-97k records/s). Driver mode remains for one transaction per batch under the given id."""
        if self.mode != "auto":
            return self.mode
        return "executors"

    def resolve(self) -> RunConfig:
        """Checked once, defaults filled in once: the settings a run works with (a RunConfig
        resolves to itself)."""
        if isinstance(self, RunConfig):
            return self
        self.validate()
        mode = self.resolved_mode()
        batch = self.batch_max_records
        if batch is None:
            batch = EXECUTOR_BATCH_RECORDS if mode == "executors" else DEFAULT_BATCH_RECORDS
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        group = self.group if self.group is not None else default_group(self.inputs, self.out, self.udf)
        return RunConfig(
            **{
                **given,
                "mode": mode,
                "batch_max_records": batch,
                "group": group,
                "transactional_id": self.transactional_id
                or default_transactional_id(group, self.inputs, self.out, self.group is None),
            }
        )

    def validate(self) -> None:
        """Raise UsageError naming the first option that cannot work; changes nothing."""
        self._check_names()
        self._check_values()
        self._check_topics()

    def _check_names(self) -> None:
        if not self.inputs or not all(t.strip() for t in self.inputs):
            raise UsageError("--in: give at least one topic (or a ^regex)")
        if not self.out.strip():
            raise UsageError("--out: give the output topic")
        if self.group is not None and not self.group.strip():
            raise UsageError("--group: give the consumer group, or leave the option out for the default")

    def _check_values(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"--mode must be one of {', '.join(MODES)}")
        if self.batch_max_records is not None and self.batch_max_records < 1:
            raise UsageError("--batch-max-records must be at least 1")
        if self.batch_max_ms < 1:
            raise UsageError("--batch-max-ms must be at least 1")
        if self.until_idle is not None and self.until_idle <= 0:
            raise UsageError("--until-idle must be positive")
        if self.max_records is not None and self.max_records < 1:
            raise UsageError("--max-records must be at least 1")
        if self.start not in ("earliest", "latest"):
            raise UsageError("--from must be earliest or latest")
        if self.value_format not in VALUE_FORMATS:
            raise UsageError(f"--value-format must be one of {', '.join(VALUE_FORMATS)}")
        if self.out_schema:
            from kxtx.schemas.serde import check_strategy, parse_choice

            parse_choice(self.out_schema, "--out-schema")
            check_strategy(self.subject_strategy)

    def _check_topics(self) -> None:
        for spec in self.inputs:
            if spec.startswith("^"):
                try:
                    re.compile(spec)
                except re.error as exc:
                    raise UsageError(f"--in {spec}: not a regular expression ({exc})") from None
        if self.dlq and any(matches(t, self.dlq) for t in self.inputs):
            raise UsageError(f"the dead-letter topic cannot be an input topic ({self._taking(self.dlq)})")
        if any(matches(t, self.out) for t in self.inputs):
            raise UsageError(
                "--out cannot be one of the --in topics (the pipe would feed itself; "
                f"{self._taking(self.out)})"
            )

    def output_topics(self) -> dict[str, str]:
        """Topic -> what it is, for messages about the topics the pipe writes."""
        return {self.out: "output topic", **({self.dlq: "dead-letter topic"} if self.dlq else {})}

    def _taking(self, topic: str) -> str:
        spec = next(t for t in self.inputs if matches(t, topic))
        return f"--in {spec} takes {topic!r}"


@dataclass(frozen=True)
class RunConfig(PipeConfig):
    """A checked PipeConfig with its defaults filled in (made by `PipeConfig.resolve()` only):
    `mode` is driver or executors, `group`, `batch_max_records` and `transactional_id` are set."""

    group: str
    batch_max_records: int = DEFAULT_BATCH_RECORDS
    transactional_id: str = ""
