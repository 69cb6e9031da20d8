"""What is left to do for a batch whose submitter died, read from the store and the backend.

Nothing runs twice except as a counted retry: a child whose backend resource exists (running or
done) is only watched; a child recorded but never created is created under the same id (the
backend takes a repeated create as success); a failed child is retried only within the batch's
``retries``; an input without any record is submitted for the first time.

:func:`resume_children` takes the batch's lease over and starts a submitter on that plan.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from kinetic.batch.children import ChildJobs
from kinetic.batch.cleanup import in_parallel
from kinetic.batch.lease import LeaseHolder, stopped_on_its_own_error
from kinetic.batch.spending import SpendingMeter, spent_before
from kinetic.batch.state import BatchState, retry_cause
from kinetic.batch.submitter import FailurePolicy, Submitter
from kinetic.batch.unverified import confirmed_listing, lost_inputs
from kinetic.bookkeeping.records import BatchRecords
from kinetic.env_capture import recapture_env
from kinetic.handle import JobHandle
from kinetic.usage import billed
from kinetic_protocol import (
    Backend,
    BatchCompletion,
    BatchManifest,
    CallDescriptor,
    Failed,
    JobStatus,
    KineticError,
    ObjectNotFoundError,
    ResultEnvelope,
    Succeeded,
    layout,
)
from kinetic_protocol.signing import open_json

__all__ = ["ResumePlan", "plan_resume", "recaptured_env", "resume_children"]


@dataclass
class ResumePlan:
    """The work of a resumed submitter, and what it starts from."""

    jobs: ChildJobs
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
    listing = confirmed_listing(records, manifest, backend)
    collected = records.collected()
    rule = manifest.retry_rule
    plan = ResumePlan(jobs=ChildJobs(total, manifest))
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
        elif rule.attempts_left(job.attempt) and rule.covers(retry_cause(job, states[job.job_id])):
            plan.retired.append(job)
            plan.queue.append((index, job.attempt + 1))
        else:
            plan.jobs[index] = job
            plan.failed += 1
    plan.queue.sort()
    return plan


def recaptured_env(group_id: str, records: BatchRecords, backend: Backend) -> dict[str, str]:
    """The stored call names the variables the batch captured, never their values: a
    resumed submitter takes them from its own environment (warning about missing ones)."""
    key = layout.group_call_key(group_id)
    keyring = backend.signing_keys(create=False)
    data = records.store.read(key)
    call = open_json(keyring, "call", group_id, data, CallDescriptor, key=key)
    # A batch stored before names-only calls kept values in ``env``: its keys are the names
    # (the stored values are never used).
    names = call.env_names or sorted(call.env)
    return recapture_env(names, os.environ, owner=f"Batch {group_id}")


def _unfinished(
    completion: BatchCompletion, manifest: BatchManifest, records: BatchRecords, backend: Backend
) -> bool:
    """Whether a batch whose submitter recorded its end still has inputs for ``resume``: it
    stopped on an error of its own, or it submitted every input and yet some input has no
    record that verifies and left no trace (deleted, or hidden behind a planted object)."""
    if stopped_on_its_own_error(completion) or completion.cost_capped:
        return True
    if completion.cancelled or completion.fail_fast or completion.error:
        return False
    listing = confirmed_listing(records, manifest, backend)
    return bool(lost_inputs(listing, manifest.total_expected))


def _meter(
    manifest: BatchManifest, records: BatchRecords, backend: Backend, cap: float
) -> SpendingMeter | None:
    """The spending of a batch with a cap, from what its attempts that ended used (one read of
    its timeline); None without a cap, or where its backend bills nothing."""
    if not cap or not billed(manifest.job_template):
        return None
    from kinetic.batch.timeline import read_timeline

    return SpendingMeter(manifest, cap, spent_before(read_timeline(manifest, records, backend)))


def resume_children(
    manifest: BatchManifest,
    records: BatchRecords,
    backend: Backend,
    current: BatchState,
    completion: BatchCompletion | None,
    adopt: Callable[[BatchState, FailurePolicy], None],
    *,
    max_cost: float | None = None,
) -> str:
    """Resume a per-child batch from this process (``BatchHandle.resume``); returns what it
    did, in words. ``current`` is the state the handle follows now; ``adopt`` hands the
    handle the new state and failure policy before anything is submitted. ``max_cost``
    replaces the batch's cap for this submission."""
    group_id = manifest.group_id
    if completion is not None and not _unfinished(completion, manifest, records, backend):
        return (
            f"Batch {group_id} finished submitting at {completion.finished_at} "
            f"({completion.submitted} of {current.total} inputs); nothing to resume."
        )
    if records.cancel_requested():
        return f"Batch {group_id} was cancelled; nothing to resume."
    # Read before the lease: a failed read takes nothing over.
    meter = _meter(manifest, records, backend, max_cost or manifest.max_cost)
    if meter is not None and meter.reached():
        return (
            f"Batch {group_id} has spent {meter.describe().removeprefix('list cost ')}: "
            f"nothing more is submitted. Resume with a higher cap (batch.resume(max_cost=...), "
            f"`kinetic batch resume {group_id} --max-cost USD`) to run its other inputs."
        )
    env = recaptured_env(group_id, records, backend)
    lease = LeaseHolder.take_over(records, holder_finished=completion is not None)
    if completion is not None:
        # From here on readers follow this process's lease, not the old error; the index
        # of the old completion goes with it (this process writes its own at the end).
        records.store.delete(layout.completion_key(group_id))
        for key in records.store.list(layout.index_prefix(group_id)):
            records.store.delete(key)
    plan = plan_resume(manifest, records, backend)
    current.detached.set()  # an attached handle stops following the dead submitter
    state = BatchState(total=current.total, rule=manifest.retry_rule, jobs=plan.jobs)
    state.submission_errors.update(current.submission_errors)
    policy = FailurePolicy(
        state, fail_fast=manifest.fail_fast, cancel_running=manifest.cancel_running_on_fail
    )
    if plan.failed:
        policy.on_failure()  # a failure before the resume trips fail-fast as it would have
    adopt(state, policy)
    in_parallel(lambda job: job.delete_resource(timeout=60, poll_interval=0.5), plan.retired)
    submitter = Submitter(
        state=state,
        backend=backend,
        manifest=manifest,
        records=records,
        policy=policy,
        lease=lease,
        queue=plan.queue,
        active=plan.active,
        env=env,
        meter=meter,
    )
    submitter.start_background()
    return f"Resumed batch {group_id}: {plan.describe(current.total)}."
