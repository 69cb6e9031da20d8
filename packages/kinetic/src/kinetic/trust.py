"""Verify what the client reads back before acting on it (see ``kinetic_protocol.signing``).

The keyring that verifies a job is its backend's (``Backend.signing_keys``): the user's own
for local jobs, the namespace's Secret for Kubernetes ones. A stored job record or batch
manifest names its backend and namespace, so it is read unverified only to find that keyring,
then verified with it before anything acts on it.
"""

from dataclasses import dataclass
from typing import Literal

from kinetic._context import backend_for
from kinetic_protocol import BatchManifest, JobRecord, Keyring, ResultEnvelope
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


@dataclass(frozen=True)
class SealedOutcome:
    """A job's verified envelope and the signed bytes it came in (kept by batch collection)."""

    envelope: ResultEnvelope
    kind: OutcomeKind
    sealed: bytes


def keyring_for(record: JobRecord) -> Keyring:
    return backend_for(record).signing_keys(create=False)


def open_outcome(record: JobRecord, data: bytes, *, key: str, kind: OutcomeKind) -> SealedOutcome:
    """A stored result (or a host's failure) of ``record``'s job, verified, then decoded."""
    body = open_blob(keyring_for(record), kind, record.job_id, data, key=key)
    return SealedOutcome(decode_result(body, what=key), kind, data)


def open_job_record(data: bytes, *, job_id: str, key: str) -> JobRecord:
    unverified = peek_json(data, JobRecord, subject=job_id, key=key)
    return open_json(keyring_for(unverified), "job", job_id, data, JobRecord, key=key)


def open_manifest(data: bytes, *, group_id: str, key: str) -> BatchManifest:
    unverified = peek_json(data, BatchManifest, subject=group_id, key=key)
    keyring = keyring_for(unverified.job_template)
    return open_json(keyring, "batch", group_id, data, BatchManifest, key=key)
