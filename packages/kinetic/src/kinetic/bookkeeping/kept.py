"""What a batch keeps about one of its children, read and written from the child's record.

``for job in batch.as_completed(): job.result()`` cleans each child up as ``result()`` does for
any job. The child belongs to a batch, though: its outcome is written to the batch's
``collected/`` records first (as ``batch.results(cleanup=True)`` does), so the batch still
returns every value afterwards, and the child reads as collected and cleaned up, not failed.
A job outside any batch has none of this: each function here is a no-op or None for it.
"""

from kinetic import _log
from kinetic._context import backend_for, store_for
from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic.trust import SealedOutcome
from kinetic_protocol import (
    BatchChildCancelled,
    CollectedFailure,
    CollectedOutcome,
    JobNotFoundError,
    JobRecord,
    JobState,
    JobStatus,
)

__all__ = [
    "CLEANED_UP",
    "batch_cancelled",
    "cancel_child",
    "cleaned_up_error",
    "collected_with_batch",
    "is_cleaned_up",
    "keep_with_batch",
    "kept_failure_summary",
    "kept_outcome",
    "seen_by_batch",
]

log = _log.get_logger(__name__)

CLEANED_UP = "collected and cleaned up"
"""The reason of a NOT_FOUND child whose own records are gone: ``results(cleanup=True)``
deleted them after its outcome was read and kept with the batch. It did not fail."""


def is_cleaned_up(state: JobState) -> bool:
    """True for the state of a child that was collected and cleaned up."""
    return state.status is JobStatus.NOT_FOUND and state.detail == CLEANED_UP


def _records(record: JobRecord, group_id: str) -> BatchRecords:
    return BatchRecords(store_for(record), group_id, BatchSeal.of_record(record))


def keep_with_batch(record: JobRecord, sealed: SealedOutcome, state: JobState) -> None:
    """Keep ``sealed`` with the batch of ``record`` before the child's own copy is deleted,
    with where ``state`` says it ran; a job outside any batch keeps nothing."""
    group_id, index = record.group_id, record.group_index
    if group_id is None or index is None:
        return
    outcome = CollectedOutcome(
        index=index,
        job_id=record.job_id,
        envelope=sealed.sealed,
        kind=sealed.kind,
        placement=state.placement,
    )
    _records(record, group_id).add_collected([outcome])


def kept_outcome(record: JobRecord) -> CollectedOutcome | None:
    """The outcome kept with the batch for this very attempt of a child, if any."""
    group_id, index = record.group_id, record.group_index
    if group_id is None or index is None:
        return None
    kept = _records(record, group_id).collected().get(index)
    return kept if kept is not None and kept.job_id == record.job_id else None


def kept_failure_summary(record: JobRecord) -> CollectedFailure | None:
    """Why this very attempt of a child failed, and its last lines, as the collection that
    cleaned it up kept them with the batch (signed), if it did."""
    group_id, index = record.group_id, record.group_index
    if group_id is None or index is None:
        return None
    kept = _records(record, group_id).collected_failures().get(index)
    return kept if kept is not None and kept.job_id == record.job_id else None


def collected_with_batch(record: JobRecord) -> bool:
    """Whether a collection kept this very attempt's outcome (or failure) with its batch
    before it deleted the child."""
    return kept_outcome(record) is not None or kept_failure_summary(record) is not None


def seen_by_batch(record: JobRecord, state: JobState) -> JobState:
    """``state`` as the backend reported it, unless the job is a batch child gone (NOT_FOUND)
    after a collection kept it: then it was collected and cleaned up, not lost."""
    if state.status is not JobStatus.NOT_FOUND:
        return state
    kept = kept_outcome(record)
    if kept is not None:  # with where it ran, which only the batch still knows
        return JobState(status=JobStatus.NOT_FOUND, detail=CLEANED_UP, placement=kept.placement)
    if kept_failure_summary(record) is not None:
        return JobState(status=JobStatus.NOT_FOUND, detail=CLEANED_UP)
    return state


def cleaned_up_error(record: JobRecord) -> JobNotFoundError:
    """Why a collected child has no logs (and no backend resource) any more."""
    return JobNotFoundError(
        f"Job {record.job_id} (input {record.group_index} of batch {record.group_id}) was "
        f"{CLEANED_UP}: its result was read, kept with the batch (batch.results() returns it), "
        "and its resource and logs were deleted. To keep a child's logs, collect with "
        "results(cleanup=False) or job.result(cleanup=False)."
    )


def batch_cancelled(record: JobRecord) -> BatchChildCancelled | None:
    """The batch's signed record that it cancelled this very attempt of a child, if any.

    An array batch's children have no such record each: cancelling the batch deletes its one
    array object, and the batch's own cancellation stands for every child it stopped."""
    group_id, index = record.group_id, record.group_index
    if group_id is None or index is None:
        return None
    records = _records(record, group_id)
    cancelled = records.cancelled(index, record.attempt)
    if cancelled is not None or not record.in_array:
        return cancelled
    request = records.cancel_request()
    if request is None:
        return None
    return BatchChildCancelled(
        group_id=group_id,
        index=index,
        attempt=record.attempt,
        cancelled_at=request.requested_at,
        reason="the batch was cancelled",
    )


def cancel_child(records: BatchRecords, record: JobRecord, reason: str) -> None:
    """Cancel a child the batch stops (the attempt ``record``), saying when and why first
    (best effort: a store that refuses the note does not keep the job running)."""
    if record.group_index is not None:
        try:
            records.add_cancelled(record.group_index, record.attempt, reason)
        except Exception:
            _log.get_logger(__name__).warning(
                "could not record a cancellation", job_id=record.job_id, exc_info=True
            )
    backend_for(record).delete(record, timeout=60, poll_interval=0.5)
