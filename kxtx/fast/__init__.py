"""kxtx's speed annex, and its one switch.

Code that exists only to make kxtx faster lives apart from the general house, each piece beside a
general path that gives the same results: here (the base's: the C loops `native.c` and their
loader `speedups`, the JVM class-data archives `jvmcds`, the garbage collector's pause `gcpause`),
and in a `fast/` folder of each package that has some (`client/fast`: records handed to librdkafka
a batch at a time; `produce/fast`: produce's plain and keyed paths; `pipe/fast`: Spark's Python
daemon, the driver's class-data archive; `schemas/fast`: the column-wise Avro codecs). Two
straight-line decoders stay beside the general ones they share private layouts with
(kxtx.records.txn_log.fast_transaction, group_log.fast_offset_commit), switched here too. A general
module reaches a fast one only at a named switch point (tests/unit/test_import_graph.py lists
them), and each fast path asks `enabled()` before it runs. What each one buys: bench/README.md.

`KXTX_FAST=0` turns every fast path off: kxtx then runs its general code alone, with the same
output (CI runs the fast-vs-general tests both ways). The older switches of single paths still
work, for one release: `KXTX_SPEEDUPS=0`, `KXTX_PRODUCE_BATCH=0`, `KXTX_SPARK_CDS=off`,
`KXTX_SANDBOX_CDS=off`.

Only the standard library here: Spark's workers get this module with the tasks (kxtx.pipe.worker).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: The variable that turns every fast path off.
ENV = "KXTX_FAST"

#: Each fast path: the older variable that also turns it off (None: only KXTX_FAST does).
PATHS: dict[str, str | None] = {
    "native": "KXTX_SPEEDUPS",  # the C loops of produce's fast paths (native.c)
    "produce-batch": "KXTX_PRODUCE_BATCH",  # rd_kafka_produce_batch (client/fast/batch.py)
    "produce": None,  # produce's plain and keyed paths (produce/fast/)
    "spark-cds": "KXTX_SPARK_CDS",  # the Spark driver JVM's class-data archive
    "sandbox-cds": "KXTX_SANDBOX_CDS",  # the sandbox nodes' class-data archive
    "pipe-daemon": None,  # Spark's Python daemon importing the installed pyspark
    "avro": None,  # the column-wise Avro encoder and generated decoder
    "gc-pause": None,  # the cyclic garbage collector paused around batches
    # dump's straight-line decoders of the common __transaction_state and __consumer_offsets
    # records (kxtx.records: txn_log.fast_transaction, group_log.fast_offset_commit)
    "records": None,
}

_OFF = ("0", "off", "false", "no")


def enabled(path: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether fast path `path` (a key of PATHS) may run: on unless KXTX_FAST or its own older
    variable is 0, off, false or no, in `env` (the process's environment when None: read at the
    call, not bound as a default, which the workers' pickled copy of this module would carry)."""
    alias = PATHS[path]
    if env is None:
        env = os.environ
    return not any(_off(variable, env) for variable in ((ENV, alias) if alias else (ENV,)))


def every_path_off(env: Mapping[str, str] | None = None) -> bool:
    """Whether KXTX_FAST turns every fast path off (in `env`, or the process's environment)."""
    return _off(ENV, os.environ if env is None else env)


def _off(variable: str, env: Mapping[str, str]) -> bool:
    return env.get(variable, "").strip().lower() in _OFF
