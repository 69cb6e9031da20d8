"""A finished batch's index: the latest attempt of every input, in a few signed parts.

Child records stay the write-ahead log (one per attempt, before its backend resource: a killed
submitter loses nothing). Reading them back costs one read and one MAC per attempt, so the
submitter, once it has written its completion, also writes the index
(``groups/<id>/index/<part>.json``, :data:`PART_INPUTS` inputs a part). A reader of a batch
whose completion the index names reads the parts instead of listing and verifying every child
record; any part missing, refused, or naming another completion (a resume since, or a kill
half-way through the index) and it reads the child records as before. Batches written before
the index (layout 1) have none, and are read by their child records.
"""

from collections.abc import Mapping
from typing import Protocol, TypeVar

import msgspec

from kinetic import _log
from kinetic_protocol import BatchCompletion, BatchIndexSegment, layout

__all__ = ["PART_INPUTS", "read_index", "write_index"]

_R = TypeVar("_R")


class _SignedReader(Protocol):
    """What reading the index needs of :class:`~kinetic.bookkeeping.records.BatchRecords`."""

    group_id: str

    def read_signed(self, key: str, record_type: type[_R]) -> _R | None: ...

    def read_all_signed(self, keys: list[str], record_type: type[_R]) -> list[_R | None]: ...


class _SignedRecords(_SignedReader, Protocol):
    def write_signed(self, key: str, record: msgspec.Struct) -> None: ...


PART_INPUTS = 10_000
"""Inputs one part of the index covers (a part of 10,000 is about 20 kB of JSON)."""


def write_index(
    records: _SignedRecords, completion: BatchCompletion, attempts: Mapping[int, int], total: int
) -> None:
    """Write the index of a batch whose submitter recorded ``completion``: ``attempts`` holds
    the latest recorded attempt of each input that has one."""
    parts = max(1, -(-total // PART_INPUTS))
    for part in range(parts):
        start = part * PART_INPUTS
        segment = BatchIndexSegment(
            group_id=records.group_id,
            completed_at=completion.finished_at,
            part=part,
            parts=parts,
            start=start,
            attempts=[attempts.get(i, -1) for i in range(start, min(start + PART_INPUTS, total))],
        )
        records.write_signed(layout.index_key(records.group_id, part), segment)


def read_index(
    records: _SignedReader, completion: BatchCompletion, total: int, retries: int | None
) -> dict[int, int] | None:
    """The latest attempt of each input that has one, from an index that goes with
    ``completion`` and covers exactly the ``total`` inputs; None (read the child records)
    when there is no such index."""
    group_id = records.group_id
    first = records.read_signed(layout.index_key(group_id, 0), BatchIndexSegment)
    if first is None or first.completed_at != completion.finished_at:
        return None
    if first.parts != max(1, -(-total // PART_INPUTS)):
        return None
    keys = [layout.index_key(group_id, part) for part in range(1, first.parts)]
    segments = [first, *records.read_all_signed(keys, BatchIndexSegment)]
    latest: dict[int, int] = {}
    for part, segment in enumerate(segments):
        if not _fits(segment, part, completion, total):
            return None
        assert segment is not None
        for index, attempt in enumerate(segment.attempts, start=segment.start):
            if attempt < 0:
                continue
            if retries is not None and attempt > retries:
                _log.get_logger(__name__).warning(
                    "batch index names an attempt beyond the batch's retries",
                    group_id=group_id,
                    index=index,
                )
                return None
            latest[index] = attempt
    return latest


def _fits(
    segment: BatchIndexSegment | None, part: int, completion: BatchCompletion, total: int
) -> bool:
    """Whether ``segment`` is part ``part`` of the index written after ``completion``."""
    if segment is None or segment.completed_at != completion.finished_at:
        return False
    start = part * PART_INPUTS
    return (
        segment.part == part
        and segment.start == start
        and len(segment.attempts) == min(PART_INPUTS, total - start)
    )
