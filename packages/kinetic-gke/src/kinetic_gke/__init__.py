"""Kinetic's GKE backend: each job runs as one Kubernetes Job.

Usable without the ``kinetic`` client: :func:`submit_job` starts a job whose record and
artifacts (``kinetic_protocol.layout``) are already in its bucket.

Names are loaded from their modules on first use, so listing the commands this package adds
to ``kinetic --help`` (``kinetic_gke.cli``) does not load the backend.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kinetic_gke.backend import GKEBackend, default_bucket_name
    from kinetic_gke.manifests import job_manifest
    from kinetic_protocol import BackendSettings, JobRecord

__all__ = ["GKEBackend", "default_bucket_name", "job_manifest", "submit_job"]

_MODULE_OF = {
    "GKEBackend": "backend",
    "default_bucket_name": "backend",
    "job_manifest": "manifests",
}


def submit_job(record: "JobRecord", settings: "BackendSettings | None" = None) -> "GKEBackend":
    """Submit a prepared job to its cluster and return the backend to observe it with.

    ``record`` must already be stored with its call descriptor, payload and bundle, as the
    ``kinetic`` client writes them; ``settings`` default to the record's own cluster.
    """
    from kinetic_gke.backend import GKEBackend
    from kinetic_protocol import BackendSettings

    backend = GKEBackend(settings or BackendSettings.for_record(record))
    backend.submit(record)
    return backend


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'kinetic_gke' has no attribute {name!r}")
    value = getattr(import_module(f"kinetic_gke.{module}"), name)
    globals()[name] = value
    return value
