"""A batch's records in the object store: one header, then one small object per event.

Nothing here rewrites an object per child: the manifest is written once, each submitted
attempt adds its own ``children/<index>-<attempt>.json``, and a reader needs one manifest read
plus one listing to rebuild every child's handle.
"""

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kinetic import _log
from kinetic_protocol import (
    BatchChild,
    BatchCompletion,
    BatchManifest,
    BatchSubmissionError,
    CorruptRecordError,
    JobNotFoundError,
    ObjectNotFoundError,
    ObjectStore,
    layout,
)
from kinetic_protocol.records import decode_json, encode_json

__all__ = ["BatchListing", "BatchRecords", "parse_child_name"]

log = _log.get_logger(__name__)
_CHILD_NAME = re.compile(r"(\d+)-(\d+)\.json")


def parse_child_name(key: str, prefix: str) -> tuple[int, int] | None:
    """``(index, attempt)`` of a key that :func:`layout.child_key` made under ``prefix``, or
    ``None`` for any other object found there."""
    match = _CHILD_NAME.fullmatch(key.removeprefix(prefix)) if key.startswith(prefix) else None
    return None if match is None else (int(match[1]), int(match[2]))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class BatchListing:
    """What the store says about a batch at one moment."""

    latest_attempts: dict[int, int] = field(default_factory=dict)
    submission_errors: dict[int, BatchSubmissionError] = field(default_factory=dict)
    complete: BatchCompletion | None = None


class BatchRecords:
    """Reads and writes the records of one batch in one store."""

    def __init__(self, store: ObjectStore, group_id: str) -> None:
        self.store = store
        self.group_id = group_id
        self._warned: set[str] = set()

    def _ignore(self, key: str, why: str) -> None:
        """Warn, once per key, that the stray object ``key`` is not part of the batch."""
        if key not in self._warned:
            self._warned.add(key)
            log.warning(f"Ignoring {self.store.uri}/{key} in batch {self.group_id}: {why}")

    def write_manifest(self, manifest: BatchManifest) -> None:
        self.store.write(layout.manifest_key(self.group_id), encode_json(manifest), if_absent=True)

    def read_manifest(self) -> BatchManifest:
        key = layout.manifest_key(self.group_id)
        try:
            data = self.store.read(key)
        except ObjectNotFoundError:
            raise JobNotFoundError(
                f"No batch {self.group_id!r} in {self.store.uri}: it never existed or was "
                "cleaned up. `kinetic batch list` shows the batches that exist."
            ) from None
        return decode_json(data, BatchManifest, what=f"{self.store.uri}/{key}")

    def add_child(self, index: int, attempt: int, job_id: str) -> None:
        child = BatchChild(
            group_id=self.group_id, index=index, attempt=attempt, job_id=job_id,
            submitted_at=_now(),
        )  # fmt: skip
        self.store.write(layout.child_key(self.group_id, index, attempt), encode_json(child))

    def add_submission_error(self, index: int, exc: BaseException) -> None:
        error = BatchSubmissionError(
            group_id=self.group_id, index=index, exc_type=type(exc).__name__, message=str(exc)
        )
        self.store.write(layout.submission_error_key(self.group_id, index), encode_json(error))

    def mark_complete(self, submitted: int, *, cancelled: bool) -> None:
        done = BatchCompletion(
            group_id=self.group_id, submitted=submitted, finished_at=_now(), cancelled=cancelled
        )
        self.store.write(layout.completion_key(self.group_id), encode_json(done))

    def request_cancel(self) -> None:
        """Tell whichever process is submitting this batch to stop."""
        self.store.write(layout.cancel_key(self.group_id), _now().encode())

    def stop_requested(self) -> bool:
        """Cancelled from anywhere, or cleaned up (its manifest is gone)."""
        return self.store.exists(layout.cancel_key(self.group_id)) or not self.store.exists(
            layout.manifest_key(self.group_id)
        )

    def listing(self, total: int | None = None) -> BatchListing:
        """Children, submission errors and completion, as one consistent view.

        The completion record is read first: the submitter writes it after every child, so a
        listing taken afterwards holds every child it counts, whatever lands in between.
        Objects that are not the batch's records (a stray ``children/notes.txt``, an index
        outside the ``total`` inputs) are left out with a warning naming their key.
        """
        listing = BatchListing()
        try:
            data = self.store.read(layout.completion_key(self.group_id))
        except ObjectNotFoundError:
            pass
        else:
            listing.complete = decode_json(data, BatchCompletion, what="completion record")
        prefix = layout.children_prefix(self.group_id)
        for key in self.store.list(prefix):
            parsed = parse_child_name(key, prefix)
            if parsed is None:
                self._ignore(key, "not a child record (<index>-<attempt>.json).")
                continue
            index, attempt = parsed
            if total is not None and index >= total:
                self._ignore(key, f"input {index} is beyond the batch's {total} inputs.")
                continue
            if attempt >= listing.latest_attempts.get(index, -1):
                listing.latest_attempts[index] = attempt
        for key in self.store.list(layout.submission_errors_prefix(self.group_id)):
            try:
                error = decode_json(self.store.read(key), BatchSubmissionError, what=key)
            except ObjectNotFoundError:
                continue
            except CorruptRecordError as exc:
                self._ignore(key, str(exc))
                continue
            if total is not None and not 0 <= error.index < total:
                self._ignore(key, f"input {error.index} is outside the batch's {total} inputs.")
                continue
            listing.submission_errors[error.index] = error
        return listing

    def delete_all(self) -> None:
        self.store.delete_prefix(layout.group_prefix(self.group_id))
        self.store.delete(layout.manifest_key(self.group_id))
