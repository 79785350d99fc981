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
    monkeypatch.setattr(
        clients, "_make", lambda cls, conf, settings: made.append(make(cls, conf, settings)) or made[-1]
    )
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


def test_the_transaction_admin_client_skips_a_frozen_bootstrap_broker(kafka, monkeypatch):
    """A frozen broker (SIGSTOP, a long GC pause) accepts connections and never answers.
    kafka-python bootstraps from one server at random and gave that connection the whole
    bootstrap timeout: named first, such a broker failed every KIP-664 command with "no broker
    reachable" while the rest of the cluster answered. A listening socket that never reads
    stands in for it; kafka-python's draw is pinned to the first server, the unlucky one."""
    import socket

    import kafka.net.manager as manager

    def unlucky(brokers):  # the frozen one whenever it is among them
        return next((b for b in brokers if b.port == silent.getsockname()[1]), brokers[0])

    monkeypatch.setattr(manager.random, "choice", unlucky)

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts (the kernel does), never answers: a stopped process's listener
    try:
        frozen = f"127.0.0.1:{silent.getsockname()[1]}"
        settings = resolve([f"{frozen},{kafka.bootstrap}"], timeout=6, env={})
        admin = clients.txn_admin(settings)
        try:
            assert admin.list_transactions() is not None
        finally:
            admin.close()
    finally:
        silent.close()
