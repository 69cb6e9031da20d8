"""The HTTP side of the Google Cloud fake: routing, JSON error bodies, injected faults and the
request log. The APIs themselves are plain state machines (``container``, ``apis``).

The real client libraries talk to it over their REST transport with anonymous credentials
(``KINETIC_GCP_API_ENDPOINT=http://127.0.0.1:PORT``); it speaks the JSON mapping of each API
(camelCase fields, ``{"error": {code, message, status}}`` bodies).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

__all__ = ["ApiError", "Fault", "Handler", "Route", "RoutedServer", "Unrouted"]

_STATUS = {
    400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
}  # fmt: skip


class ApiError(Exception):
    """An error answered as ``{"error": {...}}`` with HTTP ``code``."""

    def __init__(self, code: int, message: str, status: str = "") -> None:
        super().__init__(message)
        self.code, self.message = code, message
        self.status = status or _STATUS.get(code, "UNKNOWN")


class Unrouted(Exception):
    """Raised by a handler for a request that is another route's (two APIs share a path)."""


Handler = Callable[[dict[str, str], dict[str, list[str]], Any], Any]
"""``(path groups, query, JSON body) -> JSON answer``; raises ApiError."""


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    name: str
    """What tests call it by when injecting a fault: ``container.clusters.create``."""
    handler: Handler


@dataclass
class Fault:
    """Answer the next ``times`` calls of route ``name`` with an error instead."""

    name: str
    code: int = 500
    message: str = "injected failure"
    times: int = 1


class RoutedServer:
    """A threaded HTTP server on a random 127.0.0.1 port; use as a context manager."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.routes: list[Route] = []
        self.faults: list[Fault] = []
        self.calls: list[str] = []
        """Route names of the calls answered (faults included), oldest first."""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def route(self, method: str, pattern: str, name: str, handler: Handler) -> None:
        self.routes.append(Route(method, re.compile(f"^{pattern}$"), name, handler))

    def fail(self, name: str, *, code: int = 500, message: str = "injected failure") -> None:
        """Make the next call of route ``name`` fail with HTTP ``code``."""
        if not any(route.name == name for route in self.routes):
            raise ValueError(f"no route {name!r}; routes: {sorted(r.name for r in self.routes)}")
        with self.lock:
            self.faults.append(Fault(name, code, message))

    def count(self, name: str) -> int:
        with self.lock:
            return self.calls.count(name)

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        handler = type("_Bound", (_HttpHandler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    # -- dispatch --------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        for route in self.routes:
            match = route.pattern.match(path)
            if route.method != method or match is None:
                continue
            with self.lock:
                fault = next((f for f in self.faults if f.name == route.name), None)
                if fault is not None:
                    self.calls.append(route.name)
                    self.faults.remove(fault)
                    raise ApiError(fault.code, fault.message)
                try:
                    answer = route.handler(match.groupdict(), query, body)
                except Unrouted:
                    continue
                self.calls.append(route.name)
                return answer
        raise ApiError(404, f"No route for {method} {path}")


class _HttpHandler(BaseHTTPRequestHandler):
    fake: RoutedServer
    protocol_version = "HTTP/1.1"
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
            status, payload = 200, self.fake.handle(method, parts.path, parse_qs(parts.query), body)
        except json.JSONDecodeError as exc:
            status, payload = 400, _error(ApiError(400, f"Bad JSON: {exc}"))
        except ApiError as exc:
            status, payload = exc.code, _error(exc)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


def _error(exc: ApiError) -> dict[str, Any]:
    return {"error": {"code": exc.code, "message": exc.message, "status": exc.status}}
