"""Build (once) the backend and store that a stored job record points at."""

from kinetic.backends import get_backend
from kinetic_protocol import Backend, BackendSettings, JobRecord, ObjectStore

__all__ = ["backend_for", "open_store", "store_for"]


def open_store(uri: str) -> ObjectStore:
    """The store at ``uri``, opened once a session."""
    from kinetic import session
    from kinetic_runtime.stores import open_store as _open

    return session.current().store(uri, lambda: _open(uri))


def backend_for(record: JobRecord) -> Backend:
    return get_backend(record.backend, BackendSettings.for_record(record))


def store_for(record: JobRecord) -> ObjectStore:
    return open_store(record.store_uri)
