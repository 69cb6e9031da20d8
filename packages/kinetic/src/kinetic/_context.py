"""Build (once) the backend and store that a stored job record points at."""

from typing import cast

from kinetic.backends import get_backend
from kinetic_protocol import (
    ArrayBackend,
    Backend,
    BackendSettings,
    ConfigError,
    JobRecord,
    ObjectStore,
)

__all__ = ["array_backend_for", "backend_for", "open_store", "store_for"]


def open_store(uri: str) -> ObjectStore:
    """The store at ``uri``, opened once a session."""
    from kinetic import session
    from kinetic_runtime.stores import open_store as _open

    return session.current().store(uri, lambda: _open(uri))


def backend_for(record: JobRecord) -> Backend:
    return get_backend(record.backend, BackendSettings.for_record(record))


def store_for(record: JobRecord) -> ObjectStore:
    return open_store(record.store_uri)


def array_backend_for(record: JobRecord) -> ArrayBackend:
    """The backend of an array batch's child ``record`` (or template)."""
    backend = backend_for(record)
    if not backend.capabilities.array_batches:
        raise ConfigError(
            f"Backend {record.backend!r} holds no array batches, yet batch {record.group_id} "
            "is one: it was written by another version of that backend."
        )
    return cast(ArrayBackend, backend)
