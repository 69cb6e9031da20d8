"""The HTTP servers the tests run in this process (the fake Google APIs, the API proxy, the
node agent's kubelet log endpoint) answer on sockets without Nagle's algorithm.

Each writes an answer in pieces (headers, then body or chunks). With Nagle's algorithm a piece
waits for the client's delayed acknowledgement of the one before: 40 ms an answer on Linux,
which was half the time of the provisioning tests. What is checked is the option on the very
socket each server answered on, read as the server closes it (a timed assertion could fail
under load).
"""

from __future__ import annotations

import http.client
import queue
import socket
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kinetic_testing.controlplane.proxy import ApiProxy
from kinetic_testing.gcp_fake.server import JsonHttpServer
from kinetic_testing.nodeagent.logserver import LogServer


class _Answers(JsonHttpServer):
    def respond(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        return 200, {"answer": path}


def _nodelay_on_close(server: Any) -> queue.Queue[bool]:
    """Whether each connection ``server`` (a socketserver) closes had TCP_NODELAY set, as its
    handler thread closes it (after the client has read the answer)."""
    seen: queue.Queue[bool] = queue.Queue()
    close: Callable[[Any], None] = server.shutdown_request

    def recording(request: socket.socket) -> None:
        seen.put(bool(request.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)))
        close(request)

    server.shutdown_request = recording
    return seen


def _get(connection: http.client.HTTPConnection, path: str) -> int:
    connection.request("GET", path, headers={"Connection": "close"})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.status


def test_the_fake_google_apis_answer_without_nagles_algorithm() -> None:
    with _Answers() as fake:
        seen = _nodelay_on_close(fake._server)
        host, port = fake.url.removeprefix("http://").split(":")
        assert _get(http.client.HTTPConnection(host, int(port)), "/v1/x") == 200
        assert seen.get(timeout=10) is True


def test_the_api_proxy_answers_without_nagles_algorithm() -> None:
    with _Answers() as upstream, ApiProxy(upstream=upstream.url) as proxy:
        seen = _nodelay_on_close(proxy._server)
        host, port = proxy.address.split(":")
        assert _get(http.client.HTTPConnection(host, int(port)), "/api/v1/x") == 200
        assert seen.get(timeout=10) is True


def test_the_kubelet_log_endpoint_answers_without_nagles_algorithm(tmp_path: Path) -> None:
    logs = LogServer(tmp_path, lambda *names: None, lambda node: False, lambda line: None)
    seen = _nodelay_on_close(logs._server)
    logs.start()
    try:
        unverified = ssl._create_unverified_context()  # its certificate is self-signed
        connection = http.client.HTTPSConnection("127.0.0.1", logs.port, context=unverified)
        assert _get(connection, "/containerLogs/ns/pod/main") == 404
        assert seen.get(timeout=10) is True
    finally:
        logs.stop()
