"""Verify what the client reads back before acting on it (see ``kinetic_protocol.signing``).

The keyring that verifies a job is its backend's (``Backend.signing_keys``): the user's own
for local jobs, the namespace's Secret for Kubernetes ones. A stored job record or batch
manifest names its backend and namespace, so it is read unverified only to find that keyring,
then verified with it before anything acts on it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from kinetic._context import backend_for
from kinetic_protocol import BatchManifest, IntegrityError, JobRecord, Keyring, ResultEnvelope
from kinetic_protocol.records import decode_result
from kinetic_protocol.signing import open_blob, open_json, peek_json

__all__ = [
    "OutcomeKind",
    "SealedOutcome",
    "keyring_for",
    "open_job_record",
    "open_manifest",
    "open_outcome",
]

OutcomeKind = Literal["result", "host-result"]
_T = TypeVar("_T")


@dataclass(frozen=True)
class SealedOutcome:
    """A job's verified envelope and the signed bytes it came in (kept by batch collection)."""

    envelope: ResultEnvelope
    kind: OutcomeKind
    sealed: bytes


def keyring_for(record: JobRecord) -> Keyring:
    return backend_for(record).signing_keys(create=False)


def _verified(record: JobRecord, check: Callable[[Keyring], _T]) -> _T:
    """``check(keyring)``, once more with the keyring read again if the object names a key
    this process has not seen (the keys were rotated since it read them)."""
    try:
        return check(keyring_for(record))
    except IntegrityError as exc:
        if not exc.unknown_key_id:
            raise
        return check(backend_for(record).signing_keys(create=False, refresh=True))


def open_outcome(record: JobRecord, data: bytes, *, key: str, kind: OutcomeKind) -> SealedOutcome:
    """A stored result (or a host's failure) of ``record``'s job, verified, then decoded."""
    body = _verified(record, lambda k: open_blob(k, kind, record.job_id, data, key=key))
    return SealedOutcome(decode_result(body, what=key), kind, data)


def open_job_record(data: bytes, *, job_id: str, key: str) -> JobRecord:
    unverified = peek_json(data, JobRecord, subject=job_id, key=key)
    return _verified(unverified, lambda k: open_json(k, "job", job_id, data, JobRecord, key=key))


def open_manifest(data: bytes, *, group_id: str, key: str) -> BatchManifest:
    unverified = peek_json(data, BatchManifest, subject=group_id, key=key)
    return _verified(
        unverified.job_template,
        lambda k: open_json(k, "batch", group_id, data, BatchManifest, key=key),
    )
