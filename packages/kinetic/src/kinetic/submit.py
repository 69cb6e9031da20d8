"""Submit one call: write its artifacts create-only, then hand the record to the backend.

Everything that can fail on bad input (pickling, settings, the backend name) runs before the
first write, and a backend that refuses the job gets its artifacts removed, so a failed
submission leaves nothing half-made in the store.
"""

import contextlib
import hashlib
import os
import re
import secrets
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kinetic import _log
from kinetic._context import open_store
from kinetic.backends import get_backend
from kinetic.config import ResolvedSettings, kinetic_home, resolve_settings
from kinetic.data import Data
from kinetic.handle import JobHandle
from kinetic.options import RunOptions, capture_env
from kinetic.packaging import CodeBundle, build_bundle, serialize_call
from kinetic_protocol import (
    ArtifactRef,
    Backend,
    BackendError,
    CallDescriptor,
    ConfigError,
    JobRecord,
    KineticError,
    ObjectStore,
    PreconditionFailedError,
    layout,
)
from kinetic_protocol.records import encode_json

__all__ = [
    "Group",
    "Target",
    "child_id_prefix",
    "func_name_of",
    "job_record",
    "new_job_id",
    "resolve_target",
    "submit_call",
    "upload_bundle",
]

log = _log.get_logger(__name__)
_MAX_NAME = 63


@dataclass(frozen=True)
class Group:
    """Batch membership of a child job."""

    group_id: str
    index: int
    kind: str = "map"


@dataclass(frozen=True)
class Target:
    """Where and how a call runs; resolved once per call, or once per batch."""

    options: RunOptions
    settings: ResolvedSettings
    backend: Backend
    store: ObjectStore
    bundle: CodeBundle
    image_uri: str
    requirements: tuple[str, ...] = ()
    local_python: str = ""

    @property
    def backend_name(self) -> str:
        return self.settings.backend.value or "local"


def _slug(name: str, limit: int) -> str:
    """``name`` as the start of a DNS-1123 label: lowercase, dashes, beginning with a letter."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug[:1].isalpha():
        slug = f"job-{slug}" if slug else "job"
    return slug[:limit].rstrip("-")


def new_job_id(func_name: str) -> str:
    """A DNS-1123 label: ``<func>-<utc time>-<random>``."""
    suffix = f"-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(4)[:7]}"
    return _slug(func_name, _MAX_NAME - len(suffix)) + suffix


def child_id_prefix(func_name: str, group_id: str) -> str:
    """Children are ``<prefix>-<index>[-r<attempt>]``; room is left for both within 63."""
    suffix = f"-{group_id.removeprefix('grp-')}"
    return _slug(func_name, _MAX_NAME - len(suffix) - len("-999999-r99")) + suffix


def _source_dir(fn: Callable[..., Any]) -> Path:
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    filename = getattr(module, "__file__", None) or getattr(
        getattr(fn, "__code__", None), "co_filename", None
    )
    if filename and Path(filename).exists():
        return Path(filename).resolve().parent
    return Path.cwd()


def _kinetic_state_dirs(store: ObjectStore) -> list[Path]:
    """Kinetic's own directories, never part of a code bundle even inside the project."""
    dirs = [kinetic_home()]
    if store.uri.startswith("file://"):
        dirs.append(Path(store.url("bundles")).parent)
    return dirs


def resolve_target(options: RunOptions, fn: Callable[..., Any]) -> Target:
    """Resolve settings, backend, store, code bundle and image for ``fn``."""
    settings = resolve_settings(
        backend=options.backend, project=options.project, zone=options.zone,
        cluster=options.cluster, namespace=options.namespace,
    )  # fmt: skip
    name = settings.backend.value or "local"
    backend = get_backend(name, settings.backend_settings())
    store = open_store(backend.store_uri)
    bundle = build_bundle(_source_dir(fn), exclude=_kinetic_state_dirs(store))
    if name == "local":
        if options.accelerator.category != "cpu":
            _log.notice(
                f"local-accelerator-{options.accelerator.name}",
                f"kinetic: the local backend runs {options.accelerator.name!r} jobs on this "
                "machine's own hardware; no accelerator is provisioned.",
            )
        if options.volumes:
            raise ConfigError(
                "volumes are not supported on the local backend: pass the kinetic.Data (or "
                "its path) as a function argument instead; the job runs on this machine."
            )
        python = ""
        if options.isolate:
            from kinetic.images import ensure_isolated_env

            python = str(ensure_isolated_env(bundle.root, cache_root=kinetic_home() / "envs"))
        return Target(options, settings, backend, store, bundle, image_uri="", local_python=python)
    if options.volumes:
        raise ConfigError(
            f"volumes are not supported on the {name!r} backend in this version of Kinetic; "
            "stage the data in a gs:// bucket and read it from the job."
        )
    from kinetic.images import resolve_image

    image = resolve_image(
        container_image=options.container_image or os.environ.get("KINETIC_CONTAINER_IMAGE"),
        base_image_repo=options.base_image_repo,
        accelerator=options.accelerator,
        project_root=bundle.root,
        project=settings.project.value or "",
        zone=settings.zone.value or "",
    )
    return Target(options, settings, backend, store, bundle, image.uri, tuple(image.requirements))


_uploaded: set[tuple[str, str]] = set()
_upload_lock = threading.Lock()


def upload_bundle(store: ObjectStore, bundle: CodeBundle) -> None:
    """Store the bundle under its hash unless it is already there (checked once per process)."""
    key = (store.uri, bundle.ref.key)
    with _upload_lock:
        if key in _uploaded:
            return
        if not store.exists(bundle.ref.key):
            # PreconditionFailed: another submitter stored the same bytes first.
            with contextlib.suppress(PreconditionFailedError):
                store.write(bundle.ref.key, bundle.data, if_absent=True)
        _uploaded.add(key)


def _ref(key: str, data: bytes) -> ArtifactRef:
    return ArtifactRef(key=key, sha256=hashlib.sha256(data).hexdigest(), size=len(data))


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
        display_name=f"{func_name} on {options.accelerator.name}",
        created_at=created_at or datetime.now(UTC).isoformat(timespec="seconds"),
        group_id=group.group_id if group else None,
        group_kind=group.kind if group else None,
        group_index=group.index if group else None,
        debug=options.debug,
        attempt=attempt,
        spot=options.spot,
        kinetic_version=_version(),
        local_python=target.local_python,
    )


def func_name_of(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", getattr(fn, "__name__", "function")))


def submit_call(
    target: Target,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    record: JobRecord | None = None,
) -> JobHandle:
    """Pickle the call, write its artifacts (the bundle first, if new) and submit it.

    ``record`` defaults to a fresh single job; a batch passes each child's record.
    """
    _check_data_arguments(target, args, kwargs)
    payload = serialize_call(fn, args, kwargs)
    if record is None:
        record = job_record(target, func_name_of(fn), new_job_id(getattr(fn, "__name__", "job")))
    upload_bundle(target.store, target.bundle)
    job_id, store = record.job_id, target.store
    call = CallDescriptor(
        job_id=job_id,
        func_name=record.func_name,
        payload=_ref(layout.payload_key(job_id), payload),
        bundle=target.bundle.ref,
        workdir=target.bundle.workdir,
        sys_path=target.bundle.sys_path,
        env=capture_env(target.options.capture_env_vars, dict(os.environ)),
        output_dir=target.options.output_dir or "",
        python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
        requirements=list(target.requirements),
    )
    try:
        store.write(layout.payload_key(job_id), payload, if_absent=True)
        store.write(layout.call_key(job_id), encode_json(call), if_absent=True)
        store.write(layout.job_record_key(job_id), encode_json(record), if_absent=True)
    except PreconditionFailedError as exc:
        raise BackendError(
            f"Job id {job_id} already exists in {store.uri}; not resubmitted."
        ) from exc
    try:
        target.backend.submit(record)
    except BaseException as exc:
        store.delete_prefix(layout.job_prefix(job_id))
        if isinstance(exc, KineticError) or not isinstance(exc, Exception):
            raise
        raise BackendError(f"The {record.backend} backend refused job {job_id}: {exc}") from exc
    log.info("job.submitted", job_id=job_id, backend=record.backend)
    return JobHandle.from_record(record)


def _check_data_arguments(target: Target, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A local ``kinetic.Data`` means nothing in a pod until data staging exists: say so."""
    if target.backend_name == "local":
        return
    for value in (*args, *kwargs.values()):
        if isinstance(value, Data) and not (value.is_gcs or value.is_hf):
            raise ConfigError(
                f"{value!r} refers to data on this machine, which the {target.backend_name!r} "
                "backend cannot ship yet. Upload it to a gs:// bucket and pass that URI."
            )


def _bucket_name(uri: str) -> str:
    """``gs://b`` is stored as ``b`` (as the API reference shows); other stores keep their URI."""
    if uri.startswith("gs://") and "/" not in uri.removeprefix("gs://"):
        return uri.removeprefix("gs://")
    return uri


def _version() -> str:
    from kinetic import __version__

    return __version__
