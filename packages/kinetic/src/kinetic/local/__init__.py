"""The ``local`` backend: jobs as detached processes on this machine."""

from kinetic.local.backend import LocalBackend
from kinetic.local.settings import local_slots

__all__ = ["LocalBackend", "local_slots"]
