"""kxtx.fast.gcpause: the cyclic collector off inside the block, as it was after it."""

from __future__ import annotations

import gc
from contextlib import nullcontext

import pytest

from kxtx.fast import gcpause
from tests.conftest import fast_only

pytestmark = fast_only  # a fast path's own code (kxtx.fast), which KXTX_FAST=0 turns off


@pytest.fixture
def collector():
    """The collector as a test sets it, put back as it was afterwards."""
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("on_before", [True, False])
@pytest.mark.parametrize("raises", [False, True])
def test_paused_inside_and_as_before_after(collector, on_before, raises):
    (gc.enable if on_before else gc.disable)()
    inside = []
    with pytest.raises(RuntimeError) if raises else nullcontext(), gcpause.paused() as was_on:
        inside.append((gc.isenabled(), was_on))
        if raises:
            raise RuntimeError("the block failed")
    assert inside == [(False, on_before)]
    assert gc.isenabled() is on_before


def test_a_nested_pause_leaves_the_collector_off_until_the_outer_one_ends(collector):
    gc.enable()
    with gcpause.paused():
        with gcpause.paused() as was_on:
            assert was_on is False
        assert not gc.isenabled()
    assert gc.isenabled()
