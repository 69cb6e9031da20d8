"""A batch's records in the object store: one header, then one small object per event.

Nothing here rewrites an object per child: the manifest is written once, each attempt adds its
own ``children/<index>-<attempt>.json`` before its backend resource is created, and a reader
needs one manifest read, one listing, and one read of each child record it has not verified
yet to rebuild every child's handle. Every record is signed (see :mod:`kinetic.bookkeeping.sealed`):
one that does not verify is left out with a warning naming its key.
"""

import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TypeVar

import msgspec

from kinetic import _log
from kinetic.bookkeeping.listing import _NOT_A_CHILD, BatchListing, ChildListing, parse_child_name
from kinetic.bookkeeping.sealed import BatchSeal, RefusedRecordError
from kinetic.trust import open_manifest
from kinetic_protocol import (
    SCHEMA_VERSION,
    BatchCancel,
    BatchChild,
    BatchChildCancelled,
    BatchCompletion,
    BatchManifest,
    BatchSubmissionError,
    CollectedFailure,
    CollectedFailures,
    CollectedOutcome,
    CollectedOutcomes,
    CorruptRecordError,
    JobNotFoundError,
    Keyring,
    ObjectNotFoundError,
    ObjectStore,
    PreconditionFailedError,
    SchemaVersionError,
    SubmitterLease,
    layout,
)
from kinetic_protocol.signing import seal_json

__all__ = [
    "MAX_EPOCH",
    "PARALLEL_READS",
    "BatchListing",
    "BatchRecords",
    "parse_child_name",
    "read_manifest",
]

log = _log.get_logger(__name__)
_R = TypeVar("_R")
PARALLEL_READS = 16
"""Store reads in flight at once when reading one record per attempt."""
MAX_EPOCH = 2**31 - 2
"""The highest lease epoch taken: a key beyond it (forged) is ignored, never counted on."""


def _now() -> str:
    # Microseconds: a batch's index names the completion it follows by this time.
    return datetime.now(UTC).isoformat(timespec="microseconds")


def read_manifest(store: ObjectStore, group_id: str) -> BatchManifest:
    """The batch's manifest, verified with the keyring of the backend it names."""
    key = layout.manifest_key(group_id)
    try:
        data = store.read(key)
    except ObjectNotFoundError:
        raise JobNotFoundError(
            f"No batch {group_id!r} in {store.uri}: it never existed or was "
            "cleaned up. `kinetic batch list` shows the batches that exist."
        ) from None
    return open_manifest(data, group_id=group_id, key=f"{store.uri}/{key}")


class BatchRecords(ChildListing):
    """Reads and writes the records of one batch in one store, signed with ``seal``."""

    def __init__(
        self,
        store: ObjectStore,
        group_id: str,
        seal: BatchSeal,
        *,
        array: BatchManifest | None = None,
    ) -> None:
        self.store = store
        self.group_id = group_id
        self.seal = seal
        self.array = array if array is not None and array.array_job else None
        """The manifest of an array batch, whose every input has its attempt 0 by
        construction (the backend's array object); only its retries have records, which
        the runs themselves wrote."""
        self._warned: set[str] = set()
        self._verified_children: set[str] = set()
        """Child records verified once: never rewritten, so never read again."""
        self.latest_seen: dict[int, int] = {}
        """The latest attempt of each input this object recorded or read back: what the
        index written after the completion says (:mod:`kinetic.bookkeeping.index`)."""

    def _ignore(self, key: str, why: str) -> None:
        """Warn, once per key, that the stray object ``key`` is not part of the batch."""
        if key not in self._warned:
            self._warned.add(key)
            _log.say(f"Ignoring {self.store.uri}/{key} in batch {self.group_id}: {why}")

    def write_manifest(self, manifest: BatchManifest, keyring: Keyring) -> None:
        """Signed: a resumed submitter creates children from its template."""
        sealed = seal_json(keyring, "batch", self.group_id, manifest)
        self.store.write(layout.manifest_key(self.group_id), sealed, if_absent=True)

    def read_manifest(self) -> BatchManifest:
        return read_manifest(self.store, self.group_id)

    def write_signed(self, key: str, record: msgspec.Struct, *, if_absent: bool = False) -> None:
        self.store.write(key, self.seal.seal(key, record), if_absent=if_absent)

    def add_child(self, index: int, attempt: int, job_id: str) -> None:
        """Record an attempt before its backend resource is created (create-only: a resumed
        submission of the same attempt finds its record in place)."""
        child = BatchChild(
            group_id=self.group_id,
            index=index,
            attempt=attempt,
            job_id=job_id,
            submitted_at=_now(),
        )
        key = layout.child_key(self.group_id, index, attempt)
        try:
            self.write_signed(key, child, if_absent=True)
        except PreconditionFailedError:
            if self.read_signed(key, BatchChild) is None:  # warned: it does not verify
                self._rerecord(child, key)
        self.saw(index, attempt)

    def saw(self, index: int, attempt: int) -> None:
        if attempt > self.latest_seen.get(index, -1):
            self.latest_seen[index] = attempt

    def _rerecord(self, child: BatchChild, taken: str) -> None:
        """Record an attempt beside its key, which holds an object that does not verify: a
        create-only write can never replace it, and readers leave it out, so the attempt
        would stay hidden for ever. The new key's random tag cannot be taken ahead."""
        prefix = layout.children_prefix(self.group_id)
        beside = [
            key
            for key in self.store.list(taken.removesuffix(".json") + ".")
            if parse_child_name(key, prefix) == (child.index, child.attempt)
        ]
        if self._verify_children(beside):
            return  # a resumed submission of the attempt: recorded already
        key = layout.child_rerecord_key(
            self.group_id, child.index, child.attempt, secrets.token_hex(8)
        )
        self.write_signed(key, child, if_absent=True)
        _log.say(
            f"Recorded attempt {child.attempt} of input {child.index} of batch {self.group_id} "
            f"at {self.store.uri}/{key}: {self.store.uri}/{taken} holds an object that does "
            "not verify."
        )

    def remove_child(self, index: int, attempt: int) -> None:
        """Withdraw the record of an attempt the backend refused (it never existed)."""
        self.store.delete(layout.child_key(self.group_id, index, attempt))

    def add_submission_error(self, index: int, exc: BaseException) -> None:
        error = BatchSubmissionError(
            group_id=self.group_id,
            index=index,
            exc_type=type(exc).__name__,
            message=str(exc),
            failed_at=_now(),
        )
        self.write_signed(layout.submission_error_key(self.group_id, index), error)

    def add_cancelled(self, index: int, attempt: int, reason: str) -> None:
        """Say when and why the batch cancelled an attempt (the job records neither)."""
        record = BatchChildCancelled(
            group_id=self.group_id,
            index=index,
            attempt=attempt,
            cancelled_at=_now(),
            reason=reason,
        )
        self.write_signed(layout.cancelled_child_key(self.group_id, index, attempt), record)

    def read_signed(self, key: str, record_type: type[_R]) -> _R | None:
        """The record at ``key``, verified; ``None`` if it went away, or (with a warning) if
        it is not a ``record_type`` this batch's keys signed for ``key``."""
        try:
            data = self.store.read(key)
            return self.seal.open(data, record_type, key=key, where=f"{self.store.uri}/{key}")
        except ObjectNotFoundError:
            return None
        except (CorruptRecordError, RefusedRecordError) as exc:
            self._ignore(key, str(exc))
            return None

    def cancelled(self, index: int, attempt: int) -> BatchChildCancelled | None:
        """Why the batch cancelled this attempt, if it did."""
        key = layout.cancelled_child_key(self.group_id, index, attempt)
        return self.read_signed(key, BatchChildCancelled)

    def cancelled_children(self) -> dict[tuple[int, int], BatchChildCancelled]:
        """Every attempt the batch cancelled, by ``(index, attempt)``."""
        found: dict[tuple[int, int], BatchChildCancelled] = {}
        for key in self.store.list(layout.cancelled_children_prefix(self.group_id)):
            record = self.read_signed(key, BatchChildCancelled)
            if record is not None:
                found[record.index, record.attempt] = record
        return found

    def _array_children(self) -> list[BatchChild]:
        """Attempt 0 of each input of an array batch, submitted with its array object
        (which the completion record follows at once): it has no record of its own."""
        assert self.array is not None
        done = self.completion()
        submitted_at = done.finished_at if done is not None else self.array.created_at
        return [
            BatchChild(
                group_id=self.group_id,
                index=index,
                attempt=0,
                job_id=self.array.child_job_id(index, 0),
                submitted_at=submitted_at,
            )
            for index in range(self.array.total_expected)
        ]

    def children(self) -> list[BatchChild]:
        """Every attempt's record, in ``(index, attempt)`` order; strays are warned about.
        An array batch's retries wrote their own (each run of an index, in the cluster)."""
        prefix = layout.children_prefix(self.group_id)
        keys = []
        for key in sorted(self.store.list(prefix)):
            if parse_child_name(key, prefix) is None:
                self._ignore(key, _NOT_A_CHILD)
            else:
                keys.append(key)
        stored = [child for child in self.read_all_signed(keys, BatchChild) if child is not None]
        if self.array is None:
            return stored
        retries = [child for child in stored if child.attempt > 0]
        return sorted(
            [*self._array_children(), *retries], key=lambda child: (child.index, child.attempt)
        )

    def read_all_signed(self, keys: list[str], record_type: type[_R]) -> list[_R | None]:
        if len(keys) < 2:
            return [self.read_signed(key, record_type) for key in keys]
        with ThreadPoolExecutor(min(PARALLEL_READS, len(keys))) as pool:
            return list(pool.map(lambda key: self.read_signed(key, record_type), keys))

    def _verify_children(self, keys: list[str]) -> set[str]:
        """The keys among ``keys`` that hold a child record this batch signed (each read once
        per process: a child record is never rewritten)."""
        fresh = [key for key in keys if key not in self._verified_children]
        for key, child in zip(fresh, self.read_all_signed(fresh, BatchChild), strict=True):
            if child is not None:
                self._verified_children.add(key)
        return {key for key in keys if key in self._verified_children}

    def mark_complete(
        self,
        submitted: int,
        *,
        cancelled: bool,
        fail_fast: bool = False,
        error: str = "",
        cost_capped: str = "",
    ) -> BatchCompletion:
        done = BatchCompletion(
            group_id=self.group_id,
            submitted=submitted,
            finished_at=_now(),
            cancelled=cancelled,
            fail_fast=fail_fast,
            error=error,
            cost_capped=cost_capped,
        )
        self.write_signed(layout.completion_key(self.group_id), done)
        return done

    def completion(self) -> BatchCompletion | None:
        """The submitter's completion record; one that is not a completion (garbled, or left
        by a store writer) is skipped with a warning, as if the submitter had not finished:
        its lease then says whether it is gone, and ``resume`` can finish the batch."""
        return self.read_signed(layout.completion_key(self.group_id), BatchCompletion)

    def add_collected(self, outcomes: list[CollectedOutcome]) -> None:
        """Keep outcomes with the batch before their children's own copies are deleted."""
        record = CollectedOutcomes(group_id=self.group_id, outcomes=outcomes, collected_at=_now())
        name = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{secrets.token_hex(4)}"
        self.store.write(layout.collected_key(self.group_id, name), msgspec.msgpack.encode(record))

    def collected(self) -> dict[int, CollectedOutcome]:
        """Every outcome kept by a collection that cleaned up, by input index."""
        found: dict[int, CollectedOutcome] = {}
        for key in self.store.list(layout.collected_prefix(self.group_id)):
            try:
                record = msgspec.msgpack.decode(self.store.read(key), type=CollectedOutcomes)
            except ObjectNotFoundError:
                continue
            except msgspec.DecodeError as exc:
                self._ignore(key, f"not a record of collected outcomes ({exc}).")
                continue
            if record.schema_version > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"{self.store.uri}/{key} was written by a newer Kinetic; upgrade to read it."
                )
            for outcome in record.outcomes:
                found[outcome.index] = outcome
        return found

    def add_collected_failures(self, failures: list[CollectedFailure]) -> None:
        """Keep why each failed child ended, and its last lines, before it is deleted."""
        record = CollectedFailures(group_id=self.group_id, failures=failures, collected_at=_now())
        name = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{secrets.token_hex(4)}"
        self.write_signed(layout.collected_failures_key(self.group_id, name), record)

    def collected_failures(self) -> dict[int, CollectedFailure]:
        """Every failure kept by a collection that cleaned up, by input index (the latest
        kept for an index wins); records that do not verify are left out with a warning."""
        keys = sorted(self.store.list(layout.collected_failures_prefix(self.group_id)))
        found: dict[int, CollectedFailure] = {}
        for record in self.read_all_signed(keys, CollectedFailures):
            for failure in record.failures if record is not None else []:
                found[failure.index] = failure
        return found

    def request_cancel(self) -> None:
        """Tell whichever process is submitting this batch to stop."""
        record = BatchCancel(group_id=self.group_id, requested_at=_now())
        self.write_signed(layout.cancel_key(self.group_id), record)

    def cancel_request(self) -> BatchCancel | None:
        """The batch's cancellation, if a process holding its keys cancelled it (a forged
        request is ignored, with a warning naming its key)."""
        return self.read_signed(layout.cancel_key(self.group_id), BatchCancel)

    def cancel_requested(self) -> bool:
        return self.cancel_request() is not None

    def stop_requested(self) -> bool:
        """Cancelled from anywhere, or cleaned up (its manifest is gone)."""
        return self.cancel_requested() or not self.store.exists(layout.manifest_key(self.group_id))

    def write_lease(self, lease: SubmitterLease, *, if_absent: bool = False) -> None:
        self.write_signed(layout.lease_key(self.group_id, lease.epoch), lease, if_absent=if_absent)

    def leases(self) -> tuple[SubmitterLease | None, int]:
        """The newest lease that verifies (one LIST, then one read per epoch from the top
        until one does), and the highest epoch any lease key holds, forged or not: a new
        lease must take an epoch above every key, or its create-only write would fail."""
        epochs = []
        for key in self.store.list(layout.leases_prefix(self.group_id)):
            epoch = layout.parse_lease_key(key)
            if epoch is None:
                self._ignore(key, "not a lease (<epoch>.json, the epoch in ASCII digits).")
                continue
            if epoch > MAX_EPOCH:
                self._ignore(key, f"epoch {epoch} is beyond any a submitter takes.")
                continue
            epochs.append(epoch)
        for epoch in sorted(epochs, reverse=True):
            lease = self.read_signed(layout.lease_key(self.group_id, epoch), SubmitterLease)
            if lease is not None:
                return lease, max(epochs)
        return None, max(epochs, default=-1)

    def attempt_keys(self) -> list[tuple[int, int]]:
        """``(index, attempt)`` of every child record by its name alone, verified or not:
        what cleanup deletes (deleting needs no trust in what it deletes)."""
        prefix = layout.children_prefix(self.group_id)
        parsed = {parse_child_name(key, prefix) for key in self.store.list(prefix)} - {None}
        if self.array is not None:
            parsed |= {(index, 0) for index in range(self.array.total_expected)}
        return sorted(found for found in parsed if found is not None)

    def delete_all(self) -> None:
        self.store.delete_prefix(layout.group_prefix(self.group_id))
        self.store.delete(layout.manifest_key(self.group_id))
