"""Build (once) the backend and store that a stored job record points at."""

import functools

from kinetic.backends import get_backend
from kinetic_protocol import Backend, BackendSettings, JobRecord, ObjectStore

__all__ = ["backend_for", "open_store", "store_for"]


@functools.lru_cache(maxsize=64)
def open_store(uri: str) -> ObjectStore:
    from kinetic_runtime.stores import open_store as _open

    return _open(uri)


def backend_for(record: JobRecord) -> Backend:
    return get_backend(record.backend, BackendSettings.for_record(record))


def store_for(record: JobRecord) -> ObjectStore:
    return open_store(record.store_uri)
