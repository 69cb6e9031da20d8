"""Kinetic's wire protocol: records, storage layout, accelerator catalogue and interfaces.

Depends on msgspec and the standard library only, so every other Kinetic package, including
the runtime inside an image, can share it.

Names are loaded from their modules on first use: a job's runtime imports this package before
the user's code on every start, and needs only a few records of it, not the accelerator
catalogue or the backend contract.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kinetic_protocol.accelerators import (
        Accelerator,
        parse_accelerator,
        valid_accelerator_names,
    )
    from kinetic_protocol.backend import (
        ENTRY_POINT_GROUP,
        NO_ENV,
        ArrayBackend,
        Backend,
        BackendFactory,
        BackendSettings,
        Capabilities,
        HostSelection,
        Preparation,
        PrepareRequest,
        array_runtime_args,
        runtime_args,
    )
    from kinetic_protocol.batch import (
        BatchCancel,
        BatchChild,
        BatchChildCancelled,
        BatchCompletion,
        BatchIndexSegment,
        BatchManifest,
        BatchSubmissionError,
        CollectedFailure,
        CollectedFailures,
        CollectedOutcome,
        CollectedOutcomes,
        SubmitterLease,
        parse_child_job_id,
    )
    from kinetic_protocol.causes import (
        EXIT_NO_SPACE,
        EXIT_PREEMPTIONS_SPENT,
        AttemptFailure,
        FailureCause,
        JobCancelled,
        RetryRule,
    )
    from kinetic_protocol.data import DataSpec, Mount, Volume
    from kinetic_protocol.errors import (
        BackendError,
        ConfigError,
        CorruptRecordError,
        DataUnavailableError,
        DiskFullError,
        IntegrityError,
        JobFailedError,
        JobNotFoundError,
        KineticError,
        ObjectNotFoundError,
        PreconditionFailedError,
        RemoteError,
        RemoteExitError,
        SchemaVersionError,
        SerializationError,
        SigningKeyError,
        StorageError,
        StoreError,
    )
    from kinetic_protocol.output import KeptOutput
    from kinetic_protocol.records import (
        DEFAULT_DEBUG_PORT,
        SCHEMA_VERSION,
        ArtifactRef,
        CallDescriptor,
        DataManifest,
        DebugOptions,
        DebugState,
        Failed,
        HostStart,
        InputChunk,
        JobRecord,
        PickledInput,
        ResultEnvelope,
        Succeeded,
    )
    from kinetic_protocol.signing import Keyring
    from kinetic_protocol.status import TERMINAL_STATUSES, JobState, JobStatus
    from kinetic_protocol.store import ObjectStore

_EXPORTS: dict[str, tuple[str, ...]] = {
    "accelerators": ("Accelerator", "parse_accelerator", "valid_accelerator_names"),
    "backend": (
        "ArrayBackend",
        "Backend",
        "BackendFactory",
        "BackendSettings",
        "Capabilities",
        "ENTRY_POINT_GROUP",
        "HostSelection",
        "NO_ENV",
        "Preparation",
        "PrepareRequest",
        "array_runtime_args",
        "runtime_args",
    ),
    "batch": (
        "BatchCancel",
        "BatchChild",
        "BatchChildCancelled",
        "BatchCompletion",
        "BatchIndexSegment",
        "BatchManifest",
        "BatchSubmissionError",
        "CollectedFailure",
        "CollectedFailures",
        "CollectedOutcome",
        "CollectedOutcomes",
        "SubmitterLease",
        "parse_child_job_id",
    ),
    "causes": (
        "EXIT_NO_SPACE",
        "EXIT_PREEMPTIONS_SPENT",
        "AttemptFailure",
        "FailureCause",
        "JobCancelled",
        "RetryRule",
    ),
    "data": ("DataSpec", "Mount", "Volume"),
    "output": ("KeptOutput",),
    "errors": (
        "BackendError",
        "ConfigError",
        "CorruptRecordError",
        "DataUnavailableError",
        "DiskFullError",
        "IntegrityError",
        "JobFailedError",
        "JobNotFoundError",
        "KineticError",
        "ObjectNotFoundError",
        "PreconditionFailedError",
        "RemoteError",
        "RemoteExitError",
        "SchemaVersionError",
        "SerializationError",
        "SigningKeyError",
        "StorageError",
        "StoreError",
    ),
    "records": (
        "ArtifactRef",
        "CallDescriptor",
        "DEFAULT_DEBUG_PORT",
        "DataManifest",
        "DebugOptions",
        "DebugState",
        "Failed",
        "HostStart",
        "InputChunk",
        "JobRecord",
        "PickledInput",
        "ResultEnvelope",
        "SCHEMA_VERSION",
        "Succeeded",
    ),
    "signing": ("Keyring",),
    "status": ("JobState", "JobStatus", "TERMINAL_STATUSES"),
    "store": ("ObjectStore",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'kinetic_protocol' has no attribute {name!r}")
    value = getattr(import_module(f"kinetic_protocol.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ENTRY_POINT_GROUP",
    "EXIT_NO_SPACE",
    "EXIT_PREEMPTIONS_SPENT",
    "NO_ENV",
    "SCHEMA_VERSION",
    "TERMINAL_STATUSES",
    "Accelerator",
    "ArtifactRef",
    "ArrayBackend",
    "AttemptFailure",
    "Backend",
    "BackendError",
    "BackendFactory",
    "Capabilities",
    "HostSelection",
    "Preparation",
    "PrepareRequest",
    "BackendSettings",
    "BatchCancel",
    "BatchChild",
    "BatchChildCancelled",
    "BatchCompletion",
    "BatchIndexSegment",
    "BatchManifest",
    "BatchSubmissionError",
    "CallDescriptor",
    "CollectedFailure",
    "CollectedFailures",
    "CollectedOutcome",
    "CollectedOutcomes",
    "DataManifest",
    "DataSpec",
    "DataUnavailableError",
    "DiskFullError",
    "DEFAULT_DEBUG_PORT",
    "DebugOptions",
    "DebugState",
    "HostStart",
    "InputChunk",
    "PickledInput",
    "ConfigError",
    "CorruptRecordError",
    "Failed",
    "FailureCause",
    "IntegrityError",
    "JobCancelled",
    "JobFailedError",
    "JobNotFoundError",
    "JobRecord",
    "JobState",
    "KeptOutput",
    "Keyring",
    "JobStatus",
    "KineticError",
    "Mount",
    "ObjectNotFoundError",
    "ObjectStore",
    "PreconditionFailedError",
    "RemoteError",
    "RemoteExitError",
    "ResultEnvelope",
    "RetryRule",
    "SchemaVersionError",
    "SerializationError",
    "SigningKeyError",
    "StorageError",
    "StoreError",
    "SubmitterLease",
    "Succeeded",
    "Volume",
    "array_runtime_args",
    "parse_accelerator",
    "parse_child_job_id",
    "runtime_args",
    "valid_accelerator_names",
]
