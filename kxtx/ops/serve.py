"""`kxtx monitor serve`: the collection as a Prometheus exporter over HTTP (`/metrics`).

Collections happen on scrape, not on a timer, and at most one at a time: a scrape within
`min_interval` of the last collection gets that one's text; a scrape while a collection runs waits
for it at most `bound` seconds and otherwise gets the last text with `kxtx_up 0` for "not answered
in time" (the slow collection goes on and is served when done). So a slow cluster never piles up
collections, however often and however many Prometheus servers scrape. A failed collection (cluster
down) is `kxtx_up 0`, and the server keeps serving.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kxtx.log import logger
from kxtx.ops import exposition


class Exporter:
    """What /metrics answers. `collect()` returns the exposition text of one collection (raising
    when the cluster could not be read); `clock` is time.monotonic (tests give their own)."""

    def __init__(
        self,
        collect: Callable[[], str],
        version: str,
        min_interval: float,
        bound: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._collect = collect
        self._version = version
        self.min_interval = min_interval
        self.bound = bound
        self._clock = clock
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._running: threading.Thread | None = None
        self._text: str | None = None
        self._at: float | None = None
        #: counters over the exporter's life: `_total`, as the format's rules ask of counters
        self.collections = 0
        self.failures = 0

    def scrape(self) -> str:
        with self._lock:
            fresh = self._at is not None and self._clock() - self._at < self.min_interval
            if self._text is not None and fresh:
                return self._text + self._counters()
            if self._running is None:
                self._running = threading.Thread(target=self._run, name="kxtx-collect", daemon=True)
                self._running.start()
            running = self._running
            self._done.wait_for(lambda: self._running is not running, timeout=self.bound)
            if self._running is running:  # not done within the bound: say so, keep it going
                return exposition.failure(self._version, self.bound) + self._counters()
            assert self._text is not None
            return self._text + self._counters()

    def _run(self) -> None:
        started = self._clock()
        try:
            text = self._collect()
            failed = False
        except Exception as exc:  # noqa: BLE001 - reported as kxtx_up 0; the server keeps serving
            logger.warning(f"collection failed: {exc}")
            text = exposition.failure(self._version, self._clock() - started)
            failed = True
        with self._lock:
            self._text, self._at = text, self._clock()
            self.collections += 1
            self.failures += int(failed)
            self._running = None
            self._done.notify_all()

    def _counters(self) -> str:
        total = exposition.Family("collections_total", "Collections this exporter ran.", kind="counter")
        total.samples.append(({}, self.collections))
        failed = exposition.Family(
            "collection_failures_total", "Collections that failed (cluster down, no access).", kind="counter"
        )
        failed.samples.append(({}, self.failures))
        return exposition.render([total, failed])


def handler(exporter: Exporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, exposition.CONTENT_TYPE, exporter.scrape())
            elif path == "/":
                self._send(200, "text/html; charset=utf-8", '<a href="/metrics">/metrics</a>\n')
            else:
                self._send(404, "text/plain; charset=utf-8", "not found: try /metrics\n")

        def _send(self, code: int, content_type: str, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            logger.debug("http: " + format % args)

    return Handler


def server(exporter: Exporter, bind: str, port: int) -> ThreadingHTTPServer:
    """Listening already (port 0: any free port; `server.server_address` says which)."""
    srv = ThreadingHTTPServer((bind, port), handler(exporter))
    srv.daemon_threads = True
    return srv
