"""Job records for unit tests: one place that knows every field a ``JobRecord`` requires."""

from typing import Any

from kinetic_protocol import JobRecord

__all__ = ["job_record"]


def job_record(**changes: Any) -> JobRecord:
    """A record of ``f`` on ``cpu`` on the local backend, with no job named yet (a batch's
    template); ``changes`` sets any field."""
    fields: dict[str, Any] = {
        "job_id": "",
        "backend": "local",
        "project": "",
        "cluster_name": "",
        "zone": "",
        "namespace": "",
        "bucket_name": "file:///store",
        "k8s_name": "",
        "image_uri": "",
        "accelerator": "cpu",
        "func_name": "f",
        "display_name": "f on cpu",
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    return JobRecord(**(fields | changes))
