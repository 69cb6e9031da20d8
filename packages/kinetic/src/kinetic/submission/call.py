"""Submit one job: write its artifacts create-only, then hand the record to the backend.

Everything that can fail on bad input (pickling, data, settings, the backend) runs before the
first write, and a backend that refuses the job gets its artifacts removed, so a failed
submission leaves nothing half-made in the store.
"""

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable
from typing import Any

import msgspec

from kinetic import _log, session
from kinetic._interrupted import say_job_left_running
from kinetic.data.plan import CallData, plan_call_data
from kinetic.data.reference import Data
from kinetic.env_capture import capture_env
from kinetic.handle import JobHandle
from kinetic.job_ids import func_name_of, new_job_id
from kinetic.packaging import CodeBundle, serialize_call
from kinetic.packaging.serialize import SerializedCall
from kinetic.submission.record import job_record
from kinetic.submission.target import Target
from kinetic_protocol import (
    ArtifactRef,
    BackendError,
    CallDescriptor,
    KineticError,
    ObjectStore,
    PreconditionFailedError,
    layout,
)
from kinetic_protocol.signing import seal_json

__all__ = [
    "artifact_ref",
    "call_descriptor",
    "captured_env",
    "plan_data",
    "submit_call",
    "upload_bundle",
]

log = _log.get_logger(__name__)


def upload_bundle(store: ObjectStore, bundle: CodeBundle) -> None:
    """Store the bundle under its hash unless it is already there (checked once a session)."""
    active = session.current()
    with active.upload_lock:
        if active.bundle_uploaded(store.uri, bundle.ref.key):
            return
        if not store.exists(bundle.ref.key):
            # PreconditionFailed: another submitter stored the same bytes first.
            with contextlib.suppress(PreconditionFailedError):
                store.write(bundle.ref.key, bundle.data, if_absent=True)
        active.mark_bundle_uploaded(store.uri, bundle.ref.key)


def artifact_ref(key: str, data: bytes) -> ArtifactRef:
    return ArtifactRef(key=key, sha256=hashlib.sha256(data).hexdigest(), size=len(data))


def plan_data(target: Target, found: list[Data]) -> CallData:
    """The specs, volumes and mounts of ``found`` (and the decorator's volumes) on ``target``,
    local data uploaded first where its jobs cannot see this machine."""
    return plan_call_data(
        found,
        target.options.volumes,
        capabilities=target.backend.capabilities,
        store=target.store,
        backend=target.backend_name,
    )


def captured_env(target: Target) -> dict[str, str]:
    """This process's values of the variables ``target``'s options capture (for the backend
    alone: the store gets their names only)."""
    return capture_env(target.options.capture_env_vars, os.environ)


def call_descriptor(
    target: Target,
    owner_id: str,
    func_name: str,
    payload: ArtifactRef,
    *,
    env_names: list[str],
    **extra: Any,
) -> CallDescriptor:
    """What the runtime needs to run ``payload`` on ``target`` (``owner_id``: the job, or the
    batch whose children share it); ``env_names``: the captured variables, never values."""
    return CallDescriptor(
        job_id=owner_id,
        func_name=func_name,
        payload=payload,
        bundle=target.bundle.ref,
        workdir=target.bundle.workdir,
        sys_path=target.bundle.sys_path,
        env_names=env_names,
        output_dir=target.options.output_dir or "",
        python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
        requirements=list(target.requirements),
        debug=target.debug,
        **extra,
    )


def submit_call(
    target: Target,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    serialized: SerializedCall | None = None,
) -> JobHandle:
    """Pickle the call (unless the caller did: ``serialized``), stage its data, write its
    artifacts (the bundle first, if new) and submit it."""
    serialized = serialized or serialize_call(fn, args, kwargs)
    data = plan_data(target, serialized.data)
    record = job_record(target, func_name_of(fn), new_job_id(getattr(fn, "__name__", "job")))
    record = msgspec.structs.replace(record, mounts=data.mounts)
    upload_bundle(target.store, target.bundle)
    job_id, store = record.job_id, target.store
    env = captured_env(target)
    call = call_descriptor(
        target,
        job_id,
        record.func_name,
        artifact_ref(layout.payload_key(job_id), serialized.payload),
        env_names=list(env),
        data=data.specs,
        volumes=data.volumes,
    )
    keyring = target.backend.signing_keys(create=True)
    try:
        store.write(layout.payload_key(job_id), serialized.payload, if_absent=True)
        store.write(
            layout.call_key(job_id), seal_json(keyring, "call", job_id, call), if_absent=True
        )
        sealed_record = seal_json(keyring, "job", job_id, record)
        store.write(layout.job_record_key(job_id), sealed_record, if_absent=True)
    except PreconditionFailedError as exc:
        raise BackendError(
            f"Job id {job_id} already exists in {store.uri}; not resubmitted."
        ) from exc
    try:
        target.backend.submit(record, env=env)
    except BaseException as exc:
        store.delete_prefix(layout.job_prefix(job_id))
        if isinstance(exc, KineticError) or not isinstance(exc, Exception):
            raise
        raise BackendError(f"The {record.backend} backend refused job {job_id}: {exc}") from exc
    try:
        log.info("job.submitted", job_id=job_id, backend=record.backend)
        return JobHandle.from_record(record)
    except KeyboardInterrupt:  # submitted: the job runs whatever this process does next
        say_job_left_running(job_id, record.backend)
        raise
