"""kxtx.client.clients.probing_admin against a real broker: the admin client that found the cluster
reachable is the one returned, connected; once the cluster was reached, a new client each time.
Nothing is kept for later: an unused probe goes with its connection."""

from __future__ import annotations

import pytest

from kxtx.client import clients
from kxtx.client.settings import resolve

pytestmark = pytest.mark.kafka


def test_the_admin_client_that_probed_is_the_one_returned(kafka, monkeypatch):
    settings = resolve([kafka.bootstrap], timeout=10, env={})
    clients._reached.discard(settings.bootstrap)
    made = []
    make = clients._make
    monkeypatch.setattr(clients, "_make", lambda cls, conf: made.append(make(cls, conf)) or made[-1])
    first = clients.probing_admin(settings)
    assert made == [first]  # the probe itself: no second client
    assert settings.bootstrap in clients._reached
    assert first.list_topics(timeout=10).brokers
    second = clients.probing_admin(settings)  # reached already: an admin client of its own
    assert second is not first
    assert second.list_topics(timeout=10).brokers
    # reach() keeps nothing: what it returns is the caller's or nobody's
    assert clients.reach(settings) is None
    probe = clients.reach(settings, again=True)
    assert probe is not None and probe is not clients.admin(settings)
