"""Turn a stored result envelope back into a value or the user's own exception."""

from typing import Any, NoReturn

import cloudpickle

from kinetic_protocol import Failed, RemoteError, ResultEnvelope, Succeeded
from kinetic_protocol.errors import RemoteExitError

__all__ = ["rebuild_exception", "unwrap"]


def rebuild_exception(envelope: Failed) -> BaseException:
    """The remote exception as its own type when possible, with the remote traceback attached."""
    exc: BaseException | None = None
    if envelope.exception is not None:
        try:
            exc = cloudpickle.loads(envelope.exception)
        except Exception:
            exc = None
    if not isinstance(exc, BaseException):
        exc = RemoteError(envelope.exc_type, envelope.message, envelope.traceback)
    if not isinstance(exc, Exception) or envelope.exc_type in _EXIT_TYPES:
        exc = _exit_error(envelope, exc)
    where = "" if envelope.phase == "run" else f" (before your function ran: {envelope.phase})"
    if envelope.hosts > 1:
        where = f" on host {envelope.host} of {envelope.hosts}{where}"
    exc.add_note(
        f"Raised in Kinetic job {envelope.job_id}{where}. Remote traceback:\n"
        + envelope.traceback.rstrip()
    )
    exc.remote_traceback = envelope.traceback  # type: ignore[attr-defined]
    exc.job_phase = envelope.phase  # type: ignore[attr-defined]
    exc.job_host = envelope.host  # type: ignore[attr-defined]
    return exc


_EXIT_TYPES = frozenset(
    {"builtins.SystemExit", "builtins.KeyboardInterrupt", "builtins.GeneratorExit"}
)


def _exit_error(envelope: Failed, exc: BaseException) -> RemoteExitError:
    """Wrap a remote ``BaseException`` that is not an ``Exception``.

    Raised as itself it would act on this process (``SystemExit`` exits it, ``KeyboardInterrupt``
    looks like Ctrl-C here) and slip past every ``except Exception``, batch collection's
    included; see :class:`~kinetic_protocol.errors.RemoteExitError`.
    """
    original = None if isinstance(exc, RemoteError) else exc
    code = original.code if isinstance(original, SystemExit) else None
    return RemoteExitError(
        envelope.exc_type, envelope.message, envelope.traceback, original=original, exit_code=code
    )


def _raise(exc: BaseException) -> NoReturn:
    raise exc


def unwrap(envelope: ResultEnvelope) -> Any:
    """The return value, or raise the remote exception."""
    if isinstance(envelope, Succeeded):
        return cloudpickle.loads(envelope.value)
    _raise(rebuild_exception(envelope))
