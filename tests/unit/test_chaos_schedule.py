"""The chaos harness's schedule (tests/integration/chaos.py): reproducible from its seed, spread over
the run, every role hit before any twice, outage lengths within their bounds."""

from __future__ import annotations

import pytest

from tests.integration.chaos import ACTIONS, CI_SEED, DOWN_S, _leader_id, schedule, seed_from_env

ROLES = ("input leader", "txn coordinator", "group coordinator", "controller")


@pytest.mark.parametrize("seed", [0, 1, 29, 2**31 - 1])
@pytest.mark.parametrize("faults", [1, 3, 4, 9, 40])
def test_a_schedule_is_spread_bounded_and_fair(seed, faults):
    got = schedule(seed, faults, ROLES, span=(0.1, 0.8))
    assert len(got) == faults
    width = 0.7 / faults
    for i, f in enumerate(got):
        assert 0.1 + width * i - 1e-3 <= f.at <= 0.1 + width * (i + 1) + 1e-3, (i, f)
        assert f.action in ACTIONS
        low, high = DOWN_S[f.action]
        assert low <= f.down_s <= high, f
    assert [f.at for f in got] == sorted(f.at for f in got)
    for start in range(0, faults, len(ROLES)):  # each round of len(ROLES) faults hits each role once
        chunk = [f.role for f in got[start : start + len(ROLES)]]
        assert len(set(chunk)) == len(chunk), chunk


def test_the_seed_replays_the_schedule():
    assert schedule(7, 12, ROLES) == schedule(7, 12, ROLES)
    assert schedule(7, 12, ROLES) != schedule(8, 12, ROLES)


def test_every_action_is_drawn_over_a_long_schedule():
    got = schedule(3, 200, ROLES)
    assert {f.action for f in got} == set(ACTIONS)
    assert {f.role for f in got} == set(ROLES)


@pytest.mark.parametrize("faults,roles", [(0, ROLES), (3, ())])
def test_an_empty_schedule_is_refused(faults, roles):
    with pytest.raises(ValueError):
        schedule(1, faults, roles)


def test_the_controller_is_the_quorum_leader():
    response = {
        "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"leader_id": 2, "leader_epoch": 5}]}]
    }
    assert _leader_id(response) == 2


@pytest.mark.parametrize(
    "env,expected",
    [({"KXTX_CHAOS_SEED": "5"}, 5), ({"KXTX_CHAOS_SEED": "5", "CI": "true"}, 5), ({"CI": "true"}, CI_SEED)],
)
def test_the_seed_comes_from_the_environment(monkeypatch, env, expected):
    monkeypatch.delenv("KXTX_CHAOS_SEED", raising=False)
    monkeypatch.delenv("CI", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert seed_from_env() == expected


def test_outside_ci_every_run_has_a_new_seed(monkeypatch):
    monkeypatch.delenv("KXTX_CHAOS_SEED", raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert len({seed_from_env() for _ in range(5)}) > 1
