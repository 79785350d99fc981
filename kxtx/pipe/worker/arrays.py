"""The Arrow arrays of a task's common path, built from their buffers.

pyarrow's `pa.array` looks for pandas on its first call in a process and imports it if installed
(0.3-0.4 CPU s in each PySpark worker, measured with PYTHONPROFILEIMPORTTIME), even for a list of
bytes. A task whose UDF returns one value per record needs pandas nowhere else, so these build
the same arrays from numpy buffers, and leave the rare cases (null values, more bytes than 32-bit
offsets address) to `pa.array`. On a cluster this module is shipped by value with the tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

#: the largest offset of a `pa.binary()` array (32-bit signed offsets)
MAX_BINARY_BYTES = 2**31 - 1


def binary(values: list) -> pa.Array:
    """`pa.array(values, pa.binary())` for a list of bytes; None among them goes to `pa.array`."""
    import numpy as np
    import pyarrow as pa

    n = len(values)
    if None not in values:
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=n), out=offsets[1:])
        if offsets[-1] <= MAX_BINARY_BYTES:
            buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(values))]
            return pa.Array.from_buffers(pa.binary(), n, buffers)
    return pa.array(values, pa.binary())


def indices(n: int, start: int = 0) -> pa.Array:
    """start .. start+n-1 as an int64 array (`pa.array(np.arange(start, start + n))`)."""
    import numpy as np
    import pyarrow as pa

    values = np.arange(start, start + n, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(values)])


def all_false(n: int) -> pa.Array:
    """n times False as a bool array (`pa.array([False] * n)`)."""
    import pyarrow as pa

    return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bytes((n + 7) // 8))])
