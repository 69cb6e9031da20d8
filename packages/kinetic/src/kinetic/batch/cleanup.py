"""Delete what a batch left behind, also once the key that signed it was retired.

Deleting needs no trust in what it deletes: a store writer can delete any object anyway. So
cleanup reads the manifest verified when it can and, when it cannot (signed with a key since
retired, or by a Kinetic from before signed batch records), as stored, with a notice; and it
finds the attempts by the names of their child records, never by their content. What an
unverified manifest can steer is bounded: it must be this batch's (its group id, and child ids
that embed it), so cleanup only ever touches the children of the batch the user named.
"""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from kinetic import _log
from kinetic.batch.array import array_of
from kinetic.bookkeeping.records import BatchRecords, read_manifest
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic.handle import JobHandle
from kinetic_protocol import BatchManifest, IntegrityError, ObjectStore, layout
from kinetic_protocol.signing import peek_json

__all__ = [
    "clean_collected_child",
    "cleanup_batch",
    "delete_batch",
    "in_parallel",
    "manifest_for_cleanup",
]

log = _log.get_logger(__name__)
_PARALLEL_CLEANUPS = 16


def manifest_for_cleanup(store: ObjectStore, group_id: str) -> BatchManifest:
    """The batch's manifest, verified if it can be, else as stored (see the module)."""
    try:
        return read_manifest(store, group_id)
    except IntegrityError as exc:
        where = f"{store.uri}/{layout.manifest_key(group_id)}"
        manifest = peek_json(
            store.read(layout.manifest_key(group_id)), BatchManifest, subject=group_id, key=where
        )
        suffix = "-" + group_id.removeprefix("grp-")
        if manifest.group_id != group_id or not manifest.job_id_prefix.endswith(suffix):
            raise IntegrityError(
                f"{where} names another batch's children ({manifest.job_id_prefix!r}); it was "
                "not written by Kinetic for this batch. Nothing was deleted.",
                job_id=group_id,
                key=where,
            ) from exc
        _log.say(
            f"Cleaning up batch {group_id} without verifying its manifest ({exc}). Only what "
            "belongs to this batch id is deleted."
        )
        return manifest


def cleanup_batch(
    group_id: str,
    project: str | None = None,
    cluster: str | None = None,
    *,
    backend: str | None = None,
    k8s: bool = True,
    gcs: bool = True,
) -> None:
    """``kinetic batch cleanup``: delete what batch ``group_id`` left, from any process, also
    when its manifest no longer verifies (see the module)."""
    from kinetic._context import open_store
    from kinetic.backends import get_backend
    from kinetic.config import resolve_settings

    settings = resolve_settings(backend=backend, project=project, cluster=cluster, quiet=True)
    store = open_store(get_backend(settings.backend_name, settings.backend_settings()).store_uri)
    manifest = manifest_for_cleanup(store, group_id)
    seal = BatchSeal.of_record(manifest.job_template)
    delete_batch(manifest, BatchRecords(store, group_id, seal, array=manifest), k8s=k8s, gcs=gcs)


def clean_collected_child(manifest: BatchManifest, job: JobHandle) -> None:
    """Clean up a collected child and its input's earlier attempts, which were kept (for
    their logs) only until the input's outcome was collected."""
    index = job.group_index
    earlier = [] if index is None else list(range(job.record.attempt))
    attempts = [
        JobHandle.from_record(manifest.child_record(index, attempt))
        for attempt in earlier
        if index is not None
    ] + [job]
    for attempt in attempts:
        try:
            attempt.cleanup(cleanup_timeout=60, cleanup_poll_interval=0.5)
        except Exception:
            log.warning(
                "could not clean up a collected child", job_id=attempt.job_id, exc_info=True
            )


def in_parallel(action: Callable[[JobHandle], object], jobs: list[JobHandle]) -> None:
    """``action`` on every job, 16 at a time; a failure is logged and the rest go on."""
    if not jobs:
        return
    with ThreadPoolExecutor(min(_PARALLEL_CLEANUPS, len(jobs))) as pool:
        for future in [pool.submit(action, job) for job in jobs]:
            error = future.exception()
            if error is not None:
                log.warning("batch cleanup step failed", error=repr(error))


def delete_batch(manifest: BatchManifest, records: BatchRecords, *, k8s: bool, gcs: bool) -> None:
    """Delete every recorded attempt's backend resource (``k8s``) and stored artifacts plus
    the batch's own records (``gcs``). Attempts are found by their record's name alone."""
    handles = [
        JobHandle.from_record(manifest.child_record(index, attempt))
        for index, attempt in records.attempt_keys()
    ]
    array = array_of(manifest)
    if k8s and array is not None:
        array.delete()
    elif k8s:
        in_parallel(lambda job: job.delete_resource(timeout=60, poll_interval=0.5), handles)
    if gcs:
        store = records.store
        in_parallel(lambda job: store.delete_prefix(layout.job_prefix(job.job_id)), handles)
        records.delete_all()
