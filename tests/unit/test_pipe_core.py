"""kxtx/pipe/core.py: the one UDF-failure message, as each mode words it."""

from __future__ import annotations

import pytest

from kxtx.pipe.core import UdfFailed, udf_failed
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
