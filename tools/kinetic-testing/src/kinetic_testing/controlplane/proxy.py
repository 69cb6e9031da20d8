"""A recording, fault-injecting HTTP proxy in front of the real API server (or any other
HTTP server, such as fake-gcs-server).

Tests that count the requests a backend sends, or need the API server to answer 429/5xx or
slowly, point their kubeconfig here (plain HTTP on loopback, no credentials); the proxy
forwards every request to the real kube-apiserver with the admin client certificate, streams
the answer back (watches and followed logs included), and records what passed. With
``tls=True`` it serves HTTPS with a certificate of the control plane's CA, for clients that
connect as to a GKE endpoint (CA and bearer token, no kubeconfig). It can also hide an API
group from discovery, as a cluster without that extension would answer.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import parse_qsl, urlsplit

from .cluster import ControlPlane
from .pki import issue_serving_cert

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
    """Answer matching requests with `code` (if set) after `delay_s`, `times` times (None: all).

    With `after`, the request is forwarded first and only its answer is replaced: the server
    acted, the client sees a failure (as when a connection drops after the write).
    """

    method: str = ""
    path_contains: str = ""
    code: int | None = None
    delay_s: float = 0.0
    times: int | None = 1
    after: bool = False
    hits: int = field(default=0, init=False)

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        return (not self.method or method == self.method) and self.path_contains in path


class ApiProxy:
    """Forward to `plane`'s API server (or to `upstream`); use as a context manager."""

    def __init__(
        self, plane: ControlPlane | None = None, *, upstream: str = "", tls: bool = False
    ) -> None:
        if plane is None and (tls or not upstream):
            raise ValueError("ApiProxy needs the control plane, unless given a plain upstream")
        self._plane = plane
        self._upstream = urlsplit(upstream or (plane.server if plane else ""))
        self._tls = tls
        self._lock = threading.Lock()
        self._faults: list[ApiFault] = []
        self._hidden_groups: set[str] = set()
        self.requests: list[ProxiedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        scheme = "https" if self._tls else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``, as a GKE cluster's endpoint names its control plane."""
        return self.url.split("://", 1)[1]

    def hide_api_group(self, group: str) -> None:
        """Answer as a cluster that does not serve ``group``: absent from discovery, and 404
        under ``/apis/<group>``."""
        with self._lock:
            self._hidden_groups.add(group)

    def show_api_groups(self) -> None:
        with self._lock:
            self._hidden_groups.clear()

    def inject(self, fault: ApiFault) -> ApiFault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Forget recorded requests and remove every fault and hidden group."""
        with self._lock:
            self.requests.clear()
            self._faults.clear()
            self._hidden_groups.clear()

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

    def _hiding(self, method: str, path: str) -> str:
        """How a request meets the hidden groups: "discovery" (rewrite the answer), "absent"
        (answer 404), or "" (untouched)."""
        with self._lock:
            hidden = set(self._hidden_groups)
        base = path.partition("?")[0].rstrip("/")
        if not hidden or method != "GET":
            return ""
        if base == "/apis":
            return "discovery"
        return "absent" if any(base.startswith(f"/apis/{g}") for g in hidden) else ""

    def _without_hidden(self, payload: bytes) -> bytes:
        document = json.loads(payload)
        with self._lock:
            hidden = set(self._hidden_groups)
        groups = document.get("groups") or document.get("items") or []
        kept = [
            g for g in groups if (g.get("name") or g.get("metadata", {}).get("name")) not in hidden
        ]
        document["groups" if "groups" in document else "items"] = kept
        return json.dumps(document).encode()

    def _fault_for(self, method: str, path: str) -> ApiFault | None:
        with self._lock:
            self.requests.append(ProxiedRequest(method, *_split(path)))
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.hits += 1
                    return fault
        return None

    def __enter__(self) -> Self:
        upstream = self._upstream
        plane = self._plane
        context = plane.admin_ssl_context() if plane and upstream.scheme == "https" else None
        proxy = self

        def connect() -> http.client.HTTPConnection:
            host, port = upstream.hostname or "127.0.0.1", upstream.port
            if context is None:
                return http.client.HTTPConnection(host, port, timeout=120)
            return http.client.HTTPSConnection(host, port, context=context, timeout=120)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # each write at once, not 40 ms after the last

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                fault = proxy._fault_for(self.command, self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if fault is not None and fault.delay_s:
                    time.sleep(fault.delay_s)  # the fault *is* a slow answer
                if fault is not None and fault.code is not None and not fault.after:
                    self._status(fault.code)
                    return
                hiding = proxy._hiding(self.command, self.path)
                if hiding == "absent":
                    self._status(404)
                    return
                connection = connect()
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                headers.pop("Host", None)
                if hiding == "discovery":
                    headers["Accept"] = "application/json"  # the plain list, to filter
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                if fault is not None and fault.code is not None:  # an `after` fault
                    response.read()
                    connection.close()
                    self._status(fault.code)
                    return
                if hiding == "discovery":
                    self._whole(response.status, proxy._without_hidden(response.read()))
                    connection.close()
                    return
                self._stream(connection, response)

            def _whole(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(
                self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse
            ) -> None:
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
                self._whole(code, payload)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self._tls:
            self._server.socket = self._serving_context().wrap_socket(
                self._server.socket, server_side=True
            )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="k8s-api-proxy", daemon=True
        )
        self._thread.start()
        return self

    def _serving_context(self) -> ssl.SSLContext:
        """A certificate for 127.0.0.1 from the control plane's CA."""
        assert self._plane is not None
        directory = self._plane.run_dir / "proxy-certs"
        directory.mkdir(exist_ok=True)
        cert, key = directory / "tls.crt", directory / "tls.key"
        if not cert.exists():
            issue_serving_cert(self._plane.pki, cert, key, hosts=("127.0.0.1",))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        return context

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
