"""Fixtures for the test tools' own tests."""

from __future__ import annotations

import ssl
from typing import Any

import pytest


@pytest.fixture
def tls_handshakes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The peer of every TLS connection any client in this process opens from now on."""
    peers: list[str] = []
    real = ssl.SSLSocket.do_handshake

    def counted(sock: ssl.SSLSocket, *args: Any, **kwargs: Any) -> None:
        real(sock, *args, **kwargs)
        host, port = sock.getpeername()[:2]
        peers.append(f"{host}:{port}")

    monkeypatch.setattr(ssl.SSLSocket, "do_handshake", counted)
    return peers
