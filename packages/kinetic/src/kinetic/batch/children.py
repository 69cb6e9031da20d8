"""The handle of each input's latest attempt, kept as one small int per input until read.

Every child of a batch is its manifest's template with a few fields set
(:meth:`~kinetic_protocol.BatchManifest.child_record`), so a batch read back from the store
(attach, an array batch's submission) needs only each input's latest attempt number: its
handle is made the first time it is read, and kept from then on, so a handle read twice is the
same object. 100,000 handles made at once cost over 100 MiB and half a second; 100,000 attempt
numbers cost 400 kB.
"""

import threading
from array import array
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from typing import overload

from kinetic.handle import JobHandle
from kinetic_protocol import BatchManifest, JobRecord

__all__ = ["ChildJobs"]

_NONE = -1
"""The attempt of an input with no handle (not submitted, or its submission failed)."""


class ChildJobs(Sequence[JobHandle | None]):
    """``jobs[i]``: the handle of input ``i``'s latest attempt, or ``None``; a fixed length.

    A handle set with ``jobs[i] = handle`` is kept as it is (a submitter's, with what its
    submission recorded); one named by :meth:`follow` is made from ``manifest`` when read.
    Reads and writes may come from several threads.
    """

    def __init__(self, total: int, manifest: BatchManifest | None = None) -> None:
        self._manifest = manifest
        self._attempts = array("i", [_NONE]) * total
        self._handles: list[JobHandle | None] = [None] * total
        self._unmade = 0
        """Inputs with an attempt whose handle is not made yet."""
        self._lock = threading.Lock()

    @classmethod
    def of(cls, jobs: Iterable[JobHandle | None]) -> "ChildJobs":
        """``jobs`` as it is if it is a :class:`ChildJobs`, else a copy of its handles."""
        if isinstance(jobs, ChildJobs):
            return jobs
        handles = list(jobs)
        made = cls(len(handles))
        for index, job in enumerate(handles):
            made[index] = job
        return made

    @classmethod
    def first_attempts(cls, manifest: BatchManifest) -> "ChildJobs":
        """Attempt 0 of every input: an array batch, whose backend holds every child."""
        jobs = cls(manifest.total_expected, manifest)
        jobs._attempts = array("i", [0]) * manifest.total_expected
        jobs._unmade = manifest.total_expected
        return jobs

    def __len__(self) -> int:
        return len(self._attempts)

    @overload
    def __getitem__(self, index: int) -> JobHandle | None: ...

    @overload
    def __getitem__(self, index: slice) -> list[JobHandle | None]: ...

    def __getitem__(self, index: int | slice) -> JobHandle | list[JobHandle | None] | None:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        job = self._handles[index]
        if job is not None or self._attempts[index] == _NONE:
            return job
        with self._lock:
            return self._made(index % len(self))

    @overload
    def __setitem__(self, index: int, job: JobHandle | None) -> None: ...

    @overload
    def __setitem__(self, index: slice, job: Iterable[JobHandle | None]) -> None: ...

    def __setitem__(
        self, index: int | slice, job: JobHandle | Iterable[JobHandle | None] | None
    ) -> None:
        if isinstance(index, slice):
            indexes = range(*index.indices(len(self)))
            jobs = list(job) if isinstance(job, Iterable) else [job]
            if len(jobs) != len(indexes):
                raise ValueError(
                    f"{len(jobs)} handles for {len(indexes)} places: a batch has one place "
                    "per input, and no more"
                )
            for place, one in zip(indexes, jobs, strict=True):
                self[place] = one
            return
        if isinstance(job, Iterable):
            raise TypeError(f"a place of a batch holds one JobHandle or None, not {job!r}")
        with self._lock:
            if self._handles[index] is None and self._attempts[index] != _NONE:
                self._unmade -= 1
            self._handles[index] = job
            self._attempts[index] = _NONE if job is None else job.attempt

    def __iter__(self) -> Iterator[JobHandle | None]:
        with self._lock:
            if self._unmade:
                for index, job in enumerate(self._handles):
                    if job is None and self._attempts[index] != _NONE:
                        self._made(index)
            return iter(self._handles.copy())

    def __repr__(self) -> str:
        return f"ChildJobs({self.submitted()} of {len(self)} submitted)"

    def _made(self, index: int) -> JobHandle:
        """Input ``index``'s handle, made now if it was not; with ``_lock`` held."""
        job = self._handles[index]
        if job is not None:
            return job
        assert self._manifest is not None, "only follow() names an attempt without a handle"
        job = JobHandle.from_record(self._manifest.child_record(index, self._attempts[index]))
        self._handles[index] = job
        self._unmade -= 1
        return job

    def follow(self, latest: Mapping[int, int], *, skip: Container[int] = ()) -> None:
        """Take each input's attempt in ``latest`` that is later than the one it has (but
        none of ``skip``'s); its handle is made from the manifest when it is read."""
        assert self._manifest is not None, "a handle is made from the manifest's template"
        with self._lock:
            attempts, handles = self._attempts, self._handles
            for index, attempt in latest.items():
                if index in skip or attempt <= attempts[index]:
                    continue
                if handles[index] is not None or attempts[index] == _NONE:
                    self._unmade += 1
                handles[index] = None
                attempts[index] = attempt

    def records(self) -> dict[int, JobRecord]:
        """The record of each submitted input's latest attempt, by input, without making the
        handles not made yet: a look at every child (``statuses()``) needs only these."""
        with self._lock:
            return {
                index: self._record(index, attempt)
                for index, attempt in enumerate(self._attempts)
                if attempt != _NONE
            }

    def _record(self, index: int, attempt: int) -> JobRecord:
        job = self._handles[index]
        if job is not None:
            return job.record
        assert self._manifest is not None, "only follow() names an attempt without a handle"
        return self._manifest.child_record(index, attempt)

    def attempt(self, index: int) -> int | None:
        """Input ``index``'s latest attempt, without making its handle."""
        attempt = self._attempts[index]
        return None if attempt == _NONE else attempt

    def submitted(self) -> int:
        """How many inputs have a handle."""
        return len(self._attempts) - self._attempts.count(_NONE)

    def submitted_indexes(self) -> list[int]:
        """The inputs that have a handle, in order."""
        return [index for index, attempt in enumerate(self._attempts) if attempt != _NONE]

    def latest_attempts(self) -> dict[int, int]:
        """Each input's latest attempt, for the inputs that have one."""
        return {index: attempt for index, attempt in enumerate(self._attempts) if attempt != _NONE}
