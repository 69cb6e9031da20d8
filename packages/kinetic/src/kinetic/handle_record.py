"""The stored record behind a :class:`~kinetic.JobHandle`, built from what a caller holds: the
handle's own fields, a dict ``to_dict`` made, or the live context of a job being submitted.

Every way goes through :class:`~kinetic_protocol.JobRecord`, so a handle is validated the same
way however it was made; a ``ConfigError`` names what is missing or wrong.

A *job context* is whatever object a submitter (a custom backend, a wrapper around Kinetic)
holds while it submits one job (``JobHandle.from_job_context``): the handle's fields are read
from its attributes, and the record is the one the decorator's own submissions store.
"""

import dataclasses
import operator
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import msgspec

from kinetic._version import kinetic_version
from kinetic.job_ids import func_name_of
from kinetic_protocol import ConfigError, JobRecord

__all__ = [
    "JobContext",
    "RecordBacked",
    "record_from_context",
    "record_from_dict",
    "record_from_fields",
    "slot_filler",
]

_HANDLE_REQUIRED = (
    "job_id",
    "backend",
    "project",
    "cluster_name",
    "zone",
    "namespace",
    "bucket_name",
    "k8s_name",
    "image_uri",
    "accelerator",
    "func_name",
    "display_name",
    "created_at",
)
_REQUIRED = ("job_id", "project", "cluster_name", "zone", "bucket_name", "image_uri", "accelerator")
_OPTIONAL = (
    "group_id",
    "group_kind",
    "group_index",
    "debug",
    "spot",
    "output_dir",
    "queue",
    "priority",
)


class JobContext(Protocol):
    """What ``from_job_context`` reads. Required: ``job_id``, ``project``, ``cluster_name``,
    ``zone``, ``bucket_name``, ``image_uri`` and ``accelerator`` (a name, or an object with a
    ``name``). Optional: ``func_name`` (else the name of ``func``), ``display_name``,
    ``created_at``, ``group_id``/``group_kind``/``group_index``, ``debug``, ``spot``,
    ``output_dir``, ``queue``, ``priority``."""

    job_id: str
    project: str
    cluster_name: str
    zone: str
    bucket_name: str
    image_uri: str
    accelerator: Any


def _func_name(ctx: object) -> str:
    name = getattr(ctx, "func_name", None)
    if isinstance(name, str) and name:
        return name
    func = getattr(ctx, "func", None)
    if func is None:
        raise ConfigError(
            f"JobHandle.from_job_context: the context ({type(ctx).__name__}) has neither "
            "func_name nor func; give it one of them."
        )
    return func_name_of(func)


def record_from_context(ctx: object, backend_name: str, namespace: str, k8s_name: str) -> JobRecord:
    """The record of the job ``ctx`` describes, running on ``backend_name`` as ``k8s_name`` in
    ``namespace``; a ``ConfigError`` names any missing attribute."""
    missing = [name for name in _REQUIRED if not hasattr(ctx, name)]
    if missing:
        raise ConfigError(
            f"JobHandle.from_job_context: the context ({type(ctx).__name__}) lacks "
            f"{', '.join(missing)}; a job context carries {', '.join(_REQUIRED)}."
        )
    given = {name: getattr(ctx, name) for name in _REQUIRED}
    accelerator = str(getattr(given["accelerator"], "name", given["accelerator"]))
    func_name = _func_name(ctx)
    fields: dict[str, Any] = given | {
        "backend": backend_name,
        "namespace": namespace,
        "k8s_name": k8s_name,
        "accelerator": accelerator,
        "func_name": func_name,
        "display_name": getattr(ctx, "display_name", None) or f"{func_name} on {accelerator}",
        "created_at": getattr(ctx, "created_at", None)
        or datetime.now(UTC).isoformat(timespec="seconds"),
        "kinetic_version": kinetic_version(),
    }
    for optional in _OPTIONAL:
        value = getattr(ctx, optional, None)
        if value is not None:
            fields[optional] = value
    try:
        return msgspec.convert(fields, JobRecord)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"JobHandle.from_job_context: invalid context: {exc}") from exc


def record_from_fields(fields: dict[str, Any]) -> JobRecord:
    """The record of a handle built from its ``fields``."""
    try:
        return msgspec.convert(fields, JobRecord)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"JobHandle: invalid field: {exc}") from exc


def record_from_dict(d: object) -> JobRecord:
    """The record of ``JobHandle.from_dict(d)``; unknown keys (from a newer Kinetic) are
    ignored."""
    if not isinstance(d, dict):
        raise ConfigError(f"JobHandle.from_dict needs a dict, got {type(d).__name__}.")
    required = [f for f in _HANDLE_REQUIRED if f not in d]
    if required:
        raise ConfigError(
            f"JobHandle.from_dict: missing required field(s) {', '.join(required)}. "
            "Pass a dict made by JobHandle.to_dict(), or use kinetic.attach(job_id)."
        )
    known = set(JobRecord.__struct_fields__)
    try:
        return msgspec.convert({k: v for k, v in d.items() if k in known}, JobRecord)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"JobHandle.from_dict: invalid handle dict: {exc}") from exc


class RecordBacked:
    """Room for the stored record behind a handle, beside its dataclass's own slots."""

    __slots__ = ("_record",)


Backed = TypeVar("Backed", bound=RecordBacked)


def slot_filler(cls: type[Backed]) -> Callable[[JobRecord], Backed]:
    """What makes an instance of the slotted dataclass ``cls`` from a record, unchecked: each
    field's slot set past the frozen ``__setattr__``, the values read from the record in one
    call."""
    names = tuple(field.name for field in dataclasses.fields(cls))  # type: ignore[arg-type]
    values = operator.attrgetter(*names)
    setters = tuple(cls.__dict__[name].__set__ for name in names)
    set_record = RecordBacked.__dict__["_record"].__set__

    def make(record: JobRecord) -> Backed:
        instance = object.__new__(cls)
        for set_field, value in zip(setters, values(record), strict=True):
            set_field(instance, value)
        set_record(instance, record)
        return instance

    return make
