"""`kxtx monitor serve`: the collection as a Prometheus exporter over HTTP (`/metrics`).

Collections happen on scrape, not on a timer: a scrape within `min_interval` of the last
collection gets that one's text; a scrape while a collection runs waits for it at most `bound`
seconds and otherwise gets `kxtx_up 0` for "not answered in time" (the slow collection goes on and
is served when done). A scrape that finds the running collection started more than `bound` ago
starts a new one beside it: the old one may have begun while the cluster was frozen and only now
get its answers, and a scrape after the cluster came back must not wait for it when a new one
can finish in time. Never more than two at once, so a slow cluster never piles up collections,
however often and however many Prometheus servers scrape; a collection's text replaces the served
one only when it started later. A failed collection (cluster down) is `kxtx_up 0`, and the server
keeps serving.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kxtx.log import logger
from kxtx.monitor import exposition


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
    ) -> None:
        self._collect = collect
        self._version = version
        self.min_interval = min_interval
        self.bound = bound
        self._clock = clock
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        #: the collections running, oldest first: (their thread, when they started)
        self._runs: list[tuple[threading.Thread, float]] = []
        self._text: str | None = None
        self._at: float | None = None  # when the served text's collection finished
        self._since: float | None = None  # when it started
        #: counters over the exporter's life: `_total`, as the format's rules ask of counters
        self.collections = 0
        self.failures = 0

    #: at most this many collections at once: the running one and one begun beside it
    MAX_RUNNING = 2

    def scrape(self) -> str:
        with self._lock:
            now = self._clock()
            fresh = self._at is not None and now - self._at < self.min_interval
            if self._text is not None and fresh:
                return self._text + self._counters()
            stale = not self._runs or now - self._runs[-1][1] >= self.bound
            if stale and len(self._runs) < self.MAX_RUNNING:
                started = now
                thread = threading.Thread(target=self._run, args=(started,), name="kxtx-collect", daemon=True)
                self._runs.append((thread, started))
                thread.start()
            newest = self._runs[-1]
            self._done.wait_for(lambda: newest not in self._runs, timeout=self.bound)
            if newest in self._runs:  # not done within the bound: say so, keep it going
                return exposition.failure(self._version, self.bound) + self._counters()
            assert self._text is not None
            return self._text + self._counters()

    def _run(self, started: float) -> None:
        try:
            text = self._collect()
            failed = False
        except Exception as exc:  # noqa: BLE001 - reported as kxtx_up 0; the server keeps serving
            logger.warning(f"collection failed: {meaning(exc)}")
            text = exposition.failure(self._version, self._clock() - started)
            failed = True
        with self._lock:
            # an older collection finishing after a newer one is not served over it
            if self._since is None or started >= self._since:
                self._text, self._at, self._since = text, self._clock(), started
            self.collections += 1
            self.failures += int(failed)
            self._runs = [r for r in self._runs if r[0] is not threading.current_thread()]
            self._done.notify_all()

    def _counters(self) -> str:
        total = exposition.Family("collections_total", "Collections this exporter ran.", kind="counter")
        total.samples.append(({}, self.collections))
        failed = exposition.Family(
            "collection_failures_total", "Collections that failed (cluster down, no access).", kind="counter"
        )
        failed.samples.append(({}, self.failures))
        return exposition.render([total, failed])


def meaning(exc: BaseException) -> str:
    """One line saying what went wrong: kxtx's message, a client error's translation, or, for any
    other Python error (a bug: "list index out of range" said nothing), where it happened; the
    traceback goes to the debug log."""
    import traceback

    from kxtx.client.clients import translate
    from kxtx.errors import KxtxError

    if isinstance(exc, KxtxError) or type(exc).__module__.split(".")[0] in (
        "kafka",
        "cimpl",
        "confluent_kafka",
    ):
        return str(translate(exc))
    logger.debug("".join(traceback.format_exception(exc)))
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" in {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"internal error{where} ({type(exc).__name__}: {exc}); a kxtx bug: please report it with --debug's traceback"


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
