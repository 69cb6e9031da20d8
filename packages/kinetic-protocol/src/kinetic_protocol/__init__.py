"""Kinetic's wire protocol: records, storage layout, accelerator catalogue and interfaces.

Depends on msgspec and the standard library only, so every other Kinetic package, including
the runtime inside an image, can share it.
"""

from kinetic_protocol.accelerators import Accelerator, parse_accelerator, valid_accelerator_names
from kinetic_protocol.backend import (
    ENTRY_POINT_GROUP,
    Backend,
    BackendFactory,
    BackendSettings,
    Capabilities,
    Preparation,
    PrepareRequest,
)
from kinetic_protocol.errors import (
    BackendError,
    ConfigError,
    CorruptRecordError,
    JobFailedError,
    JobNotFoundError,
    KineticError,
    ObjectNotFoundError,
    PreconditionFailedError,
    RemoteError,
    RemoteExitError,
    SchemaVersionError,
    SerializationError,
    StorageError,
)
from kinetic_protocol.records import (
    DEFAULT_DEBUG_PORT,
    SCHEMA_VERSION,
    ArtifactRef,
    BatchChild,
    BatchCompletion,
    BatchManifest,
    BatchSubmissionError,
    CallDescriptor,
    DebugOptions,
    DebugState,
    Failed,
    JobRecord,
    ResultEnvelope,
    Succeeded,
)
from kinetic_protocol.status import TERMINAL_STATUSES, JobState, JobStatus
from kinetic_protocol.store import ObjectStore

__all__ = [
    "ENTRY_POINT_GROUP",
    "SCHEMA_VERSION",
    "TERMINAL_STATUSES",
    "Accelerator",
    "ArtifactRef",
    "Backend",
    "BackendError",
    "BackendFactory",
    "Capabilities",
    "Preparation",
    "PrepareRequest",
    "BackendSettings",
    "BatchChild",
    "BatchCompletion",
    "BatchManifest",
    "BatchSubmissionError",
    "CallDescriptor",
    "DEFAULT_DEBUG_PORT",
    "DebugOptions",
    "DebugState",
    "ConfigError",
    "CorruptRecordError",
    "Failed",
    "JobFailedError",
    "JobNotFoundError",
    "JobRecord",
    "JobState",
    "JobStatus",
    "KineticError",
    "ObjectNotFoundError",
    "ObjectStore",
    "PreconditionFailedError",
    "RemoteError",
    "RemoteExitError",
    "ResultEnvelope",
    "SchemaVersionError",
    "SerializationError",
    "StorageError",
    "Succeeded",
    "parse_accelerator",
    "valid_accelerator_names",
]
