"""`kxtx monitor serve`'s exporter without a broker: collections on scrape, at most one at a time,
the minimum interval, a failed or slow collection answered with kxtx_up 0; the HTTP side."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kxtx.errors import Unavailable
from kxtx.monitor import exposition
from kxtx.monitor.serve import Exporter, meaning, server

OK = exposition.render(exposition.base_families("1", True, 0.1))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _values(text: str) -> dict:
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_scrapes_within_the_minimum_interval_share_a_collection():
    calls = []
    clock = Clock()
    ex = Exporter(lambda: calls.append(1) or OK, "1", min_interval=15, bound=5, clock=clock)
    first = _values(ex.scrape())
    clock.now += 14
    second = _values(ex.scrape())
    assert len(calls) == 1 and first["kxtx_up"] == second["kxtx_up"] == 1
    assert second["kxtx_collections_total"] == 1
    clock.now += 2
    assert _values(ex.scrape())["kxtx_collections_total"] == 2 and len(calls) == 2


def test_slow_collections_are_never_more_than_two_at_once():
    release, started = threading.Event(), threading.Event()
    calls = []

    def slow() -> str:
        calls.append(1)
        started.set()
        release.wait(60)
        return OK

    ex = Exporter(slow, "1", min_interval=0, bound=0.05)
    try:
        # each waits its bound; the second finds the first older than the bound and starts one
        # beside it; the third starts none
        late = [_values(ex.scrape()) for _ in range(3)]
        assert started.is_set() and len(calls) == 2
        assert all(v["kxtx_up"] == 0 and v["kxtx_collections_total"] == 0 for v in late)
    finally:
        release.set()
    ex.bound = 60  # now they finish: their metrics are served
    got = _values(ex.scrape())
    assert got["kxtx_up"] == 1 and len(calls) in (2, 3)


def test_a_collection_older_than_the_bound_is_not_waited_for_nor_served_over_a_newer_one():
    """Issue 43, item 3: a collection begun while the cluster was frozen may get its answers
    only long after; a scrape then starts a new one and is answered by it, and the old one's
    text, when it ends, does not replace the newer one's."""
    release = threading.Event()
    texts = iter(["old", "new"])

    def collect() -> str:
        text = next(texts)
        if text == "old":
            release.wait(60)
        return exposition.render(exposition.base_families(text, True, 0.1))

    ex = Exporter(collect, "1", min_interval=60, bound=0.2)
    assert _values(ex.scrape())["kxtx_up"] == 0  # the old one hangs past the bound
    got = ex.scrape()  # the old one is older than the bound: a new one, answered in time
    assert 'version="new"' in got and _values(got)["kxtx_up"] == 1
    release.set()
    for _ in range(100):  # the old one ends: counted, not served
        if _values(ex.scrape())["kxtx_collections_total"] == 2:
            break
        threading.Event().wait(0.05)
    final = ex.scrape()
    assert 'version="new"' in final and _values(final)["kxtx_collections_total"] == 2


def test_a_failed_collection_is_up_0_and_the_next_one_tries_again():
    outcomes = [RuntimeError("no broker"), OK]

    def collect() -> str:
        out = outcomes.pop(0)
        if isinstance(out, Exception):
            raise out
        return out

    clock = Clock()
    ex = Exporter(collect, "1", min_interval=10, bound=5, clock=clock)
    down = _values(ex.scrape())
    assert (down["kxtx_up"], down["kxtx_collection_failures_total"], down["kxtx_collections_total"]) == (
        0,
        1,
        1,
    )
    clock.now += 11
    up = _values(ex.scrape())
    assert (up["kxtx_up"], up["kxtx_collection_failures_total"], up["kxtx_collections_total"]) == (1, 1, 2)


def test_http_metrics_and_404():
    srv = server(Exporter(lambda: OK, "1", min_interval=0, bound=5), "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=30) as r:
            assert r.status == 200 and r.headers["Content-Type"] == exposition.CONTENT_TYPE
            assert _values(r.read().decode())["kxtx_up"] == 1
        try:
            urllib.request.urlopen(f"{base}/other", timeout=30)
            raise AssertionError("expected 404")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        srv.shutdown()
        srv.server_close()


def _raised(exc: Exception) -> Exception:
    try:
        raise exc
    except Exception as caught:  # noqa: BLE001 - a traceback to name
        return caught


@pytest.mark.parametrize(
    ("exc", "want"),
    [
        (
            Unavailable("reading metadata: the answer lists no broker"),
            "reading metadata: the answer lists no broker",
        ),
        # a Python error is a bug: where it happened, not only its text ("list index out of range")
        (IndexError("list index out of range"), "internal error in test_monitor_serve.py:"),
    ],
)
def test_a_failed_collection_is_logged_as_one_line_with_its_meaning(exc, want):
    got = meaning(_raised(exc))
    assert got.startswith(want) and "\n" not in got, got
    if isinstance(exc, IndexError):
        assert "(IndexError: list index out of range)" in got and "report it" in got
