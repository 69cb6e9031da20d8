"""Reading a batch's children back: from its index when it has one that fits, else from
one listing of its child records (each verified once per process)."""

from dataclasses import dataclass, field
from typing import TypeVar

from kinetic.bookkeeping.index import read_index
from kinetic_protocol import (
    BatchCompletion,
    BatchManifest,
    BatchSubmissionError,
    ObjectStore,
    layout,
)

__all__ = ["BatchListing", "ChildListing", "parse_child_name"]

_R = TypeVar("_R")
_NOT_A_CHILD = "not a child record (<index>-<attempt>.json, in ASCII digits)."


def parse_child_name(key: str, prefix: str) -> tuple[int, int] | None:
    """``(index, attempt)`` of a key that :func:`layout.child_key` (or
    :func:`layout.child_rerecord_key`) made under ``prefix``, or ``None`` for any other object
    found there."""
    return layout.parse_child_name(key.removeprefix(prefix)) if key.startswith(prefix) else None


@dataclass
class BatchListing:
    """What the store says about a batch at one moment."""

    latest_attempts: dict[int, int] = field(default_factory=dict)
    submission_errors: dict[int, BatchSubmissionError] = field(default_factory=dict)
    complete: BatchCompletion | None = None
    unverified: dict[tuple[int, int], str] = field(default_factory=dict)
    """Attempts above their input's latest whose key holds an object that does not verify
    (by ``(index, attempt)``, one such key): a store writer's, or a true record changed.
    :mod:`kinetic.batch.unverified` reads whether each exists from what its job left."""


class ChildListing:
    """The listing half of :class:`~kinetic.bookkeeping.records.BatchRecords`."""

    store: ObjectStore
    group_id: str
    array: BatchManifest | None

    def completion(self) -> BatchCompletion | None:
        raise NotImplementedError

    def _ignore(self, key: str, why: str) -> None:
        raise NotImplementedError

    def saw(self, index: int, attempt: int) -> None:
        raise NotImplementedError

    def _verify_children(self, keys: list[str]) -> set[str]:
        raise NotImplementedError

    def read_signed(self, key: str, record_type: type[_R]) -> _R | None:
        raise NotImplementedError

    def read_all_signed(self, keys: list[str], record_type: type[_R]) -> list[_R | None]:
        raise NotImplementedError

    def listing(self, total: int | None = None, *, retries: int | None = None) -> BatchListing:
        """Children, submission errors and completion, as one consistent view.

        The completion record is read first: the submitter writes it after every child, so a
        listing taken afterwards holds every child it counts, whatever lands in between.
        Objects that are not the batch's records (a stray ``children/notes.txt``, an index
        outside the ``total`` inputs, an attempt beyond ``retries``) are left out with a
        warning naming their key: every reader walks attempts ``0..latest``, so one forged
        20-digit attempt would otherwise hold it for ever.
        """
        listing = BatchListing(complete=self.completion())
        indexed = None
        if self.array is None and listing.complete is not None and total is not None:
            indexed = read_index(self, listing.complete, total, retries)
        if indexed is not None:
            listing.latest_attempts = indexed
        elif self.array is not None:
            # Attempt 0 of every input by construction; retries by the records they wrote.
            listing.latest_attempts = dict.fromkeys(range(self.array.total_expected), 0)
            total = self.array.total_expected
        if indexed is None:
            self._list_children(listing, total, retries)
        for key in self.store.list(layout.submission_errors_prefix(self.group_id)):
            error = self.read_signed(key, BatchSubmissionError)
            if error is None:
                continue
            if total is not None and not 0 <= error.index < total:
                self._ignore(key, f"input {error.index} is outside the batch's {total} inputs.")
                continue
            listing.submission_errors[error.index] = error
        for index, attempt in listing.latest_attempts.items():
            self.saw(index, attempt)
        return listing

    def _list_children(self, listing: BatchListing, total: int | None, retries: int | None) -> None:
        """Fill ``listing`` from the child records: one listing, one read of each not
        verified yet in this process."""
        prefix = layout.children_prefix(self.group_id)
        candidates: list[tuple[str, int, int]] = []
        for key in self.store.list(prefix):
            parsed = parse_child_name(key, prefix)
            if parsed is None:
                self._ignore(key, _NOT_A_CHILD)
                continue
            index, attempt = parsed
            if total is not None and index >= total:
                self._ignore(key, f"input {index} is beyond the batch's {total} inputs.")
                continue
            if retries is not None and attempt > retries:
                self._ignore(key, f"attempt {attempt} is beyond the batch's {retries} retries.")
                continue
            candidates.append((key, index, attempt))
        verified = self._verify_children([key for key, _, _ in candidates])
        unverified: dict[tuple[int, int], str] = {}
        for key, index, attempt in candidates:
            if key not in verified:
                unverified.setdefault((index, attempt), key)
            elif attempt >= listing.latest_attempts.get(index, -1):
                listing.latest_attempts[index] = attempt
        listing.unverified = {
            (index, attempt): key
            for (index, attempt), key in unverified.items()
            if attempt > listing.latest_attempts.get(index, -1)
        }
