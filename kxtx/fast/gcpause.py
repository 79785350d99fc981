"""Python's cyclic garbage collector, paused around work that allocates containers by the record.

The collector runs whenever allocations of containers (dicts, lists, tuples, most objects) outnumber
deallocations by 700, and each run walks every container younger than its generation; a full run,
which comes once the survivors have grown by a quarter, walks the whole heap. Work that keeps a batch
of records alive (a list of Messages, their decoded dicts, the tuples to produce) thus triggers it
over and over, and it finds nothing: none of these form reference cycles, reference counting frees
them as soon as the batch is done. Measured: 18 % of a `kxtx pipe` Python worker's main thread
(perf, bench/README), ~30 % of `kxtx dump`'s and of `kxtx produce`'s column path.

Paused, not tuned: what a batch allocates is bounded by the batch, so garbage that does form cycles
(a UDF's own) waits at most one batch, and the first allocations after the pause collect it.

Pure and self-contained: it runs on Spark's Python workers too (pickled by value on a cluster).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# the function, not its module: the workers get both by value, and the package (which holds this
# module) pickled by value would hold this module again
from kxtx.fast import enabled


@contextmanager
def paused() -> Iterator[bool]:
    """The collector off inside the block, and back on after it if it was on before (a block
    nested in another leaves it off). Yields whether it was on."""
    was_on = gc.isenabled()
    if not enabled("gc-pause"):
        yield was_on
        return
    gc.disable()
    try:
        yield was_on
    finally:
        if was_on:
            gc.enable()
