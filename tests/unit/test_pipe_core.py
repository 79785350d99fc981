"""kxtx/pipe/core.py: the one UDF-failure message, as each mode words it."""

from __future__ import annotations

import pytest

from kxtx.pipe.core import UdfFailed, bytes_hint, udf_failed
from kxtx.pipe.driver import DriverPipe
from kxtx.pipe.executors import ExecutorPipe
from kxtx.pipe.worker.outputs import UdfFailure

BYTES = " (the UDF got the value as bytes: --value-format json or string decodes it)"


@pytest.mark.parametrize(
    "mode, value_format, failure, want",
    [
        (
            DriverPipe,
            "json",
            UdfFailure("in", 1, 7, "KeyError: 'x'", 1),
            "UDF f failed on in[1]@7: KeyError: 'x'; the transaction was aborted: nothing of this "
            "batch was written and the group's offsets did not move (--on-udf-error dlq:TOPIC "
            "sets such records aside instead)",
        ),
        (
            ExecutorPipe,
            "json",
            UdfFailure("in", 1, 7, "KeyError: 'x'", 3),
            "UDF f failed on in[1]@7: KeyError: 'x' (and 2 more records of this round); the "
            "transaction was aborted: nothing of this batch was written and the partition's offset "
            "did not move (other partitions commit on their own; --on-udf-error dlq:TOPIC sets "
            "such records aside instead)",
        ),
        (
            DriverPipe,
            "raw",
            UdfFailure("in", 0, 0, "TypeError: a bytes-like object is required", 2),
            f"UDF f failed on in[0]@0: TypeError: a bytes-like object is required{BYTES} (and 1 "
            "more records of this batch); the transaction was aborted: nothing of this batch was "
            "written and the group's offsets did not move (--on-udf-error dlq:TOPIC sets such "
            "records aside instead)",
        ),
    ],
)
def test_udf_failed(mode, value_format, failure, want):
    got = udf_failed("f", value_format, failure, mode.UNIT, mode.UNMOVED)
    assert isinstance(got, UdfFailed) and str(got) == want


@pytest.mark.parametrize(
    "value_format, text, hinted",
    [
        # Python's words for bytes treated as a document or as text (a UDF written for json/string)
        ("raw", "TypeError: byte indices must be integers or slices, not str", True),  # order["name"]
        ("raw", "AttributeError: 'bytes' object has no attribute 'get'", True),
        ("raw", "TypeError: 'bytes' object is not a mapping", True),  # {**order}
        ("raw", "TypeError: can't concat str to bytes", True),
        ("raw", 'TypeError: can only concatenate str (not "bytes") to str', True),
        ("raw", "TypeError: a bytes-like object is required, not 'str'", True),  # "a" in order
        ("raw", "TypeError: startswith first arg must be bytes or a tuple of bytes, not str", True),
        ("raw", "TypeError: Object of type bytes is not JSON serializable", True),
        ("raw", "TypeError: cannot use a string pattern on a bytes-like object", True),
        # not about bytes: no hint
        ("raw", "KeyError: 'name'", False),
        (
            "raw",
            "TypeError: the JSON object must be str, bytes or bytearray, not NoneType",
            False,
        ),  # a tombstone
        ("raw", "ZeroDivisionError: division by zero", False),
        # the value was decoded: the hint would be wrong
        ("json", "TypeError: byte indices must be integers or slices, not str", False),
        ("string", "AttributeError: 'bytes' object has no attribute 'get'", False),
    ],
)
def test_bytes_hint(value_format, text, hinted):
    assert bytes_hint(value_format, text) == (BYTES if hinted else "")
