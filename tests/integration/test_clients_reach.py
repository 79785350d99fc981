"""kxtx.client.clients.reach against a real broker: the admin client that probed the cluster is
handed, connected, to the first admin() with the same settings, once; any other call gets a new one."""

from __future__ import annotations

import pytest

from kxtx.client import clients
from kxtx.client.settings import resolve

pytestmark = pytest.mark.kafka


def test_the_probing_admin_client_is_handed_over_once(kafka):
    settings = resolve([kafka.bootstrap], timeout=10, env={})
    clients.reach(settings, again=True)
    probe = clients._spare[settings.bootstrap][1]
    first = clients.admin(settings)
    assert first is probe
    assert first.list_topics(timeout=10).brokers  # it still works for its new owner
    assert clients.admin(settings) is not probe  # handed over once
    # settings of its own (or other settings) get a client of their own; the probe stays spare
    clients.reach(settings, again=True)
    probe = clients._spare[settings.bootstrap][1]
    assert clients.admin(settings, **{"client.id": "kxtx-test"}) is not probe
    other = resolve([kafka.bootstrap], timeout=11, env={})
    assert clients.admin(other) is not probe
    assert clients.admin(settings) is probe
