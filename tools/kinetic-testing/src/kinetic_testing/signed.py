"""Write and read signed objects as a job or a client would, for tests that stage or inspect
stored artifacts by hand (the keyring is the record's backend's, made if missing)."""

import msgspec

from kinetic_protocol import CallDescriptor, JobRecord, Keyring, ObjectStore, ResultEnvelope, layout
from kinetic_protocol.records import decode_result, encode_result
from kinetic_protocol.signing import (
    SignedKind,
    open_blob,
    open_json,
    peek_json,
    seal_blob,
    seal_json,
)

__all__ = [
    "keyring_of",
    "open_result",
    "read_call",
    "seal_batch_record",
    "seal_job_record",
    "seal_result",
]


def keyring_of(record: JobRecord) -> Keyring:
    from kinetic._context import backend_for

    return backend_for(record).signing_keys(create=True)


def seal_result(record: JobRecord, envelope: ResultEnvelope, kind: SignedKind = "result") -> bytes:
    """``envelope`` as the job would store it."""
    return seal_blob(keyring_of(record), kind, record.job_id, encode_result(envelope))


def open_result(
    record: JobRecord, data: bytes, *, key: str, kind: SignedKind = "result"
) -> ResultEnvelope:
    """A stored envelope of ``record``'s job, verified as the client verifies it."""
    return decode_result(
        open_blob(keyring_of(record), kind, record.job_id, data, key=key), what=key
    )


def seal_job_record(record: JobRecord) -> bytes:
    """``record`` as the client stores it at ``layout.job_record_key``."""
    return seal_json(keyring_of(record), "job", record.job_id, record)


def seal_batch_record(template: JobRecord, key: str, record: msgspec.Struct) -> bytes:
    """A batch's bookkeeping ``record`` as its submitter stores it at ``key`` (``template``:
    the batch manifest's job template, which names the keyring)."""
    return seal_json(keyring_of(template), "batch-record", key, record)


def read_call(store: ObjectStore, job_id: str) -> CallDescriptor:
    """A job's stored call (its own, not a batch's), verified as its job verifies it."""
    key = layout.job_record_key(job_id)
    record = peek_json(store.read(key), JobRecord, subject=job_id, key=key)
    call_key = layout.call_key(job_id)
    data = store.read(call_key)
    return open_json(keyring_of(record), "call", job_id, data, CallDescriptor, key=call_key)
