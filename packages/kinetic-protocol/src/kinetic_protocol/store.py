"""The object store interface that ``file://`` and ``gs://`` stores implement."""

from typing import Protocol, runtime_checkable

__all__ = ["ObjectStore"]


@runtime_checkable
class ObjectStore(Protocol):
    """A flat key/value blob store with create-only writes.

    Keys are ``/``-separated relative paths (see :mod:`kinetic_protocol.layout`).
    Implementations raise :class:`~kinetic_protocol.errors.ObjectNotFoundError` and
    :class:`~kinetic_protocol.errors.PreconditionFailedError`, never their client's own errors.
    No operation reads, writes or deletes outside the store's root: a link under it is refused.
    """

    @property
    def uri(self) -> str:
        """The store's root, e.g. ``file:///home/me/.kinetic/store`` or ``gs://bucket``."""
        ...

    def read(self, key: str) -> bytes:
        """Return the object's bytes; ``ObjectNotFoundError`` if absent."""
        ...

    def write(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        """Store ``data`` atomically; with ``if_absent``, ``PreconditionFailedError`` if present."""
        ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str) -> list[str]:
        """Every key under ``prefix``, sorted."""
        ...

    def delete(self, key: str) -> None:
        """Remove one object; absent is fine."""
        ...

    def delete_prefix(self, prefix: str) -> int:
        """Remove every object under ``prefix``; return how many were removed."""
        ...

    def url(self, key: str) -> str:
        """Where a user's code can find ``key``: a local path for ``file://``, else a URI."""
        ...
