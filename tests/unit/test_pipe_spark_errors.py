"""How a failed Spark job is named in one line (kxtx/pipe/spark.py `first_line`)."""

from __future__ import annotations

import pytest

from kxtx.pipe.spark import first_line

WORKER = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/worker.py", line 4327, in invoke_udf
    run_process()
  File "<stdin>", line 5, in f
ModuleNotFoundError: No module named 'confluent_kafka'
"""

CHAINED = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "t.py", line 2, in f
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "t.py", line 4, in f
ValueError: bad record
\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:600)
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            WORKER,
            "An exception was thrown from the Python worker: ModuleNotFoundError: No module "
            "named 'confluent_kafka'",
        ),
        (CHAINED, "An exception was thrown from the Python worker: ValueError: bad record"),
        (
            "Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times\n\tat org.apache",
            "Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times",
        ),
        ("", "RuntimeError"),
        ("x" * 900, "x" * 500),
    ],
)
def test_the_line_that_names_the_error(text, expected):
    assert first_line(RuntimeError(text)) == expected
