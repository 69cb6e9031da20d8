"""What is left to do for a batch whose submitter died, read from the store and the backend.

Nothing runs twice except as a counted retry: a child whose backend resource exists (running or
done) is only watched; a child recorded but never created is created under the same id (the
backend takes a repeated create as success); a failed child is retried only within the batch's
``retries``; an input without any record is submitted for the first time.
"""

from dataclasses import dataclass, field

from kinetic.batch.records import BatchRecords
from kinetic.batch.state import retryable
from kinetic.handle import JobHandle
from kinetic_protocol import (
    Backend,
    BatchManifest,
    Failed,
    JobStatus,
    KineticError,
    ObjectNotFoundError,
    ResultEnvelope,
    Succeeded,
)
from kinetic_protocol.causes import retry_causes

__all__ = ["ResumePlan", "plan_resume"]


@dataclass
class ResumePlan:
    """The work of a resumed submitter, and what it starts from."""

    jobs: list[JobHandle | None]
    queue: list[tuple[int, int]] = field(default_factory=list)
    """``(index, attempt)`` to submit: new inputs, retries, and records never created."""
    active: dict[int, JobHandle] = field(default_factory=dict)
    """Children still running, to watch."""
    retired: list[JobHandle] = field(default_factory=list)
    """Failed attempts whose backend resource goes before their retry is submitted."""
    failed: int = 0
    """Inputs that failed for good (they trip fail-fast)."""
    recreated: int = 0
    """Attempts recorded whose backend resource never appeared."""

    def describe(self, total: int) -> str:
        fresh = len(self.queue) - len(self.retired) - self.recreated
        return (
            f"{len(self.queue)} of {total} inputs to submit ({fresh} never submitted, "
            f"{len(self.retired)} retries, {self.recreated} recorded but never created), "
            f"{len(self.active)} still running"
        )


def _stored_outcome(job: JobHandle) -> ResultEnvelope | None:
    """The envelope ``job`` left, if any (a corrupt one counts as failed, not as absent)."""
    try:
        return job.read_envelope()
    except ObjectNotFoundError:
        return None
    except KineticError:
        return Failed(job_id=job.job_id, phase="collect", exc_type="", message="unreadable")


def plan_resume(manifest: BatchManifest, records: BatchRecords, backend: Backend) -> ResumePlan:
    """Read every input's latest attempt and decide what the resumed submitter does."""
    total = manifest.total_expected
    listing = records.listing(total, retries=manifest.retries)
    collected = records.collected()
    retry_on = retry_causes(manifest.retry_on)
    plan = ResumePlan(jobs=[None] * total)
    latest = {
        index: JobHandle.from_record(manifest.child_record(index, attempt))
        for index, attempt in listing.latest_attempts.items()
        if index not in listing.submission_errors
    }
    states = backend.statuses([job.record for job in latest.values()]) if latest else {}
    for index in range(total):
        if index in listing.submission_errors:
            continue
        job = latest.get(index)
        if job is None:
            plan.queue.append((index, 0))
            continue
        status = states[job.job_id].status
        # A job gone from the backend is judged by what it stored (one read).
        outcome = _stored_outcome(job) if status is JobStatus.NOT_FOUND else None
        if isinstance(outcome, Succeeded):
            status = JobStatus.SUCCEEDED
        # A queued input's slot stays empty until its new submission lands, as in a first run.
        if index in collected or status is JobStatus.SUCCEEDED:
            plan.jobs[index] = job
        elif not status.is_terminal:
            plan.jobs[index] = plan.active[index] = job
        elif status is JobStatus.NOT_FOUND and outcome is None:
            plan.queue.append((index, job.attempt))  # recorded, never created: same id
            plan.recreated += 1
        elif job.attempt < manifest.retries and retryable(job, states[job.job_id], retry_on):
            plan.retired.append(job)
            plan.queue.append((index, job.attempt + 1))
        else:
            plan.jobs[index] = job
            plan.failed += 1
    plan.queue.sort()
    return plan
