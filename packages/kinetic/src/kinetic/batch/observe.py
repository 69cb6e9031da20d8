"""One look at a batch's children: one backend call for all of them, and each child that
is done settled (the fail-fast policy told of each final failure)."""

import functools
from collections.abc import Callable

from kinetic.batch.state import BatchState, Decision, child_state
from kinetic.batch.submitter import FailurePolicy
from kinetic.bookkeeping.kept import is_cleaned_up
from kinetic.bookkeeping.records import BatchRecords
from kinetic.handle import JobHandle
from kinetic_protocol import Backend, BatchManifest, JobState

__all__ = ["collected_once", "latest_states", "observe"]


def latest_states(
    manifest: BatchManifest, backend: Backend, state: BatchState, jobs: dict[int, JobHandle]
) -> dict[int, tuple[JobHandle, JobState]]:
    """One backend call for ``jobs``: each input's latest attempt and its state.

    The backend of an array batch runs a failed input again itself, as a new attempt
    that the state of the one before names (``next_attempt``): that attempt takes the
    input's place in ``state.jobs``, and one more call reads the attempts so followed.
    """
    states = backend.statuses([job.record for job in jobs.values()])
    found = {index: (job, states[job.job_id]) for index, job in jobs.items()}
    followed: dict[int, JobHandle] = {}
    for index, (job, seen) in found.items():
        if seen.next_attempt is not None and seen.next_attempt > job.attempt:
            later = JobHandle.from_record(manifest.child_record(index, seen.next_attempt))
            with state.lock:
                if state.jobs[index] is job:
                    state.jobs[index] = later
            followed[index] = later
    if followed:
        again = backend.statuses([job.record for job in followed.values()])
        found |= {index: (job, again[job.job_id]) for index, job in followed.items()}
    return found


def collected_once(records: BatchRecords) -> Callable[[], dict[int, object]]:
    """The inputs whose outcome, or failure, a collection kept before cleaning up, read at
    most once per look, and only if needed."""

    def kept() -> dict[int, object]:
        return {**records.collected_failures(), **records.collected()}

    return functools.cache(kept)


def observe(
    manifest: BatchManifest,
    backend: Backend,
    records: BatchRecords,
    state: BatchState,
    policy: FailurePolicy,
) -> None:
    """One backend call for every unsettled child; settle what is done."""
    pending = state.unsettled_jobs()
    if not pending:
        return
    latest = latest_states(manifest, backend, state, pending)
    collected = collected_once(records)
    for index, (job, seen) in latest.items():
        if seen.next_attempt is not None:
            continue  # a still later attempt runs: the next look follows it
        child = child_state(job, seen, collected)
        with state.lock:
            state.states[index] = child
        decision = state.decide(job, child)
        if decision in (Decision.SUCCEEDED, Decision.FAILED):
            settled = state.settle(index, job, child)
            if settled and decision is Decision.FAILED and not is_cleaned_up(child):
                policy.on_failure()
