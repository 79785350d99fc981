"""Run one executor-mode task (`kxtx.pipe.worker.task.run_plan`) outside Spark and print its result as
JSON: `python pipe_task_runner.py BOOTSTRAP GROUP PIPE_ID TOPIC PARTITION OUT UDF_NAME`."""

import dataclasses
import json
import sys

from kxtx.client.settings import Settings
from kxtx.pipe.worker import task as taskmod
from kxtx.pipe.worker import transform as tf
from tests.integration import pipe_udfs


def job(bootstrap: str, group: str, pipe_id: str, out: str, udf_name: str) -> taskmod.Job:
    mapper = tf.make_mapper(getattr(pipe_udfs, udf_name), "row", "raw", False)
    conf = Settings(props={"bootstrap.servers": bootstrap}, timeout=30).confluent()
    return taskmod.Job(
        conf=conf,
        group=group,
        pipe_id=pipe_id,
        out=out,
        dlq=None,
        start="earliest",
        record_mode=False,
        mapper=mapper,
        chunk=10000,
        udf_name=udf_name,
        timeout=30.0,
    )


if __name__ == "__main__":
    bootstrap, group, pipe_id, topic, partition, out, udf_name = sys.argv[1:8]
    plan = taskmod.Plan(topic, int(partition), limit=1_000_000, end=1 << 62, token=None)
    result = taskmod.run_plan(job(bootstrap, group, pipe_id, out, udf_name), plan)
    print(json.dumps(dataclasses.asdict(result), default=str))
