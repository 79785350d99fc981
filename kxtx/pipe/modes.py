"""`kxtx pipe`'s entry point: the one place that decides which mode runs.

driver (kxtx.pipe.driver): this process consumes and produces, Spark runs the UDF; executors
(kxtx.pipe.executors): Spark tasks do the Kafka work. Both share kxtx.pipe.core; `auto` resolves
in `PipeConfig.resolved_mode`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kxtx.pipe.core import PipeCore
from kxtx.pipe.driver import DriverPipe
from kxtx.pipe.executors import ExecutorPipe
from kxtx.pipe.runconfig import PipeConfig
from kxtx.pipe.stats import ProgressFn, Summary
from kxtx.signals import Guard

if TYPE_CHECKING:
    from kxtx.client.settings import Settings

MODES: dict[str, type[PipeCore]] = {"driver": DriverPipe, "executors": ExecutorPipe}


def run(
    settings: Settings,
    cfg: PipeConfig,
    progress: ProgressFn | None = None,
    session: Any = None,  # a SparkSession to use (pyspark's objects are not typed here)
    signals: Guard | None = None,
) -> Summary:
    """Run `kxtx pipe` with `cfg` (checked and completed here unless it is a RunConfig already);
    returns the summary, or raises PipeInterrupted with it on a stop signal."""
    resolved = cfg.resolve()
    return MODES[resolved.mode](settings, resolved, progress, session, signals).run()
