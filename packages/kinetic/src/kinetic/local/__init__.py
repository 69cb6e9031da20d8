"""The ``local`` backend: jobs as detached processes on this machine."""

from kinetic.local.backend import LocalBackend, local_slots
from kinetic_protocol import Backend, BackendSettings

__all__ = ["LocalBackend", "create_backend", "local_slots"]


def create_backend(settings: BackendSettings) -> Backend:
    """Entry point of the ``local`` backend."""
    return LocalBackend(settings)
