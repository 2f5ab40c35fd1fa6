"""A local mirror of the two services, serving a snapshot with the real APIs' shapes: WDQS's
SPARQL 1.1 protocol (JSON results, a real SPARQL engine) and the Open Library endpoints the
pipeline uses. It binds 127.0.0.1 (another address only when asked, inside a container
network), can rate-limit (429 + Retry-After), inject faults, and logs every request so tests
can count requests and check timing."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from kitab.simulate.mirror.faults import Fault, FaultPlan, RandomFaults, TokenBucket

SPARQL_JSON = "application/sparql-results+json"
# WDQS's answer to a query stopped at its 60 s limit (HTTP 500): a stack trace naming this
WDQS_TIMEOUT_BODY = (
    b"SPARQL-QUERY: queryStr=...\njava.util.concurrent.ExecutionException: "
    b"java.util.concurrent.TimeoutException\n\tat java.util.concurrent.FutureTask.report"
    b"(FutureTask.java:122)\n"
)
NO_ANSWER = 0  # logged status of a request whose connection was dropped unanswered (fault "timeout")


@dataclass(frozen=True)
class LogEntry:
    t: float  # time.monotonic() when the request arrived
    method: str
    path: str
    query: str
    status: int
    user_agent: str
    service: str  # wikidata | openlibrary | control
    fault: str | None = None  # the injected fault, if any: 429, 503, ..., cut, slow, timeout


class Mirror:
    """``with Mirror(snapshot) as m: m.url`` — or ``start()`` / ``stop()``.

    ``faults``: a seeded random mix of faults (a ``RandomFaults`` or its SPEC string, as
    ``kitab mirror serve --faults``); ``wdqs_timeout_rows``: a SPARQL query whose result has
    more rows than this is answered as WDQS answers a query over its time limit. Both can be
    changed later through ``mirror.faults``."""

    def __init__(
        self,
        snapshot: Path,
        *,
        port: int = 0,
        ol_rate: float | None = 25.0,
        wdqs_rate: float | None = None,
        host: str = "127.0.0.1",
        faults: RandomFaults | str | None = None,
        wdqs_timeout_rows: int | None = None,
    ):
        from kitab.simulate.mirror.rdfstore import load_store
        from kitab.sources.snapshot.olindex import OLIndex

        self.snapshot = Path(snapshot)
        self.store = load_store(self.snapshot)
        self.ol = OLIndex.from_snapshot(self.snapshot)
        self.faults = FaultPlan(RandomFaults.parse(faults) if isinstance(faults, str) else faults, wdqs_timeout_rows)
        self.limits = {
            "openlibrary": TokenBucket(ol_rate, burst=max(1.0, ol_rate)) if ol_rate else None,
            "wikidata": TokenBucket(wdqs_rate) if wdqs_rate else None,
        }
        self._log: list[LogEntry] = []
        self._log_lock = threading.Lock()
        # One SPARQL evaluation at a time, as WDQS asks of each client.
        self._sparql_lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Mirror:
        self._thread = threading.Thread(target=self._server.serve_forever, name="kitab-mirror", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Mirror:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- request log -------------------------------------------------------------------
    def record(self, entry: LogEntry) -> None:
        with self._log_lock:
            self._log.append(entry)

    def log(self, service: str | None = None) -> list[LogEntry]:
        with self._log_lock:
            return [e for e in self._log if service is None or e.service == service]

    def request_count(self) -> int:
        return len([e for e in self.log() if e.service != "control"])

    def clear_log(self) -> None:
        with self._log_lock:
            self._log.clear()

    # -- answers -----------------------------------------------------------------------
    def sparql(self, query: str) -> tuple[int, str, bytes]:
        from kitab.simulate.mirror.rdfstore import query_json

        with self._sparql_lock:
            try:
                payload = query_json(self.store, query)
            except ValueError as exc:  # WDQS answers a parse error with 400 and a text body
                return 400, "text/plain; charset=utf-8", f"MalformedQueryException: {exc}".encode()
        limit = self.faults.wdqs_timeout_rows
        if limit is not None and len(json.loads(payload).get("results", {}).get("bindings", [])) > limit:
            return 500, "text/plain; charset=utf-8", WDQS_TIMEOUT_BODY
        return 200, SPARQL_JSON, payload

    def openlibrary(self, path: str, params: dict[str, str]) -> tuple[int, object]:
        def num(name: str, default: int) -> int:
            try:
                return int(params.get(name, default))
            except ValueError:
                return default

        if path == "/search.json":
            return 200, self.ol.search_works(
                author_key=params.get("author_key"),
                title=params.get("title"),
                author=params.get("author"),
                fields=params.get("fields"),
                limit=num("limit", 100),
                page=num("page", 1),
                offset=int(params["offset"]) if params.get("offset", "").isdigit() else None,
            )
        if path == "/search/authors.json":
            return 200, self.ol.search_authors(params.get("q", ""), limit=num("limit", 100), offset=num("offset", 0))
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "authors" and parts[1].endswith(".json"):
            key = parts[1][:-5]
            record = self.ol.author(key)
            return (200, record) if record else (404, {"error": "notfound", "key": f"/authors/{key}"})
        if len(parts) == 2 and parts[0] == "works" and parts[1].endswith(".json"):
            key = parts[1][:-5]
            record = self.ol.work(key)
            return (200, record) if record else (404, {"error": "notfound", "key": f"/works/{key}"})
        if len(parts) == 3 and parts[0] == "works" and parts[2] == "editions.json":
            if self.ol.work(parts[1]) is None:
                return 404, {"error": "notfound", "key": f"/works/{parts[1]}"}
            return 200, self.ol.editions(parts[1], limit=num("limit", 50), offset=num("offset", 0))
        return 404, {"error": "notfound", "key": path}


def _handler_for(mirror: Mirror) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "kitab-mirror/1"

        def log_message(self, *args) -> None:  # the mirror keeps its own structured log
            pass

        def do_GET(self) -> None:
            self._handle("GET", b"")

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                self.send_error(400, "bad Content-Length")
                return
            self._handle("POST", self.rfile.read(length) if length > 0 else b"")

        def _handle(self, method: str, body: bytes) -> None:
            arrived = time.monotonic()
            parts = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            service = (
                "control"
                if parts.path.startswith("/_mirror/")
                else "wikidata"
                if parts.path == "/sparql"
                else "openlibrary"
            )
            self.injected: Fault | None = None
            self._entry = (arrived, method, parts.path, parts.query, service)
            status = self._respond(method, parts.path, parts.query, params, body, service)
            if status == NO_ANSWER:  # nothing sent: logged here, before the connection drops
                self._record(status)

        def _record(self, status: int) -> None:
            """Log this request. Called before the answer's bytes go out: a client that has its
            answer finds the request in the log (logged after, a test reading the log at once
            could miss the last request when the server thread lost the core in between)."""
            arrived, method, path, query, service = self._entry
            mirror.record(
                LogEntry(
                    arrived,
                    method,
                    path,
                    query,
                    status,
                    self.headers.get("User-Agent", ""),
                    service,
                    self.injected.label if self.injected else None,
                )
            )

        def _respond(self, method: str, path: str, query: str, params: dict, body: bytes, service: str) -> int:
            if service == "control":
                return self._control(method, path, body)
            fault = self.injected = mirror.faults.take(path, query, body, method)
            if fault and fault.kind in ("slow", "timeout"):
                time.sleep(fault.delay)
            if fault and fault.kind == "timeout":  # no answer at all: the client sees the connection drop
                self.close_connection = True
                return NO_ANSWER
            if fault and fault.kind == "status":
                return self._send(
                    fault.status, "application/json", b'{"error": "injected fault"}', retry_after=fault.retry_after
                )
            limit = mirror.limits.get(service)
            wait = limit.acquire(self.headers.get("User-Agent", "") + self.client_address[0]) if limit else None
            if wait is not None:
                return self._send(429, "text/plain", b"Too Many Requests", retry_after=wait)
            if service == "wikidata":
                query = self._sparql_query(method, params, body)
                if query is None:
                    return self._send(400, "text/plain", b"missing query")
                status, ctype, payload = mirror.sparql(query)
            else:
                status, data = mirror.openlibrary(path, params)
                ctype, payload = "application/json", json.dumps(data, ensure_ascii=False).encode()
            return self._send(status, ctype, payload, cut=bool(fault and fault.kind == "cut"))

        def _sparql_query(self, method: str, params: dict, body: bytes) -> str | None:
            if method == "GET":
                return params.get("query")
            ctype = self.headers.get("Content-Type", "")
            if ctype.startswith("application/sparql-query"):
                return body.decode()
            form = {k: v[-1] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
            return form.get("query")

        def _control(self, method: str, path: str, body: bytes) -> int:
            if path == "/_mirror/log" and method == "GET":
                payload = json.dumps([asdict(e) for e in mirror.log()]).encode()
                return self._send(200, "application/json", payload)
            if path == "/_mirror/faults" and method == "POST":
                try:
                    mirror.faults.add(Fault(**json.loads(body or b"{}")))
                except (TypeError, ValueError) as exc:
                    return self._send(400, "text/plain", str(exc).encode())
                return self._send(204, "text/plain", b"")
            return self._send(404, "text/plain", b"unknown control endpoint")

        def _send(
            self, status: int, ctype: str, payload: bytes, *, retry_after: int | None = None, cut: bool = False
        ) -> int:
            self._record(status)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            if retry_after is not None:
                self.send_header("Retry-After", str(retry_after))
            if cut:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2] if cut else payload)
            if cut:
                self.close_connection = True
            return status

    return Handler
