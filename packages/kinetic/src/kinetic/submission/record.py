"""The durable record of a job about to be submitted (its handle, as stored)."""

from dataclasses import dataclass
from datetime import UTC, datetime

from kinetic._version import kinetic_version
from kinetic.options import RunOptions
from kinetic.submission.target import Target
from kinetic_protocol import JobRecord
from kinetic_protocol.capacity import ON_DEMAND, SPOT
from kinetic_protocol.host_groups import shape_label

__all__ = ["Group", "job_record"]


@dataclass(frozen=True)
class Group:
    """Batch membership of a child job."""

    group_id: str
    index: int
    kind: str = "map"


def job_record(
    target: Target,
    func_name: str,
    job_id: str,
    *,
    group: Group | None = None,
    attempt: int = 0,
    created_at: str | None = None,
) -> JobRecord:
    """The durable record of a job about to be submitted to ``target``."""
    options, settings = target.options, target.settings
    return JobRecord(
        job_id=job_id,
        backend=target.backend_name,
        project=settings.project.value or "",
        cluster_name=settings.cluster.value or "",
        zone=settings.zone.value or "",
        namespace=settings.namespace.value or "",
        bucket_name=_bucket_name(target.store.uri),
        k8s_name=job_id,
        image_uri=target.image_uri,
        accelerator=options.accelerator.name,
        func_name=func_name,
        display_name=_display_name(func_name, options.accelerator.name, options),
        created_at=created_at or datetime.now(UTC).isoformat(timespec="seconds"),
        group_id=group.group_id if group else None,
        group_kind=group.kind if group else None,
        group_index=group.index if group else None,
        debug=options.debug,
        attempt=attempt,
        spot=options.capacity == (SPOT,),
        kinetic_version=kinetic_version(),
        backend_data=dict(target.backend_data),
        output_dir=options.output_dir or "",
        timeout=options.timeout,
        preemption_retries=options.preemption_retries,
        queue=target.queue,
        priority=target.priority,
        nodes=options.nodes,
        slices=options.slices,
        fallback_accelerators=[accelerator.name for accelerator in options.fallback_accelerators],
        capacity=[] if options.capacity in ((ON_DEMAND,), (SPOT,)) else list(options.capacity),
        max_run_duration=options.max_run_duration,
    )


def _display_name(func_name: str, accelerator: str, options: RunOptions) -> str:
    """``train on gpu-h100-x8``, with the group's shape when it has one: ``(nodes=4)``."""
    shape = shape_label(options.nodes, options.slices)
    return f"{func_name} on {accelerator}" + (f" ({shape})" if shape else "")


def _bucket_name(uri: str) -> str:
    """``gs://b`` is stored as ``b`` (as the API reference shows); other stores keep their URI."""
    if uri.startswith("gs://") and "/" not in uri.removeprefix("gs://"):
        return uri.removeprefix("gs://")
    return uri
