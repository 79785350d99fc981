"""The code `kxtx pipe` runs on Spark's Python workers: `transform` (a batch through the UDF, in both
modes), `task` (one executors-mode Spark task), and what they use.

On a cluster every module here, and the few of `SHIPPED_WITH` from outside the package, is pickled
by value with the task, so executors need pyarrow (and pandas for pandas UDFs) but not kxtx. A
worker module imports only those (tests/unit/test_import_graph.py pins it;
tests/unit/test_pipe_shipping.py unpickles the tasks where kxtx cannot be imported); the driver
may import anything here.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

#: the modules outside this package that the worker code imports
SHIPPED_WITH = (
    "kxtx.wording",
    "kxtx.fast",
    "kxtx.fast.gcpause",
    "kxtx.client.kafkaerrors",
    "kxtx.client.txwriter",
)


#: the modules of the schema registry reader and encoder (kxtx.pipe.schemas) that the driver hands
#: the mapper as objects: no worker module imports them, the pickled objects need them
SHIPPED_FOR_SCHEMAS = (
    "kxtx.schemas",
    "kxtx.schemas.serde",
    "kxtx.schemas.codecs",
    "kxtx.schemas.protocodec",
    "kxtx.schemas.mismatch",
    "kxtx.schemas.fast",
    "kxtx.fast",
    "kxtx.schemas.fast.avrogen",
    "kxtx.schemas.framing",
    "kxtx.schemas.protofile",
    "kxtx.client.registry",
    "kxtx.errors",
    "kxtx.exitcodes",
    "kxtx.signals",
)


def modules() -> list[ModuleType]:
    """Every module Spark's workers need from kxtx: this package's, `SHIPPED_WITH` and
    `SHIPPED_FOR_SCHEMAS`."""
    names = [f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)]
    names += list(SHIPPED_WITH) + list(SHIPPED_FOR_SCHEMAS)
    names = list(dict.fromkeys(names))  # the switch kxtx.fast is in both
    return [importlib.import_module(name) for name in names]
