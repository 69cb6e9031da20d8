"""The process's caches (backends, object stores, bundles already uploaded), in one place
with an explicit lifetime.

Building a backend or a store client is costly (a Kubernetes client, a GCS client), so each
is built once per settings and reused. A test, or a long-lived service that changes its
configuration, starts afresh with :func:`fresh` instead of reaching into module globals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from kinetic_protocol import Backend, BackendSettings, ObjectStore

__all__ = ["Session", "current", "fresh"]

T = TypeVar("T")


class Session:
    """Caches that live as long as the session; safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._backends: dict[tuple[str, BackendSettings], Backend] = {}
        self._stores: dict[str, ObjectStore] = {}
        self._uploaded: set[tuple[str, str]] = set()
        self.upload_lock = threading.Lock()
        """Held while a bundle is checked and uploaded, so it is uploaded once."""
        self._data_uploaded: set[tuple[str, str]] = set()
        self._data_locks: dict[tuple[str, str], threading.Lock] = {}

    def backend(
        self, name: str, settings: BackendSettings, build: Callable[[], Backend]
    ) -> Backend:
        with self._lock:
            key = (name, settings)
            if key not in self._backends:
                self._backends[key] = build()
            return self._backends[key]

    def store(self, uri: str, build: Callable[[], ObjectStore]) -> ObjectStore:
        with self._lock:
            if uri not in self._stores:
                self._stores[uri] = build()
            return self._stores[uri]

    def bundle_uploaded(self, store_uri: str, key: str) -> bool:
        return (store_uri, key) in self._uploaded

    def mark_bundle_uploaded(self, store_uri: str, key: str) -> None:
        self._uploaded.add((store_uri, key))

    def data_lock(self, store_uri: str, content_hash: str) -> threading.Lock:
        """Held while one piece of local data is checked and uploaded (one lock per data, so
        a batch's different data upload side by side, the same data only once)."""
        with self._lock:
            return self._data_locks.setdefault((store_uri, content_hash), threading.Lock())

    def data_uploaded(self, store_uri: str, content_hash: str) -> bool:
        return (store_uri, content_hash) in self._data_uploaded

    def mark_data_uploaded(self, store_uri: str, content_hash: str) -> None:
        self._data_uploaded.add((store_uri, content_hash))


_current = Session()


def current() -> Session:
    """The session in use."""
    return _current


@contextmanager
def fresh() -> Iterator[Session]:
    """Use a new, empty session inside the block; the previous one is restored after it."""
    global _current  # noqa: PLW0603 - the one process-wide reference, swapped on purpose
    previous, _current = _current, Session()
    try:
        yield _current
    finally:
        _current = previous
