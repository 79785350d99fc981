"""Producing inputs and starting `kxtx pipe` for the pipe tests (reading outputs: `kafka_io`)."""

from __future__ import annotations

import subprocess
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests import cli

UDFS = __file__.replace("pipe_helpers.py", "pipe_udfs.py")
#: A killed pipe's group membership ends in 6 s instead of librdkafka's 45 s: its restart (or the
#: other instance) gets the partitions sooner.
FAST_GROUP = ["-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=1000"]


def produce(bootstrap: str, topic: str, values, keys=None, partition: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    where = {} if partition is None else {"partition": partition}
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, v, keys[i] if keys else None, **where)
                break
            except BufferError:
                p.poll(0.1)
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def pipe_args(
    src: str, out: str, udf: str | None = "identity", group: str | None = None, **options
) -> list[str]:
    """`--in SRC --out OUT --group GROUP --udf UDF` for `kxtx pipe`: a new group unless given; UDF
    names a function of pipe_udfs, or is FILE:FUNCTION itself (no --udf for None). Then each option as
    `--name value` (`batch_max_records=2000`: `--batch-max-records 2000`; `from_="latest"`: `--from
    latest`, the underscore of a Python keyword dropped; True: the flag alone)."""
    args = ["--in", src, "--out", out, "--group", group or f"g-{uuid.uuid4().hex[:8]}"]
    if udf is not None:
        args += ["--udf", udf if ":" in udf else f"{UDFS}:{udf}"]
    for name, value in options.items():
        args += [f"--{name.rstrip('_').replace('_', '-')}"] + ([] if value is True else [str(value)])
    return args


def start_pipe(
    bootstrap: str, tmp_path, name: str, *args: str, env: dict | None = None, new_session: bool = False
) -> subprocess.Popen:
    """`kxtx pipe ARGS -o json` in the background against `bootstrap`; its stdout and stderr go to
    `tmp_path/NAME.out` and `.err` (files: a pipe nobody reads could fill and block it)."""
    return cli.start(
        "pipe",
        *args,
        "-o",
        "json",
        stdout=open(tmp_path / f"{name}.out", "w"),
        stderr=open(tmp_path / f"{name}.err", "w"),
        env={"KXTX_BOOTSTRAP_SERVERS": bootstrap, **(env or {})},
        start_new_session=new_session,
    )


def run_in_process(
    kafka,
    session,
    inputs: list[str],
    out: str,
    udf: str,
    registry: str | None = None,
    registry_timeout: float = 30.0,
    failover: float | None = None,
    **config,
):
    """The pipe engine in this process on the shared SparkSession (the `spark_session` fixture),
    as `kxtx pipe` runs it, until it stops (`until_idle`, 2 s unless given, or `max_records`);
    returns its summary. `udf` names a function of pipe_udfs; `config` sets other PipeConfig
    fields (`mode` "driver" unless given); `failover` is KXTX_FAILOVER_TIMEOUT."""
    from kxtx.pipe.modes import run
    from kxtx.pipe.runconfig import PipeConfig

    cfg = PipeConfig(
        inputs=inputs,
        out=out,
        group=config.pop("group", f"g-{uuid.uuid4().hex[:8]}"),
        udf=f"{UDFS}:{udf}",
        until_idle=config.pop("until_idle", 2.0),
        batch_max_ms=config.pop("batch_max_ms", 500),
        mode=config.pop("mode", "driver"),
        **config,
    )
    settings = kafka.settings(**{"session.timeout.ms": "6000"})
    if registry is not None:  # a schema registry's URL (tests/registry.py)
        settings.registry = {"schema.registry.url": registry}
        settings.timeout = registry_timeout
    if failover is not None:
        settings.failover = failover
    return run(settings, cfg, session=session)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offsets; asked again while its coordinator moves or loads (on a
    fresh broker the first group's __consumer_offsets partition may still be loading)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
                return [tp.offset for tp in got]
            except KafkaException as exc:
                name = exc.args[0].name() if exc.args else ""
                if (
                    name
                    not in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")
                    or time.monotonic() > deadline
                ):
                    raise
                time.sleep(0.2)
    finally:
        c.close()
