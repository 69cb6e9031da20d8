"""A recording, fault-injecting HTTP proxy in front of the real API server.

Tests that count the requests a backend sends, or need the API server to answer 429/5xx or
slowly, point their kubeconfig here (plain HTTP on loopback, no credentials); the proxy
forwards every request to the real kube-apiserver with the admin client certificate, streams
the answer back (watches and followed logs included), and records what passed.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import parse_qsl, urlsplit

from .cluster import ControlPlane

__all__ = ["ApiFault", "ApiProxy", "ProxiedRequest"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-authenticate",
    }
)


@dataclass(frozen=True)
class ProxiedRequest:
    method: str
    path: str
    """Without the query string."""
    query: str

    @property
    def params(self) -> dict[str, str]:
        """The query string's parameters (the last value of a repeated one)."""
        return dict(parse_qsl(self.query, keep_blank_values=True))


@dataclass
class ApiFault:
    """Answer matching requests with `code` (if set) after `delay_s`, `times` times (None: all)."""

    method: str = ""
    path_contains: str = ""
    code: int | None = None
    delay_s: float = 0.0
    times: int | None = 1
    hits: int = field(default=0, init=False)

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        return (not self.method or method == self.method) and self.path_contains in path


class ApiProxy:
    """Forward to `plane`'s API server; use as a context manager."""

    def __init__(self, plane: ControlPlane) -> None:
        self._plane = plane
        self._lock = threading.Lock()
        self._faults: list[ApiFault] = []
        self.requests: list[ProxiedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def inject(self, fault: ApiFault) -> ApiFault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Forget recorded requests and remove every fault."""
        with self._lock:
            self.requests.clear()
            self._faults.clear()

    def kubeconfig(self, path: Path, *, context: str, namespace: str = "default") -> Path:
        """A kubeconfig whose `context` points at this proxy."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": context,
                    "clusters": [{"name": context, "cluster": {"server": self.url}}],
                    "users": [{"name": context, "user": {}}],
                    "contexts": [
                        {
                            "name": context,
                            "context": {
                                "cluster": context,
                                "user": context,
                                "namespace": namespace,
                            },
                        }
                    ],
                },
                indent=1,
            )
        )
        return path

    def _fault_for(self, method: str, path: str) -> ApiFault | None:
        with self._lock:
            self.requests.append(ProxiedRequest(method, *_split(path)))
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.hits += 1
                    return fault
        return None

    def __enter__(self) -> Self:
        upstream = urlsplit(self._plane.server)
        context = self._plane.admin_ssl_context()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                fault = proxy._fault_for(self.command, self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if fault is not None and fault.delay_s:
                    time.sleep(fault.delay_s)  # the fault *is* a slow answer
                if fault is not None and fault.code is not None:
                    self._status(fault.code)
                    return
                connection = http.client.HTTPSConnection(
                    upstream.hostname or "127.0.0.1", upstream.port, context=context, timeout=120
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                headers.pop("Host", None)
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                self.send_response(response.status)
                bodiless = self.command == "HEAD" or response.status in (204, 304)
                for name, value in response.getheaders():
                    if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                if bodiless:
                    # No body may follow (RFC 9112): a chunked terminator here would be read
                    # as the start of the next response on this keep-alive connection.
                    self.end_headers()
                    connection.close()
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    while chunk := response.read1(65536):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                finally:
                    connection.close()

            def _status(self, code: int) -> None:
                reason = http.client.responses.get(code, "Error")
                payload = json.dumps(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "message": f"injected fault: {code} {reason}",
                        "reason": reason,
                        "code": code,
                    }
                ).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="k8s-api-proxy", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()


def _split(path: str) -> tuple[str, str]:
    base, _, query = path.partition("?")
    return base, query
