"""Kinetic's exception hierarchy.

A leaf module with no imports, so every package can raise and catch the same types. Users catch
families (``ConfigError``, ``StorageError``, ``BackendError``); exceptions raised by the user's own
remote code are re-raised as themselves, never wrapped in these.
"""

import errno

__all__ = [
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
    "is_disk_full",
]


class KineticError(Exception):
    """Root of every error Kinetic raises on its own account."""


class ConfigError(KineticError, ValueError):
    """A setting or argument is invalid: an accelerator, backend, store URI, profile, ..."""


class SerializationError(KineticError, TypeError):
    """A function, argument or return value cannot be pickled."""


class StorageError(KineticError):
    """The object store failed or holds something unexpected."""


class StoreError(StorageError):
    """The store itself failed an operation on ``key``: a full disk, a permission, a server
    error that outlived the retries. ``cause`` is the underlying error. A failed write leaves
    nothing half-written for readers to see."""

    def __init__(self, message: str, *, key: str = "", cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.cause = cause


class ObjectNotFoundError(StorageError, KeyError):
    """A key is absent from the store."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class PreconditionFailedError(StorageError):
    """A create-only or generation-matched write found the object changed."""


class CorruptRecordError(StorageError):
    """A stored record could not be decoded; the message names the object."""


class DataUnavailableError(StorageError):
    """A job's ``kinetic.Data`` could not be staged before its function ran: a ``gs://``
    object or prefix that does not exist, an ``hf://`` dataset that did not load, a mount that
    is not there. The message names the data and what to do."""


class IntegrityError(StorageError):
    """A stored object that Kinetic would unpickle or act on is not signed by a key this
    machine trusts: it was changed, copied from another job, or written before signing. Nothing
    of it was unpickled or run. ``job_id`` and ``key`` name the job (or batch) and the object."""

    def __init__(
        self, message: str, *, job_id: str = "", key: str = "", unknown_key_id: str = ""
    ) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.key = key
        self.unknown_key_id = unknown_key_id
        """Set when the object is signed with a key id the keyring lacks."""


class SigningKeyError(KineticError):
    """The signing keys are out of reach: absent where they must exist, or not readable by
    this caller (a Kubernetes Secret it lacks access to). The message says where and what to do."""


class SchemaVersionError(KineticError):
    """A record was written by a newer Kinetic than the one reading it."""


class BackendError(KineticError):
    """The backend (local processes, Kubernetes) refused or failed an operation."""


class DiskFullError(BackendError):
    """The disk where the backend keeps its jobs' files was full (or over quota) when a job was
    submitted: nothing of the job was started, and submitting it again once there is room
    works. A batch stops submitting at it, leaving its inputs to ``resume``."""


def is_disk_full(error: BaseException | None) -> bool:
    """Whether ``error``, or an error it was raised from, is a full disk or quota (ENOSPC,
    EDQUOT): an infrastructure fault that passes, not the job's."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        cause = getattr(error, "cause", None)
        error = cause if isinstance(cause, BaseException) else error.__cause__
    return False


class JobNotFoundError(KineticError, LookupError, RuntimeError):
    """No job with that id exists in the store (or it was cleaned up).

    Also a ``RuntimeError``: ``result()`` on a job cleaned up before its result was read is a
    job that "failed without uploading a result", which the API reference says raises one.
    """


class JobFailedError(KineticError, RuntimeError):
    """The job failed without leaving a result or a user exception to re-raise."""


class RemoteError(KineticError):
    """A remote exception whose own type cannot be rebuilt here.

    Carries the remote type name, message and traceback so nothing is lost.
    """

    def __init__(self, exc_type: str, message: str, remote_traceback: str) -> None:
        super().__init__(f"{exc_type}: {message}")
        self.exc_type = exc_type
        self.message = message
        self.remote_traceback = remote_traceback


class RemoteExitError(RemoteError):
    """The remote function ended by a ``BaseException`` that is not an ``Exception``.

    That is ``sys.exit(code)`` with a code other than ``0``/``None`` (``exit_code``), or
    ``KeyboardInterrupt``, ``GeneratorExit`` or a ``BaseException`` subclass of the user's own.
    These are not re-raised as themselves in the caller, because there they would act on the
    caller's own process: ``SystemExit`` would exit it, ``KeyboardInterrupt`` would look like the
    user pressed Ctrl-C, and neither is caught by ``except Exception``, which batch collection
    (``results(return_exceptions=True)``) and ordinary error handling rely on. The rebuilt
    original, when it could be unpickled, is ``original``.
    """

    def __init__(
        self,
        exc_type: str,
        message: str,
        remote_traceback: str,
        original: BaseException | None = None,
        exit_code: object = None,
    ) -> None:
        super().__init__(exc_type, message, remote_traceback)
        self.original = original
        self.exit_code = exit_code
