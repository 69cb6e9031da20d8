"""The kubelet's ``/containerLogs`` endpoint, so ``pods/log`` works through the real apiserver.

The apiserver proxies ``GET pods/log`` to ``https://<InternalIP>:<kubeletEndpoint.Port>`` and,
without ``--kubelet-certificate-authority``, does not verify our self-signed certificate.
A node marked unreachable gets its connections dropped unanswered, so the apiserver answers 500.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["LogServer", "LogSource", "write_self_signed_cert"]


@dataclass(frozen=True)
class LogSource:
    """Where one container's log lives, whether it may still grow, and on which node."""

    path: Path
    running: Callable[[], bool]
    node: str


Resolver = Callable[[str, str, str], LogSource | None]


def previous_log(path: Path) -> Path:
    """The log of a container's previous run (``kubectl logs --previous``)."""
    return path.with_name(path.name + ".previous")


def rotate_log(path: Path) -> None:
    """A restarted container starts a fresh log; the last run's stays readable as previous."""
    path.replace(previous_log(path))
    path.touch()


def write_self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """A throwaway key and certificate for 127.0.0.1 (nobody verifies it)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kinetic-nodeagent")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = directory / "kubelet.key", directory / "kubelet.crt"
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def _tail(data: bytes, lines: int) -> bytes:
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """A log goes out in several writes (headers, body or chunks): with Nagle's algorithm each
    waits for the API server's delayed acknowledgement of the last, 40 ms on Linux."""
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the apiserver's proxy requests are not worth a line each."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            self.send_error(404, "not found")
            return
        source = self.server.resolve(parts[1], parts[2], parts[3])
        if source is not None and self.server.unreachable(source.node):
            self.close_connection = True  # answer nothing: the kubelet is unreachable
            return
        if source is None or not source.path.exists():
            self.send_error(404, f"container {parts[3]!r} of pod {parts[1]}/{parts[2]} not found")
            return
        query = parse_qs(url.query)
        tail = query.get("tailLines", [None])[0]
        follow = query.get("follow", ["false"])[0] == "true"
        path = source.path
        if query.get("previous", ["false"])[0] == "true":
            path = previous_log(path)
            if not path.exists():
                self.send_error(
                    400, f"previous terminated container {parts[3]!r} in pod {parts[2]!r} not found"
                )
                return
            follow = False
        data = path.read_bytes()
        offset = len(data)
        if tail is not None:
            data = _tail(data, int(tail))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if not follow:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(data)
        self._follow(source, offset)
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    def _follow(self, source: LogSource, offset: int) -> None:
        """Stream what the process appends until it has exited (or the agent stops)."""
        with open(source.path, "rb") as log:
            log.seek(offset)
            while not self.server.stopping.is_set():
                alive = source.running()
                chunk = log.read()
                if chunk:
                    self._chunk(chunk)
                elif not alive:
                    return
                else:
                    time.sleep(0.05)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        port: int,
        resolve: Resolver,
        unreachable: Callable[[str], bool],
        report: Callable[[str], None],
    ) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.resolve = resolve
        self.unreachable = unreachable
        self.report = report
        self.stopping = threading.Event()
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        with self._open_lock:
            self._open.add(connection)
        return connection, address

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def hang_up(self) -> None:
        """Close every connection still open (a kept-alive one, a log being followed): the
        next agent may listen on this port, and the API server must not reach this one's
        handlers through a connection it kept, as it would a restarted kubelet's."""
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: object, client_address: object) -> None:
        """Record handler failures; a client hanging up mid-stream is routine."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError | ssl.SSLError | TimeoutError):
            self.report(f"log server: {type(error).__name__}: {error}")


class _LastPort:
    """The port this process's last log server listened on. The next one takes it again when
    it is free: one agent per test registers the same nodes each time, and a Node whose
    kubelet endpoint is unchanged needs no status write (:meth:`Kube.apply_node`)."""

    port = 0


def _bind(
    resolve: Resolver, unreachable: Callable[[str], bool], report: Callable[[str], None]
) -> _Server:
    server = None
    if _LastPort.port:
        with contextlib.suppress(OSError):  # another agent of this process holds it
            server = _Server(_LastPort.port, resolve, unreachable, report)
    if server is None:
        server = _Server(0, resolve, unreachable, report)
    _LastPort.port = server.server_address[1]
    return server


class LogServer:
    """An HTTPS server on 127.0.0.1 (the port the last one used, when free), run in a daemon
    thread."""

    def __init__(
        self,
        workdir: Path,
        resolve: Resolver,
        unreachable: Callable[[str], bool],
        report: Callable[[str], None],
    ) -> None:
        key, cert = write_self_signed_cert(workdir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server = _bind(resolve, unreachable, report)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
            name="nodeagent-logs",
        )  # fmt: skip

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._server.hang_up()
        self._thread.join(timeout=1)
