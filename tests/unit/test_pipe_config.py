"""`kxtx pipe` settings: which mode `auto` runs and the batch size each mode defaults to."""

from __future__ import annotations

import pytest

from kxtx.pipe.config import DEFAULT_BATCH_RECORDS, EXECUTOR_BATCH_RECORDS, PipeConfig


@pytest.mark.parametrize("mode, master, batch, want_mode, want_batch", [
    ("auto", "local[*]", None, "executors", EXECUTOR_BATCH_RECORDS),
    ("auto", "local[2]", None, "executors", EXECUTOR_BATCH_RECORDS),
    ("auto", "spark://h:7077", None, "executors", EXECUTOR_BATCH_RECORDS),
    ("driver", "local[*]", None, "driver", DEFAULT_BATCH_RECORDS),
    ("driver", "spark://h:7077", None, "driver", DEFAULT_BATCH_RECORDS),
    ("executors", "local[*]", None, "executors", EXECUTOR_BATCH_RECORDS),
    ("executors", "local[*]", 7, "executors", 7),  # what the user gives wins
    ("driver", "local[*]", 7, "driver", 7),
])
def test_mode_and_batch_default(mode, master, batch, want_mode, want_batch):
    cfg = PipeConfig(inputs=["in"], out="out", group="g", udf="m:f", mode=mode, master=master,
                     batch_max_records=batch)
    cfg.validate()
    assert (cfg.resolved_mode(), cfg.batch_max_records) == (want_mode, want_batch)
    assert EXECUTOR_BATCH_RECORDS != DEFAULT_BATCH_RECORDS  # else the table proves nothing
