"""Detached jobs: find them (:func:`attach`, :func:`list_jobs`) and read many states at once.

The API reference places :class:`JobHandle` and ``JobStatus`` here too; they are re-exported.
"""

from typing import TYPE_CHECKING, Any

from kinetic import _log
from kinetic._context import backend_for, open_store
from kinetic.config import ResolvedSettings, resolve_settings
from kinetic.handle import JobHandle
from kinetic.trust import open_job_record, open_manifest
from kinetic_protocol import (
    Backend,
    BatchManifest,
    CorruptRecordError,
    HostSelection,
    IntegrityError,
    JobNotFoundError,
    JobRecord,
    JobState,
    JobStatus,
    ObjectNotFoundError,
    ObjectStore,
    SchemaVersionError,
    layout,
    parse_child_job_id,
)
from kinetic_protocol.optional import SharesJobs
from kinetic_protocol.signing import peek_json

if TYPE_CHECKING:
    from kinetic.outputs import JobOutputs

__all__ = ["JobHandle", "JobStatus", "attach", "job_outputs", "job_states", "list_jobs"]

log = _log.get_logger(__name__)


def _resolve_backend(project: str | None, cluster: str | None, backend: str | None) -> Any:
    from kinetic.backends import get_backend

    settings = resolve_settings(backend=backend, project=project, cluster=cluster, quiet=True)
    return get_backend(settings.backend_name, settings.backend_settings())


def attach(
    job_id: str,
    project: str | None = None,
    cluster: str | None = None,
    *,
    backend: str | None = None,
) -> JobHandle:
    """Rebuild the handle of ``job_id`` from the store it was persisted to."""
    chosen = _resolve_backend(project, cluster, backend)
    store = open_store(chosen.store_uri)
    record = _stored_record(store, job_id, {})
    if record is None:
        raise JobNotFoundError(
            f"No job {job_id!r} in {store.uri} (backend {chosen.name!r}). Check the id with "
            "`kinetic jobs list`, or pass the project/cluster/backend it was submitted to."
        )
    return JobHandle.from_record(record)


def stored_output(
    job_id: str,
    project: str | None = None,
    cluster: str | None = None,
    *,
    backend: str | None = None,
    tail: int | None = None,
    host: HostSelection = None,
) -> str | None:
    """The output ``job_id`` kept in the store, read by id alone: no cluster and no signing key
    needed (for a reader who cannot attach to the job); None if it kept none."""
    from kinetic.kept_output import stored_text

    chosen = _resolve_backend(project, cluster, backend)
    return stored_text(open_store(chosen.store_uri), job_id, tail=tail, host=host)


def record_for_cleanup(
    job_id: str,
    project: str | None = None,
    cluster: str | None = None,
    *,
    backend: str | None = None,
) -> JobRecord:
    """The record of ``job_id`` for deleting what it left (``kinetic jobs cleanup``): verified
    when it can be; else, when a key since retired (or no key) signed it, as stored, with a
    notice. Deleting needs no trust in what it deletes, and the record must name this very
    job, so cleanup only ever touches the job the user named."""
    chosen = _resolve_backend(project, cluster, backend)
    store = open_store(chosen.store_uri)
    try:
        record = _stored_record(store, job_id, {})
    except IntegrityError as exc:
        record = _stored_record(store, job_id, {}, verify=False)
        if record is not None and {record.job_id, record.k8s_name} != {job_id}:
            # Unverified, it may only name this very job: its resource too is named by its id.
            raise IntegrityError(
                f"The stored record of job {job_id} names job {record.job_id!r} and resource "
                f"{record.k8s_name!r}: it was not written by Kinetic for this job. Nothing was "
                "deleted.",
                job_id=job_id,
                key=exc.key,
            ) from exc
        _log.say(f"Cleaning up job {job_id} without verifying its record ({exc}).")
    if record is None:
        raise JobNotFoundError(
            f"No job {job_id!r} in {store.uri} (backend {chosen.name!r}). Check the id with "
            "`kinetic jobs list`, or pass the project/cluster/backend it was submitted to."
        )
    return record


def _stored_record(
    store: ObjectStore,
    job_id: str,
    manifests: dict[str, BatchManifest | None],
    *,
    verify: bool = True,
) -> JobRecord | None:
    """A job's record: its own, or a batch child's (its batch's manifest and child record;
    ``manifests`` caches each batch's manifest for a listing). ``verify=False`` only for a
    listing that shows records and acts on none."""
    key = layout.job_record_key(job_id)
    where = f"{store.uri}/{key}"
    try:
        data = store.read(key)
    except ObjectNotFoundError:
        pass
    else:
        if verify:
            return open_job_record(data, job_id=job_id, key=where)
        return peek_json(data, JobRecord, subject=job_id, key=where)
    child = parse_child_job_id(job_id)
    if child is None:
        return None
    group_id, index, attempt = child
    if group_id not in manifests:
        key = layout.manifest_key(group_id)
        try:
            data = store.read(key)
            manifests[group_id] = (
                open_manifest(data, group_id=group_id, key=key)
                if verify
                else peek_json(data, BatchManifest, subject=group_id, key=key)
            )
        except ObjectNotFoundError:
            manifests[group_id] = None
    manifest = manifests[group_id]
    if manifest is None or manifest.child_job_id(index, attempt) != job_id:
        return None
    if not manifest.has_child(index, attempt) and not store.exists(
        layout.child_key(group_id, index, attempt)
    ):
        return None
    return manifest.child_record(index, attempt)


def job_outputs(
    job_id: str,
    project: str | None = None,
    cluster: str | None = None,
    *,
    backend: str | None = None,
) -> "JobOutputs":
    """The outputs of ``job_id``, also once it was cleaned up: outputs are never deleted, and
    without the job's record they are looked for at the store's default place."""
    from kinetic.outputs import JobOutputs

    try:
        return JobOutputs.of(attach(job_id, project, cluster, backend=backend).record)
    except JobNotFoundError:
        chosen = _resolve_backend(project, cluster, backend)
        return JobOutputs(job_id, chosen.store_uri, project=project or "", recorded=False)


def list_jobs(
    project: str | None = None,
    zone: str | None = None,
    cluster: str | None = None,
    namespace: str | None = None,
    *,
    backend: str | None = None,
) -> list[JobHandle]:
    """Jobs the backend still holds, hydrated from their stored records, newest first.

    A job whose record is missing is skipped; one whose record cannot be read (corrupt, or from
    a newer Kinetic) is skipped with a warning naming its store key, so one bad record never
    hides the others.
    """
    from kinetic.backends import get_backend

    settings = resolve_settings(
        backend=backend,
        project=project,
        zone=zone,
        cluster=cluster,
        namespace=namespace,
        quiet=True,
    )
    chosen = get_backend(settings.backend_name, settings.backend_settings())
    store = open_store(chosen.store_uri)
    handles = []
    manifests: dict[str, BatchManifest | None] = {}
    for job_id in _listed_job_ids(chosen, settings, explicit=backend is not None):
        try:
            record = _stored_record(store, job_id, manifests, verify=False)
        except (CorruptRecordError, IntegrityError, SchemaVersionError) as exc:
            _log.say(f"Skipping job {job_id} in the listing: {exc}")
            continue
        if record is None:
            _log.say(f"Skipping job {job_id} in the listing: {store.uri} holds no record of it.")
            continue
        handles.append(JobHandle.from_record(record))
    # Newest first, as `kinetic jobs list` shows them (ties broken by id, for a stable order).
    return sorted(handles, key=lambda job: (job.created_at, job.job_id), reverse=True)


def _listed_job_ids(chosen: Backend, settings: ResolvedSettings, *, explicit: bool) -> list[str]:
    """The chosen backend's jobs and, unless a backend was named, those of the backends that
    share its cluster and store (``related_backends``: gke Jobs and pathways slices)."""
    from kinetic.backends import available_backends, get_backend

    ids = set(chosen.list_job_ids())
    if not explicit:
        for name in chosen.related_backends if isinstance(chosen, SharesJobs) else ():
            if name in available_backends():
                ids.update(get_backend(name, settings.backend_settings()).list_job_ids())
    return sorted(ids)


def job_states(handles: list[JobHandle]) -> dict[str, JobState]:
    """The state of every handle, keyed by job id: one backend call per backend, not per job."""
    by_backend: dict[int, tuple[Any, list[JobRecord]]] = {}
    for handle in handles:
        backend = backend_for(handle.record)
        by_backend.setdefault(id(backend), (backend, []))[1].append(handle.record)
    states: dict[str, JobState] = {}
    for backend, records in by_backend.values():
        states.update(backend.statuses(records))
    return states
