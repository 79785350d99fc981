"""One switch for the speed annex (kxtx.fast): KXTX_FAST=0 turns every fast path off, and each
older variable still turns its own path off (documented as an alias for one release)."""

from __future__ import annotations

import pytest

from kxtx import fast

ALIASES = {
    "native": "KXTX_SPEEDUPS",
    "produce-batch": "KXTX_PRODUCE_BATCH",
    "spark-cds": "KXTX_SPARK_CDS",
    "sandbox-cds": "KXTX_SANDBOX_CDS",
}


@pytest.mark.parametrize("path", sorted(fast.PATHS))
@pytest.mark.parametrize(
    "env, on",
    [
        ({}, True),
        ({"KXTX_FAST": ""}, True),
        ({"KXTX_FAST": "1"}, True),
        ({"KXTX_FAST": "on"}, True),
        ({"KXTX_FAST": "0"}, False),
        ({"KXTX_FAST": "off"}, False),
        ({"KXTX_FAST": " No "}, False),
        ({"KXTX_FAST": "false"}, False),
    ],
)
def test_kxtx_fast_turns_every_path_off(path, env, on):
    assert fast.enabled(path, env) is on


@pytest.mark.parametrize("path, alias", sorted(ALIASES.items()))
@pytest.mark.parametrize("value, on", [("0", False), ("off", False), ("1", True), ("on", True)])
def test_the_older_variables_turn_their_own_path_off(path, alias, value, on):
    assert fast.enabled(path, {alias: value}) is on
    others = [p for p in fast.PATHS if p != path]
    assert all(fast.enabled(p, {alias: value}) for p in others)  # and no other path


def test_the_aliases_are_the_documented_ones():
    assert {p: a for p, a in fast.PATHS.items() if a} == ALIASES


def test_a_path_not_in_the_table_is_a_programming_error():
    with pytest.raises(KeyError):
        fast.enabled("no-such-path", {})


def test_the_switch_reads_the_environment(monkeypatch):
    monkeypatch.setenv("KXTX_FAST", "0")
    assert not fast.enabled("produce")
    monkeypatch.delenv("KXTX_FAST")
    assert fast.enabled("produce")


@pytest.mark.parametrize(
    "env, off",
    [
        ({}, False),
        ({"KXTX_FAST": "1"}, False),
        ({"KXTX_FAST": "0"}, True),
        ({"KXTX_FAST": " Off "}, True),
        ({"KXTX_SPEEDUPS": "0"}, False),
    ],  # an older variable turns one path off, not every one
)
def test_every_path_off_is_kxtx_fast_alone(env, off):
    assert fast.every_path_off(env) is off
