"""Kinetic's GKE backend: each job runs as one Kubernetes Job.

Usable without the ``kinetic`` client: :func:`submit_job` starts a job whose record and
artifacts (``kinetic_protocol.layout``) are already in its bucket.
"""

from kinetic_gke.backend import GKEBackend, default_bucket_name
from kinetic_gke.manifests import job_manifest
from kinetic_protocol import BackendSettings, JobRecord

__all__ = ["GKEBackend", "default_bucket_name", "job_manifest", "submit_job"]


def submit_job(record: JobRecord, settings: BackendSettings | None = None) -> GKEBackend:
    """Submit a prepared job to its cluster and return the backend to observe it with.

    ``record`` must already be stored with its call descriptor, payload and bundle, as the
    ``kinetic`` client writes them; ``settings`` default to the record's own cluster.
    """
    backend = GKEBackend(settings or BackendSettings.for_record(record))
    backend.submit(record)
    return backend
