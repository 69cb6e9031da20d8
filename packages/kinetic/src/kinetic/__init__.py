"""Kinetic: run Python functions on remote accelerators.

    @kinetic.run(accelerator="gpu-l4")
    def train(lr): ...

    train(0.1)                          # runs remotely, returns the value
    job = train.run_async(0.1)          # a durable JobHandle
    batch = train.run_async_map([...])  # a BatchHandle

Importing this package does no I/O and configures no logging.
"""

from typing import TYPE_CHECKING, Any

from kinetic.data import Data
from kinetic.decorator import RemoteFunction, run
from kinetic.jobs import JobHandle, attach, list_jobs
from kinetic_protocol import (
    AttemptFailure,
    BackendError,
    ConfigError,
    CorruptRecordError,
    DataUnavailableError,
    FailureCause,
    IntegrityError,
    JobFailedError,
    JobNotFoundError,
    JobStatus,
    KineticError,
    ObjectNotFoundError,
    RemoteError,
    RemoteExitError,
    SchemaVersionError,
    SerializationError,
    SigningKeyError,
    StorageError,
    StoreError,
)

if TYPE_CHECKING:
    from kinetic import debug as debug  # loaded on first use, by __getattr__
    from kinetic.batch import (
        BatchError,
        BatchHandle,
        SkippedInputError,
        SubmitterAliveError,
        attach_batch,
        list_batches,
    )

__all__ = [
    "AttemptFailure",
    "BackendError",
    "BatchError",
    "BatchHandle",
    "ConfigError",
    "CorruptRecordError",
    "Data",
    "DataUnavailableError",
    "FailureCause",
    "IntegrityError",
    "JobFailedError",
    "JobHandle",
    "JobNotFoundError",
    "JobStatus",
    "KineticError",
    "ObjectNotFoundError",
    "RemoteError",
    "RemoteExitError",
    "RemoteFunction",
    "SchemaVersionError",
    "SerializationError",
    "SigningKeyError",
    "SkippedInputError",
    "StorageError",
    "StoreError",
    "SubmitterAliveError",
    "__version__",
    "attach",
    "attach_batch",
    "list_batches",
    "list_jobs",
    "run",
]

_BATCH_NAMES = {
    "BatchError",
    "BatchHandle",
    "SkippedInputError",
    "SubmitterAliveError",
    "attach_batch",
    "list_batches",
}


def __getattr__(name: str) -> Any:
    """The batch engine, ``kinetic.debug`` and the version load on first use, keeping
    ``import kinetic`` light."""
    if name == "debug":
        import importlib

        return importlib.import_module("kinetic.debug")
    if name in _BATCH_NAMES:
        from kinetic import batch

        return getattr(batch, name)
    if name == "__version__":
        from kinetic._version import kinetic_version

        return kinetic_version()
    raise AttributeError(f"module 'kinetic' has no attribute {name!r}")
