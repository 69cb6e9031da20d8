"""The HTTP side of the Google Cloud fakes: a JSON server on loopback, routing, JSON error
bodies, injected faults and the request log. The APIs themselves are plain state machines
(``container``, ``apis``; Cloud Build's in :mod:`kinetic_testing.cloudbuild_state`).

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
from urllib.parse import parse_qs, parse_qsl, urlsplit

__all__ = [
    "ApiError",
    "Fault",
    "Handler",
    "JsonHttpServer",
    "Route",
    "RoutedServer",
    "Unrouted",
    "error_body",
]

_STATUS = {
    400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
}  # fmt: skip


def error_body(code: int, status: str, message: str, **details: Any) -> dict[str, Any]:
    """Google's JSON error envelope."""
    return {"error": {"code": code, "message": message, "status": status, **details}}


class ApiError(Exception):
    """An error answered as ``{"error": {...}}`` with HTTP ``code``; a ``reason`` is sent as
    Google sends it, in an ``ErrorInfo`` detail (with ``metadata``)."""

    def __init__(
        self,
        code: int,
        message: str,
        status: str = "",
        *,
        reason: str = "",
        metadata: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.reason = code, message, reason
        self.metadata = metadata or {}
        self.status = status or _STATUS.get(code, "UNKNOWN")

    def body(self) -> dict[str, Any]:
        if not self.reason:
            return error_body(self.code, self.status, self.message)
        detail = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.reason,
            "domain": "googleapis.com",
            "metadata": self.metadata,
        }
        return error_body(self.code, self.status, self.message, details=[detail])


class Unrouted(Exception):
    """Raised by a handler for a request that is another route's (two APIs share a path)."""


class JsonHttpServer:
    """A threaded HTTP server on a random 127.0.0.1 port answering JSON; a context manager.

    Subclasses answer in :meth:`respond`; request bodies arrive decoded (JSON, or a form as a
    dict), and a HEAD request gets the headers of the answer without its body.
    """

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def respond(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        handler = type("_Bound", (_HttpHandler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


Handler = Callable[[dict[str, str], dict[str, list[str]], Any], Any]
"""``(path groups, query, decoded body) -> JSON answer``; raises ApiError."""


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    name: str
    """What tests call it by when injecting a fault: ``container.clusters.create``."""
    handler: Handler
    service: str = ""
    """The API it belongs to (``container.googleapis.com``), which the project must have
    enabled; empty for routes that need none."""


@dataclass
class Fault:
    """Answer one call of route ``name`` with an error instead, after letting ``skip`` calls
    through; with ``after``, the call is carried out first and only its answer is lost (a
    timeout after the server acted)."""

    name: str
    code: int = 500
    message: str = "injected failure"
    skip: int = 0
    after: bool = False


class RoutedServer(JsonHttpServer):
    """Routes requests to handlers by method and path; records and breaks calls on demand."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.RLock()
        self.routes: list[Route] = []
        self.faults: list[Fault] = []
        self.answers: list[tuple[str, int, bool]] = []
        """``(route name, HTTP status, carried out)`` of every call answered (faults included),
        in order; a call whose answer a fault replaced after it took effect is carried out."""

    def route(
        self, method: str, pattern: str, name: str, handler: Handler, *, service: str = ""
    ) -> None:
        self.routes.append(Route(method, re.compile(f"^{pattern}$"), name, handler, service))

    def check_enabled(self, route: Route, groups: dict[str, str]) -> None:
        """Raise the ApiError Google answers when ``route``'s API is off in the project."""

    def fail(
        self,
        name: str,
        *,
        code: int = 500,
        message: str = "injected failure",
        skip: int = 0,
        after: bool = False,
    ) -> None:
        """Make a call of route ``name`` (the next one, or the one after ``skip`` others) fail
        with HTTP ``code``; ``after``: once the call has taken effect."""
        if not any(route.name == name for route in self.routes):
            raise ValueError(f"no route {name!r}; routes: {sorted(r.name for r in self.routes)}")
        with self.lock:
            self.faults.append(Fault(name, code, message, skip, after))

    @property
    def calls(self) -> list[str]:
        """Route names of the calls answered (faults included), oldest first."""
        with self.lock:
            return [name for name, _status, _done in self.answers]

    def count(self, name: str) -> int:
        """Calls of route ``name``, failed ones included."""
        return self.calls.count(name)

    def carried_out(self, name: str) -> int:
        """Calls of route ``name`` that took effect (even if their answer was then lost)."""
        with self.lock:
            return sum(1 for called, _status, done in self.answers if called == name and done)

    def _take(self, name: str) -> Fault | None:
        """Count one call of ``name`` against its first fault: the fault, if this call is it."""
        fault = next((f for f in self.faults if f.name == name), None)
        if fault is None:
            return None
        if fault.skip:
            fault.skip -= 1
            return None
        self.faults.remove(fault)
        return fault

    def _due(self, name: str) -> Fault | None:
        """The fault the next call of ``name`` meets, without counting the call."""
        fault = next((f for f in self.faults if f.name == name), None)
        return fault if fault is not None and not fault.skip else None

    def respond(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        try:
            return 200, self._dispatch(method, path, query, body)
        except ApiError as exc:
            return exc.code, exc.body()

    def _dispatch(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        for route in self.routes:
            match = route.pattern.match(path)
            if route.method != method or match is None:
                continue
            with self.lock:
                due = self._due(route.name)
                if due is not None and not due.after:
                    self._take(route.name)
                    self.answers.append((route.name, due.code, False))
                    raise ApiError(due.code, due.message)
                try:
                    self.check_enabled(route, match.groupdict())
                    answer = route.handler(match.groupdict(), query, body)
                except Unrouted:
                    continue
                except ApiError as exc:
                    self._take(route.name)
                    self.answers.append((route.name, exc.code, False))
                    raise
                lost = self._take(route.name)
                if lost is not None:
                    self.answers.append((route.name, lost.code, True))
                    raise ApiError(lost.code, lost.message)
                self.answers.append((route.name, 200, True))
                return answer
        raise ApiError(404, f"No route for {method} {path}")


class _HttpHandler(BaseHTTPRequestHandler):
    fake: JsonHttpServer
    protocol_version = "HTTP/1.1"
    timeout = 10  # idle keep-alive connections end instead of lingering
    disable_nagle_algorithm = True
    """The headers and the body go out in two writes: with Nagle's algorithm the body waits
    for the client's delayed acknowledgement of the headers, 40 ms an answer on Linux."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        if "x-www-form-urlencoded" in (self.headers.get("Content-Type") or ""):
            return dict(parse_qsl(raw.decode()))
        return json.loads(raw)

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        try:
            body = self._body()
        except json.JSONDecodeError as exc:
            status, payload = 400, error_body(400, "INVALID_ARGUMENT", f"Bad JSON: {exc}")
        else:
            status, payload = self.fake.respond(
                self.command, parts.path, parse_qs(parts.query), body
            )
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
