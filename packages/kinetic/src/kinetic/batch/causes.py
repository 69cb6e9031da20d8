"""Why each child of a batch ended without a value, read with as few store reads as it takes.

The batch's own records are read once for all children (the attempts it cancelled, the
outcomes and failures a collection kept); only a FAILED child that left an exit as its
backend's cause costs a read of its own (its stored result tells a function that raised from
a process that died).
"""

from collections.abc import Sequence

from kinetic.batch.records import BatchRecords
from kinetic.batch.state import is_cleaned_up
from kinetic.failure import failed_attempt, failure_of, kept_failure
from kinetic.handle import JobHandle
from kinetic_protocol import (
    AttemptFailure,
    CollectedFailure,
    CollectedOutcome,
    FailureCause,
    JobState,
    JobStatus,
)

__all__ = ["child_failures", "failed_children"]


def child_failures(
    jobs: Sequence[JobHandle | None],
    states: Sequence[tuple[int, JobState]],
    records: BatchRecords,
) -> dict[int, AttemptFailure]:
    """The failure of each child (by input index) whose latest attempt ended without a value."""
    cancelled = None
    collected: dict[int, CollectedOutcome] | None = None
    summaries: dict[int, CollectedFailure] | None = None
    failures: dict[int, AttemptFailure] = {}
    for index, state in states:
        job = jobs[index]
        if job is None or state.status not in (JobStatus.FAILED, JobStatus.NOT_FOUND):
            continue
        if state.status is JobStatus.FAILED:
            failures[index] = failed_attempt(job, state)
            continue
        if cancelled is None:
            cancelled = records.cancelled_children()
        said = cancelled.get((index, job.record.attempt))
        if said is not None:
            failures[index] = AttemptFailure(
                cause=FailureCause.CANCELLED, reason=said.reason, attempt=job.record.attempt
            )
        elif is_cleaned_up(state):
            if collected is None:
                collected = records.collected()
            kept = kept_failure(job, collected.get(index))
            if kept is None:
                if summaries is None:
                    summaries = records.collected_failures()
                summary = summaries.get(index)
                if summary is not None and summary.job_id == job.job_id:
                    kept = summary.failure
            if kept is not None:
                failures[index] = kept
        elif (failure := failure_of(job, state)) is not None:
            failures[index] = failure
    return failures


def failed_children(
    jobs: Sequence[JobHandle | None],
    states: Sequence[tuple[int, JobState]],
    records: BatchRecords,
) -> list[JobHandle]:
    """``BatchHandle.failures`` read afresh: the FAILED children, and the failed children a
    collection cleaned up (the batch kept why each failed), in input order."""
    kept = None
    if any(is_cleaned_up(state) for _, state in states):
        kept = records.collected_failures()
    return [
        job
        for i, state in states
        if (job := jobs[i]) is not None
        and (
            state.status is JobStatus.FAILED
            or (
                kept is not None
                and is_cleaned_up(state)
                and (said := kept.get(i)) is not None
                and said.job_id == job.job_id
            )
        )
    ]
