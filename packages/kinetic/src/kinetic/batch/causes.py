"""Why each child of a batch ended without a value, read with as few store reads as it takes.

The batch's own records are read once for all children (the attempts it cancelled, the
outcomes and failures a collection kept); only a FAILED child that left an exit as its
backend's cause costs a read of its own (its stored result tells a function that raised from
a process that died).
"""

from collections.abc import Sequence

from kinetic.bookkeeping.kept import is_cleaned_up
from kinetic.bookkeeping.records import BatchRecords
from kinetic.failure import failed_attempt, failure_of, kept_failure, kept_value
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
    collection cleaned up, in input order. A cleaned-up child failed if the batch kept its
    failure summary, or kept an outcome for it that is no value (``results()`` raises that
    outcome's error, so it stays a failure when its summary was deleted or changed)."""
    summaries = collected = None
    failed = []
    for index, state in states:
        job = jobs[index]
        if job is None:
            continue
        if state.status is JobStatus.FAILED:
            failed.append(job)
            continue
        if not is_cleaned_up(state):
            continue
        if summaries is None:
            summaries, collected = records.collected_failures(), records.collected()
        assert collected is not None
        said = summaries.get(index)
        kept = collected.get(index)
        if (said is not None and said.job_id == job.job_id) or (
            kept is not None and kept.job_id == job.job_id and not kept_value(job, kept)
        ):
            failed.append(job)
    return failed
