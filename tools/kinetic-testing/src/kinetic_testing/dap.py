"""A small Debug Adapter Protocol client, enough to drive debugpy from a test.

Messages are JSON bodies framed by a ``Content-Length`` header over a TCP socket.
``request`` sends one request and reads until its response, keeping every event (and any
other response) it passes: debugpy sends events before some responses (``initialize`` is
answered only after at least one event) and answers ``attach`` only after
``configurationDone``, so ``wait_event`` and ``response`` find them later. Every read has a
deadline.
"""

import json
import socket
import time
from collections.abc import Callable
from typing import Any, Self

__all__ = ["DapClient", "DapError"]

_DEFAULT_TIMEOUT_S = 30.0


class DapError(AssertionError):
    """A request failed, the adapter closed the connection, or a deadline passed."""


class DapClient:
    def __init__(self, host: str, port: int, *, timeout: float = _DEFAULT_TIMEOUT_S) -> None:
        self.timeout = timeout
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._buffer = b""
        self._seq = 0
        self.events: list[dict[str, Any]] = []
        """Events read and not yet taken by ``wait_event``, oldest first."""
        self._responses: dict[int, dict[str, Any]] = {}
        """Responses read while waiting for something else, by request ``seq``."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def send(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        """Send a request without waiting for its response; returns its ``seq``."""
        self._seq += 1
        message: dict[str, Any] = {"seq": self._seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        body = json.dumps(message).encode()
        self._sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self._seq

    def request(
        self, command: str, arguments: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request and return its (successful) response, keeping the events before it."""
        return self.response(self.send(command, arguments), command, timeout=timeout)

    def response(self, seq: int, command: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Read until the response to request ``seq``; a DapError if it failed."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while seq not in self._responses:
            self._keep(self._read(deadline, f"the response to {command!r}"))
        message = self._responses.pop(seq)
        if not message.get("success"):
            raise DapError(f"{command} failed: {message.get('message')!r} {message}")
        return message

    def wait_event(self, name: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Take the first kept or next event called ``name``, reading until the deadline."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            for index, event in enumerate(self.events):
                if event.get("event") == name:
                    return self.events.pop(index)
            self._keep(self._read(deadline, f"a {name!r} event"))

    def _keep(self, message: dict[str, Any]) -> None:
        if message.get("type") == "event":
            self.events.append(message)
        elif message.get("type") == "response":
            self._responses[int(message["request_seq"])] = message

    def _read(self, deadline: float, what: str) -> dict[str, Any]:
        header_end = self._fill_until(lambda: self._buffer.find(b"\r\n\r\n"), deadline, what)
        length = None
        for line in self._buffer[:header_end].split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None:
            raise DapError(f"a DAP message without Content-Length: {self._buffer[:header_end]!r}")
        start = header_end + 4
        self._fill_until(lambda: 0 if len(self._buffer) >= start + length else -1, deadline, what)
        body, self._buffer = self._buffer[start : start + length], self._buffer[start + length :]
        message: dict[str, Any] = json.loads(body)
        return message

    def _fill_until(self, found: Callable[[], int], deadline: float, what: str) -> int:
        """Receive until ``found()`` is not -1; return it."""
        while (position := found()) == -1:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DapError(f"timed out waiting for {what}")
            self._sock.settimeout(remaining)
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                raise DapError(f"timed out waiting for {what}") from None
            if not chunk:
                raise DapError(f"the debug adapter closed the connection while waiting for {what}")
            self._buffer += chunk
        return position
