"""HTTP front end: routes Kubernetes REST paths to `Api`, writes Status errors, streams logs.

A stdlib `ThreadingHTTPServer` speaking HTTP/1.1 (keep-alive, chunked log streams) on
127.0.0.1, so the official `kubernetes` client talks to it exactly as to a real cluster.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .api import Api, Result
from .faults import FaultRegistry
from .kubelet import Kubelet
from .logs import open_log
from .resources import RESOURCES, ResourceType, discovery_document
from .status import ApiError, status_object
from .store import ObjectStore

__all__ = ["RecordedRequest", "ServerContext", "SimulatorServer"]

_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)
_NOT_FOUND = "the server could not find the requested resource"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the simulator received, for tests that count API calls."""

    method: str
    path: str
    query: dict[str, str]


@dataclass
class ServerContext:
    """What the handler threads share."""

    api: Api
    store: ObjectStore
    kubelet: Kubelet
    faults: FaultRegistry
    kubernetes_version: str
    record: Callable[[RecordedRequest], None]
    report_error: Callable[[str], None]
    stopping: threading.Event


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    context: ServerContext
    server_address_text: str = ""

    def __init__(self, context: ServerContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.context = context
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Hang up on idle keep-alive clients so their handler threads end."""
        with self.connections_lock:
            for conn in list(self.connections):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log on the simulator replaces the access log."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def _dispatch(self, method: str) -> None:
        ctx = self.server.context
        url = urlsplit(self.path)
        path = unquote(url.path).rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ctx.record(RecordedRequest(method, path, query))
        delay, failure = ctx.faults.for_request(method, path)
        if delay:
            ctx.stopping.wait(delay)
        try:
            if failure is not None:
                raise ApiError(failure.code, failure.message)
            body = json.loads(raw) if raw.strip() else None
            outcome = self._route(ctx, method, path, query, body)
        except ApiError as exc:
            self._send_json(exc.code, exc.body)
            return
        except json.JSONDecodeError as exc:
            self._send_json(400, status_object(400, f"the request body is not JSON: {exc}"))
            return
        except Exception:
            ctx.report_error(f"{method} {self.path}:\n{traceback.format_exc()}")
            self._send_json(500, status_object(500, "simulator bug; see sim.errors"))
            return
        if isinstance(outcome, Result):
            self._send_json(outcome.code, outcome.body, outcome.headers)
        else:
            self._send_stream(outcome)

    def _route(
        self, ctx: ServerContext, method: str, path: str, query: dict[str, str], body: Any
    ) -> Result | Iterator[bytes] | bytes:
        doc = discovery_document(path, self.server.server_address_text, ctx.kubernetes_version)
        if doc is not None and method == "GET":
            return Result(200, doc)
        match = _PATH.match(path)
        if match is None:
            raise ApiError(404, _NOT_FOUND)
        group = match["group"] or ""
        version = match["core"] or match["version"]
        ns, plural, name, sub = match["ns"], match["plural"], match["name"], match["sub"]
        if not group and plural == "namespaces" and ns is None and method == "GET":
            return self._namespaces(ctx, name)
        res = next(
            (r for r in RESOURCES if (r.group, r.version, r.plural) == (group, version, plural)),
            None,
        )
        if res is None or (sub is not None and sub not in ("status", "log")):
            raise ApiError(404, _NOT_FOUND)
        if ns is None:
            if method == "GET" and name is None:
                return ctx.api.list_collection(res, None, query)
            raise ApiError(404, _NOT_FOUND)
        return self._namespaced(ctx, res, method, ns, name, sub, query, body)

    def _namespaced(
        self,
        ctx: ServerContext,
        res: ResourceType,
        method: str,
        ns: str,
        name: str | None,
        sub: str | None,
        query: dict[str, str],
        body: Any,
    ) -> Result | Iterator[bytes] | bytes:
        api = ctx.api
        if name is None:
            verbs: dict[str, Callable[[], Result]] = {
                "GET": lambda: api.list_collection(res, ns, query),
                "POST": lambda: api.create(res, ns, body),
                "DELETE": lambda: api.delete_collection(res, ns, query, body),
            }
        elif sub == "log":
            if res.plural != "pods" or method != "GET":
                raise ApiError(404, _NOT_FOUND)
            log = open_log(ctx.store, ctx.kubelet, ns, name, query)
            if query.get("follow") == "true":
                return log.follow(ctx.stopping)
            return log.read_all()
        else:
            verbs = {"GET": lambda: api.get(res, ns, name)}
            if sub is None:
                verbs["DELETE"] = lambda: api.delete(res, ns, name, query, body)
        if method not in verbs:
            raise ApiError(
                405,
                f"the simulator does not implement {method} on {path_of(res, sub)}; "
                f"supported: {sorted(verbs)}",
            )
        return verbs[method]()

    @staticmethod
    def _namespaces(ctx: ServerContext, name: str | None) -> Result:
        def doc(ns: str) -> dict[str, Any]:
            return {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns},
                "status": {"phase": "Active"},
            }

        with ctx.store.lock:
            known = sorted(ctx.store.namespaces)
        if name is None:
            return Result(
                200,
                {
                    "apiVersion": "v1",
                    "kind": "NamespaceList",
                    "metadata": {},
                    "items": [doc(n) for n in known],
                },
            )
        if name not in known:
            raise ApiError.not_found("namespaces", "", name)
        return Result(200, doc(name))

    def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, outcome: Iterator[bytes] | bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if isinstance(outcome, bytes):
            self.send_header("Content-Length", str(len(outcome)))
            self.end_headers()
            self.wfile.write(outcome)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in outcome:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def path_of(res: ResourceType, sub: str | None) -> str:
    """`jobs.batch` or `pods/log`, for messages."""
    base = f"{res.plural}.{res.group}" if res.group else res.plural
    return f"{base}/{sub}" if sub else base


class SimulatorServer:
    """Owns the listening socket and its serving thread."""

    def __init__(self, context: ServerContext) -> None:
        self._httpd = _HTTPServer(context)
        port = self._httpd.server_address[1]
        self.port = int(port)
        self._httpd.server_address_text = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"k8s-sim-http-{self.port}",
            daemon=True,
        )

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting, hang up on clients, release the port."""
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        self._thread.join(timeout=5)
