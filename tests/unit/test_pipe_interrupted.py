"""Both pipe modes turn a stop signal into PipeInterrupted with the summary, and leave errors be."""

from __future__ import annotations

import signal

import pytest

from kxtx.errors import partial_of
from kxtx.pipe.runconfig import PipeConfig
from kxtx.pipe.stats import PipeInterrupted, Stats, interrupted
from kxtx.signals import Stopped


def cfg() -> PipeConfig:
    return PipeConfig(inputs=["in"], out="out", udf="m:f", group="g")


@pytest.mark.parametrize(
    "exc, code, name",
    [
        (KeyboardInterrupt(), 130, "SIGINT"),
        (Stopped(signal.SIGTERM), 143, "SIGTERM"),
        (Stopped(signal.SIGHUP), 129, "SIGHUP"),
    ],
)
def test_a_stop_signal_becomes_pipe_interrupted_with_the_summary(exc, code, name):
    stats = Stats()
    stats.add_batch(5, 4, 1, 0)
    stop = interrupted(exc, stats, cfg())
    assert isinstance(stop, PipeInterrupted)
    assert (stop.exit_code, stop.summary.stopped, stop.summary.records_in) == (code, name, 5)
    assert partial_of(stop) is stop.summary  # the json document shows it
    assert name in str(stop)


@pytest.mark.parametrize("exc", [ValueError("x"), RuntimeError("y"), SystemExit(3)])
def test_an_error_stays_an_error(exc):
    stats = Stats()
    assert interrupted(exc, stats, cfg()) is None
    assert not stats.stopped
