"""A TCP relay on this machine: a debugger connects to the local port the user chose (the one
their ``launch.json`` names), and the bytes go to the port the job's debug server listens on.

Used where the job runs on this machine (``local``) but its server took a port of its own (any
free one, since several debug jobs may run at once).
"""

import contextlib
import socket
import threading
from collections.abc import Callable

__all__ = ["THREAD_NAME", "PortRelay"]

THREAD_NAME = "kinetic-debug-relay"
"""The name of every thread a relay runs (its listener, and two per relayed connection)."""

_CONNECT_TIMEOUT = 10.0
"""How long one connection waits for the job's server to accept it."""
_JOIN_TIMEOUT = 10.0
"""How long :meth:`PortRelay.close` waits for each of its threads (they end as soon as their
sockets are shut down; only a connection still being made to the server takes longer)."""


class PortRelay:
    """Listen on ``127.0.0.1:local_port`` and relay each connection to ``target``.

    Raises ``OSError`` when the local port cannot be taken. :meth:`close` stops listening,
    ends the connections it relays and waits for its threads; the target is never signalled.
    """

    def __init__(self, local_port: int, target: tuple[str, int]) -> None:
        self._listener = socket.create_server(("127.0.0.1", local_port))
        self.port: int = self._listener.getsockname()[1]
        self._target = target
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._start(self._accept)

    def _start(self, run: Callable[..., None], *args: socket.socket) -> None:
        """Start a thread of this relay (the caller holds the lock, or is the constructor)."""
        thread = threading.Thread(target=run, args=args, daemon=True, name=THREAD_NAME)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # the listener was shut down: the relay is closing
                return
            try:
                upstream = socket.create_connection(self._target, timeout=_CONNECT_TIMEOUT)
                upstream.settimeout(None)
            except OSError:  # the server is gone or refuses: the debugger sees the close
                client.close()
                continue
            with self._lock:
                if self._closed:
                    _close(client, upstream)
                    return
                self._open.update((client, upstream))
                self._start(self._pump, client, upstream)
                self._start(self._pump, upstream, client)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:  # one side ended: the connection is over for both
            with self._lock:
                self._open.difference_update((src, dst))
            _close(src, dst)

    def close(self) -> None:
        """Stop relaying and wait until every thread of the relay has ended. Idempotent."""
        with self._lock:
            self._closed = True
            sockets = [self._listener, *self._open]
            self._open.clear()
            threads = list(self._threads)
        _close(*sockets)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(_JOIN_TIMEOUT)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept() or recv()
        sock.close()
