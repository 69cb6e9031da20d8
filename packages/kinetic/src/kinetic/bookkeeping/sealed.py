"""A batch's bookkeeping, signed, so that a store writer can neither forge nor move a record.

Child records, submission errors, leases, the completion, the cancel request and cancelled
attempts decide what ``resume`` runs again, which inputs count as done and whom a reader waits
for. Each is signed (kind ``batch-record``) with the keyring of the backend the batch runs on,
the record's own store key as its subject: a record copied to another key, or to another batch,
does not verify either. A reader leaves out any record that does not verify, naming its key.
"""

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import msgspec

from kinetic_protocol import IntegrityError, Keyring
from kinetic_protocol.signing import open_json, peek_json, seal_json

if TYPE_CHECKING:
    from kinetic_protocol import Backend, JobRecord

__all__ = ["BatchSeal", "RefusedRecordError"]

_T = TypeVar("_T")


class RefusedRecordError(Exception):
    """A bookkeeping record that does not verify; its message says why, in a few words."""


class BatchSeal:
    """Signs and opens the bookkeeping of a batch with its backend's keyring.

    The keyring is read once (no I/O until a record is sealed or opened) and read again when a
    record names a key this process has not seen: the keys were rotated since.
    """

    def __init__(self, keys: Callable[[bool], Keyring]) -> None:
        self._keys = keys
        self._keyring: Keyring | None = None
        self._lock = threading.Lock()

    @classmethod
    def of_backend(cls, backend: "Backend") -> "BatchSeal":
        return cls(lambda refresh: backend.signing_keys(create=False, refresh=refresh))

    @classmethod
    def of_record(cls, record: "JobRecord") -> "BatchSeal":
        """The seal of the batch whose children run as ``record`` (its manifest's template)."""

        def keys(refresh: bool) -> Keyring:
            from kinetic._context import backend_for

            return backend_for(record).signing_keys(create=False, refresh=refresh)

        return cls(keys)

    def _keyring_now(self, *, refresh: bool = False) -> Keyring:
        with self._lock:
            if self._keyring is None or refresh:
                self._keyring = self._keys(refresh)
            return self._keyring

    def seal(self, key: str, record: msgspec.Struct) -> bytes:
        """``record``, to be written at store key ``key``, as signed JSON."""
        return seal_json(self._keyring_now(), "batch-record", key, record)

    def open(self, data: bytes, record_type: type[_T], *, key: str, where: str) -> _T:
        """The record stored at ``key`` (``where`` names it in messages), once verified;
        :class:`RefusedRecordError` if it is not one this batch's keys signed for that key.
        ``CorruptRecordError`` for bytes that are no record at all."""
        try:
            return open_json(self._keyring_now(), "batch-record", key, data, record_type, key=where)
        except IntegrityError as exc:
            if not exc.unknown_key_id:
                raise RefusedRecordError(_why(data, record_type, key, where)) from None
        try:
            keyring = self._keyring_now(refresh=True)
            return open_json(keyring, "batch-record", key, data, record_type, key=where)
        except IntegrityError as exc:
            raise RefusedRecordError(_why(data, record_type, key, where, exc)) from None


def _why(
    data: bytes,
    record_type: type[object],
    key: str,
    where: str,
    unknown: IntegrityError | None = None,
) -> str:
    if unknown is not None and unknown.unknown_key_id:
        return (
            f"it is signed with key {unknown.unknown_key_id}, which the batch's keyring does "
            "not hold (retired, or never Kinetic's)."
        )
    try:
        peek_json(data, record_type, subject=key, key=where)
    except IntegrityError:
        return (
            "it is not signed (written by someone else, or by a Kinetic from before signed "
            "batch records)."
        )
    return (
        "its signature does not match it (changed after it was written, or copied from "
        "another record)."
    )
