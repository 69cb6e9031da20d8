"""What a workload carries to be admitted by Kueue: a pure function of its record.

A record with a queue (``JobRecord.queue``, set only where the cluster serves Kueue) becomes a
workload labelled with its LocalQueue and priority class that starts suspended: Kueue lifts the
suspension when it admits it. Only the top object is labelled, never its pods: Kueue manages a
Job, a JobSet or a LeaderWorkerSet as one workload, and a labelled pod would be one of its own.
"""

from __future__ import annotations

from typing import Any

from kinetic_gke.k8s.kueue_api import (
    MAX_RUN_DURATION,
    MIN_PARALLELISM,
    PRIORITY_LABEL,
    QUEUE_LABEL,
)
from kinetic_protocol import JobRecord

__all__ = ["queue_labels", "queued"]


def queue_labels(record: JobRecord) -> dict[str, str]:
    """The labels that put ``record``'s workload in its queue; none without a queue."""
    if not record.queue:
        return {}
    labels = {QUEUE_LABEL: record.queue}
    if record.priority:
        labels[PRIORITY_LABEL] = record.priority
    return labels


def queued(obj: dict[str, Any], record: JobRecord, *, suspend: bool = True) -> dict[str, Any]:
    """``obj`` (a Job, JobSet or LeaderWorkerSet manifest) made to wait for Kueue; unchanged
    when ``record`` has no queue. ``suspend``: the kind has ``spec.suspend`` (a
    LeaderWorkerSet has none: Kueue gates its pods instead).

    An Indexed Job running several pods at once may be admitted with fewer when the queue's
    free quota is smaller (Kueue's partial admission, down to one), rather than held whole.
    """
    labels = queue_labels(record)
    if not labels:
        return obj
    metadata = obj["metadata"]
    metadata["labels"] = {**metadata.get("labels", {}), **labels}
    spec = obj["spec"]
    if suspend:
        spec["suspend"] = True
    if spec.get("completionMode") == "Indexed" and int(spec.get("parallelism") or 1) > 1:
        metadata["annotations"] = {**metadata.get("annotations", {}), MIN_PARALLELISM: "1"}
    if record.max_run_duration:  # Kueue passes it on to the job's ProvisioningRequest
        duration = {MAX_RUN_DURATION: str(record.max_run_duration)}
        metadata["annotations"] = {**metadata.get("annotations", {}), **duration}
    return obj
